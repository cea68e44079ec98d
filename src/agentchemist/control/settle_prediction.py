"""Where a pH reading that is still settling will settle: a first-order lag fitted to the readings of a hold.

After the dispenser stops, the meter's reading creeps on for several seconds: the drops mix in (stirring) and
the glass electrode follows the solution with its own time constant. Waiting until the reading is flat costs
4-8 s per hold (bench/adaptive_dispensing.py); most of that wait only confirms what the first two seconds of
the creep already show. The creep is close to one exponential once the faster of the two lags has passed:

    y(t) = level - a * exp(-(t - t0) / tau)

For a given tau this is linear in (level, a): least squares. Two seconds of a noisy creep cannot tell tau
(the levels that tau = 1 s and tau = 12 s predict differ by 0.2 pH there), but a whole hold that was waited out
can: `fit_time_constant` takes the tau of the geometric grid that fits such a hold best, when the time
constants statistically as good (residual sum of squares within an F-test bound) span no more than a factor
of 2. tau is not read from any instrument: the controller learns it on its own full holds. `predict_level`
then fits the early creep of a later hold with that tau, and with tau 1.15x smaller and larger: the prediction
stands only when the three levels agree to within the band (a creep that is over agrees anyway; one still
early in its curve does not, and the hold goes on).
"""
from __future__ import annotations

import math

import numpy as np

#: time constants tried (s): the mixing of a stirred beaker (about 1 s) to a slow, aged electrode
TAU_GRID_S = np.geomspace(0.3, 12.0, 40)
#: a prediction holds for every time constant within this factor of the learnt one (holds of one
#: titration learn it to within about 10 %)
TAU_SPREAD = 1.15


def _fits(t: np.ndarray, y: np.ndarray, taus) -> tuple[list[float], list[float]]:
    """(level, residual sum of squares) of the least-squares fit for each tau."""
    levels, ssr = [], []
    for tau in taus:
        basis = np.column_stack([np.ones(len(t)), -np.exp(-t / tau)])
        coef, *_ = np.linalg.lstsq(basis, y, rcond=None)
        levels.append(float(coef[0]))
        ssr.append(float(np.sum((basis @ coef - y) ** 2)))
    return levels, ssr


def _arrays(stamps, values, min_samples: int):
    if len(values) < min_samples or len(values) != len(stamps):
        return None
    t = np.asarray(stamps, dtype=float) - stamps[0]
    y = np.asarray(values, dtype=float)
    if not (np.all(np.isfinite(t)) and np.all(np.isfinite(y))) or t[-1] <= 0:
        return None
    return t, y


def fit_time_constant(stamps: list[float], values: list[float], noise_sd: float, min_creep_ph: float,
                      min_samples: int = 15) -> float | None:
    """The time constant (s) of a whole hold's creep (oldest reading first), or None when these readings do not
    pin it down: a creep smaller than `min_creep_ph`, more than one exponential explains, or the time
    constants as good as the best (F bound) spanning more than a factor of 2."""
    arrays = _arrays(stamps, values, min_samples)
    if arrays is None:
        return None
    t, y = arrays
    if abs(float(y[-3:].mean() - y[:3].mean())) < min_creep_ph:
        return None
    _, ssr = _fits(t, y, TAU_GRID_S)
    n, best = len(y), min(ssr)
    if best > 4.0 * (n - 2) * max(noise_sd, 1e-6) ** 2:
        return None
    bound = max(best, (n - 2) * noise_sd ** 2) * (1.0 + 4.0 / (n - 2))
    plausible = [tau for tau, s in zip(TAU_GRID_S, ssr) if s <= bound]
    if max(plausible) > 2.0 * min(plausible):
        return None
    return float(TAU_GRID_S[int(np.argmin(ssr))])


def predict_level(stamps: list[float], values: list[float], tau_s: float, noise_sd: float, band_ph: float,
                  min_samples: int = 8) -> float | None:
    """The level the readings (oldest first) settle at, given the creep's time constant learnt on earlier holds,
    or None: the readings are not one exponential of about that time constant (a drop landed, a step, a
    drift), or the levels fitted with tau_s / TAU_SPREAD .. tau_s * TAU_SPREAD differ by more than `band_ph`
    (too early in the creep to tell)."""
    arrays = _arrays(stamps, values, min_samples)
    if arrays is None or not (math.isfinite(tau_s) and tau_s > 0):
        return None
    t, y = arrays
    taus = (tau_s / TAU_SPREAD, tau_s, tau_s * TAU_SPREAD)
    levels, ssr = _fits(t, y, taus)
    if ssr[1] > 4.0 * (len(y) - 2) * max(noise_sd, 1e-6) ** 2:
        return None
    if max(levels) - min(levels) > band_ph:
        return None
    return levels[1]
