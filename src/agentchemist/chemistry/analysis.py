"""Titration curve analysis: equivalence points, pKa values and concentrations, with evidence checks.

Pipeline of :func:`analyze_titration` (volumes in mL, pH dimensionless):

1. sort by volume, average duplicate volumes, refuse NaN/negative input;
2. resample on a uniform grid (PCHIP) and smooth with Savitzky-Golay, parameters chosen from the data
   (:mod:`.analysis_smoothing`);
3. equivalence points from first-derivative peaks refined by the second-derivative zero crossing
   (:mod:`.analysis_peaks`), each with an evidence check;
4. pKa at half equivalence: the smoothed pH at V_eq1 / 2, and between successive equivalence points
   for pKa2, pKa3, ...; checked for points on both sides, flags, and the size of the [H+]/[OH-] bias
   that makes pH(V_half) differ from pKa (large for strong first protons such as maleic acid's);
5. nonlinear least-squares fit of the whole curve with the equilibrium model (:mod:`.analysis_fit`):
   pKa values and analyte concentration with standard errors;
6. analyte concentration from the equivalence volume (titrant concentration known);
7. an uncertainty budget for every pKa, equivalence volume and concentration (:mod:`.analysis_uncertainty`):
   ``uncertainty`` of a pKa is its combined standard uncertainty, ``budget`` lists the components and
   the 95 % interval (k = 2).

Nothing is invented: a claim the data do not support is returned with ``supported=False`` and the
reason, its value NaN when there is no basis for a number, and ``warnings`` lists what could not be
concluded.

    >>> import numpy as np
    >>> from agentchemist.chemistry.equilibrium import titration_curve
    >>> v = np.arange(0.0, 50.0, 0.05)
    >>> ph = titration_curve({"hcl": 0.1}, 25.0, {"naoh": 0.1}, v)
    >>> result = analyze_titration(v, ph, titrant_m=0.1, analyte_volume_ml=25.0, analyte="hcl")
    >>> round(result.equivalence_points[0].volume_ml, 2)
    25.0
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from scipy.signal import savgol_coeffs

from .analysis_checks import gran_equivalence, initial_ph_problem, local_step, volume_order_problems
from .analysis_fit import fit_titration_curve, generic_acid, titratable_steps
from .analysis_local import fit_jump
from .analysis_peaks import locate_equivalence_points
from .analysis_quant import (
    WeighingError,
    ca_concentration_from_endpoint,
    concentration_from_equivalence,
    strong_acid_concentration,
    weighing_error,
)
from .analysis_smoothing import MIN_WINDOW, POLYORDER, SmoothedCurve, odd_at_least, savgol_derivatives, smooth_curve
from . import analysis_types
from .analysis_types import (DEFAULT_ACTIVITY, AnalysisConfig, AnalysisInputError, CurveFit, EquivalencePoint,
                             PkaEstimate, TitrationAnalysis)
from .analysis_uncertainty import (UncertaintyComponent, UncertaintyInputs, concentration_budget, equivalence_budget,
                                   fit_pka_budget, half_equivalence_budget)
from .equilibrium import ConvergenceError, kw_at, titration_curve
from .reagents import Reagent, default_library

__all__ = [
    *analysis_types.__all__,
    "UncertaintyInputs",
    "WeighingError",
    "analyze_titration",
    "ca_concentration_from_endpoint",
    "concentration_from_equivalence",
    "strong_acid_concentration",
    "weighing_error",
]

NAN = float("nan")


# ------------------------------------------------------------------------------------------ input
def _clean(volume_ml, ph) -> tuple[np.ndarray, np.ndarray]:
    v = np.asarray(volume_ml, dtype=float)
    p = np.asarray(ph, dtype=float)
    if v.ndim != 1 or p.ndim != 1:
        raise AnalysisInputError(f"volume_ml and ph must be 1-D, got shapes {v.shape} and {p.shape}")
    if v.shape != p.shape:
        raise AnalysisInputError(f"volume_ml has {v.size} values but ph has {p.size}")
    if not np.all(np.isfinite(v)):
        raise AnalysisInputError(f"volume_ml contains NaN or infinity at index {int(np.flatnonzero(~np.isfinite(v))[0])}")
    if not np.all(np.isfinite(p)):
        raise AnalysisInputError(f"ph contains NaN or infinity at index {int(np.flatnonzero(~np.isfinite(p))[0])}")
    if np.any(v < 0):
        raise AnalysisInputError(f"volume_ml must be >= 0 (cumulative titrant), got {v.min()!r}")
    if np.any((p < -2) | (p > 16)):
        raise AnalysisInputError(f"ph values must lie in -2..16, got {p.min():.3g}..{p.max():.3g}")
    order = np.argsort(v, kind="stable")
    v, p = v[order], p[order]
    unique, inverse = np.unique(v, return_inverse=True)
    if unique.size != v.size:
        p = np.bincount(inverse, weights=p) / np.bincount(inverse)
        v = unique
    return v, p


def _check_flags(flags: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    out = []
    for item in flags:
        try:
            a, b = (float(x) for x in item)
        except (TypeError, ValueError):
            raise AnalysisInputError(f"quality flag {item!r} must be a (start_ml, end_ml) pair") from None
        if not (math.isfinite(a) and math.isfinite(b)) or b < a:
            raise AnalysisInputError(f"quality flag {item!r} must be finite with start <= end (mL)")
        out.append((a, b))
    return out


def _optional_positive(name: str, value: float | None) -> float | None:
    if value is None:
        return None
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise AnalysisInputError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(x) or x <= 0:
        raise AnalysisInputError(f"{name} must be a finite number > 0, got {value!r}")
    return x


# --------------------------------------------------------------------------------------- chemistry
def _step_pka_index(step: int, analyte: Reagent | None, titrant: Reagent) -> int | None:
    """Which pKa of the analyte (1-based, ascending) the k-th titration step neutralises; None: strong."""
    if analyte is None:
        return step
    n, protons = len(analyte.pka), analyte.protons_as_added
    if titrant.strong_protons < 0:  # base removes strong protons first, then weak ones by rising pKa
        strong = max(analyte.strong_protons, 0)
        if step <= strong:
            return None
        k = (n - protons) + (step - strong)
        return k if 1 <= k <= n else None
    hydroxide = max(-analyte.strong_protons, 0)  # acid neutralises hydroxide first, then fills sites
    if step <= hydroxide:
        return None
    k = n - protons - (step - hydroxide) + 1
    return k if 1 <= k <= n else None


def _half_eq_bias(ph: float, total_m: float, kw: float) -> float:
    """pH(V_half) - pKa for a conjugate pair at total_m / 2 each (charge balance, no activities)."""
    h = 10.0**-ph
    oh = kw / h
    num, den = total_m / 2 + h - oh, total_m / 2 - h + oh
    if num <= 0 or den <= 0:
        return math.inf
    return math.log10(num / den)


def _points_near(v: np.ndarray, centre: float, reach: float) -> tuple[int, int, float]:
    before = int(np.sum((v >= centre - reach) & (v < centre)))
    after = int(np.sum((v > centre) & (v <= centre + reach)))
    k = int(np.searchsorted(v, centre))
    gap = float(v[k] - v[k - 1]) if 0 < k < v.size else math.inf
    return before, after, gap


def _half_equivalence(
    v: np.ndarray,
    curve: SmoothedCurve,
    eqs: list[EquivalencePoint],
    analyte: Reagent | None,
    titrant: Reagent,
    flags: list[tuple[float, float]],
    cfg: AnalysisConfig,
    analyte_m: float | None,
    analyte_volume_ml: float | None,
    temperature_c: float,
    fit: CurveFit | None,
    inputs: UncertaintyInputs,
) -> list[PkaEstimate]:
    steps = np.diff(v)
    median_step = float(np.median(steps[steps > 0]))
    smoothing_gain = float(np.linalg.norm(savgol_coeffs(curve.window, POLYORDER)))
    out: list[PkaEstimate] = []
    for k, eq in enumerate(eqs, start=1):
        index = _step_pka_index(k, analyte, titrant)
        if index is None:
            continue
        previous = eqs[k - 2] if k >= 2 else None
        v_prev = previous.volume_ml if previous else 0.0
        v_half = (v_prev + eq.volume_ml) / 2.0
        u_v = math.hypot(eq.uncertainty_ml, previous.uncertainty_ml if previous else 0.0) / 2.0
        if not (v[0] <= v_half <= v[-1]):
            out.append(PkaEstimate(NAN, "half_equivalence", NAN, False,
                                   f"half-equivalence volume {v_half:.3f} mL lies outside the data "
                                   f"({v[0]:.3f}-{v[-1]:.3f} mL)", index, v_half))
            continue
        value = float(np.interp(v_half, curve.grid_ml, curve.ph_smooth))
        slope = abs(float(np.interp(v_half, curve.grid_ml, curve.d1)))
        base = [UncertaintyComponent("reading noise", curve.noise_sd * smoothing_gain,
                                     f"noise {curve.noise_sd:.2g} pH through the smoothing window"),
                UncertaintyComponent("half-equivalence volume", slope * u_v,
                                     f"{u_v:.2g} mL at {slope:.3g} pH/mL")]
        problems: list[str] = []
        for used in (previous, eq):
            if used is not None and not used.supported:
                problems.append(f"equivalence point {used.index} is not supported ({used.reason})")
        need = cfg.half_eq_points_each_side
        # the window follows the spacing where it is (analysis_checks.local_step), not the run's median step
        spacing = _spacing(v, v_half, 2 * need, median_step)
        reach = (need + 0.5) * spacing
        before, after, gap = _points_near(v, v_half, reach)
        if before < need or after < need:
            problems.append(f"{before} point(s) before and {after} after {v_half:.3f} mL within {reach:.3g} mL "
                            f"(need {need} on each side)")
        if gap > cfg.max_gap_factor * spacing:
            problems.append(f"no data in a {gap:.3g} mL gap around {v_half:.3f} mL")
        hit = [(a, b) for a, b in flags if a <= v_half + reach and b >= v_half - reach]
        if hit:
            problems.append("quality-flagged data at " + ", ".join(f"{a:.3f}-{b:.3f} mL" for a, b in hit))
        bias_note = "[H+]/[OH-] bias not checked (analyte concentration unknown)"
        bias = None
        if fit is not None and fit.converged and fit.ph_fit is not None and f"pka{index}" in fit.parameters:
            bias = float(np.interp(v_half, curve.grid_ml, fit.ph_fit)) - fit.parameters[f"pka{index}"]
            bias = bias if round(bias, 3) != 0 else 0.0  # print "+0.000", never "-0.000"
            bias_note = f"model bias pH(V_half) - pKa = {bias:+.3f} from the fitted curve"
        elif analyte_m is not None and analyte_volume_ml is not None:
            total = analyte_m * analyte_volume_ml / (analyte_volume_ml + v_half)
            bias = _half_eq_bias(value, total, float(kw_at(temperature_c)))
            bias_note = f"[H+]/[OH-] bias about {bias:+.3f} at {total:.3g} mol/L"
        if bias is not None:
            if not abs(bias) <= cfg.half_eq_max_bias_ph:
                problems.append(
                    f"pH at half equivalence is not the pKa here: {bias_note} exceeds "
                    f"{cfg.half_eq_max_bias_ph:g} ([H+]/[OH-] comparable to the buffer concentration, or "
                    "activity coefficients, shift the half-equivalence pH; use the curve fit)"
                )
            else:
                base.append(UncertaintyComponent("[H+]/[OH-] bias", abs(bias), bias_note))
        budget = half_equivalence_budget(index, value, base, ph_step_per_drop=slope * median_step,
                                         ph_calibration_sd=cfg.ph_calibration_sd, temperature_c=temperature_c,
                                         inputs=inputs, direction=1 if titrant.strong_protons < 0 else -1)
        ph_read, (value, uncertainty) = value, (budget.value, budget.combined)
        if problems:
            out.append(PkaEstimate(value, "half_equivalence", uncertainty, False, "; ".join(problems), index, v_half,
                                   budget))
        else:
            lag = f"; settling lag correction {budget.correction:+.3f}" if budget.correction else ""
            reason = (f"pH {ph_read:.3f} at V = {v_half:.3f} mL; {before} points before and {after} after within "
                      f"{reach:.3g} mL; {bias_note}{lag}")
            out.append(PkaEstimate(value, "half_equivalence", uncertainty, True, reason, index, v_half, budget))
    return out


def _fit_estimates(fit: CurveFit, v: np.ndarray, analyte: Reagent | None, titrant: Reagent, noise_sd: float,
                   cfg: AnalysisConfig, temperature_c: float, inputs: UncertaintyInputs,
                   eqs: list[EquivalencePoint]) -> list[PkaEstimate]:
    out = []
    rms_limit = _rms_limit(noise_sd, cfg, inputs)
    steps = np.diff(v)
    median_step = float(np.median(steps[steps > 0]))
    per_step = fit.equivalence_volumes_ml[0] if fit.equivalence_volumes_ml else NAN
    for name, value in fit.parameters.items():
        if not name.startswith("pka"):
            continue
        index = int(name[3:])
        u = fit.uncertainties.get(name, NAN)
        problems = []
        # The same evidence rule as at half equivalence: the fitted buffer midpoint of this pKa must
        # lie inside the data with points on both sides (else the pKa is an extrapolation of the model).
        step = next((k for k in range(1, 8) if _step_pka_index(k, analyte, titrant) == index), None)
        v_half = (step - 0.5) * per_step if step is not None and math.isfinite(per_step) else NAN
        if math.isfinite(v_half):
            reach = (cfg.half_eq_points_each_side + 0.5) * _spacing(v, v_half, 2 * cfg.half_eq_points_each_side,
                                                                    median_step)
            before, after, _ = _points_near(v, v_half, reach)
            if before < cfg.half_eq_points_each_side or after < cfg.half_eq_points_each_side:
                problems.append(f"the data do not reach both sides of the fitted half-equivalence volume "
                                f"{v_half:.3f} mL ({before} point(s) before, {after} after): the pKa is extrapolated")
            # A run that ends before any located jump past this buffer region leaves the concentration to the
            # model: a wrong pKa set can then fit as well as the right one (a triprotic acid stopped at pH 3
            # fits pKa1 1.8 and pKa2 2.6 with rms 0.005), so the local standard error says nothing.
            elif not any(e.supported and e.volume_ml >= v_half for e in eqs):
                problems.append(f"no located equivalence point beyond the fitted half-equivalence volume {v_half:.3f} "
                                "mL: the titration ended before the jump that anchors the concentration, so the pKa "
                                "rests on the model alone")
        if not fit.converged:
            problems.append(f"fit did not converge ({fit.message})")
        if not fit.rms_ph <= rms_limit:
            problems.append(f"residual rms {fit.rms_ph:.3g} pH exceeds {rms_limit:.3g} (model does not describe the data)")
        budget = fit_pka_budget(fit, name, ph_calibration_sd=cfg.ph_calibration_sd, temperature_c=temperature_c,
                                inputs=inputs)
        # What the data constrain: the fit's standard error with the residuals' correlation (the budget's fit
        # component), not the Jacobian's alone, which counts correlated points as independent.
        u_data = next((c.standard_uncertainty for c in budget.components if c.source.startswith("fit")), u)
        if not u_data <= cfg.fit_max_pka_uncertainty:
            problems.append(f"standard error {u_data:.3g} (residuals' correlation included) exceeds "
                            f"{cfg.fit_max_pka_uncertainty:g}: the data barely constrain this pKa")
        top = budget.largest()
        reason = "; ".join(problems) if problems else (
            f"least-squares fit of {fit.n_points} points, rms {fit.rms_ph:.3g} pH; standard uncertainty "
            f"{budget.combined:.2g} from {len(budget.components)} sources (largest: {top.source if top else '-'}), "
            f"95 % interval +-{budget.expanded:.2g}"
        )
        out.append(PkaEstimate(budget.value, "curve_fit", budget.combined, not problems, reason, index, v_half, budget))
    return out


def _spacing(v: np.ndarray, centre: float, points: int, fallback: float) -> float:
    step = local_step(v, centre, points)
    return step if math.isfinite(step) and step > 0 else fallback


def _rms_limit(noise_sd: float, cfg: AnalysisConfig, inputs: UncertaintyInputs) -> float:
    """The residual rms above which the model does not describe the data: a multiple of the noise, never
    below a floor, and for settle-gated readings never below their lag bound (the model has no lag)."""
    return max(cfg.fit_max_rms_factor * noise_sd, cfg.fit_min_rms_ph, inputs.settle_lag_bound_ph)


def _fit_warning(fit: CurveFit, noise_sd: float, cfg: AnalysisConfig, activity: bool,
                 inputs: UncertaintyInputs) -> str | None:
    limit = _rms_limit(noise_sd, cfg, inputs)
    if fit.rms_ph <= limit:
        return None
    hint = "" if activity else " (a glass electrode reads activities: try the fit with activity=True)"
    if "electrode_offset" in fit.parameters:
        return (f"the equilibrium model does not describe the data even with the electrode's offset and slope fitted: "
                f"residual rms {fit.rms_ph:.3g} pH against a noise of {noise_sd:.2g} pH{hint}; a wrong analyte or "
                "concentration, a slow or drifting electrode, carbonate in the titrant or volumes off are candidates")
    return (f"the equilibrium model does not describe the data: residual rms {fit.rms_ph:.3g} pH against a noise of "
            f"{noise_sd:.2g} pH{hint}; wrong analyte, electrode calibration or activity effects are candidates")


# ------------------------------------------------------------------------------------------- main
def analyze_titration(
    volume_ml,
    ph,
    *,
    expected_equivalents: int | None = None,
    titrant_m: float | None = None,
    analyte_volume_ml: float | None = None,
    analyte: str | None = None,
    titrant: str = "naoh",
    quality_flags: Sequence[tuple[float, float]] = (),
    temperature_c: float = 25.0,
    activity: bool = DEFAULT_ACTIVITY,
    fit: bool = True,
    config: AnalysisConfig | None = None,
    uncertainty: UncertaintyInputs | None = None,
) -> TitrationAnalysis:
    """Analyse a titration curve (cumulative titrant volume in mL, pH); see the module docstring.

    ``analyte``/``titrant`` are reagent names or aliases of the reagent library; ``titrant_m`` (mol/L)
    and ``analyte_volume_ml`` enable concentrations and the curve fit; ``quality_flags`` are volume
    ranges (mL) whose data were flagged; ``activity`` fits with Davies activities (for real meters
    whose pH is -log a(H+)); ``uncertainty`` the standard uncertainties of what is taken as known (electrode
    slope, titrant, drop volume, temperature ...) for the budgets (settle-gated readings:
    ``UncertaintyInputs.for_settled_readings()``). Raises :class:`AnalysisInputError` (a ValueError) on
    invalid input and ``UnknownReagentError`` (a ValueError) on an unknown reagent name.
    """
    cfg = config or AnalysisConfig()
    inputs = uncertainty or UncertaintyInputs()
    v, p = _clean(volume_ml, ph)
    flags = _check_flags(quality_flags)
    # written out of order, or the same volume read twice with different pH: flagged, never averaged silently
    order_warnings, order_flags = (volume_order_problems(np.asarray(volume_ml, float), np.asarray(ph, float))
                                   if cfg.check_volume_order else ([], []))
    flags += [f for f in order_flags if f not in flags]
    c_t = _optional_positive("titrant_m", titrant_m)
    v_a = _optional_positive("analyte_volume_ml", analyte_volume_ml)
    if expected_equivalents is not None and (not isinstance(expected_equivalents, int) or expected_equivalents < 1):
        raise AnalysisInputError(f"expected_equivalents must be an integer >= 1, got {expected_equivalents!r}")
    if not (isinstance(temperature_c, (int, float)) and 0.0 <= temperature_c <= 100.0):
        raise AnalysisInputError(f"temperature_c must be within 0..100 C, got {temperature_c!r}")
    library = default_library()
    analyte_r = library.get(analyte) if analyte is not None else None
    titrant_r = library.get(titrant)
    if titrant_r.strong_protons == 0:
        raise AnalysisInputError(f"titrant {titrant!r} is not a strong acid or base")
    warnings: list[str] = list(order_warnings)
    result = TitrationAnalysis(
        volume_ml=v, ph=p, grid_ml=np.array([]), ph_smooth=np.array([]), d1=np.array([]), d2=np.array([]),
        smoothing={}, equivalence_points=[], pka=[], concentration=None, warnings=warnings,
        analyte=analyte_r.name if analyte_r else None, titrant=titrant_r.name, titrant_m=c_t,
        analyte_volume_ml=v_a, quality_flags=flags,
    )
    if v.size < cfg.min_points:
        why = f"only {v.size} distinct volume(s) measured (need at least {cfg.min_points})"
        result.smoothing = {"method": "none", "reason": f"not applied: {why}"}
        warnings.append(f"nothing concluded: {why}; no equivalence point, pKa or concentration can be stated")
        if analyte_r is not None:
            for index in range(1, len(analyte_r.pka) + 1):
                result.pka.append(PkaEstimate(NAN, "half_equivalence", NAN, False, why, index))
        return result

    curve = smooth_curve(v, p, max_grid_points=cfg.max_grid_points)
    result.grid_ml, result.ph_smooth, result.d1, result.d2 = curve.grid_ml, curve.ph_smooth, curve.d1, curve.d2
    result.smoothing = curve.as_dict()
    if expected_equivalents is None and analyte_r is not None:
        try:
            steps, _ = titratable_steps(analyte_r, titrant_r)
        except ValueError:
            steps = 0
        expected = steps or None
    else:
        expected = expected_equivalents
    eqs, details, eq_warnings, adaptive = locate_equivalence_points(v, p, curve, cfg, expected=expected, flags=flags)
    result.ph_adaptive = adaptive
    _display_derivatives(result, v, curve)
    warnings.extend(eq_warnings)
    result.equivalence_points = eqs
    result.smoothing["local_windows"] = details

    capacity = abs(titrant_r.strong_protons)
    per_eq = []
    if c_t is not None and v_a is not None:
        for eq in eqs:
            c = concentration_from_equivalence(eq.volume_ml, c_t, v_a, step=eq.index, titrant_capacity=capacity)
            per_eq.append({"equivalence_index": eq.index, "analyte_m": c,
                           "uncertainty_m": c * eq.uncertainty_ml / eq.volume_ml, "supported": eq.supported,
                           "reason": eq.reason})
    elif eqs:
        warnings.append("no concentration: titrant concentration and analyte volume are both needed")

    fit_result = None
    if fit:
        fit_result = _run_fit(v, p, curve, eqs, per_eq, analyte_r, titrant_r, c_t, v_a, expected, flags,
                              temperature_c, activity, warnings, cfg.electrode_fit)
    result.fit = fit_result
    result.electrode = _electrode(fit_result)
    if fit_result is not None and fit_result.converged and c_t is not None and v_a is not None:
        # the local jump model is the bulk pH: readings through a fitted electrode are taken back to it
        p_bulk = p if result.electrode is None else 7.0 + (p - 7.0 - result.electrode["offset_ph"]) / result.electrode["slope"]
        _refine_with_local_fit(v, p_bulk, eqs, fit_result, analyte_r, titrant_r, c_t, v_a, flags, temperature_c,
                               activity, curve, cfg, warnings, result.ph_adaptive)
        if result.electrode is not None:  # the local model drawn on the meter's scale, like the data
            for eq in eqs:
                if eq.model_curve is not None:
                    mv, mp = eq.model_curve
                    eq.model_curve = (mv, 7.0 + result.electrode["slope"] * (mp - 7.0) + result.electrode["offset_ph"])
                    eq.ph = 7.0 + result.electrode["slope"] * (eq.ph - 7.0) + result.electrode["offset_ph"]
    if analyte_r is not None and c_t is not None and v_a is not None:
        p_bulk = p if result.electrode is None else 7.0 + (p - 7.0 - result.electrode["offset_ph"]) / result.electrode["slope"]
        unflagged = np.ones(v.size, bool)  # flagged readings (typing slips ...) are no evidence for a line either
        for a, b in flags:
            unflagged &= ~((v >= a) & (v <= b))
        result.gran = _gran_check(v[unflagged], p_bulk[unflagged], eqs, analyte_r, titrant_r, v_a, c_t, temperature_c,
                                  activity, warnings)
    _attach_budgets(v, eqs, per_eq, c_t, v_a, capacity, inputs)

    # The concentration stated: from the supported equivalence point with the smallest relative uncertainty.
    best_c = min(per_eq, key=lambda d: (not d["supported"], d["uncertainty_m"] / d["analyte_m"])) if per_eq else None
    analyte_m_for_bias = best_c["analyte_m"] if best_c else None
    result.pka = _half_equivalence(v, curve, eqs, analyte_r, titrant_r, flags, cfg, analyte_m_for_bias, v_a,
                                   temperature_c, fit_result, inputs)
    if analyte_r is not None and not analyte_r.pka:
        ph_half = ""
        if eqs and v[0] <= eqs[0].volume_ml / 2 <= v[-1]:
            ph_at_half = float(np.interp(eqs[0].volume_ml / 2, curve.grid_ml, curve.ph_smooth))
            ph_half = (f"; the pH at half equivalence, {ph_at_half:.2f}, reflects the remaining acid or base "
                       "concentration, not an equilibrium constant")
        result.pka.append(PkaEstimate(NAN, "half_equivalence", NAN, False,
                                      f"{analyte_r.display_name} is a {analyte_r.kind.replace('_', ' ')}: it is "
                                      f"fully dissociated in water and has no measurable pKa{ph_half}", 1))
    if fit_result is not None:
        result.pka.extend(_fit_estimates(fit_result, v, analyte_r, titrant_r, curve.noise_sd, cfg, temperature_c,
                                         inputs, eqs))
        misfit = _fit_warning(fit_result, curve.noise_sd, cfg, activity, inputs)
        if misfit:
            warnings.append(misfit)
            # A pKa is a parameter of the model: where the model does not describe the curve, no pKa read
            # from it, the half-equivalence pH included, is stated (a confident wrong pKa is worse than none).
            _block_pka(result.pka, "the equilibrium model does not describe these data (residual rms "
                                   f"{fit_result.rms_ph:.2g} pH above {_rms_limit(curve.noise_sd, cfg, inputs):.2g}), so "
                                   "no pKa is stated from them")
    if result.electrode is not None:
        _block_pka([e for e in result.pka if e.method == "half_equivalence"],
                   "the electrode's offset and slope are fitted with the curve: the pH read at half equivalence "
                   "is on the meter's uncalibrated scale, so the pKa comes from the curve fit only")
    best_for_start = best_c["analyte_m"] if best_c and best_c["supported"] else None
    if analyte_r is not None and best_for_start and c_t is not None and v_a is not None:
        _initial_ph_check(v, p, analyte_r, titrant_r, best_for_start, c_t, v_a, temperature_c, activity, cfg,
                          result, warnings)
    result.pka.sort(key=lambda e: (e.index, e.method != "half_equivalence"))
    if analyte_r is not None:
        for index in range(1, len(analyte_r.pka) + 1):
            if not any(e.index == index and e.supported for e in result.pka):
                warnings.append(f"pKa{index} of {analyte_r.display_name} could not be determined from these data")

    if best_c:
        result.concentration = {
            "analyte_m": best_c["analyte_m"],
            "uncertainty_m": best_c["uncertainty_m"],
            "method": "equivalence_volume",
            "equivalence_index": best_c["equivalence_index"],
            "supported": best_c["supported"],
            "reason": best_c["reason"],
            "titrant_m": c_t,
            "analyte_volume_ml": v_a,
            "per_equivalence_point": per_eq,
            "curve_fit": None,
            "budget": best_c.get("budget"),
        }
        if fit_result is not None and "analyte_m" in fit_result.parameters:
            result.concentration["curve_fit"] = {
                "analyte_m": fit_result.parameters["analyte_m"],
                "uncertainty_m": fit_result.uncertainties["analyte_m"],
                "converged": fit_result.converged,
            }
    elif fit_result is not None and "analyte_m" in fit_result.parameters:
        # No equivalence point: the fitted concentration rests on the model alone (the analyte's
        # identity and pKa), so it is reported but not stated as supported.
        result.concentration = {
            "analyte_m": fit_result.parameters["analyte_m"],
            "uncertainty_m": fit_result.uncertainties["analyte_m"],
            "method": "curve_fit",
            "equivalence_index": None,
            "supported": False,
            "reason": "no equivalence point in the data: model-based estimate from the curve fit only"
            + ("" if fit_result.converged else f" (fit did not converge: {fit_result.message})"),
            "titrant_m": c_t,
            "analyte_volume_ml": v_a,
            "per_equivalence_point": [],
            "curve_fit": None,
        }
    return result


def _attach_budgets(v: np.ndarray, eqs: list[EquivalencePoint], per_eq: list[dict], c_t: float | None,
                    v_a: float | None, capacity: int, inputs: UncertaintyInputs) -> None:
    """Budget every equivalence volume and the concentration from it (drop volume: the median step)."""
    steps = np.diff(v)
    drop_ml = float(np.median(steps[steps > 0])) if np.any(steps > 0) else 0.0
    for eq in eqs:
        eq.budget = equivalence_budget(eq.index, eq.volume_ml, eq.uncertainty_ml, drop_ml, inputs)
        if eq.method_spread_ml > 0:
            eq.budget.components.append(UncertaintyComponent("method disagreement (Gran)", eq.method_spread_ml,
                                                             eq.method_spread_note))
    if c_t is None or v_a is None:
        return
    for d, eq in zip(per_eq, eqs):
        c = concentration_from_equivalence(eq.volume_ml, c_t, v_a, step=eq.index, titrant_capacity=capacity)
        budget = concentration_budget(c, eq.budget, inputs)
        d.update(analyte_m=c, uncertainty_m=budget.combined, budget=budget.as_dict())


# Measured points a displayed derivative is smoothed over: the window follows the data density (a run
# with 0.05 mL drops gets about a 0.35 mL window), where the global window is chosen for the flat parts.
DISPLAY_DERIVATIVE_POINTS = 7


def _display_derivatives(result: TitrationAnalysis, v: np.ndarray, curve: SmoothedCurve) -> None:
    steps = np.diff(v)
    median_step = float(np.median(steps[steps > 0]))
    window = odd_at_least(DISPLAY_DERIVATIVE_POINTS * median_step / curve.step_ml)
    window = min(window, curve.grid_ml.size if curve.grid_ml.size % 2 else curve.grid_ml.size - 1)
    if window < MIN_WINDOW:
        result.d1_display, result.d2_display = curve.d1, curve.d2
        return
    _, result.d1_display, result.d2_display = savgol_derivatives(curve.ph_grid, window, curve.step_ml)
    result.smoothing["display_derivative"] = {
        "window_points": window, "window_ml": window * curve.step_ml,
        "reason": f"{DISPLAY_DERIVATIVE_POINTS} median point spacings ({median_step:.4g} mL each) on the "
                  f"{curve.step_ml:.4g} mL grid",
    }


def _refine_with_local_fit(v, p, eqs, fit_result, analyte_r, titrant_r, c_t, v_a, flags, temperature_c, activity,
                           curve, cfg, warnings, result_adaptive) -> None:
    """Replace each equivalence point's volume and pH by the model fitted across its jump
    (:mod:`.analysis_local`) when that fit describes the points and agrees with the derivative estimate."""
    pka = tuple(fit_result.parameters[f"pka{k}"] for k in range(1, 8) if f"pka{k}" in fit_result.parameters)
    reagent = analyte_r if analyte_r is not None else generic_acid(len(pka), pka)
    c_fit = fit_result.parameters.get("analyte_m")
    if not c_fit:
        return
    keep = np.ones(v.size, bool)
    for a, b in flags:
        keep &= ~((v >= a) & (v <= b))
    rms_limit = max(cfg.fit_max_rms_factor * curve.noise_sd, cfg.fit_min_rms_ph)
    steps = np.diff(v)
    median_step = float(np.median(steps[steps > 0]))
    for eq in eqs:
        if not eq.supported:  # a gap or flagged data at the jump: the model would bridge it, unseen
            continue
        got = fit_jump(v, p, centre_ml=eq.volume_ml, jump_ml=eq.jump_region_ml, analyte=reagent, pka=pka,
                       titrant=titrant_r, titrant_m=c_t, analyte_volume_ml=v_a, concentration_guess_m=c_fit,
                       temperature_c=temperature_c, activity=activity, keep=keep, grid_ml=curve.grid_ml)
        label = f"equivalence point {eq.index}"
        if isinstance(got, str):
            warnings.append(f"{label}: no model fit across the jump ({got}); volume and pH from the derivatives")
            continue
        tolerance = max(3.0 * eq.uncertainty_ml, 2.0 * median_step)
        if not math.isfinite(got.volume_ml) or abs(got.volume_ml - eq.volume_ml) > tolerance:
            warnings.append(f"{label}: the model fitted across the jump puts it at {got.volume_ml:.3f} mL, "
                            f"{abs(got.volume_ml - eq.volume_ml):.3f} mL from the derivative estimate "
                            f"{eq.volume_ml:.3f} mL (more than {tolerance:.3f} mL): the derivative estimate is kept")
            continue
        # The jump's pH residuals carry the drop-volume scatter magnified by the slope; the limit for the
        # curve-fit (noise-based) would reject every sharp jump, so only a gross misfit is refused here.
        if not got.rms_ph <= 10 * rms_limit:
            warnings.append(f"{label}: the model fitted across the jump leaves residuals of {got.rms_ph:.3g} pH rms "
                            f"(limit {10 * rms_limit:.3g}): the derivative estimate is kept")
            continue
        # ... and it must pass through the points across the jump: read sideways (the volume at which the model
        # reaches each measured pH), it may miss them by less than the spacing of the points there; a model
        # that misses a real jump by a step or more (a lagging electrode, an offset) is no better than the
        # derivatives (a teaching autotitrator's HCl jump: 0.58 pH rms, 1.2 steps sideways)
        sideways, spacing = _sideways_miss(v, p, keep, got)
        if not sideways <= spacing:
            warnings.append(f"{label}: the model fitted across the jump misses the measured points by {sideways:.3g} mL "
                            f"rms along the volume axis (more than their spacing, {spacing:.3g} mL): the derivative "
                            "estimate is kept")
            continue
        derivative = eq.volume_ml
        eq.volume_ml = got.volume_ml
        eq.ph = got.ph
        eq.uncertainty_ml = math.sqrt(got.uncertainty_ml**2 + ((got.volume_ml - derivative) / 2.0) ** 2
                                      + curve.step_ml**2 / 12.0)
        eq.method = "model_fit_across_jump"
        eq.model_curve = got.dense
        if got.grid_ph is not None and result_adaptive is not None:
            inside = np.isfinite(got.grid_ph)
            result_adaptive[inside] = got.grid_ph[inside]
        eq.reason += (f"; volume and pH from the equilibrium model fitted to the {got.n_points} points "
                      f"{got.window_ml[0]:.3f}-{got.window_ml[1]:.3f} mL (rms {got.rms_ph:.3g} pH); the derivative "
                      f"estimate {derivative:.3f} mL is the cross-check")


def _block_pka(estimates: list[PkaEstimate], why: str) -> None:
    """Refuse every estimate with a value for ``why`` (first in its reason: it is the reason that decides)."""
    for e in estimates:
        if not math.isfinite(e.value) or why in e.reason:
            continue
        e.reason = f"{why} (otherwise: {e.reason})" if e.supported else f"{why}; {e.reason}"
        e.supported = False


def _electrode(fit: CurveFit | None) -> dict | None:
    if fit is None or "electrode_offset" not in fit.parameters:
        return None
    return {"offset_ph": fit.parameters["electrode_offset"], "u_offset_ph": fit.uncertainties.get("electrode_offset"),
            "slope": fit.parameters["electrode_slope"], "u_slope": fit.uncertainties.get("electrode_slope"),
            "source": "fitted with the curve (no calibration relied on)"}


def _initial_ph_check(v, p, analyte_r, titrant_r, c_m, c_t, v_a, temperature_c, activity, cfg, result, warnings):
    """The first reading against the named analyte at the concentration its equivalence volume gives."""
    if v[0] > 0:
        return
    try:
        expected = float(titration_curve({analyte_r.name: c_m}, v_a, {titrant_r.name: c_t}, np.array([0.0]),
                                         temperature_c=temperature_c, activity=activity)[0])
    except (ValueError, ArithmeticError, ConvergenceError):
        return
    if result.electrode is not None:
        expected = 7.0 + result.electrode["slope"] * (expected - 7.0) + result.electrode["offset_ph"]
    problem = initial_ph_problem(float(p[0]), expected, analyte_r.display_name, c_m, cfg.initial_ph_tolerance)
    if problem is None:
        return
    if result.electrode is not None:
        problem += " (through the fitted electrode)"
        warnings.append(problem)
        return
    warnings.append(problem)
    _block_pka(result.pka, f"{problem}; a pKa read on this pH scale is not stated")


def _gran_check(v, p, eqs, analyte_r, titrant_r, v_a, c_t, temperature_c, activity, warnings) -> list[dict]:
    """Gran-function estimates of each supported equivalence volume (analysis_checks), as a cross-check."""
    out = []
    previous = 0.0
    base = titrant_r.strong_protons < 0
    pkw = -math.log10(float(kw_at(temperature_c)))
    for k, eq in enumerate(eqs, start=1):
        if not eq.supported:
            previous = eq.volume_ml
            continue
        index = _step_pka_index(k, analyte_r, titrant_r)
        weak = index is not None
        # the weak-acid line needs one monovalent pair (a polyprotic step's ions are divalent, its
        # neighbours overlap) weak enough that [H+] stays small against it (pKa >= 3.5); the excess-titrant
        # line needs no further pair to buffer it (the analyte's last titratable step)
        pka = analyte_r.pka[index - 1] if weak else math.nan
        use_before = not weak or (len(analyte_r.pka) == 1
                                  and (pka >= 3.5 if titrant_r.strong_protons < 0 else pka <= 10.5))
        try:
            steps, _ = titratable_steps(analyte_r, titrant_r)
        except ValueError:
            steps = 0
        use_after = k == steps and not any((titrant_r.strong_protons < 0 and x > pka + 0.0 and x < 13.0)
                                           or (titrant_r.strong_protons > 0 and x < pka and x > 1.0)
                                           for x in analyte_r.pka) if weak else k == steps
        c_a = c_t * abs(titrant_r.strong_protons) * (eq.volume_ml - previous) / v_a
        for g in gran_equivalence(v, p, v_eq_guess=eq.volume_ml, analyte_volume_ml=v_a, weak=weak,
                                  titrant_is_base=base, pkw=pkw, v_start=previous, before=use_before, after=use_after,
                                  activity=activity,
                                  titrant_m=c_t, analyte_m=c_a, temperature_c=temperature_c):
            # against the location on the curve only: both estimates share the volumes' calibration
            tolerance = 2.0 * math.hypot(eq.uncertainty_ml, g.uncertainty_ml)
            agrees = abs(g.volume_ml - eq.volume_ml) <= tolerance
            out.append({"index": eq.index, "side": g.side, "volume_ml": g.volume_ml, "uncertainty_ml": g.uncertainty_ml,
                        "n_points": g.n_points, "r2": g.r2, "agrees": agrees})
            text = (f"Gran function {g.side} the equivalence point: {g.volume_ml:.3f} ± {g.uncertainty_ml:.2g} mL "
                    f"({g.n_points} points, r² {g.r2:.3f})")
            if agrees:
                eq.reason += f"; {text}, agrees within {tolerance:.2g} mL"
            else:
                # Two independent estimates of one volume that disagree: the interval must reach the other
                # (half the difference as a standard uncertainty: the 95 % interval spans it)
                spread = abs(g.volume_ml - eq.volume_ml) / 2.0
                if spread > eq.method_spread_ml:
                    eq.method_spread_ml = spread
                    eq.method_spread_note = (f"the {text} differs by {2 * spread:.3f} mL: half of it, so that the "
                                             "95 % interval reaches the independent estimate")
                warnings.append(f"equivalence point {eq.index} at {eq.volume_ml:.3f} mL: the {text} differs by "
                                f"{abs(g.volume_ml - eq.volume_ml):.3f} mL (more than {tolerance:.2g} mL): the "
                                "curve is not the straight-line titration the Gran function assumes there (electrode "
                                "slope, carbonate, a mixed analyte), or the located jump is off")
        previous = eq.volume_ml
    return out


def _sideways_miss(v: np.ndarray, p: np.ndarray, keep: np.ndarray, got) -> tuple[float, float]:
    """(rms of volume minus the model's volume at the measured pH, median spacing) over the local fit's window."""
    mv, mp = got.dense
    lo, hi = got.window_ml
    inside = keep & (v >= lo) & (v <= hi)
    if inside.sum() < 2:
        return 0.0, math.inf
    order = np.argsort(mp)
    miss = v[inside] - np.interp(p[inside], mp[order], mv[order])
    steps = np.diff(v[inside])
    spacing = float(np.median(steps[steps > 0])) if np.any(steps > 0) else math.inf
    return float(np.sqrt(np.mean(miss**2))), spacing


def _run_fit(v, p, curve, eqs, per_eq, analyte_r, titrant_r, c_t, v_a, expected, flags, temperature_c, activity,
             warnings, electrode: bool = False) -> CurveFit | None:
    if c_t is None or v_a is None:
        warnings.append("curve fit skipped: it needs the titrant concentration and the analyte volume")
        return None
    if analyte_r is None:
        n = expected or len(eqs)
        if n < 1 or titrant_r.strong_protons > 0:
            warnings.append("curve fit skipped: unknown analyte and no equivalence point to count its protons")
            return None
        # Start each pKa at the pH halfway between its equivalence point and the previous one (or 0 mL).
        guesses = [float(np.interp(((eqs[k - 1].volume_ml if k >= 1 else 0.0) + eqs[k].volume_ml) / 2,
                                   curve.grid_ml, curve.ph_smooth)) for k in range(min(n, len(eqs)))]
        guesses += list(np.linspace(np.min(p), np.max(p), n + 2)[1:-1][len(guesses):])
        analyte_r = generic_acid(n, guesses)
    supported = [d for d in per_eq if d["supported"]] or per_eq
    if supported:
        c0 = float(np.median([d["analyte_m"] for d in supported]))
    else:  # no equivalence point (aborted run): start from the initial pH
        c0 = max(10.0 ** -float(np.min(p) if titrant_r.strong_protons < 0 else 14 - np.max(p)), 1e-4)
    keep = np.ones(v.size, bool)
    for a, b in flags:
        keep &= ~((v >= a) & (v <= b))
    try:
        return fit_titration_curve(v, p, analyte=analyte_r, titrant=titrant_r, titrant_m=c_t, analyte_volume_ml=v_a,
                                   concentration_guess_m=c0, keep=keep, temperature_c=temperature_c,
                                   activity=activity, grid_ml=curve.grid_ml, electrode=electrode)
    except (ValueError, ConvergenceError) as exc:
        warnings.append(f"curve fit failed: {exc}")
        return None
