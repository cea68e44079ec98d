"""Compact logs of the twin's ground truth: every drop and every true-pH change of a run, kept for grading.

The twin keeps its truth for as long as it runs (experiments back to back on one bench are graded
against the whole of it), so what it keeps per drop decides how a long run grows. A Drop object with its
composition dict costs about 360 bytes; a row here costs about 40 (typed arrays, codes for the few
strings). `as_dicts()` gives the rows back in the shape `Drop.as_dict()` has always had.
"""
from __future__ import annotations

from array import array
from typing import Iterator

from .pipette import Drop

LANDED = ("beaker", "overflow")


class _Codes:
    """A few distinct strings (reagents, causes, fates) stored as small ints."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self._index: dict[str, int] = {}

    def code(self, name: str) -> int:
        i = self._index.get(name)
        if i is None:
            i = self._index[name] = len(self.names)
            self.names.append(name)
        return i


class DropLog:
    """Every drop the pipette let go, in the order they left the tip, with its fate kept up to date."""

    def __init__(self) -> None:
        self._index = array("q")
        self._detach = array("d")
        self._land = array("d")
        self._volume = array("d")
        self._reagent = array("H")
        self._cause = array("B")
        self._fate = array("B")
        self._codes = _Codes()
        self.landed = 0          # drops whose fate is beaker or overflow
        self.landed_ml = 0.0     # their volume, summed in landing order (mL)

    def __len__(self) -> int:
        return len(self._index)

    def add(self, drop: Drop) -> int:
        """Log a drop as it leaves the tip (its fate so far); returns its row for `set_fate`."""
        c = self._codes
        self._index.append(drop.index)
        self._detach.append(drop.detach_time)
        self._land.append(drop.land_time)
        self._volume.append(drop.volume_ml)
        self._reagent.append(c.code(drop.reagent))
        self._cause.append(c.code(drop.cause))
        self._fate.append(c.code(drop.fate))
        row = len(self._index) - 1
        if drop.fate in LANDED:
            self._count_landed(row)
        return row

    def set_fate(self, row: int, fate: str) -> None:
        was = self._codes.names[self._fate[row]]
        self._fate[row] = self._codes.code(fate)
        if fate in LANDED and was not in LANDED:
            self._count_landed(row)

    def _count_landed(self, row: int) -> None:
        self.landed += 1
        self.landed_ml += self._volume[row]

    def fate(self, row: int) -> str:
        return self._codes.names[self._fate[row]]

    def as_dicts(self) -> list[dict]:
        names = self._codes.names
        return [{"index": self._index[i], "time": self._land[i], "detach_time": self._detach[i],
                 "volume_ml": self._volume[i], "reagent": names[self._reagent[i]], "cause": names[self._cause[i]],
                 "fate": names[self._fate[i]]} for i in range(len(self._index))]

    def nbytes(self) -> int:
        """Bytes the rows take (the arrays' buffers)."""
        return sum(a.itemsize * len(a) for a in (self._index, self._detach, self._land, self._volume, self._reagent,
                                                  self._cause, self._fate))


class TimeSeries:
    """(t, value) pairs in two float arrays: 16 bytes a point instead of a 64-byte tuple of two floats."""

    def __init__(self) -> None:
        self._t = array("d")
        self._v = array("d")

    def append(self, t: float, value: float) -> None:
        self._t.append(t)
        self._v.append(value)

    def __len__(self) -> int:
        return len(self._t)

    def __iter__(self) -> Iterator[tuple[float, float]]:
        return zip(self._t, self._v)

    def pairs(self) -> list[list[float]]:
        return [[t, v] for t, v in zip(self._t, self._v)]
