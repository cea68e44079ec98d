"""Nonlinear least-squares fit of a titration curve with the equilibrium model.

The model is the solver of :mod:`agentchemist.chemistry.equilibrium` itself (same water ion product,
same charge balance, optional Davies activities), evaluated with a private reagent library in which
the analyte's pKa values are the fit parameters. Fitted: the pKa values of the analyte's weak
acid-base system (none for a strong acid) and the analyte concentration; known: titrant and its
concentration, the analyte volume, temperature.

pKa values are parametrised as pKa1 and non-negative increments pKa(k) - pKa(k-1), which keeps them
ascending as the reagent model requires; the covariance is mapped back with the same linear
transform. Standard errors come from the Jacobian at the optimum: cov = s^2 (J^T J)^-1 with s^2 the
residual variance; they assume independent pH errors and exact volumes. What else the parameters depend
on is linearised at the optimum too: ``CurveFit.sensitivity`` maps a perturbation of the pH data to the
parameters ((J^T J)^-1 J^T), and ``CurveFit.source_sensitivities`` gives d(parameter)/d(source) for a pH
offset, a pH slope error, a volume scale error and a titrant concentration error, from which
:mod:`.analysis_uncertainty` builds the uncertainty budget.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Sequence

import numpy as np
from scipy.optimize import least_squares

from .analysis_types import CurveFit
from .equilibrium import titration_curve
from .reagents import Reagent, ReagentLibrary

__all__ = ["fit_titration_curve", "generic_acid", "titratable_steps"]

PKA_BOUNDS = (-2.0, 16.0)
CONC_BOUNDS_M = (1e-6, 20.0)


def titratable_steps(analyte: Reagent, titrant: Reagent) -> tuple[int, int]:
    """(protons the analyte gives up or takes per formula unit, titrant capacity per formula unit).

    A basic titrant (NaOH: strong_protons -1) removes the analyte's strong and weak protons; an acidic
    one fills its empty sites (and neutralises its hydroxide). Raises ValueError for a titrant that is
    neither a strong acid nor a strong base.
    """
    if titrant.strong_protons < 0:
        return max(analyte.strong_protons, 0) + analyte.protons_as_added, -titrant.strong_protons
    if titrant.strong_protons > 0:
        empty = len(analyte.pka) - analyte.protons_as_added
        return max(-analyte.strong_protons, 0) + empty, titrant.strong_protons
    raise ValueError(f"titrant {titrant.name!r} is not a strong acid or base; the curve fit needs one")


def generic_acid(n_protons: int, pka_guess: Sequence[float]) -> Reagent:
    """A neutral n-protic acid H_nA with the given (ascending) pKa values, for an unnamed analyte."""
    return Reagent(
        name="unknown_acid",
        display_name=f"unknown {n_protons}-protic acid",
        formula=f"H{n_protons}A",
        aliases=(),
        kind="weak_acid",
        pka=tuple(sorted(float(p) for p in pka_guess)),
        molar_mass_g_mol=1.0,
        charge_fully_protonated=0,
        protons_as_added=n_protons,
    )


#: bounds of the fitted electrode: offset (pH at pH 7) and slope (fraction of Nernst); an electrode outside
#: them fails any calibration acceptance (+-30 mV, 95-105 %) by far: the fit says so by hitting the bound
ELECTRODE_OFFSET_BOUNDS = (-1.5, 1.5)
ELECTRODE_SLOPE_BOUNDS = (0.8, 1.1)


@dataclasses.dataclass(frozen=True)
class _Model:
    """pH(volumes; theta) with theta = [pKa1, d2, ..., dn, c_analyte] (+ [offset, slope] of the electrode:
    the meter reads 7 + slope (pH - 7) + offset)."""

    analyte: Reagent
    titrant: Reagent
    titrant_m: float
    analyte_volume_ml: float
    temperature_c: float
    activity: bool
    electrode: bool = False

    @property
    def n_pka(self) -> int:
        return len(self.analyte.pka)

    def pkas(self, theta: np.ndarray) -> tuple[float, ...]:
        return tuple(float(x) for x in np.cumsum(theta[: self.n_pka]))

    def __call__(self, theta: np.ndarray, volume_ml: np.ndarray) -> np.ndarray:
        ph = self.bulk(theta, volume_ml)
        if not self.electrode:
            return ph
        offset, slope = float(theta[self.n_pka + 1]), float(theta[self.n_pka + 2])
        return 7.0 + slope * (ph - 7.0) + offset

    def bulk(self, theta: np.ndarray, volume_ml: np.ndarray) -> np.ndarray:
        """The solution's pH (what a perfect electrode reads)."""
        reagent = dataclasses.replace(self.analyte, pka=self.pkas(theta)) if self.n_pka else self.analyte
        library = ReagentLibrary(reagents={reagent.name: reagent, self.titrant.name: self.titrant}, source="<fit>")
        return titration_curve(
            {reagent.name: float(theta[self.n_pka])},
            self.analyte_volume_ml,
            {self.titrant.name: self.titrant_m},
            volume_ml,
            temperature_c=self.temperature_c,
            activity=self.activity,
            library=library,
        )


