"""Acid-base titration results: the analysis of the settled pH readings against the titrant volume
(equivalence points, pKa, the analyte's concentration with its uncertainty budget, the curve fit), the
comparison with the theoretical curve, and a standardisation's titrant concentration.
"""
from __future__ import annotations

from collections.abc import Mapping

from agentchemist.chemistry.analysis import AnalysisConfig, analyze_titration
from agentchemist.chemistry.analysis_compare import compare_with_references
from agentchemist.chemistry.analysis_uncertainty import UncertaintyInputs, equivalence_budget
from agentchemist.chemistry.jump_step import bracketed_equivalence
from agentchemist.experiments.acid_base.delivery import asked_for, lacking, predicted_equivalence_ph  # noqa: F401
from agentchemist.report.curve_rows import SETTLED
from agentchemist.report.model import ReportInputError, RunData, flagged_volume_ranges
from agentchemist.report.results import DEFAULT_ACTIVITY, ResultsContext, TitrationSetup, canonical, finite
from agentchemist.report.uncertainty import interval_text

DELIVERS = ("per_drop_rows", "equivalence_points", "pka", "concentration", "smoothing", "quality_flag_ranges_ml",
            "analysis_warnings", "curve_fit", "titrant_concentration", "deviations", "theory_curve")
TITRANT = True
# a run whose record names no family but has pH readings is an acid-base titration
RECORDED_AS = ("ph_settled", "ph")
# ... and so is one of an unknown family with settled pH readings: they are analysed as a titration curve
ANALYSES_UNLABELLED = True


def _eq_dict(e) -> dict:
    return {"index": e.index, "volume_ml": e.volume_ml, "ph": e.ph, "uncertainty_ml": e.uncertainty_ml,
            "method": e.method, "supported": e.supported, "reason": e.reason, "d1_peak_ml": e.d1_peak_ml,
            "jump_region_ml": list(e.jump_region_ml), "window_points": e.window_points,
            "points_before": e.points_before, "points_after": e.points_after,
            "budget": e.budget.as_dict() if e.budget is not None else None}


def _pka_dict(p) -> dict:
    return {"index": p.index, "value": p.value, "uncertainty": p.uncertainty, "method": p.method,
            "supported": p.supported, "reason": p.reason, "half_equivalence_volume_ml": p.half_equivalence_volume_ml,
            "budget": p.budget.as_dict() if p.budget is not None else None}


