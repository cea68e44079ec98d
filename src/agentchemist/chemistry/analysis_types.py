"""Result and configuration types of the titration analysis (re-exported by ``chemistry.analysis``).

Every claim carries ``supported`` and ``reason``: a value is only *stated* when the data support it;
otherwise ``supported`` is False, ``reason`` says what is missing, and the value is NaN whenever the
data give no basis for a number at all.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .analysis_uncertainty import UncertaintyBudget

__all__ = [
    "DEFAULT_ACTIVITY",
    "AnalysisConfig",
    "AnalysisInputError",
    "CurveFit",
    "EquivalencePoint",
    "PkaEstimate",
    "TitrationAnalysis",
]


#: A glass electrode responds to the activity of H+ (and the twin's simulated meter does too): the analysis,
#: the comparison with theory and the report all fit with Davies activities unless told the pH values are
#: concentrations. One default for the API and the report (issue 41: the API's False stated a wrong pKa).
DEFAULT_ACTIVITY = True


class AnalysisInputError(ValueError):
    """Input the analysis refuses (NaN, mismatched lengths, negative volume, unknown reagent ...)."""


@dataclass
class EquivalencePoint:
    """An equivalence point located on the titration curve.

    ``volume_ml`` cumulative titrant volume (mL); ``ph`` interpolated from the measured points at that
    volume; ``uncertainty_ml`` standard uncertainty (mL) combining the gap between the two measured
    points that bracket it, derivative noise and the disagreement of the two derivative criteria.
    ``index`` is 1 for the first equivalence point; ``jump_region_ml`` the volumes where the first
    derivative is above half its peak; ``window_points`` the local Savitzky-Golay window used.
    """

    volume_ml: float
    ph: float
    method: str
    uncertainty_ml: float
    supported: bool
    reason: str
    index: int = 1
    d1_peak_ml: float = float("nan")
    jump_region_ml: tuple[float, float] = (float("nan"), float("nan"))
    window_points: int = 0
    points_before: int = 0
    points_after: int = 0
    # what ``uncertainty_ml`` leaves out (drop volume calibration and scatter): analysis_uncertainty
    budget: "UncertaintyBudget | None" = None
    # (volumes mL, pH) of the model fitted across the jump, densely sampled, when it was used
    model_curve: tuple[np.ndarray, np.ndarray] | None = None
    # an independent estimate (Gran) that disagrees: half the largest difference, a budget component (mL)
    method_spread_ml: float = 0.0
    method_spread_note: str = ""


@dataclass
class PkaEstimate:
    """A pKa estimate; ``method`` is "half_equivalence" or "curve_fit", ``index`` 1 for pKa1."""

    value: float
    method: str
    uncertainty: float
    supported: bool
    reason: str
    index: int = 1
    half_equivalence_volume_ml: float = float("nan")
    # components behind ``uncertainty`` (its combined standard uncertainty) and the 95 % interval
    budget: "UncertaintyBudget | None" = None


@dataclass
class CurveFit:
    """Nonlinear least-squares fit of the equilibrium model to the measured curve.

    ``parameters`` maps names ("pka1", "pka2", "analyte_m") to fitted values and ``uncertainties`` to
    standard errors from the Jacobian at the optimum (residual variance times (J^T J)^-1);
    ``equivalence_volumes_ml`` are implied by the fitted concentration; ``rms_ph`` is the residual
    root mean square (pH units); ``ph_fit`` the model on ``TitrationAnalysis.grid_ml``.
    """

    model: str
    parameters: dict[str, float]
    uncertainties: dict[str, float]
    rms_ph: float
    n_points: int
    excluded_points: int
    converged: bool
    message: str
    equivalence_volumes_ml: list[float] = field(default_factory=list)
    ph_fit: np.ndarray | None = None
    # For the uncertainty budget (analysis_uncertainty): residuals (model - data, by volume) of the points
    # fitted, their volumes, the data-to-parameter sensitivity matrix and d(parameter)/d(source).
    residuals: np.ndarray | None = None
    fitted_volume_ml: np.ndarray | None = None
    fitted_ph: np.ndarray | None = None
    sensitivity: np.ndarray | None = None
    parameter_names: list[str] = field(default_factory=list)
    source_sensitivities: dict[str, dict[str, float]] = field(default_factory=dict)


@dataclass
class TitrationAnalysis:
    """Everything the analysis concluded, and what it could not conclude (``warnings``).

    ``volume_ml``/``ph``: the input sorted by volume with duplicate volumes averaged. ``grid_ml``,
    ``ph_smooth``, ``d1`` (pH/mL), ``d2`` (pH/mL^2): the uniform resampled grid. ``smoothing``: the
    parameters and why they were chosen. ``concentration``: analyte concentration (mol/L) with its
    uncertainty and method, or None when titrant concentration or analyte volume is unknown.
    """

    volume_ml: np.ndarray
    ph: np.ndarray
    grid_ml: np.ndarray
    ph_smooth: np.ndarray
    d1: np.ndarray
    d2: np.ndarray
    smoothing: dict
    equivalence_points: list[EquivalencePoint]
    pka: list[PkaEstimate]
    concentration: dict | None
    warnings: list[str]
    fit: CurveFit | None = None
    analyte: str | None = None
    titrant: str | None = None
    titrant_m: float | None = None
    analyte_volume_ml: float | None = None
    quality_flags: list[tuple[float, float]] = field(default_factory=list)
    ph_adaptive: np.ndarray | None = None  # ph_smooth with each jump replaced by its local model fit (or window)
    # Derivatives for display, smoothed over a window of DISPLAY_DERIVATIVE_POINTS measured points (the
    # data density), not over the global window chosen for the flat parts of the curve.
    d1_display: np.ndarray | None = None
    d2_display: np.ndarray | None = None
    # Gran-function estimates of each equivalence volume (analysis_checks): {index, side, volume_ml,
    # uncertainty_ml, n_points, r2, agrees}
    gran: list[dict] = field(default_factory=list)
    # the electrode's offset (pH) and slope (fraction of Nernst) fitted with the curve, with standard errors
    electrode: dict | None = None

    @property
    def supported_equivalence_points(self) -> list[EquivalencePoint]:
        """Only the equivalence points the evidence check accepted."""
        return [e for e in self.equivalence_points if e.supported]

    def best_pka(self, index: int) -> PkaEstimate | None:
        """The supported estimate of pKa ``index`` with the smallest uncertainty (None if none)."""
        candidates = [p for p in self.pka if p.index == index and p.supported and math.isfinite(p.value)]
        return min(candidates, key=lambda p: p.uncertainty) if candidates else None


@dataclass(frozen=True)
class AnalysisConfig:
    """Thresholds of the analysis and of the evidence check (units in the field names or comments)."""

    min_points: int = 8                    # fewer measured points: no smoothing, nothing concluded
    max_grid_points: int = 20000
    prominence_sigma: float = 8.0          # d1 peak prominence, in sd of the smoothed d1 noise
    slope_floor_fraction: float = 0.5      # ... and at least this fraction of the mean slope pH/mL
    min_jump_ph: float = 0.3               # pH rise across a peak's half-maximum region
    jump_points_each_side: int = 3         # measured points on each side of V_eq near the jump
    max_gap_factor: float = 3.0            # largest gap in the jump region, in median volume steps
    half_eq_points_each_side: int = 2      # measured points on each side of a half-equivalence point
    half_eq_max_bias_ph: float = 0.02      # largest [H+]/[OH-] bias of pH(V_half) accepted as pKa
    fit_max_pka_uncertainty: float = 0.05  # fitted pKa standard error (with the residuals' correlation) above
                                           # which it is unsupported
    fit_max_rms_factor: float = 5.0        # fit residual rms above this times the noise: model misfit
    fit_min_rms_ph: float = 0.02           # ... but never demand a better rms than this
    # Standard uncertainty of the pH scale itself (a two-point buffer calibration: buffers are certified to
    # about +-0.02 pH). A pKa read from pH inherits it one to one; the fit's standard error does not see it.
    ph_calibration_sd: float = 0.02
    # Fit the electrode's offset and slope with the curve (an electrode whose calibration the analysis
    # cannot rely on: imported data); False: the readings are on a calibrated scale (ph_calibration_sd).
    electrode_fit: bool = False
    # The first reading further than this from the pH of the named analyte (at the concentration from
    # V_eq) is flagged, and with a calibrated scale it blocks pKa statements read off that scale.
    initial_ph_tolerance: float = 0.3
    # Flag volumes written out of order and repeated volumes whose pH disagree (a file typed by hand). A robot's
    # record pairs each settled reading with the dispenser's volume: a re-reading at the same volume is a
    # reading, not a slip, and the recorder flags its own doubts (the report turns this off for its runs).
    check_volume_order: bool = True

    def __post_init__(self) -> None:
        ints = {
            "min_points": (self.min_points, 7),
            "max_grid_points": (self.max_grid_points, 100),
            "jump_points_each_side": (self.jump_points_each_side, 1),
            "half_eq_points_each_side": (self.half_eq_points_each_side, 1),
        }
        for name, (value, lowest) in ints.items():
            if not isinstance(value, int) or value < lowest:
                raise ValueError(f"AnalysisConfig.{name} must be an integer >= {lowest}, got {value!r}")
        floats = {
            "prominence_sigma": self.prominence_sigma,
            "slope_floor_fraction": self.slope_floor_fraction,
            "min_jump_ph": self.min_jump_ph,
            "max_gap_factor": self.max_gap_factor,
            "half_eq_max_bias_ph": self.half_eq_max_bias_ph,
            "fit_max_pka_uncertainty": self.fit_max_pka_uncertainty,
            "fit_max_rms_factor": self.fit_max_rms_factor,
            "fit_min_rms_ph": self.fit_min_rms_ph,
            "ph_calibration_sd": self.ph_calibration_sd,
            "initial_ph_tolerance": self.initial_ph_tolerance,
        }
        for name, value in floats.items():
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise ValueError(f"AnalysisConfig.{name} must be a positive finite number, got {value!r}")
        if self.max_gap_factor < 1:
            raise ValueError(f"AnalysisConfig.max_gap_factor must be >= 1, got {self.max_gap_factor}")