def fit_titration_curve(
    volume_ml: np.ndarray,
    ph: np.ndarray,
    *,
    analyte: Reagent,
    titrant: Reagent,
    titrant_m: float,
    analyte_volume_ml: float,
    concentration_guess_m: float,
    pka_guess: Sequence[float] = (),
    keep: np.ndarray | None = None,
    temperature_c: float = 25.0,
    activity: bool = False,
    grid_ml: np.ndarray | None = None,
    electrode: bool = False,
) -> CurveFit:
    """Fit pKa values (of ``analyte``'s weak system) and the analyte concentration (mol/L).

    ``keep`` masks the points used (flagged points excluded by the caller); ``pka_guess`` overrides
    the library's pKa values as the starting point; ``electrode`` fits the electrode's offset and slope
    with the curve (an electrode without a calibration the analysis may rely on: imported data): their
    uncertainty then enters the pKa's through the fit's covariance. Raises ValueError on a non-positive
    concentration.
    """
    if not (math.isfinite(titrant_m) and titrant_m > 0):
        raise ValueError(f"titrant concentration must be > 0 mol/L, got {titrant_m!r}")
    if not (math.isfinite(analyte_volume_ml) and analyte_volume_ml > 0):
        raise ValueError(f"analyte volume must be > 0 mL, got {analyte_volume_ml!r}")
    keep = np.ones(volume_ml.size, bool) if keep is None else np.asarray(keep, bool)
    v, p = volume_ml[keep], ph[keep]
    model = _Model(analyte, titrant, titrant_m, analyte_volume_ml, temperature_c, activity, electrode)
    n = model.n_pka
    start_pka = sorted(pka_guess) if len(pka_guess) == n else list(analyte.pka)
    start_pka = [min(max(x, PKA_BOUNDS[0] + 0.1), PKA_BOUNDS[1] - 0.1) for x in start_pka]
    increments = np.diff(start_pka) if n > 1 else np.array([])
    conc0 = min(max(concentration_guess_m, CONC_BOUNDS_M[0] * 10), CONC_BOUNDS_M[1] / 2)
    theta0 = np.array([*start_pka[:1], *np.maximum(increments, 0.05), conc0] + ([0.0, 1.0] if electrode else []),
                      float)
    lower = np.array([PKA_BOUNDS[0]] * min(n, 1) + [0.0] * max(n - 1, 0) + [CONC_BOUNDS_M[0]]
                     + ([ELECTRODE_OFFSET_BOUNDS[0], ELECTRODE_SLOPE_BOUNDS[0]] if electrode else []))
    upper = np.array([PKA_BOUNDS[1]] * min(n, 1) + [PKA_BOUNDS[1] - PKA_BOUNDS[0]] * max(n - 1, 0)
                     + [CONC_BOUNDS_M[1]] + ([ELECTRODE_OFFSET_BOUNDS[1], ELECTRODE_SLOPE_BOUNDS[1]] if electrode else []))
    names = [f"pka{k + 1}" for k in range(n)] + ["analyte_m"] + (["electrode_offset", "electrode_slope"]
                                                                  if electrode else [])
    if v.size <= len(theta0):
        return CurveFit(model=_describe(analyte, titrant, activity, electrode), parameters={}, uncertainties={},
                        rms_ph=math.nan, n_points=int(v.size), excluded_points=int((~keep).sum()),
                        converged=False, message=f"{v.size} points cannot determine {len(theta0)} parameters")
    result = least_squares(
        lambda theta: model(theta, v) - p,
        theta0,
        bounds=(lower, upper),
        x_scale="jac",
        diff_step=1e-6,
        xtol=1e-10,
        ftol=1e-10,
        max_nfev=200,
    )
    residual = result.fun
    dof = max(v.size - theta0.size, 1)
    s2 = float(residual @ residual) / dof
    jac = result.jac
    cov_theta = s2 * np.linalg.pinv(jac.T @ jac)
    # theta -> (pKa1..pKan, c): pKa_k is the cumulative sum of the first k entries.
    transform = np.eye(theta0.size)
    transform[:n, :n] = np.tril(np.ones((n, n)))
    values = transform @ result.x
    cov = transform @ cov_theta @ transform.T
    sd = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    at_bound = [names[k] for k in range(theta0.size) if result.active_mask[k] != 0]
    message = result.message
    if at_bound:
        message += f"; at a bound: {', '.join(at_bound)}"
    fitted = {name: float(x) for name, x in zip(names, values)}
    c_fit = fitted["analyte_m"]
    steps, capacity = titratable_steps(analyte, titrant)
    veq = [k * c_fit * analyte_volume_ml / (titrant_m * capacity) for k in range(1, steps + 1)]
    # the model as the meter reads it (with the fitted electrode): drawn over the meter's readings
    ph_fit = model(result.x, grid_ml) if grid_ml is not None and grid_ml.size else None
    # (J^T J)^-1 J^T: a change dp of the pH data moves theta by this times dp (Gauss-Newton at the optimum).
    sensitivity = transform @ np.linalg.pinv(jac.T @ jac) @ jac.T
    sources = _source_sensitivities(model, result.x, v, p, sensitivity, names)
    return CurveFit(
        model=_describe(analyte, titrant, activity, electrode),
        parameters=fitted,
        uncertainties={name: float(u) for name, u in zip(names, sd)},
        rms_ph=math.sqrt(float(residual @ residual) / residual.size),
        n_points=int(v.size),
        excluded_points=int((~keep).sum()),
        converged=bool(result.success) and not at_bound,
        message=message,
        equivalence_volumes_ml=veq,
        ph_fit=ph_fit,
        residuals=np.asarray(residual, float),
        fitted_volume_ml=np.asarray(v, float),
        fitted_ph=np.asarray(p, float),
        sensitivity=sensitivity,
        parameter_names=names,
        source_sensitivities=sources,
    )


