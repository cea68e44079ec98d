"""The robot's own labware moves, seen from the bench watch, free of ROS.

The vision supervisor watches the bench for labware that goes missing or moves (perception/scene.py
LabwareWatch). When the robot itself carries the beaker, takes the bottle or tilts it over the beaker
(a weighing), those changes are its own doing, not faults: the watch is suspended while such a motion
runs and restarts from the first front frame taken after it ends, without the items the robot holds.
"""
from __future__ import annotations


class OwnMoves:
    """Which items the robot holds, and from when the next frame is the bench to keep."""

    def __init__(self) -> None:
        self.held: set[str] = set()
        self._after: float | None = None

    def reset(self) -> None:
        """A new experiment: nothing held, no rebaseline pending."""
        self.held.clear()
        self._after = None

    def moving(self) -> None:
        """A motion of the robot's own begins: no frame is the bench until it is over."""
        self._after = None

    def moved(self, now: float, held: str | None = None) -> None:
        """The motion is over at ``now``; ``held``: the item it left in a gripper (not watched from now)."""
        if held:
            self.held.add(held)
        self._after = float(now)

    def rebaseline(self, stamp: float) -> bool:
        """Whether the frame taken at ``stamp`` is the bench to watch from (true once per finished motion)."""
        if self._after is not None and stamp > self._after:
            self._after = None
            return True
        return False
