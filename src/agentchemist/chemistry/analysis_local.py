"""Equivalence point from the equilibrium model fitted locally across the jump.

The derivative method (:mod:`.analysis_peaks`) finds *where* a jump is from a smoothed curve. At a
strong-acid jump the pH changes by several units within one drop, so a few hundredths of a millilitre
of smoothing bias move the pH read at that volume by a whole pH unit, and a smoothed line through the
jump leaves the measured points. Here the jump is described by chemistry instead: the same
charge-balance model as the whole-curve fit (:mod:`.analysis_fit`), its pKa values held at the
whole-curve fit's (or the library's), and only the analyte concentration, i.e. the equivalence volume,
fitted to the measured points across the jump. The model is monotone in volume and passes through the
data by construction; the equivalence volume is where the model's titrant equals the analyte's
titratable protons, and the equivalence pH is the model's pH there (7.00 for HCl/NaOH at 25 degC,
about 8.7 for 0.1 M acetic acid).

The result is used only when the fit converges, its residuals are those of a model that describes the
points (``local_max_rms_ph``), and it agrees with the derivative estimate within the latter's
uncertainty widened by the local drop spacing; otherwise the derivative estimate stands and the reason
is reported.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import least_squares

from .analysis_fit import CONC_BOUNDS_M, _Model, titratable_steps
from .reagents import Reagent

__all__ = ["LocalJumpFit", "fit_jump"]

# Measured points each side of the equivalence volume that the local fit uses (at least; the whole
# derivative jump region is always included).
POINTS_EACH_SIDE = 8
MIN_POINTS_EACH_SIDE = 3


@dataclass
class LocalJumpFit:
    """The model fitted across one jump: equivalence volume (mL) and pH, standard uncertainty (mL)."""

    volume_ml: float
    ph: float
    uncertainty_ml: float
    rms_ph: float
    n_points: int
    window_ml: tuple[float, float]
    step: int
    grid_ph: np.ndarray | None = None  # the fitted model on the caller's grid inside window_ml, NaN outside
    dense: tuple[np.ndarray, np.ndarray] | None = None  # the model at 400 volumes across window_ml


def fit_jump(
    volume_ml: np.ndarray,
    ph: np.ndarray,
    *,
    centre_ml: float,
    jump_ml: tuple[float, float],
    analyte: Reagent,
    pka: tuple[float, ...],
    titrant: Reagent,
    titrant_m: float,
    analyte_volume_ml: float,
    concentration_guess_m: float,
    temperature_c: float,
    activity: bool,
    keep: np.ndarray,
    grid_ml: np.ndarray | None = None,
) -> LocalJumpFit | str:
    """Fit the analyte concentration to the points across the jump near ``centre_ml``.

    Returns the fit, or a sentence saying why there is none (too few points, no titration step near
    the jump, solver failure).
    """
    v, p = volume_ml[keep], ph[keep]
    steps, capacity = titratable_steps(analyte, titrant)
    if steps < 1 or not (concentration_guess_m > 0):
        return "the model has no titratable step"
    per_step = concentration_guess_m * analyte_volume_ml / (titrant_m * capacity)
    step = min(range(1, steps + 1), key=lambda k: abs(k * per_step - centre_ml))
    k = int(np.searchsorted(v, centre_ml))
    lo = max(0, min(k - POINTS_EACH_SIDE, int(np.searchsorted(v, jump_ml[0]))))
    hi = min(v.size, max(k + POINTS_EACH_SIDE, int(np.searchsorted(v, jump_ml[1], side="right"))))
    vv, pp = v[lo:hi], p[lo:hi]
    before, after = int(np.sum(vv < centre_ml)), int(np.sum(vv > centre_ml))
    if before < MIN_POINTS_EACH_SIDE or after < MIN_POINTS_EACH_SIDE:
        return (f"{before} point(s) before and {after} after the jump (the local fit needs "
                f"{MIN_POINTS_EACH_SIDE} on each side)")
    fixed = tuple(pka)
    reagent = analyte if tuple(analyte.pka) == fixed else _with_pka(analyte, fixed)
    model = _Model(reagent, titrant, titrant_m, analyte_volume_ml, temperature_c, activity)
    head = np.array([*fixed[:1], *np.diff(fixed)], float) if fixed else np.array([], float)

    def curve(c: float, volumes: np.ndarray) -> np.ndarray:
        return model(np.append(head, c), volumes)

    c0 = min(max(concentration_guess_m * centre_ml / (step * per_step), CONC_BOUNDS_M[0] * 10), CONC_BOUNDS_M[1] / 2)
    try:
        result = least_squares(lambda th: curve(float(th[0]), vv) - pp, [c0], bounds=CONC_BOUNDS_M, x_scale="jac",
                               diff_step=1e-7, xtol=1e-12, ftol=1e-12, max_nfev=100)
    except (ValueError, ArithmeticError) as exc:
        return f"local fit failed: {exc}"
    if not result.success:
        return f"local fit did not converge: {result.message}"
    c = float(result.x[0])
    residual = result.fun
    dof = max(vv.size - 1, 1)
    jtj = float(result.jac[:, 0] @ result.jac[:, 0])
    u_c = math.sqrt(float(residual @ residual) / dof / jtj) if jtj > 0 else math.inf
    v_eq = step * c * analyte_volume_ml / (titrant_m * capacity)
    ph_eq = float(curve(c, np.array([v_eq]))[0])
    grid_ph = None
    if grid_ml is not None:
        grid_ph = np.full(grid_ml.size, np.nan)
        inside = (grid_ml >= vv[0]) & (grid_ml <= vv[-1])
        if inside.any():
            grid_ph[inside] = curve(c, grid_ml[inside])
    dense_v = np.linspace(vv[0], vv[-1], 400)
    return LocalJumpFit(volume_ml=v_eq, ph=ph_eq, uncertainty_ml=v_eq * u_c / c, dense=(dense_v, curve(c, dense_v)),
                        rms_ph=math.sqrt(float(residual @ residual) / residual.size), n_points=int(vv.size),
                        window_ml=(float(vv[0]), float(vv[-1])), step=step, grid_ph=grid_ph)


def _with_pka(analyte: Reagent, pka: tuple[float, ...]) -> Reagent:
    import dataclasses

    return dataclasses.replace(analyte, pka=tuple(sorted(pka)))
