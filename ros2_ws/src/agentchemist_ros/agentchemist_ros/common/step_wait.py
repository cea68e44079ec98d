"""The motion step a node waits for, timed on its ROS clock from the first moment that clock has started.

With use_sim_time a node's clock reads 0 until its first /clock message. A node that comes up slower than
the twin (action_policy imports torch: seconds on a loaded machine) can take its first goal before that
message: a step timed from 0 then saw the first /clock jump it to the twin's time (54 s) and ran out of
its 8 s at the first look ("step 'open' of grasp did not complete within 8.0 s", twin.launch.py through
the real `ros2 launch`; the one-process graph shares the twin's clock and never saw it). So the wait
starts at the first reading of a started clock. No rclpy here: the node passes its clock's reading.
"""
from __future__ import annotations


class StepWait:
    def __init__(self, step, now: float, future):
        self.step, self.future = step, future
        self.start: float | None = now if now > 0.0 else None

    def elapsed(self, now: float) -> float:
        """Seconds of the node's clock since the wait began (0 until its clock has started)."""
        if self.start is None:
            if now <= 0.0:
                return 0.0
            self.start = now
        return now - self.start
