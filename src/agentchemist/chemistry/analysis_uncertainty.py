"""Uncertainty budgets of the titration results: what each stated value depends on, and how much.

A budget lists standard uncertainties (one per source, in the unit of the value), combines them by
root sum of squares (the sources are taken as independent) and states the expanded uncertainty
U = k u_c with the coverage factor k = 2, about 95 % for a normal distribution (GUM, JCGM 100:2008).

Sources, and how each one reaches a value:

- **Fit, with the residuals' correlation.** The residuals of a titration curve are strongly
  autocorrelated (the cumulative volume is a random walk of drop volumes; the electrode lags by an amount
  that changes slowly along the curve), so the Jacobian standard errors, which assume independent
  points, are too small. They are inflated with the effective sample size of an AR(1) process:
  n_eff = n (1 - rho) / (1 + rho), rho the lag-1 autocorrelation of the residuals ordered by volume,
  i.e. the variance is multiplied by (1 + rho) / (1 - rho). (Chosen over a block bootstrap because
  every bootstrap replicate would refit the equilibrium model: tens of fits per run.)
- **Electrode calibration.** An offset (``AnalysisConfig.ph_calibration_sd``, pH) and a relative slope
  error (``ph_slope_rel_sd``) about pH 7, propagated through the fit's sensitivities (a pKa far from 7
  moves with the slope error).
- **Temperature.** The Nernst slope is 0.198 mV/K per pH unit: a temperature known to ``temperature_sd_c``
  is a relative slope error of u_T / T(K); and the pKa itself moves with temperature by
  ``dpka_dt_per_k`` (a generic bound; the reagent library holds 25 C values only).
- **Titrant concentration** (``titrant_rel_sd``): through the fit for pKa; one to one for a concentration.
- **Drop volume.** The dispenser counts volume as drops x the calibrated drop volume: the calibration's
  relative error (``drop_volume_rel_sd``) scales every volume; the single drops' scatter
  (``drop_scatter_rel_sd``) adds a random walk, sqrt(N) drop sd after N drops, at an equivalence point.
- **Settling lag.** The supervisor records the reading at which the stability test passes, while the
  electrode still approaches the new bulk pH from the side of the previous one, and the next drop falls
  before it has caught up: the deficit carries over from drop to drop. Bound per reading: L_i =
  min(``settle_lag_bound_ph``, ``settle_lag_carry`` (L_(i-1) + step_i)), steps taken from the fitted
  curve (for small steps L tends to carry / (1 - carry) steps: 3 steps at carry 0.75). Its effect on
  the value, propagated through the fit, is a shift of known sign somewhere between 0 and the bound's
  shift s: the value is corrected by -s/2 (the middle) and the correction's uncertainty is rectangular,
  u = |s| / (2 sqrt(3)) (GUM 4.3.7). Only settle-gated readings lag like this: the bound is 0 unless the
  caller says the data are such readings (:meth:`UncertaintyInputs.for_settled_readings`; the report
  does, since its rows are the recorder's ``ph_settled`` records).

Not included: the model's own adequacy (activity model, the reagent's identity), which the residual
check of the analysis judges; the analyte volume enters concentrations only (``analyte_volume_rel_sd``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "UncertaintyBudget",
    "UncertaintyComponent",
    "UncertaintyInputs",
    "autocorrelation_factor",
    "combine_budget",
    "concentration_budget",
    "equivalence_budget",
    "fit_pka_budget",
    "half_equivalence_budget",
    "settle_lag_bias",
    "steady_lag",
]

KELVIN = 273.15


@dataclass(frozen=True)
class UncertaintyInputs:
    """Standard uncertainties of what the analysis takes as known (relative ones are fractions).

    Defaults: a two-point electrode calibration (slope to 0.5 %), a titrant standardised to 0.5 %, a drop
    volume calibrated by weighing to 1 % with single drops scattering 3.2 % (the twin's pipette:
    0.0015 / 0.046875 mL), a temperature known to 0.5 K, a volumetric pipette's 0.2 % for the analyte
    volume, pKa temperature coefficients up to 0.003 /K, and the settle test of
    perception/ph_stability.py (0.01 pH/s over 1 s, whose least-squares slope scatters by about 0.006 pH/s
    at 0.005 pH noise) on an electrode plus mixing response of about 3 s: (0.01 + 2 x 0.006) x 3, a lag of
    up to 0.05 pH (the twin's 5th percentile is -0.05 to -0.06); at the earliest acceptance, 1.2 s after a
    drop, a 1 s mixing + 2 s electrode cascade still shows 0.8 of a step (0.75 taken: the twin's readings
    settle 2 to 3 steps behind on the flat parts). Volumes not counted in drops (a burette, synthetic
    data): set ``drop_volume_rel_sd`` and ``drop_scatter_rel_sd`` to the volume's own uncertainty.
    """

    ph_slope_rel_sd: float = 0.005
    titrant_rel_sd: float = 0.005
    drop_volume_rel_sd: float = 0.01
    drop_scatter_rel_sd: float = 0.032
    analyte_volume_rel_sd: float = 0.002
    temperature_sd_c: float = 0.5
    dpka_dt_per_k: float = 0.003
    settle_lag_bound_ph: float = 0.0   # 0: readings not gated by a settle test (see for_settled_readings)
    settle_lag_carry: float = 0.75
    coverage_factor: float = 2.0
    # A volume read off an instrument at each addition (a burette), mL: an equivalence volume is the
    # difference of two readings (sqrt(2) of this); 0 for volumes counted in drops or steps.
    volume_reading_sd_ml: float = 0.0
    # what one volume increment is called in the budget ("drop" for the dispenser; an imported curve's
    # "addition" or "pump step"): the figures are the same, the words must not call a burette's additions drops
    volume_increment: str = "drop"

    @classmethod
    def for_settled_readings(cls, **overrides: float) -> "UncertaintyInputs":
        """The inputs for rows recorded by the settle test (the recorder's ph_settled): lag up to 0.05 pH."""
        return cls(**{"settle_lag_bound_ph": 0.05, **overrides})

    def __post_init__(self) -> None:
        for name, value in self.__dict__.items():
            if name == "volume_increment":
                if not (isinstance(value, str) and value):
                    raise ValueError(f"UncertaintyInputs.volume_increment must be a word, got {value!r}")
                continue
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise ValueError(f"UncertaintyInputs.{name} must be a finite number >= 0, got {value!r}")
        if self.settle_lag_carry >= 1:
            raise ValueError(f"UncertaintyInputs.settle_lag_carry must be < 1, got {self.settle_lag_carry!r}")
        if self.coverage_factor <= 0:
            raise ValueError(f"UncertaintyInputs.coverage_factor must be > 0, got {self.coverage_factor!r}")


@dataclass(frozen=True)
class UncertaintyComponent:
    """One source: its standard uncertainty in the value's unit and how it was obtained."""

    source: str
    standard_uncertainty: float
    note: str = ""


@dataclass
class UncertaintyBudget:
    """Components, their combination and the expanded interval ``value +- coverage_factor * combined``."""

    quantity: str
    unit: str
    value: float
    components: list[UncertaintyComponent] = field(default_factory=list)
    coverage_factor: float = 2.0
    correction: float = 0.0  #: already added to ``value`` (a known systematic effect, see the components)

    @property
    def combined(self) -> float:
        """Combined standard uncertainty: root sum of squares of the components (independent sources)."""
        return math.sqrt(sum(c.standard_uncertainty**2 for c in self.components))

    @property
    def expanded(self) -> float:
        return self.coverage_factor * self.combined

    @property
    def interval(self) -> tuple[float, float]:
        return self.value - self.expanded, self.value + self.expanded

    def largest(self) -> UncertaintyComponent | None:
        return max(self.components, key=lambda c: c.standard_uncertainty, default=None)

    def as_dict(self) -> dict:
        return {
            "quantity": self.quantity, "unit": self.unit, "value": self.value, "correction": self.correction,
            "components": [{"source": c.source, "standard_uncertainty": c.standard_uncertainty, "note": c.note}
                           for c in self.components],
            "combined_standard_uncertainty": self.combined, "coverage_factor": self.coverage_factor,
            "expanded_uncertainty": self.expanded, "interval": list(self.interval),
            "coverage_probability": "about 95 % (normal distribution)" if self.coverage_factor == 2.0 else None,
        }


def combine_budget(quantity: str, unit: str, value: float, components: list[UncertaintyComponent],
                   inputs: UncertaintyInputs, correction: float = 0.0) -> UncertaintyBudget:
    """A budget of the finite, non-zero components (a NaN component is a defect of the caller: refused)."""
    for c in components:
        if not (math.isfinite(c.standard_uncertainty) and c.standard_uncertainty >= 0):
            raise ValueError(f"uncertainty component {c.source!r} of {quantity} is {c.standard_uncertainty!r}")
    kept = [c for c in components if c.standard_uncertainty > 0]
    return UncertaintyBudget(quantity, unit, value, kept, inputs.coverage_factor, correction)


def autocorrelation_factor(residuals: np.ndarray) -> tuple[float, float]:
    """(variance inflation (1 + rho) / (1 - rho), rho) from the lag-1 autocorrelation of ``residuals``.

    rho is clipped to [0, 0.98]: a negative rho would shrink the fit's standard errors, which the
    independent-error assumption already does not overstate, and rho -> 1 has no finite n_eff.
    """
    r = np.asarray(residuals, float)
    if r.size < 3:
        return 1.0, 0.0
    r = r - r.mean()
    denom = float(r @ r)
    rho = float(r[:-1] @ r[1:]) / denom if denom > 0 else 0.0
    rho = min(max(rho, 0.0), 0.98)
    return (1.0 + rho) / (1.0 - rho), rho


def settle_lag_bias(ph: np.ndarray, bound_ph: float, carry: float) -> np.ndarray:
    """The largest lag bias of each settled reading (pH; ``ph`` ordered by volume, ideally noise-free):
    L_i = min(bound_ph, carry (L_(i-1) + step_i)) behind the titration's direction (steps against it: 0)."""
    p = np.asarray(ph, float)
    if p.size == 0:
        return p.copy()
    direction = 1.0 if p[-1] >= p[0] else -1.0
    steps = np.maximum(direction * np.diff(p, prepend=p[:1]), 0.0)
    out = np.empty_like(p)
    lag = 0.0
    for i, step in enumerate(steps):
        lag = min(bound_ph, carry * (lag + step))
        out[i] = -direction * lag
    return out


def steady_lag(ph_step_per_drop: float, inputs: UncertaintyInputs) -> float:
    """The lag bound on a stretch of equal steps: min(bound, carry / (1 - carry) x step)."""
    if not math.isfinite(ph_step_per_drop):
        return 0.0
    carry = inputs.settle_lag_carry
    return min(inputs.settle_lag_bound_ph, carry / (1.0 - carry) * abs(ph_step_per_drop))


def _temperature_components(value_minus_7: float, temperature_c: float, inputs: UncertaintyInputs,
                            slope_sensitivity: float | None = None) -> float:
    slope_error = inputs.temperature_sd_c / (temperature_c + KELVIN)
    nernst = abs(slope_sensitivity if slope_sensitivity is not None else value_minus_7) * slope_error
    return math.hypot(nernst, inputs.dpka_dt_per_k * inputs.temperature_sd_c)


def fit_pka_budget(fit, name: str, *, ph_calibration_sd: float, temperature_c: float,
                   inputs: UncertaintyInputs) -> UncertaintyBudget:
    """The budget of a fitted pKa (``name`` "pka1" ...) from a :class:`CurveFit` with its sensitivities."""
    value = fit.parameters[name]
    factor, rho = autocorrelation_factor(fit.residuals if fit.residuals is not None else np.array([]))
    se = fit.uncertainties.get(name, math.nan)
    n = fit.n_points
    s = fit.source_sensitivities
    comps = [UncertaintyComponent(
        "fit (residuals' correlation)", se * math.sqrt(factor),
        f"Jacobian standard error {se:.2g} x sqrt({factor:.3g}): lag-1 autocorrelation {rho:.2f}, "
        f"n_eff {n / factor:.0f} of {n} points")]
    if s:
        comps += [
            UncertaintyComponent("electrode offset", abs(s["ph_offset"][name]) * ph_calibration_sd,
                                 f"{ph_calibration_sd:g} pH calibration offset"),
            UncertaintyComponent("electrode slope", abs(s["ph_slope"][name]) * inputs.ph_slope_rel_sd,
                                 f"{inputs.ph_slope_rel_sd:.2%} slope about pH 7"),
            UncertaintyComponent("temperature", _temperature_components(0.0, temperature_c, inputs,
                                                                        s["ph_slope"][name]),
                                 f"{inputs.temperature_sd_c:g} K: Nernst slope and dpKa/dT <= "
                                 f"{inputs.dpka_dt_per_k:g}/K"),
            UncertaintyComponent("titrant concentration", abs(s["titrant_m"][name]) * inputs.titrant_rel_sd,
                                 f"{inputs.titrant_rel_sd:.2%} relative"),
            UncertaintyComponent(f"{inputs.volume_increment} volume calibration",
                                 abs(s["volume_scale"][name]) * inputs.drop_volume_rel_sd,
                                 f"{inputs.drop_volume_rel_sd:.2%} of every volume"),
        ]
    if (fit.sensitivity is not None and fit.fitted_ph is not None and fit.residuals is not None
            and name in fit.parameter_names):
        row = fit.sensitivity[fit.parameter_names.index(name)]
        model_ph = fit.fitted_ph + fit.residuals  # the fitted curve at the points: steps without the noise
        shift = float(row @ settle_lag_bias(model_ph, inputs.settle_lag_bound_ph, inputs.settle_lag_carry))
        correction = -shift / 2.0 + 0.0  # + 0.0: never a negative zero
        if shift:
            comps.append(_lag_component(shift, f"readings up to {inputs.settle_lag_bound_ph:g} pH behind"))
    return combine_budget(f"pKa{name[3:]}", "", value + correction, comps, inputs, correction)


def _lag_component(shift: float, why: str) -> UncertaintyComponent:
    return UncertaintyComponent("settling lag", abs(shift) / (2.0 * math.sqrt(3.0)),
                                f"{why} shift the value by 0 to {shift:+.3f}: corrected by {-shift / 2:+.3f} "
                                "(rectangular)")


def half_equivalence_budget(index: int, value: float, base: list[UncertaintyComponent], *, ph_step_per_drop: float,
                            ph_calibration_sd: float, temperature_c: float, inputs: UncertaintyInputs,
                            direction: int = 1) -> UncertaintyBudget:
    """A half-equivalence pKa: the reading's own components (``base``) plus the electrode, temperature and lag
    (``direction`` +1 for a rising titration: the readings lag below the bulk pH)."""
    shift = -direction * steady_lag(ph_step_per_drop, inputs)
    comps = [*base,
             UncertaintyComponent("electrode offset", ph_calibration_sd, f"{ph_calibration_sd:g} pH calibration"),
             UncertaintyComponent("electrode slope", abs(value - 7.0) * inputs.ph_slope_rel_sd,
                                  f"{inputs.ph_slope_rel_sd:.2%} slope about pH 7"),
             UncertaintyComponent("temperature", _temperature_components(value - 7.0, temperature_c, inputs),
                                  f"{inputs.temperature_sd_c:g} K")]
    if shift:
        comps.append(_lag_component(shift, f"readings up to {abs(shift):.3f} pH behind"))
    return combine_budget(f"pKa{index}", "", value - shift / 2.0, comps, inputs, -shift / 2.0 + 0.0)


def equivalence_budget(index: int, volume_ml: float, location_ml: float, drop_ml: float,
                       inputs: UncertaintyInputs) -> UncertaintyBudget:
    """An equivalence volume (mL, as counted by the dispenser) against the titrant actually delivered."""
    drops = max(volume_ml / drop_ml, 0.0) if drop_ml > 0 else 0.0
    word = inputs.volume_increment
    comps = [
        UncertaintyComponent("location on the curve", location_ml, "derivatives or the model fitted across the jump"),
        UncertaintyComponent(f"{word} volume calibration", volume_ml * inputs.drop_volume_rel_sd,
                             f"{inputs.drop_volume_rel_sd:.2%} of the counted volume"),
        UncertaintyComponent(f"{word} scatter", math.sqrt(drops) * drop_ml * inputs.drop_scatter_rel_sd,
                             f"sqrt({drops:.0f} {word}s) x {inputs.drop_scatter_rel_sd:.1%} of a {drop_ml:.4g} mL {word}"),
        UncertaintyComponent("volume reading", math.sqrt(2.0) * inputs.volume_reading_sd_ml,
                             f"two readings (start and end) of {inputs.volume_reading_sd_ml:.2g} mL each"),
    ]
    return combine_budget(f"V_eq{index}", "mL", volume_ml, comps, inputs)


def concentration_budget(concentration_m: float, veq: UncertaintyBudget, inputs: UncertaintyInputs
                         ) -> UncertaintyBudget:
    """c = c_titrant V_eq capacity / (step V_analyte): relative uncertainties add in quadrature."""
    rel_v = veq.combined / veq.value if veq.value > 0 else math.inf
    comps = [
        UncertaintyComponent(f"equivalence volume {veq.quantity[4:]}", concentration_m * rel_v,
                             f"{rel_v:.2%} relative ({veq.combined:.2g} mL)"),
        UncertaintyComponent("titrant concentration", concentration_m * inputs.titrant_rel_sd,
                             f"{inputs.titrant_rel_sd:.2%} relative"),
        UncertaintyComponent("analyte volume", concentration_m * inputs.analyte_volume_rel_sd,
                             f"{inputs.analyte_volume_rel_sd:.2%} relative"),
    ]
    return combine_budget("analyte concentration", "mol/L", concentration_m, comps, inputs)