def compute(run: RunData, setup: TitrationSetup, opts: Mapping, out: dict, ctx: ResultsContext, *,
            concentration: bool = True) -> None:
    """The acid-base analysis of the run. ``concentration`` False: state no concentration finding (a family
    built on this one that computes its own result from the same analysis, e.g. a weighed standard's)."""
    rows = ctx.rows
    usable = [r for r in rows if r.usable]
    unusable = len(rows) - len(usable)
    out["per_drop_rows"] = len(rows)
    out["curve_points"] = len({round(r.volume_ml, 6) for r in usable})
    # once per report: the stop check, the bracketed equivalence and the result contract all read it
    out["equivalence_ph_predicted"] = predicted_equivalence_ph(out.get("setup") or {})
    if unusable:
        ctx.not_concluded.append(f"{unusable} pH reading(s) had no finite pH or volume and were left out of the analysis")
    if not usable:
        ctx.not_concluded.append("no titration data: the run recorded no pH reading with a titrant volume, so no "
                                 "equivalence point, pKa or concentration can be stated")
        return
    config = opts.get("config")
    if isinstance(config, Mapping):
        config = AnalysisConfig(**config)
    # Settled rows (the recorder's ph_settled) are settle-gated, so they lag (analysis_uncertainty); rows
    # from the meter's trace have the lags taken out instead (report.curve_rows).
    settled = ctx.results.get("curve_source", SETTLED) == SETTLED
    try:
        extra = dict(opts.get("uncertainty") or {})
        inputs = UncertaintyInputs.for_settled_readings(**extra) if settled else UncertaintyInputs(**extra)
    except (TypeError, ValueError) as exc:
        raise ReportInputError(f"analysis option 'uncertainty': {exc}") from None
    flags = flagged_volume_ranges(rows)
    try:
        analysis = analyze_titration(
            [r.volume_ml for r in usable], [r.ph for r in usable],
            expected_equivalents=opts.get("expected_equivalents"), titrant_m=setup.titrant_m,
            analyte_volume_ml=setup.analyte_volume_ml, analyte=setup.analyte, titrant=setup.titrant,
            quality_flags=flags, temperature_c=setup.temperature_c, activity=bool(opts.get("activity", DEFAULT_ACTIVITY)),
            fit=bool(opts.get("fit", True)), config=config,
            uncertainty=inputs,
        )
    except (ValueError, ArithmeticError) as exc:  # bad data, or a solver that could not converge
        ctx.not_concluded.append(f"the titration data could not be analysed: {exc}")
        return
    ctx.analysis = analysis
    out["equivalence_points"] = [_eq_dict(e) for e in analysis.equivalence_points]
    out["pka"] = [_pka_dict(p) for p in analysis.pka]
    out["concentration"] = analysis.concentration
    out["smoothing"] = analysis.smoothing
    out["quality_flag_ranges_ml"] = [list(f) for f in analysis.quality_flags]
    out["analysis_warnings"] = list(analysis.warnings)
    fit = analysis.fit
    out["curve_fit"] = None if fit is None else {
        "model": fit.model, "parameters": fit.parameters, "uncertainties": fit.uncertainties, "rms_ph": fit.rms_ph,
        "n_points": fit.n_points, "excluded_points": fit.excluded_points, "converged": fit.converged,
        "message": fit.message, "equivalence_volumes_ml": fit.equivalence_volumes_ml,
        "uncertainty_note": "the standard errors here are the Jacobian's alone (independent pH errors, exact "
                            "volumes and titrant concentration); the uncertainties stated for pKa, equivalence "
                            "volumes and the concentration are the budgets below, which add the residuals' "
                            "correlation, electrode, temperature, titrant, drop volume and settling lag",
    }
    ctx.not_concluded.extend(analysis.warnings)
    if not any(e.supported for e in analysis.equivalence_points):
        _bracketed(usable, setup, inputs, out, ctx)
    _stop(usable, out, ctx)
    for e in analysis.equivalence_points:
        if e.supported:
            u = e.budget.combined if e.budget is not None else e.uncertainty_ml
            ctx.concluded.append(f"equivalence point {e.index} at {e.volume_ml:.3f} ± {u:.2g} mL (pH {e.ph:.2f})"
                                 + (interval_text(e.budget.as_dict()) if e.budget is not None else ""))
        else:
            ctx.not_concluded.append(f"equivalence point {e.index} (near {e.volume_ml:.3f} mL) is not stated: {e.reason}")
    for p in analysis.pka:
        label = f"pKa{p.index} ({p.method.replace('_', ' ')})"
        if p.supported:
            ctx.concluded.append(f"{label} = {p.value:.3f} ± {p.uncertainty:.2g}"
                                 + (interval_text(p.budget.as_dict()) if p.budget is not None else ""))
        else:
            ctx.not_concluded.append(f"{label} is not stated: {p.reason}")
    conc = analysis.concentration if concentration else None
    if conc is not None and setup.titrant_unknown:
        _standardisation(setup, conc, out, ctx)  # the analyte is the standard; the titrant is the result
    elif conc is not None:
        text = (f"analyte concentration {conc['analyte_m']:.5f} ± {conc['uncertainty_m']:.2g} mol/L "
                f"({conc['method'].replace('_', ' ')}){interval_text(conc.get('budget'), 5)}")
        (ctx.concluded if conc["supported"] else ctx.not_concluded).append(
            text if conc["supported"] else f"{text} is not stated as a finding: {conc['reason']}")
    try:
        reference_m = setup.analyte_m
        if reference_m is None and setup.analyte_unknown and conc is not None and conc["supported"]:
            reference_m = conc["analyte_m"]  # a determination: theory at the concentration the run measured
            ctx.concluded.append(f"the theory curve is drawn at the measured {reference_m:.5f} mol/L (a determination)")
        deviations, curve = compare_with_references(analysis, analyte_m=reference_m,
                                                    temperature_c=setup.temperature_c,
                                                    activity=bool(opts.get("activity", DEFAULT_ACTIVITY)))
    except (ValueError, ArithmeticError) as exc:
        deviations, curve = [], None
        ctx.not_concluded.append(f"no comparison with theory: {exc}")
    ctx.curve = curve
    out["deviations"] = [d.__dict__ for d in deviations]
    out["theory_curve"] = None if curve is None else {
        "n_points": curve.n_points, "rms_ph": curve.rms_ph, "mean_ph": curve.mean_ph, "max_abs_ph": curve.max_abs_ph,
        "source": curve.source}
    if curve is None:
        missing = [name for name, value in (("analyte", setup.analyte), ("analyte concentration", setup.analyte_m),
                                            ("titrant concentration", setup.titrant_m),
                                            ("analyte volume", setup.analyte_volume_ml)) if value is None]
        if missing:
            ctx.not_concluded.append("no comparison with theory: the run does not state the " + ", ".join(missing))


