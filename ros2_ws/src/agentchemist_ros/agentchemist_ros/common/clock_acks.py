"""An agent's acknowledgement of the twin's clock (ClockAck on /agentchemist/clock_acks).

A node in its own process that follows the twin's /clock (use_sim_time true) publishes, from a timer on
its ROS clock, the sim time its executor has reached. The twin keeps its clock at most max_lead_s ahead
of the slowest node that acknowledges (agentchemist.sim.lockstep), so a node starved of CPU slows the
twin instead of seeing the world rush past it. In the one-process graph (demo, scenario runner, tests)
the nodes share the twin's executor, whose queue keeps them in step, and their clocks are attached to
one time source rather than use_sim_time: nothing is published there. On the robot the clock is the
wall clock and nothing listens.

A node's clock is the latest /clock (depth 1), while its input streams queue up (reliable, deep): on a
loaded machine a node in its own process has read its clock to the present while its pH readings wait
unread, and judged the meter silent (the fault campaign: "no pH reading for 3.2 s" with the meter fine).
So a node that judges an input stream acknowledges the sim time it has read that stream through
(InputProgress), not its clock; the twin then waits for the node to read what was sent. A stream silent
in wall time (the source stopped, a real dropout) no longer holds the acknowledgement back, so the twin
never waits on a stream that will not come (the node's own timeouts judge it, in sim time).
"""
import time

from agentchemist_interfaces.msg import ClockAck
from agentchemist_ros.common import topics
from agentchemist_ros.common.params import declare
from agentchemist_ros.common.timeconv import node_now, to_msg


#: wall seconds without a message after which an input stream no longer holds the acknowledgement back
SILENT_STREAM_WALL_S = 0.5


class InputProgress:
    """The sim time up to which a node has read one input stream (the stamp of the latest message read)."""

    def __init__(self):
        self.stamp: float | None = None
        self.read_at = 0.0  # monotonic wall time of the latest message read
        self.on_read = None  # set by acknowledge_clock: a held-back acknowledgement goes out as reading catches up

    def read(self, stamp: float) -> None:
        self.stamp, self.read_at = stamp, time.monotonic()
        if self.on_read is not None:
            self.on_read()

    def reached(self, now: float) -> float:
        """What the node can acknowledge: its clock, held back to the stream while the stream flows."""
        if self.stamp is None or time.monotonic() - self.read_at > SILENT_STREAM_WALL_S:
            return now
        return min(now, self.stamp)


def acknowledge_clock(node, inputs: InputProgress | None = None):
    """Declare clock_ack_period_s and start the acknowledgements (None when off or not on sim time); with
    `inputs`, acknowledge how far that stream has been read (see the module docstring)."""
    period = declare(node, "clock_ack_period_s", 0.5,
                     "Sim s between ClockAck messages to the twin (its clock stays within max_lead_s of the "
                     "slowest acknowledging node); 0 = off", low=0.0, high=1.0)
    # high=1.0: the twin's max_lead_s is at least 1 s (lab_sim_config), so a node that has caught up
    # always acknowledges before the twin would wait on it (no deadlock).
    if period <= 0.0 or not node.get_parameter("use_sim_time").value:
        return None
    pub = node.create_publisher(ClockAck, topics.CLOCK_ACKS, 10)
    name = node.get_fully_qualified_name()
    last = [float("-inf")]

    def acknowledge(force: bool = True):
        now = node_now(node)
        reached = inputs.reached(now) if inputs is not None else now
        if force or reached - last[0] >= period:
            last[0] = reached
            pub.publish(ClockAck(stamp=to_msg(reached), node=name))

    if inputs is not None:
        # The timer runs on the node's clock, which stands while the twin waits for this node: an
        # acknowledgement held back by the stream must also go out when the stream is read, or the twin
        # would wait until ack_dead_s and then run on unbounded.
        inputs.on_read = lambda: acknowledge(force=False)
    return node.create_timer(period, acknowledge)
