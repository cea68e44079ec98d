"""When does the twin's pipette draw liquid? When the holding arm is at the titrant bottle and the gripper
releases the bulb after squeezing it: the bulb re-inflates and sucks titrant up, as a chemist's hand does.

Pure logic over measured joint positions and gripper opening, so the same rule serves the ROS twin node
and unit tests.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence


@dataclass(frozen=True)
class DrawTriggerConfig:
    bottle_pose: tuple[float, ...]       #: joint angles of the arm at the titrant bottle (rad)
    tolerance_rad: float = 0.03
    squeezed_below_mm: float = 20.0      #: the bulb counts as squeezed below this opening
    released_above_mm: float = 59.5      #: ... and as released above this one (fully open on the bulb:
                                         #: drawing while still squeezed would leave air to expel first)


class DrawTrigger:
    def __init__(self, config: DrawTriggerConfig):
        self.config = config
        self._squeezed_at_bottle = False

    def at_bottle(self, arm: Sequence[float]) -> bool:
        c = self.config
        return len(arm) == len(c.bottle_pose) and \
            max(abs(a - b) for a, b in zip(arm, c.bottle_pose)) <= c.tolerance_rad

    def update(self, arm: Sequence[float], gripper_opening_mm: float) -> bool:
        """True exactly once per squeeze-release cycle completed at the bottle."""
        c = self.config
        if not self.at_bottle(arm):
            self._squeezed_at_bottle = False
            return False
        if gripper_opening_mm < c.squeezed_below_mm:
            self._squeezed_at_bottle = True
            return False
        if self._squeezed_at_bottle and gripper_opening_mm > c.released_above_mm:
            self._squeezed_at_bottle = False
            return True
        return False
