"""An equivalence point bracketed by one addition: the run stopped on (or a drop or two past) the drop that jumped.

A strong acid titrated to a pH past its equivalence stops on the first drop past the target, and on the
jump one drop moves the pH by several units: the data then end with that drop, and the derivative methods
see no peak (nothing after it). The inflection lies inside that addition all the same: the equivalence
volume is its middle, with a rectangular uncertainty of half its width (u = dV / (2 sqrt 3), GUM 4.3.7).

It is stated only when the last step is a jump beyond doubt, at least ``min_jump_ph`` pH, and the inflection
lies inside it: when the equivalence pH the reagents predict is known, the step spans it (the jump of a
strong acid is centred on it; a small sample's steps grow steeply before the jump, so their size alone says
little); without it, the step is ``min_ratio`` times the largest of the ``context`` steps before it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["BracketedEquivalence", "bracketed_equivalence"]


@dataclass(frozen=True)
class BracketedEquivalence:
    volume_ml: float        #: the addition's middle
    low_ml: float           #: the volume before it
    high_ml: float          #: the volume after it
    jump_ph: float          #: the pH change across it
    u_bracket_ml: float     #: rectangular: half the addition's width over sqrt 3


def bracketed_equivalence(volumes_ml, ph, *, expected_ph: float | None = None, min_jump_ph: float = 2.0,
                          min_ratio: float = 5.0, context: int = 10) -> BracketedEquivalence | None:
    """The equivalence bracketed by the data's last addition, or None (see the module docstring)."""
    v = np.asarray(volumes_ml, dtype=float)
    y = np.asarray(ph, dtype=float)
    if v.size < context + 2 or v.size != y.size or not (np.all(np.isfinite(v)) and np.all(np.isfinite(y))):
        return None
    dv, dy = np.diff(v), np.diff(y)
    def bracket(i: int) -> BracketedEquivalence:
        return BracketedEquivalence(float((v[i] + v[i + 1]) / 2.0), float(v[i]), float(v[i + 1]), float(abs(dy[i])),
                                    float(dv[i] / (2.0 * math.sqrt(3.0))))

    if expected_ph is not None and math.isfinite(expected_ph):
        # the addition that crossed the predicted equivalence pH, among the last few (a run that went on past the
        # jump by a drop or two has too few points after it for the derivatives as well)
        for i in range(dy.size - 1, max(dy.size - 1 - context, -1), -1):
            low, high = sorted((y[i], y[i + 1]))
            if dv[i] > 0 and abs(dy[i]) >= min_jump_ph and low < expected_ph < high:
                return bracket(i)
        return None
    if dv[-1] <= 0 or abs(dy[-1]) < min_jump_ph or abs(dy[-1]) < min_ratio * float(np.abs(dy[-1 - context:-1]).max()):
        return None
    return bracket(dy.size - 1)