def _source_sensitivities(model: _Model, x: np.ndarray, v: np.ndarray, p: np.ndarray, sensitivity: np.ndarray,
                          names: list[str]) -> dict[str, dict[str, float]]:
    """d(parameter)/d(source) at the optimum, for each source of error the fit takes as exact.

    ``ph_offset`` (per pH unit read high), ``ph_slope`` (per unit relative slope error about pH 7),
    ``volume_scale`` (per unit relative error of every volume: the drop volume the dispenser counts with),
    ``titrant_m`` (per unit relative error of the titrant concentration).
    """
    h = 1e-4
    base = model(x, v)
    data_shift = {"ph_offset": np.ones_like(p), "ph_slope": p - 7.0}
    # A volume scale or titrant error changes the model the data should be compared with: the fit moves
    # theta so as to follow the change of the model, i.e. the data perturbation is minus the model change.
    data_shift["volume_scale"] = -(model(x, v * (1.0 + h)) - base) / h
    stronger = dataclasses.replace(model, titrant_m=model.titrant_m * (1.0 + h))
    data_shift["titrant_m"] = -(stronger(x, v) - base) / h
    return {source: {name: float(d) for name, d in zip(names, sensitivity @ shift)}
            for source, shift in data_shift.items()}


def _describe(analyte: Reagent, titrant: Reagent, activity: bool, electrode: bool = False) -> str:
    fitted = f"{len(analyte.pka)} pKa + concentration" if analyte.pka else "concentration"
    if electrode:
        fitted += " + electrode offset and slope (the meter reads 7 + slope (pH - 7) + offset)"
    coefficients = "Davies activities" if activity else "concentrations (no activity coefficients)"
    return (
        f"charge balance of {analyte.display_name} titrated with {titrant.display_name} "
        f"(equilibrium solver, {coefficients}); fitted: {fitted}"
    )
