"""Checks of measured data a chemist makes before believing a titration's numbers.

- **Local spacing.** Real runs change their step: 0.5 mL in the buffer region, 0.1 mL at the jump,
  1-1.5 mL after it. A window "n points each side" is sized by the spacing *where it is*
  (:func:`local_step`), never by the run's median step, which would make a window at a coarse stretch
  too short to hold the points that are there.
- **Volume order and duplicates** (:func:`volume_order_problems`): cumulative volumes that go backwards
  in the order they were written, and equal volumes whose pH readings disagree, are typing slips or
  mixing faults; they are flagged (the volume range is excluded from the claims, as a quality flag),
  never averaged silently.
- **Initial pH** (:func:`initial_ph_problem`): the first reading against what the named analyte at the
  measured concentration gives; a large difference means an electrode off its calibration or an
  analyte that is not the one named.
- **Gran functions** (:func:`gran_equivalence`): an equivalence volume from the straight lines of the
  Gran functions, independent of the derivative and of the curve model (Gran, Analyst 77 (1952) 661).
  Before the equivalence point of an acid titrated with a strong base, V 10^-pH (a weak acid) or
  (V0 + V) 10^-pH (a strong acid) falls linearly to zero at V_eq; after it, (V0 + V) 10^(pH - pKw) rises
  linearly from zero at V_eq (for an acid titrant the roles of H+ and OH- swap). An electrode offset only
  scales these functions, so the intercept does not depend on it; an electrode slope does not, so readings
  through a fitted electrode are taken back to the solution's pH first. A glass electrode reads the
  activity of H+: with ``activity`` the functions are written with the ions' Davies coefficients at the
  ionic strength of the titrant's counter-ion (and of the strong acid's anion), which otherwise bends the
  weak acid's line by about 3 % of V_eq at 0.1 mol/L.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .water import davies_a, davies_s

__all__ = ["GranEstimate", "gran_equivalence", "initial_ph_problem", "local_step", "volume_order_problems"]


def local_step(v: np.ndarray, centre: float, points: int = 3, side: int = 0) -> float:
    """The median spacing (mL) of the ``points`` steps nearest ``centre``: on both sides (``side`` 0),
    before it (-1) or after it (+1). NaN when there is no step there."""
    steps = np.diff(v)
    mids = (v[:-1] + v[1:]) / 2.0
    keep = steps > 0
    if side < 0:
        keep &= mids <= centre
    elif side > 0:
        keep &= mids >= centre
    steps, mids = steps[keep], mids[keep]
    if steps.size == 0:
        return math.nan
    nearest = np.argsort(np.abs(mids - centre), kind="stable")[:points]
    return float(np.median(steps[nearest]))


def volume_order_problems(volume_ml: np.ndarray, ph: np.ndarray, noise_ph: float = 0.05
                          ) -> tuple[list[str], list[tuple[float, float]]]:
    """(warnings, flagged volume ranges) for volumes written out of order and duplicates that disagree.

    ``volume_ml``/``ph`` in the order they were recorded. A duplicate disagrees when its readings differ
    by more than max(0.1 pH, 5 x ``noise_ph``).
    """
    warnings: list[str] = []
    flags: list[tuple[float, float]] = []
    v, p = np.asarray(volume_ml, float), np.asarray(ph, float)
    for i in np.flatnonzero(np.diff(v) < 0):
        a, b = float(v[i]), float(v[i + 1])
        warnings.append(f"the volume goes backwards from {a:.3f} to {b:.3f} mL at reading {i + 2}: a typing slip "
                        "or a reading in the wrong row; its neighbourhood is flagged")
        flags.append((min(a, b), max(a, b)) if abs(a - b) < 1.0 else (b, b))
    limit = max(0.1, 5.0 * noise_ph)
    for value in np.unique(v):
        same = p[v == value]
        if same.size > 1 and float(np.ptp(same)) > limit:
            warnings.append(f"{same.size} readings at {value:.3f} mL disagree by {float(np.ptp(same)):.2f} pH (more "
                            f"than {limit:.2g}): a typing slip or an unmixed reading; they are averaged and the volume "
                            "is flagged")
            flags.append((float(value), float(value)))
    return warnings, flags


def initial_ph_problem(measured: float, expected: float, analyte: str, concentration_m: float,
                       tolerance_ph: float = 0.3) -> str | None:
    """A sentence when the first reading is further than ``tolerance_ph`` from the named analyte's pH."""
    if not (math.isfinite(measured) and math.isfinite(expected)) or abs(measured - expected) <= tolerance_ph:
        return None
    return (f"the initial pH {measured:.2f} is {abs(measured - expected):.2f} from the {expected:.2f} that "
            f"{concentration_m:.3g} mol/L {analyte} gives: the electrode reads off its calibration, or the sample "
            "is not what is named")