def _stop(usable, out: dict, ctx: ResultsContext) -> None:
    """Where the run stopped against its pH target, on the curve: the endpoint goals are the first drop past
    the target on a jump, or a level within 0.05 pH on a plateau; more drops past the target are said."""
    target = out.get("target_ph")
    if target is None or len(usable) < 2 or out.get("interrupted"):
        return
    rising = target > usable[0].ph
    past = [i for i, r in enumerate(usable) if (r.ph >= target if rising else r.ph <= target)]
    if not past:
        return
    first = past[0]
    beyond = len(usable) - 1 - first          # curve points after the first one past the target
    drops_after = usable[-1].drops - usable[first].drops
    before, at = usable[first - 1] if first else usable[first], usable[first]
    out["stop"] = {"first_past_target_ml": at.volume_ml, "drops_after_it": drops_after,
                   "ph_before": before.ph, "ph_first_past": at.ph}
    if drops_after == 0:
        ctx.concluded.append(f"stopped on the first drop past the target pH {target:g}: pH {before.ph:.2f} -> "
                             f"{at.ph:.2f} at {at.volume_ml:.3f} mL")
    elif abs(usable[-1].ph - target) <= 0.05:
        ctx.concluded.append(f"stopped {drops_after} drop(s) past the first one beyond pH {target:g}, at pH "
                             f"{usable[-1].ph:.2f}, within 0.05 of the target")
    else:
        ctx.not_concluded.append(f"the titration went {drops_after} drop(s) ({beyond} curve point(s)) past the first "
                                 f"drop beyond the target pH {target:g} ({at.ph:.2f} at {at.volume_ml:.3f} mL), ending "
                                 f"at pH {usable[-1].ph:.2f}: not within the endpoint goals")
    # a target before the equivalence: no equivalence point is asked for, and the report says why there is none
    eq_ph = out.get("equivalence_ph_predicted")
    found = any(e.get("supported") for e in out.get("equivalence_points") or ())
    if not found and eq_ph is not None and (target < eq_ph if rising else target > eq_ph):
        _drop_no_equivalence_lines(ctx)
        ctx.not_concluded.append(f"no equivalence point: the titration stopped at its target pH {target:g}, before the "
                                 f"equivalence (pH {eq_ph:.2f} predicted for these reagents), as the instruction asked")


def _bracketed(usable, setup: TitrationSetup, inputs: UncertaintyInputs, out: dict, ctx: ResultsContext) -> None:
    """The run stopped on (or just past) the drop that jumped (chemistry.jump_step): the equivalence is inside it."""
    expected = out.get("equivalence_ph_predicted")
    found = bracketed_equivalence([r.volume_ml for r in usable], [r.ph for r in usable], expected_ph=expected)
    if found is None:
        return
    drop_ml = found.high_ml - found.low_ml
    budget = equivalence_budget(1, found.volume_ml, found.u_bracket_ml, drop_ml, inputs)
    u = budget.combined
    out["equivalence_points"] = [{
        "index": 1, "volume_ml": found.volume_ml, "ph": None, "uncertainty_ml": u, "method": "bracketed_by_one_drop",
        "supported": True, "reason": "", "d1_peak_ml": None, "jump_region_ml": [found.low_ml, found.high_ml],
        "window_points": 2, "points_before": len(usable) - 1, "points_after": 1, "budget": budget.as_dict()}]
    ctx.concluded.append(f"equivalence point 1 at {found.volume_ml:.3f} ± {u:.2g} mL: inside the drop "
                         f"({found.low_ml:.3f}-{found.high_ml:.3f} mL), across which the pH jumped {found.jump_ph:.1f}"
                         + interval_text(budget.as_dict()))
    _drop_no_equivalence_lines(ctx)


def _drop_no_equivalence_lines(ctx: ResultsContext) -> None:
    """The analysis's own 'no equivalence point' lines, once the family has said better why (or found one)."""
    ctx.not_concluded[:] = [line for line in ctx.not_concluded
                            if not str(line).startswith(("no equivalence point", "the pH is still changing steeply"))]


def _standardisation(setup: TitrationSetup, conc: Mapping, out: dict, ctx: ResultsContext) -> None:
    """A standardisation measures the titrant against a standard of known concentration: the analysis
    computed the analyte from the titrant's *estimate*, so the titrant's concentration is the estimate
    scaled by (known standard / computed analyte); the relative uncertainty carries over."""
    if not (setup.titrant_m and setup.analyte_m and conc.get("analyte_m")):
        ctx.not_concluded.append("a standardisation, but the standard's concentration or the titrant's estimate "
                                 "is not in the run: the titrant's concentration cannot be stated")
        return
    c = setup.titrant_m * setup.analyte_m / conc["analyte_m"]
    u = c * conc["uncertainty_m"] / conc["analyte_m"]
    out["titrant_concentration"] = {"titrant_m": c, "uncertainty_m": u, "estimate_m": setup.titrant_m,
                                    "standard_m": setup.analyte_m, "supported": bool(conc["supported"])}
    standard = canonical(setup.analyte, [])
    name = standard.display_name if standard is not None else setup.analyte
    text = f"titrant concentration {c:.5f} ± {u:.2g} mol/L (standardised against {setup.analyte_m:g} M {name})"
    (ctx.concluded if conc["supported"] else ctx.not_concluded).append(
        text if conc["supported"] else f"{text} is not stated as a finding: {conc['reason']}")


def found_equivalences(results: Mapping) -> list[float]:
    return [e["volume_ml"] for e in results.get("equivalence_points") or []
            if e.get("supported") and finite(e.get("volume_ml")) is not None]


def measured_concentration(results: Mapping) -> float | None:
    conc = results.get("concentration") or {}
    return finite(conc.get("analyte_m")) if isinstance(conc, Mapping) else None
