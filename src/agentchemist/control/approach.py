"""How much titrant is left to a pH target, from two settled (volume, pH) anchors: the logarithmic approach model.

Near an equivalence point the species the titrant consumes falls linearly with the volume added, and the pH
is the logarithm of it: pH = a - log10(V_s - V), with V_s the volume where that species runs out (the
equivalence). Two settled anchors (V0, pH0), (V1, pH1) fix both unknowns:

    10 ** (pH1 - pH0) = (V_s - V0) / (V_s - V1)   =>   V_s - V1 = (V1 - V0) / (10 ** (pH1 - pH0) - 1)

and the volume from V1 to a target pH_t short of the singularity is (V_s - V1) * (1 - 10 ** -(pH_t - pH1)).

Why this model and not the secant (pH change per mL) extrapolated in a straight line: the straight line
under-predicts the slope of a curve that steepens towards its jump, so it overshoots just where a strong acid
jumps several pH units in one drop; the logarithm is that steepening. It is exact for a strong acid away from
the dilution, and it errs on the safe side (predicts less titrant than is left) wherever the pH rises faster
than the logarithm: a weak acid's buffer (pH = pKa + log10(V / (V_s - V)) adds the log10(V) term), the
dilution of a strong acid, and past an inflection, where the curve flattens (its rise is then the logarithm
of the excess, which the model reads as a jump still to come). The settled levels are known to a band, and
the rise is taken at the top of it, so that noise can only make the prediction smaller.
"""
from __future__ import annotations

import math


def remaining_to_target_ml(anchor0: tuple[float, float], anchor1: tuple[float, float], target_ph: float,
                           direction: int, band_ph: float) -> float:
    """Titrant (mL) from the newer anchor to the target pH under the logarithmic model; 0 when the newer
    anchor is at or past the target; NaN when the anchors say nothing (no volume between them, or a pH that
    moved away from the target by more than the band). Anchors: (volume mL, settled pH)."""
    (v0, p0), (v1, p1) = anchor0, anchor1
    dv = v1 - v0
    rise = direction * (p1 - p0) + band_ph   # the steepest rise the two settled levels allow
    if not (math.isfinite(dv) and dv > 0 and math.isfinite(rise) and rise > 0):
        return math.nan
    distance = direction * (target_ph - p1)
    if distance <= 0:
        return 0.0
    to_singularity = dv / math.expm1(rise * math.log(10.0))
    return to_singularity * -math.expm1(-distance * math.log(10.0))