@dataclass
class GranEstimate:
    """An equivalence volume (mL) from one Gran function's straight line, with its standard uncertainty."""

    volume_ml: float
    uncertainty_ml: float
    side: str          # "before" or "after" the equivalence point
    n_points: int
    r2: float


def _line_intercept(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float] | None:
    """x where the least-squares line through (x, y) crosses zero, its standard uncertainty, and r^2."""
    if x.size < 4:
        return None
    a = np.vstack([x, np.ones_like(x)]).T
    coef, *_ = np.linalg.lstsq(a, y, rcond=None)
    slope, intercept = float(coef[0]), float(coef[1])
    if slope == 0:
        return None
    resid = y - a @ coef
    dof = x.size - 2
    s2 = float(resid @ resid) / dof
    cov = s2 * np.linalg.inv(a.T @ a)
    x0 = -intercept / slope
    # x0 = -b/m: gradient (b/m^2, -1/m)
    g = np.array([intercept / slope**2, -1.0 / slope])
    u = math.sqrt(max(float(g @ cov @ g), 0.0))
    ss = float(((y - y.mean()) ** 2).sum())
    return x0, u, (1.0 - float(resid @ resid) / ss) if ss > 0 else 0.0


def gran_equivalence(volume_ml: np.ndarray, ph: np.ndarray, *, v_eq_guess: float, analyte_volume_ml: float,
                     weak: bool, titrant_is_base: bool, pkw: float = 14.0,
                     v_start: float = 0.0, before: bool = True, after: bool = True, activity: bool = False, titrant_m: float = 0.0,
                     analyte_m: float = 0.0, temperature_c: float = 25.0) -> list[GranEstimate]:
    """The Gran estimates of the equivalence volume nearest ``v_eq_guess`` (before and after it).

    Before: the points between 10 % and 90 % of the way from ``v_start`` (the previous equivalence point,
    or 0) to the guess; after: the points from the guess + 2 % to the guess + 30 % (the excess titrant's
    straight line, before dilution and the electrode's alkaline error bend it). The caller says which
    sides hold: ``after`` only where no further acid-base pair buffers the excess titrant, ``before`` only
    where the titrated pair is clearly weak or fully strong.
    """
    v, p = np.asarray(volume_ml, float), np.asarray(ph, float)
    out: list[GranEstimate] = []
    sign = 1.0 if titrant_is_base else -1.0
    # log10 of a monovalent ion's activity coefficient along the titration (0 without activities)
    if activity:
        ionic = np.maximum(titrant_m * v, 0.0 if weak else analyte_m * analyte_volume_ml) / (analyte_volume_ml + v)
        log_gamma = -float(davies_a(temperature_c)) * davies_s(ionic)
    else:
        log_gamma = np.zeros_like(v)
    span = v_eq_guess - v_start
    if span <= 0:
        return out
    use_before, use_after = before, after
    before = (v >= v_start + 0.1 * span) & (v <= v_start + 0.9 * span)
    if use_before and before.sum() >= 4:
        # weak: a(H+) [A-] gamma / [HA] = Ka, so V a(H+) gamma falls to 0 at V_eq; strong: [H+] = a(H+) / gamma
        g = log_gamma[before]
        x = v[before]
        if weak:
            # the acid's own dissociation adds [H+] to the conjugate base the titrant made: with it the
            # abscissa is V + (V0 + V)[H+] / c_titrant, and the line is exact (without, it is off by ~0.3 %)
            if titrant_m > 0:
                x = x + (analyte_volume_ml + x) * 10.0 ** (-sign * p[before] - g) / titrant_m
            y = (x - v_start) * 10.0 ** (-sign * p[before] + g)
        else:
            y = (analyte_volume_ml + x) * 10.0 ** (-sign * p[before] - g)
        got = _line_intercept(x, y / np.max(np.abs(y)))
        if got is not None and math.isfinite(got[0]):
            out.append(GranEstimate(got[0], got[1], "before", int(before.sum()), got[2]))
    after = (v >= v_eq_guess + 0.02 * v_eq_guess) & (v <= v_eq_guess * 1.3)
    if use_after and after.sum() >= 4:
        x = v[after]
        y = (analyte_volume_ml + x) * 10.0 ** (sign * (p[after] - (pkw if sign > 0 else 0.0)) - log_gamma[after])
        got = _line_intercept(x, y / np.max(np.abs(y)))
        if got is not None and math.isfinite(got[0]):
            out.append(GranEstimate(got[0], got[1], "after", int(after.sum()), got[2]))
    return out
