"""Equivalence points: first-derivative peaks, refined by the second-derivative zero crossing.

Detection works on the globally smoothed first derivative (``analysis_smoothing``): a peak counts when
its prominence exceeds both ``prominence_sigma`` times the derivative noise and a fraction of the mean
slope of the whole curve, and when the pH actually rises (or falls, for a base titrated with acid) by
``min_jump_ph`` across its half-maximum region. Prominence, not height, is what separates the shallow
first jump of maleic acid from the buffer regions beside it.

Refinement is local because one window cannot suit a 0.1 mL strong-acid jump and a 5 mL polyprotic
one: starting from the global window, the window is set to three quarters of the width of the
derivative peak it produces, until it no longer changes. Within the final peak, the volume where the second derivative
changes sign is found by linear interpolation between grid points; the first-derivative maximum
(parabolic interpolation) is kept as a cross-check and their disagreement enters the uncertainty.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from scipy.signal import find_peaks, savgol_coeffs

from .analysis_checks import local_step
from .analysis_smoothing import MIN_WINDOW, POLYORDER, SmoothedCurve, odd_at_least, savgol_derivatives
from .analysis_types import AnalysisConfig, EquivalencePoint

__all__ = ["locate_equivalence_points"]

MAX_REFINE_ITERATIONS = 8
# Local window as a fraction of the derivative peak's full width at half maximum. Wider windows cut
# the noise of the zero crossing (as W^-2.5) but bias it on asymmetric peaks; 0.75 gave the smallest
# error on synthetic maleic (broad) and HCl (sharp) curves with 0.01 pH noise, and converges to the
# minimum window on a jump only one or two drops wide.
LOCAL_WINDOW_FRACTION = 0.75


def _half_max_region(y: np.ndarray, i: int, lo: int, hi: int) -> tuple[int, int]:
    """Grid indices [left, right] around ``i`` (within lo..hi) where y stays >= y[i] / 2."""
    half = y[i] / 2.0
    left = i
    while left > lo and y[left - 1] >= half:
        left -= 1
    right = i
    while right < hi and y[right + 1] >= half:
        right += 1
    return left, right


def _parabolic_peak(y: np.ndarray, i: int) -> float:
    """Sub-grid offset of a sampled maximum from a parabola through three points (in grid steps)."""
    if i <= 0 or i >= y.size - 1:
        return 0.0
    a, b, c = y[i - 1], y[i], y[i + 1]
    denom = a - 2.0 * b + c
    return float(0.5 * (a - c) / denom) if denom < 0 else 0.0


def _refine(curve: SmoothedCurve, direction: float, i_peak: int, region: tuple[int, int], lo: int, hi: int):
    """Iterate the local window; return a dict describing the refined equivalence point."""
    step = curve.step_ml
    cap = odd_at_least(max(MIN_WINDOW, min((hi - lo) // 2, 201)))
    if cap > curve.grid_ml.size:
        cap = curve.grid_ml.size if curve.grid_ml.size % 2 else curve.grid_ml.size - 1
    window = min(curve.window, cap)
    seen: set[int] = set()
    for _ in range(MAX_REFINE_ITERATIONS):
        seen.add(window)
        smooth, d1, d2 = savgol_derivatives(curve.ph_grid, window, step)
        y = direction * d1
        a = max(lo, region[0] - window)
        b = min(hi, region[1] + window)
        i_loc = a + int(np.argmax(y[a : b + 1]))
        left, right = _half_max_region(y, i_loc, lo, hi)
        new_window = min(odd_at_least(LOCAL_WINDOW_FRACTION * (right - left + 1)), cap)
        if new_window == window or new_window in seen:
            break
        window = new_window
    z = direction * d2
    # Sign change + -> - of the second derivative inside the peak, nearest to the d1 maximum.
    js = [j for j in range(left, right) if z[j] > 0 >= z[j + 1]]
    d1_peak = curve.grid_ml[i_loc] + step * _parabolic_peak(y, i_loc)
    d2_gain = float(np.linalg.norm(savgol_coeffs(window, POLYORDER, deriv=2, delta=step)))
    if js:
        j = min(js, key=lambda k: abs(k + 0.5 - i_loc))
        frac = z[j] / (z[j] - z[j + 1])
        volume = float(curve.grid_ml[j] + step * frac)
        d2_slope = abs(z[j + 1] - z[j]) / step
        u_noise = curve.noise_sd * d2_gain / d2_slope if d2_slope > 0 else math.inf
        method = "d1_peak+d2_zero_crossing"
    else:
        volume = float(d1_peak)
        u_noise = curve.noise_sd * d2_gain / max(abs(z[i_loc]), 1e-12) * step
        method = "d1_peak"
    return {
        "volume": volume,
        "d1_peak": float(d1_peak),
        "u_noise": float(u_noise),
        "window": window,
        "left": int(left),
        "right": int(right),
        "method": method,
        "smooth": smooth,
    }


def _or(x: float, fallback: float) -> float:
    return x if math.isfinite(x) and x > 0 else fallback


def _overlapping(flags: Sequence[tuple[float, float]], lo: float, hi: float) -> list[tuple[float, float]]:
    return [(a, b) for a, b in flags if a <= hi and b >= lo]


def _evidence(volume_ml: np.ndarray, eq_volume: float, jump: tuple[float, float], median_step: float,
              cfg: AnalysisConfig, flags: Sequence[tuple[float, float]]) -> tuple[bool, str, int, int, float]:
    """Check the measured points around an equivalence point; return (ok, reason, before, after, gap).

    Each side's window follows the spacing on that side (a run that steps 0.1 mL through the jump and
    1-1.5 mL after it has its points after the jump 1-1.5 mL apart, not a median step apart); the gap
    that matters is the one crossing the jump: between the measured points inside the jump region and
    the nearest one outside it on each side, against the spacing around the jump.
    """
    need = cfg.jump_points_each_side
    step_before = _or(local_step(volume_ml, eq_volume, need, side=-1), median_step)
    step_after = _or(local_step(volume_ml, eq_volume, need, side=+1), median_step)
    reach_before = max(eq_volume - jump[0], (need + 0.5) * step_before)
    reach_after = max(jump[1] - eq_volume, (need + 0.5) * step_after)
    reach = max(reach_before, reach_after)
    near = volume_ml[(volume_ml >= eq_volume - reach_before) & (volume_ml <= eq_volume + reach_after)]
    before = int(np.sum(near < eq_volume))
    after = int(np.sum(near > eq_volume))
    k = int(np.searchsorted(volume_ml, eq_volume))
    bracket_lo = volume_ml[k - 1] if k > 0 else volume_ml[0]
    bracket_hi = volume_ml[k] if k < volume_ml.size else volume_ml[-1]
    lo_i = max(int(np.searchsorted(volume_ml, min(jump[0], bracket_lo))) - 1, 0)
    hi_i = min(int(np.searchsorted(volume_ml, max(jump[1], bracket_hi), side="right")), volume_ml.size - 1)
    pts = np.union1d(volume_ml[lo_i:hi_i + 1], [bracket_lo, bracket_hi])
    gap = float(np.max(np.diff(pts))) if pts.size > 1 else math.inf
    median_step = _or(local_step(volume_ml, eq_volume, 2 * need), median_step)
    problems = []
    if before < need:
        problems.append(f"only {before} measured point(s) before it within {reach:.3g} mL (need {need})")
    if after < need:
        problems.append(
            f"only {after} measured point(s) after it within {reach:.3g} mL (need {need}; "
            "did the run end inside the jump?)"
        )
    if gap > cfg.max_gap_factor * median_step:
        problems.append(
            f"a {gap:.3g} mL gap without data crosses the jump ({gap / median_step:.1f} times the local "
            f"step {median_step:.3g} mL; at most {cfg.max_gap_factor:g} allowed)"
        )
    flag_lo = min(jump[0], bracket_lo) - median_step
    flag_hi = max(jump[1], bracket_hi) + median_step
    hit = _overlapping(flags, flag_lo, flag_hi)
    if hit:
        ranges = ", ".join(f"{a:.3f}-{b:.3f} mL" for a, b in hit)
        problems.append(f"quality-flagged data ({ranges}) overlap the jump {flag_lo:.3f}-{flag_hi:.3f} mL")
    if problems:
        return False, "; ".join(problems), before, after, gap
    reason = (
        f"{before} points before and {after} after within {reach:.3g} mL, largest gap {gap:.3g} mL "
        f"({gap / median_step:.1f} local steps), no flagged data in {flag_lo:.3f}-{flag_hi:.3f} mL"
    )
    return True, reason, before, after, gap


def locate_equivalence_points(
    volume_ml: np.ndarray,
    ph: np.ndarray,
    curve: SmoothedCurve,
    cfg: AnalysisConfig,
    *,
    expected: int | None,
    flags: Sequence[tuple[float, float]],
) -> tuple[list[EquivalencePoint], list[dict], list[str], np.ndarray]:
    """Equivalence points in volume order, per-point refinement details, warnings, and the adaptive curve.

    The adaptive curve is the globally smoothed pH with each jump replaced by its locally smoothed
    version (the window used to locate that equivalence point), so a drawing of it follows a sharp jump
    instead of smearing it over the global window.
    """
    warnings: list[str] = []
    grid, smooth = curve.grid_ml, curve.ph_smooth
    direction = 1.0 if smooth[-1] >= smooth[0] else -1.0
    y = direction * curve.d1
    span = float(grid[-1] - grid[0])
    mean_slope = abs(float(smooth[-1] - smooth[0])) / span if span > 0 else 0.0
    threshold = max(cfg.prominence_sigma * curve.d1_noise_sd, cfg.slope_floor_fraction * mean_slope)
    peaks, props = find_peaks(y, prominence=threshold)
    candidates = []
    for i, prominence in zip(peaks, props["prominences"]):
        left, right = _half_max_region(y, int(i), 0, grid.size - 1)
        rise = direction * float(smooth[right] - smooth[left])
        if rise < cfg.min_jump_ph:
            continue
        candidates.append((int(i), float(prominence), (left, right)))
    n_found = len(candidates)
    if expected is not None and n_found > expected:
        candidates = sorted(candidates, key=lambda c: -c[1])[:expected]
        warnings.append(
            f"{n_found} derivative peaks passed the thresholds; kept the {expected} most prominent as expected"
        )
    candidates.sort(key=lambda c: c[0])
    tail = y[-max(3, curve.window // 2):]
    if float(np.mean(tail)) > threshold and y[-1] >= 0.5 * float(np.max(y)):
        warnings.append(
            f"the pH is still changing steeply at the end of the data ({direction * curve.d1[-1]:.3g} pH/mL at "
            f"{grid[-1]:.3f} mL): the run may have stopped inside a jump, which then cannot be located"
        )
    if not candidates:
        warnings.append(
            "no equivalence point: the first derivative has no peak with prominence >= "
            f"{threshold:.3g} pH/mL and a pH change >= {cfg.min_jump_ph:g} across it "
            f"(data span {grid[0]:.3f}-{grid[-1]:.3f} mL, pH {np.min(ph):.2f}-{np.max(ph):.2f})"
        )
    elif expected is not None and len(candidates) < expected:
        warnings.append(
            f"expected {expected} equivalence point(s) but the data show {len(candidates)} jump(s); the "
            "missing ones are too shallow or outside the measured range"
        )
    steps = np.diff(volume_ml)
    median_step = float(np.median(steps[steps > 0]))
    points: list[EquivalencePoint] = []
    details: list[dict] = []
    adaptive = curve.ph_smooth.copy()
    peak_ids = [c[0] for c in candidates]
    for n, (i, _, region) in enumerate(candidates):
        lo = 0 if n == 0 else (peak_ids[n - 1] + i) // 2
        hi = grid.size - 1 if n == len(candidates) - 1 else (i + peak_ids[n + 1]) // 2
        r = _refine(curve, direction, i, region, lo, hi)
        jump = (float(grid[r["left"]]), float(grid[r["right"]]))
        a = max(lo, r["left"] - curve.window)
        b = min(hi, r["right"] + curve.window)
        adaptive[a : b + 1] = r["smooth"][a : b + 1]
        ok, reason, before, after, gap = _evidence(volume_ml, r["volume"], jump, median_step, cfg, flags)
        u_gap = gap / math.sqrt(12.0) if math.isfinite(gap) else math.inf
        u_disagree = abs(r["volume"] - r["d1_peak"]) / 2.0
        uncertainty = math.sqrt(u_gap**2 + r["u_noise"] ** 2 + u_disagree**2 + curve.step_ml**2 / 12.0)
        points.append(
            EquivalencePoint(
                volume_ml=r["volume"],
                ph=float(curve.interpolant(r["volume"])),
                method=r["method"],
                uncertainty_ml=uncertainty,
                supported=ok,
                reason=reason,
                index=n + 1,
                d1_peak_ml=r["d1_peak"],
                jump_region_ml=jump,
                window_points=r["window"],
                points_before=before,
                points_after=after,
            )
        )
        details.append({"index": n + 1, "window_points": r["window"], "window_ml": r["window"] * curve.step_ml,
                        "jump_region_ml": jump})
    return points, details, warnings, adaptive
