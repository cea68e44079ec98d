"""When the gripper a contact microphone sits in was moving, from its joint states.

A microphone in a gripper hears that gripper's own motor whenever it opens or closes: carrying the beaker
in a weighing, or the re-grip of the pipette bulb in a titration. Those sounds are the robot's, not the
bench's: the drop context judges a non-droplet sound heard while its gripper moved as expected (see
DropContext.classify), so the report does not list the robot's own motions as anomalous sounds. A droplet
is never excused this way: a drop while the gripper moves is still a drop.
"""
from __future__ import annotations

import math
from collections import deque


class GripperMotion:
    """Intervals in which one gripper moved faster than ``min_speed_m_s`` (from successive positions),
    widened by ``margin_s`` each side; kept for ``history_s``."""

    def __init__(self, min_speed_m_s: float = 0.001, margin_s: float = 0.3, history_s: float = 60.0):
        for name, value in (("min_speed_m_s", min_speed_m_s), ("margin_s", margin_s), ("history_s", history_s)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise ValueError(f"GripperMotion: {name} must be a finite number >= 0, got {value!r}")
        self.min_speed_m_s = float(min_speed_m_s)
        self.margin_s = float(margin_s)
        self.history_s = float(history_s)
        self._last: tuple[float, float] | None = None
        self._moving: deque[list[float]] = deque()  # [start, end] in time order, merged when they touch

    def update(self, t: float, position_m: float) -> None:
        """One joint-state sample of the gripper opening (m) at time ``t`` (s). Non-finite samples and
        samples that go back in time are ignored (they say nothing about motion)."""
        if not (math.isfinite(t) and math.isfinite(position_m)):
            return
        last, self._last = self._last, (float(t), float(position_m))
        if last is None or t <= last[0]:
            if last is not None and t < last[0]:
                self._last = last  # keep the newer sample
            return
        if abs(position_m - last[1]) / (t - last[0]) >= self.min_speed_m_s:
            if self._moving and self._moving[-1][1] >= last[0]:
                self._moving[-1][1] = float(t)
            else:
                self._moving.append([last[0], float(t)])
        while self._moving and self._moving[0][1] < t - self.history_s:
            self._moving.popleft()

    def covers(self, t: float) -> bool:
        """The gripper was moving at ``t`` (within the margin)."""
        m = self.margin_s
        return any(a - m <= t <= b + m for a, b in self._moving)
