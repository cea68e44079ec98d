"""The robot's own labware moves, seen from the bench watch, free of ROS.

The vision supervisor watches the bench for labware that goes missing or moves (perception/scene.py
LabwareWatch). When the robot itself carries the beaker, takes the bottle or tilts it over the beaker
(a weighing), those changes are its own doing, not faults: the watch is suspended while such a motion
runs and restarts from the first front frame taken after it ends, without the items the robot holds.

A motion that leaves the bench as it was (a titration's grasp of the pipette, the draw, the move over the
beaker) passes in front of the camera: its arm hides tags for seconds (in MuJoCo the pipette grasp hid a
beaker behind it long enough to confirm a labware_missing). Frames taken while it runs are not compared;
the watch keeps the reference of the scene check, so what the arm leaves changed is still seen after it.
"""
from __future__ import annotations


class OwnMoves:
    """Which items the robot holds, and from when the next frame is the bench to keep."""

    def __init__(self) -> None:
        self.held: set[str] = set()
        self._after: float | None = None
        self._passing: tuple[float, float] | None = None  # (from, until) of a motion past the bench

    def reset(self) -> None:
        """A new experiment: nothing held, no rebaseline pending, no motion passing."""
        self.held.clear()
        self._after = None
        self._passing = None

    def passing(self, now: float) -> None:
        """A motion that moves no labware begins at ``now``: frames from then on are not compared."""
        self._passing = (float(now), float("inf"))

    def passed(self, now: float) -> None:
        """That motion is over at ``now``: frames taken after it are compared with the same reference."""
        if self._passing is not None:
            self._passing = (self._passing[0], float(now))

    def blind(self, stamp: float) -> bool:
        """Whether the frame taken at ``stamp`` may show the robot's arm passing (not to be compared)."""
        return self._passing is not None and self._passing[0] <= stamp <= self._passing[1]

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
