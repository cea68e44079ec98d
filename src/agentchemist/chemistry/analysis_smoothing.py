"""Resampling and Savitzky-Golay smoothing of a titration curve measured at non-uniform volumes.

Savitzky-Golay filters assume equally spaced samples, while titrant volumes are not (drops vary in
size, data are lost, dosing may be adaptive). The curve is therefore resampled on a uniform volume grid
with a monotone piecewise-cubic interpolant (PCHIP: it never overshoots between two measured points,
so it cannot invent a pH extremum), then smoothed and differentiated there.

Every parameter is chosen from the data and returned with the reason:

* grid step: the 25th percentile of the positive volume increments, so the grid resolves the finest
  dosing steps; widened only when the grid would exceed ``max_grid_points``;
* noise: a robust (median absolute deviation) estimate of the pH scatter from each point's deviation
  from the straight line through its two neighbours, which ignores the few points inside a jump;
* window: minimum of a robust generalised cross-validation score over odd windows; robust means the
  median of the squared residuals replaces their sum, so the handful of points inside a sharp jump do
  not force the whole curve to be under-smoothed (jumps are refined locally, see ``analysis_peaks``);
* polynomial order 2: its first-derivative kernel is a pure ramp whose response to a pH step is a
  single bump without side lobes, so ringing cannot fake a second equivalence point (a cubic gives the
  same smoothed pH and second derivative but a first derivative with negative side lobes).

Volumes in mL, pH dimensionless, first derivative in pH/mL, second derivative in pH/mL^2.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.interpolate import PchipInterpolator
from scipy.signal import savgol_coeffs, savgol_filter

__all__ = ["SmoothedCurve", "estimate_ph_noise", "odd_at_least", "smooth_curve", "savgol_derivatives"]

POLYORDER = 2
MIN_WINDOW = 5
# Below this robust noise the data are effectively noise-free (synthetic or heavily averaged); the
# floor keeps thresholds finite without pretending precision a pH meter cannot have.
NOISE_FLOOR_PH = 1e-4


@dataclass
class SmoothedCurve:
    """A titration curve on a uniform grid with its smoothing parameters (see module docstring)."""

    grid_ml: np.ndarray
    ph_grid: np.ndarray  # PCHIP-resampled measured pH before smoothing
    ph_smooth: np.ndarray
    d1: np.ndarray
    d2: np.ndarray
    interpolant: PchipInterpolator
    window: int
    polyorder: int
    step_ml: float
    noise_sd: float
    d1_noise_sd: float
    reason: str

    def as_dict(self) -> dict:
        """The parameters as reported in ``TitrationAnalysis.smoothing``."""
        return {
            "method": "savitzky_golay",
            "resampling": "pchip",
            "grid_step_ml": self.step_ml,
            "grid_points": int(self.grid_ml.size),
            "window_points": self.window,
            "window_ml": self.window * self.step_ml,
            "polyorder": self.polyorder,
            "noise_sd_ph": self.noise_sd,
            "d1_noise_sd_ph_per_ml": self.d1_noise_sd,
            "reason": self.reason,
        }


def odd_at_least(value: float, minimum: int = MIN_WINDOW) -> int:
    """The nearest odd integer to ``value`` that is >= ``minimum`` (minimum itself made odd)."""
    n = max(int(round(value)), minimum)
    return n if n % 2 == 1 else n + 1


def estimate_ph_noise(volume_ml: np.ndarray, ph: np.ndarray) -> float:
    """Robust standard deviation (pH units) of the scatter about a locally linear curve.

    Each interior point is compared with the line through its two neighbours; for white noise of sd s
    that residual has sd s * sqrt(1 + w1^2 + w2^2) with the interpolation weights w. The MAD of the
    normalised residuals (times 1.4826) is insensitive to the few points inside a jump.
    """
    v, p = np.asarray(volume_ml, float), np.asarray(ph, float)
    if v.size < 3:
        return float("nan")
    dv_left = v[1:-1] - v[:-2]
    dv_right = v[2:] - v[1:-1]
    span = dv_left + dv_right
    w_prev = dv_right / span
    w_next = dv_left / span
    residual = p[1:-1] - (w_prev * p[:-2] + w_next * p[2:])
    scaled = residual / np.sqrt(1.0 + w_prev**2 + w_next**2)
    mad = float(np.median(np.abs(scaled - np.median(scaled))))
    return max(1.4826 * mad, NOISE_FLOOR_PH)


def _grid_step(volume_ml: np.ndarray, max_grid_points: int) -> tuple[float, str]:
    steps = np.diff(volume_ml)
    steps = steps[steps > 0]
    step = float(np.percentile(steps, 25))
    span = float(volume_ml[-1] - volume_ml[0])
    why = f"25th percentile of the {steps.size} volume increments"
    if span / step + 1 > max_grid_points:
        step = span / (max_grid_points - 2)
        why += f", widened to keep the grid at {max_grid_points} points"
    return step, why


def savgol_derivatives(values: np.ndarray, window: int, step_ml: float, polyorder: int = POLYORDER):
    """Smoothed values, first and second derivative (per mL, per mL^2) of uniformly spaced ``values``."""
    smooth = savgol_filter(values, window, polyorder, deriv=0, mode="interp")
    d1 = savgol_filter(values, window, polyorder, deriv=1, delta=step_ml, mode="interp")
    d2 = savgol_filter(values, window, polyorder, deriv=2, delta=step_ml, mode="interp")
    return smooth, d1, d2


def _robust_gcv_window(
    volume_ml: np.ndarray, ph: np.ndarray, grid: np.ndarray, ph_grid: np.ndarray, max_window: int
) -> tuple[int, dict[int, float]]:
    """Window minimising a robust GCV score, evaluated at the measured points."""
    scores: dict[int, float] = {}
    for window in range(MIN_WINDOW, max_window + 1, 2):
        smooth = savgol_filter(ph_grid, window, POLYORDER, mode="interp")
        residual = ph - np.interp(volume_ml, grid, smooth)
        # Median of squared residuals / 0.4549 (median of chi-square with 1 dof) estimates the mean
        # squared residual without the jump points.
        robust_mse = float(np.median(residual**2)) / 0.4549
        centre = float(savgol_coeffs(window, POLYORDER)[window // 2])
        dof_fraction = 1.0 - centre
        scores[window] = robust_mse / dof_fraction**2 if dof_fraction > 0 else math.inf
    best = min(scores, key=lambda w: (scores[w], w))
    return best, scores


def smooth_curve(volume_ml: np.ndarray, ph: np.ndarray, *, max_grid_points: int = 20000) -> SmoothedCurve:
    """Resample (PCHIP), choose the window (robust GCV) and smooth/differentiate (Savitzky-Golay).

    ``volume_ml`` must be strictly increasing with at least ``MIN_WINDOW + 2`` points (the caller,
    :func:`agentchemist.chemistry.analysis.analyze_titration`, checks this).
    """
    step, step_why = _grid_step(volume_ml, max_grid_points)
    # Round the number of intervals up and shrink the step to fit, so the grid ends on the last point.
    span = float(volume_ml[-1] - volume_ml[0])
    n_grid = int(math.ceil(span / step - 1e-9)) + 1
    step = span / (n_grid - 1)
    grid = np.linspace(volume_ml[0], volume_ml[-1], n_grid)
    interpolant = PchipInterpolator(volume_ml, ph, extrapolate=False)
    ph_grid = interpolant(np.clip(grid, volume_ml[0], volume_ml[-1]))
    noise = estimate_ph_noise(volume_ml, ph)
    # Windows wider than a twentieth of the grid would blur neighbouring equivalence points of a
    # polyprotic acid together; at least MIN_WINDOW points are needed for a quadratic.
    max_window = odd_at_least(min(101, n_grid // 20), MIN_WINDOW)
    if max_window > n_grid:
        max_window = n_grid if n_grid % 2 == 1 else n_grid - 1
    if max_window < MIN_WINDOW:
        raise ValueError(f"grid of {n_grid} points is too short for a {MIN_WINDOW}-point window")
    window, _ = _robust_gcv_window(volume_ml, ph, grid, ph_grid, max_window)
    smooth, d1, d2 = savgol_derivatives(ph_grid, window, step)
    d1_gain = float(np.linalg.norm(savgol_coeffs(window, POLYORDER, deriv=1, delta=step)))
    reason = (
        f"grid step {step:.4g} mL ({step_why}); window {window} points = {window * step:.3g} mL chosen by "
        f"robust generalised cross-validation over odd windows {MIN_WINDOW}..{max_window}; polyorder "
        f"{POLYORDER} (first-derivative kernel without side lobes); pH noise sd {noise:.3g} (MAD of "
        "residuals from neighbour lines)"
    )
    return SmoothedCurve(
        grid_ml=grid,
        ph_grid=ph_grid,
        ph_smooth=smooth,
        d1=d1,
        d2=d2,
        interpolant=interpolant,
        window=window,
        polyorder=POLYORDER,
        step_ml=step,
        noise_sd=noise,
        d1_noise_sd=noise * d1_gain,
        reason=reason,
    )
