"""Section 9 of the report: results, computed by the analysis from the recorded data only.

:func:`titration_setup` works out what was titrated with what (analysis options first, then the
experiment's reagent list, then the plan's parsed instruction, then reagent kinds); :func:`compute_results`
runs the analysis for the experiment's family and returns the JSON-ready results plus the objects the
charts need. Every number here comes from the records or the analysis; what cannot be concluded is
listed in ``not_concluded`` with the reason.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from agentchemist.chemistry.analysis import (
    AnalysisConfig,
    TitrationAnalysis,
    analyze_titration,
    ca_concentration_from_endpoint,
    weighing_error,
)
from agentchemist.chemistry.analysis_compare import CurveComparison, compare_with_references
from agentchemist.chemistry.analysis_uncertainty import UncertaintyInputs
from agentchemist.chemistry.reagents import Reagent, default_library

from .model import DropRow, ReportInputError, RunData, flagged_volume_ranges, series, titration_table
from .uncertainty import interval_text

__all__ = ["ResultsContext", "TitrationSetup", "compute_results", "stated_pka", "titration_setup"]

# A glass electrode responds to the activity of H+, and so does the twin's simulated meter: fit and
# compare with Davies activities unless the caller says the pH values are concentrations.
DEFAULT_ACTIVITY = True

_OPTION_KEYS = {
    "analyte", "analyte_m", "analyte_volume_ml", "titrant", "titrant_m", "expected_equivalents",
    "temperature_c", "activity", "fit", "config", "family", "sample_volume_ml", "uncertainty",
}


@dataclass
class TitrationSetup:
    """Who was titrated with what; None where the run does not say. Concentrations mol/L, volumes mL."""

    family: str
    analyte: str | None = None
    analyte_m: float | None = None
    analyte_volume_ml: float | None = None
    titrant: str = "naoh"
    titrant_m: float | None = None
    # a determination: the analyte's concentration is the result (analyte_m stays None, not the estimate)
    analyte_unknown: bool = False
    # a standardisation: the titrant's concentration is the result and titrant_m only the plan's estimate
    titrant_unknown: bool = False
    temperature_c: float = 25.0
    notes: list[str] = field(default_factory=list)


@dataclass
class ResultsContext:
    """What section 9 computed: the JSON-ready dict and the objects behind the charts."""

    results: dict
    analysis: TitrationAnalysis | None
    rows: list[DropRow]
    setup: TitrationSetup
    curve: CurveComparison | None
    not_concluded: list[str]
    concluded: list[str]


def _num(x) -> float | None:
    """A finite float, or None (a missing or non-numeric value is not a result)."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _plan_reagents(plan: Mapping) -> list[dict]:
    try:
        return list(plan["parsed_instruction"]["entities"]["reagents"])
    except (KeyError, TypeError):
        return []


def _canonical(name: str | None, notes: list[str]) -> Reagent | None:
    if not name:
        return None
    try:
        return default_library().get(str(name))
    except ValueError as exc:
        notes.append(f"reagent {name!r} is not in the reagent library ({exc}); treated as unknown")
        return None


def titration_setup(run: RunData, options: Mapping | None = None) -> TitrationSetup:
    """Resolve the titration's reagents, concentrations and volumes (see the module docstring)."""
    opts = dict(options or {})
    unknown = sorted(set(opts) - _OPTION_KEYS)
    if unknown:
        raise ReportInputError(f"unknown analysis option(s) {unknown}; known: {sorted(_OPTION_KEYS)}")
    exp = run.experiment
    plan = exp.get("plan") if isinstance(exp.get("plan"), Mapping) else {}
    parsed = plan.get("parsed_instruction") if isinstance(plan.get("parsed_instruction"), Mapping) else {}
    notes: list[str] = []
    family = opts.get("family") or parsed.get("family")
    if not family:
        if run.fused("ph_settled") or run.fused("ph"):
            family = "acid_base_titration"
        elif run.fused("mass"):
            family = "weighing_dissolution"
        else:
            family = "unknown"
    setup = TitrationSetup(family=str(family), notes=notes)
    reagents = [r for r in (exp.get("reagents") or []) if isinstance(r, Mapping)]
    roles = {str(r.get("role")): r for r in [*_plan_reagents(plan), *reagents] if r.get("role")}
    analyte_entry, titrant_entry = roles.get("analyte"), roles.get("titrant")
    if (analyte_entry is None or titrant_entry is None) and reagents:
        # No roles recorded: a strong base (or EDTA) is the titrant, the other reagent the analyte.
        kinds = {id(r): _canonical(r.get("name"), []) for r in reagents}
        for r in reagents:
            reagent = kinds[id(r)]
            if reagent is None:
                continue
            if titrant_entry is None and (reagent.kind in ("strong_base", "chelator")):
                titrant_entry = r
        for r in reagents:
            if analyte_entry is None and r is not titrant_entry and kinds[id(r)] is not None \
                    and kinds[id(r)].kind not in ("solvent", "indicator"):
                analyte_entry = r
    if analyte_entry is not None and analyte_entry.get("name"):
        reagent = _canonical(analyte_entry.get("name"), notes)
        setup.analyte = reagent.name if reagent else None
        # a determination's analyte concentration is the result; the plan's number is only its estimate
        setup.analyte_unknown = bool(analyte_entry.get("unknown"))
        setup.analyte_m = None if setup.analyte_unknown else _num(analyte_entry.get("concentration_m"))
        setup.analyte_volume_ml = _num(analyte_entry.get("volume_ml"))
    if titrant_entry is not None and titrant_entry.get("name"):
        reagent = _canonical(titrant_entry.get("name"), notes)
        if reagent is not None:
            setup.titrant = reagent.name
        setup.titrant_m = _num(titrant_entry.get("concentration_m"))
        setup.titrant_unknown = bool(titrant_entry.get("unknown"))
    if setup.analyte_volume_ml is None:
        try:
            setup.analyte_volume_ml = _num(parsed["initial_conditions"]["analyte_volume_ml"])
        except (KeyError, TypeError):
            pass
    conditions = exp.get("conditions") if isinstance(exp.get("conditions"), Mapping) else {}
    temperature = _num(conditions.get("temperature_start_c"))
    if temperature is None:
        _, temps = series(run, "temperature")
        temperature = float(np.median(temps)) if temps.size else None
    if temperature is not None and 0.0 <= temperature <= 100.0:
        setup.temperature_c = temperature
    for key in ("analyte", "analyte_m", "analyte_volume_ml", "titrant", "titrant_m", "temperature_c"):
        if key in opts and opts[key] is not None:
            value = opts[key]
            if key in ("analyte", "titrant"):
                reagent = _canonical(value, notes)
                value = reagent.name if reagent else (None if key == "analyte" else setup.titrant)
            setattr(setup, key, value)
    return setup


def _last(run: RunData, quantity: str) -> tuple[float | None, float | None]:
    stamps, values = series(run, quantity)
    return (float(values[-1]), float(stamps[-1])) if values.size else (None, None)


def _first(run: RunData, quantity: str) -> float | None:
    _, values = series(run, quantity)
    return float(values[0]) if values.size else None


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


def stated_pka(pka: list[Mapping] | None) -> dict[int, Mapping]:
    """The pKa the report states for each index: of the supported estimates (results["pka"] rows), the one
    with the smallest standard uncertainty. The report's answer and the scenario scoring both read this."""
    best: dict[int, Mapping] = {}
    for p in pka or []:
        value, u = _num(p.get("value")), _num(p.get("uncertainty"))
        if p.get("supported") and value is not None and u is not None:
            if p["index"] not in best or u < best[p["index"]]["uncertainty"]:
                best[p["index"]] = p
    return best


def _titration(run: RunData, setup: TitrationSetup, opts: Mapping, out: dict, ctx: ResultsContext) -> None:
    rows = ctx.rows
    usable = [r for r in rows if r.usable]
    unusable = len(rows) - len(usable)
    out["per_drop_rows"] = len(rows)
    if unusable:
        ctx.not_concluded.append(f"{unusable} pH reading(s) had no finite pH or volume and were left out of the analysis")
    if not usable:
        ctx.not_concluded.append("no titration data: the run recorded no settled pH reading, so no equivalence point, "
                                 "pKa or concentration can be stated")
        return
    config = opts.get("config")
    if isinstance(config, Mapping):
        config = AnalysisConfig(**config)
    # The rows are the recorder's ph_settled readings: settle-gated, so they lag (analysis_uncertainty).
    try:
        inputs = UncertaintyInputs.for_settled_readings(**dict(opts.get("uncertainty") or {}))
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
    conc = analysis.concentration
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
    standard = _canonical(setup.analyte, [])
    name = standard.display_name if standard is not None else setup.analyte
    text = f"titrant concentration {c:.5f} ± {u:.2g} mol/L (standardised against {setup.analyte_m:g} M {name})"
    (ctx.concluded if conc["supported"] else ctx.not_concluded).append(
        text if conc["supported"] else f"{text} is not stated as a finding: {conc['reason']}")


def _complexometric(run: RunData, setup: TitrationSetup, opts: Mapping, out: dict, ctx: ResultsContext) -> None:
    endpoint = next((t for t in run.transitions if t.get("symbol") == "endpoint"), None)
    stamps, volumes = series(run, "titrant_volume")
    if endpoint is None or not volumes.size:
        ctx.not_concluded.append("no complexometric endpoint: " + (
            "no 'endpoint' transition was recorded" if endpoint is None else "no titrant volume was recorded"))
        return
    before = stamps <= float(endpoint["stamp"])
    if not before.any():
        ctx.not_concluded.append("no titrant volume was recorded before the endpoint")
        return
    v_ep = float(volumes[before][-1])
    out["endpoint_volume_ml"] = v_ep
    out["endpoint_stamp"] = float(endpoint["stamp"])
    sample = _num(opts.get("sample_volume_ml")) or setup.analyte_volume_ml
    if setup.titrant_m is None or sample is None or v_ep <= 0:
        ctx.not_concluded.append("no Ca2+ concentration: the EDTA concentration or the sample volume is not recorded")
        return
    c = ca_concentration_from_endpoint(setup.titrant_m, v_ep, sample)
    out["calcium_m"] = c
    ctx.concluded.append(f"Ca2+ concentration {c:.5f} mol/L from the endpoint at {v_ep:.3f} mL")
    if setup.analyte_m:
        out["calcium_relative_deviation"] = (c - setup.analyte_m) / setup.analyte_m


def _weighing(run: RunData, setup: TitrationSetup, out: dict, ctx: ResultsContext) -> None:
    exp = run.experiment
    plan = exp.get("plan") if isinstance(exp.get("plan"), Mapping) else {}
    target = None
    try:
        target = _num(plan["parsed_instruction"]["target_conditions"]["target_mass_g"])
    except (KeyError, TypeError):
        target = _num((exp.get("conditions") or {}).get("target_mass_g"))
    # The weighed mass is the balance settled at the end of the pour (the supervisor's target_mass,
    # recorded as mass_weighed); the last periodic reading is taken only when there is none, since after
    # the beaker leaves the balance the display shows minus the beaker.
    final = run.fused("mass_weighed") or run.fused("mass_settled")
    if final:
        mass = float(final[-1]["value"])
        if not run.fused("mass_weighed"):
            ctx.not_concluded.append("no weighed mass was recorded at the end of the pour: the last settled "
                                     "balance reading is used")
    else:
        mass, _ = _last(run, "mass")
        if mass is not None:
            ctx.not_concluded.append("no settled mass was recorded: the last balance reading is used")
    out["final_mass_g"] = mass
    out["target_mass_g"] = target
    dissolution = [r for r in run.raw_observations if r.get("quantity") == "dissolution_time_s"]
    if dissolution:
        out["dissolution_time_s"] = float(dissolution[-1]["value"])
        ctx.concluded.append(f"dissolved in {out['dissolution_time_s']:.0f} s after the stirrer started "
                             "(no solid seen by the front camera)")
    if mass is None or target is None:
        ctx.not_concluded.append("no weighing error: " + ("no mass was recorded" if mass is None else "no target mass"))
        return
    try:
        err = weighing_error(target, mass)
    except ValueError as exc:  # e.g. a negative reading: the beaker was already off the balance
        ctx.not_concluded.append(f"no weighing error: {exc}")
        return
    out["weighing_error"] = err.__dict__
    ctx.concluded.append(f"weighed {mass:.3f} g for a {target:.3f} g target (error {err.error_g:+.3f} g)")


def _interruption(run: RunData) -> dict:
    """The last FSM state and the last stamp of any record of a run that did not complete."""
    last_state, state_stamp = None, None
    for t in run.transitions:
        stamp = _num(t.get("stamp"))
        if stamp is not None and (state_stamp is None or stamp >= state_stamp):
            last_state, state_stamp = t.get("to_state"), stamp
    stamps = [_num(r.get("stamp")) for table in (run.transitions, run.raw_observations, run.fused_records,
                                                  run.anomalies, run.audio_events) for r in table]
    stamps = [x for x in stamps if x is not None]
    last = max(stamps) if stamps else None
    t0 = _num(run.experiment.get("started"))
    def rel(x):
        return None if x is None else (x - t0 if t0 is not None else x)
    parts = [f"last state {last_state!r} at {rel(state_stamp):.1f} s" if last_state else "no state recorded"]
    if last is not None:
        parts.append(f"last record at {rel(last):.1f} s after the start (run clock {last:.1f} s)")
    return {"last_state": last_state, "last_state_stamp": state_stamp, "last_record_stamp": last,
            "status": run.experiment.get("status"), "text": ", ".join(parts)}


def compute_results(run: RunData, options: Mapping | None = None) -> ResultsContext:
    """Run the analysis for the run's family; never raises on bad *data* (it is reported instead)."""
    opts = dict(options or {})
    setup = titration_setup(run, opts)
    # A weighing has no analyte, titrant or equivalents: its setup says only what it is (the titration
    # fields' defaults, e.g. titrant naoh, would read as facts in the report).
    titration_fields = setup.family != "weighing_dissolution"
    out: dict = {"family": setup.family,
                 "setup": {k: v for k, v in setup.__dict__.items()
                           if k != "notes" and (titration_fields or k in ("family", "analyte", "temperature_c"))},
                 "setup_notes": list(setup.notes)}
    ctx = ResultsContext(results=out, analysis=None, rows=titration_table(run), setup=setup, curve=None,
                         not_concluded=list(setup.notes), concluded=[])
    exp = run.experiment
    conditions = exp.get("conditions") if isinstance(exp.get("conditions"), Mapping) else {}
    plan = exp.get("plan") if isinstance(exp.get("plan"), Mapping) else {}
    try:
        target_ph = _num(plan["parsed_instruction"]["target_conditions"]["target_ph"])
    except (KeyError, TypeError):
        target_ph = None
    target_ph = target_ph if target_ph is not None else _num(conditions.get("target_ph"))
    usable = [r for r in ctx.rows if r.usable]
    final_ph = usable[-1].ph if usable else _last(run, "ph")[0]
    total_volume, _ = _last(run, "titrant_volume")
    out["final_ph"] = final_ph
    out["target_ph"] = target_ph
    out["final_ph_deviation"] = final_ph - target_ph if final_ph is not None and target_ph is not None else None
    out["total_volume_ml"] = total_volume
    out["drops"] = len(run.fused("titrant_volume"))
    out["initial_ph_measured"] = usable[0].ph if usable else _first(run, "ph")
    out["initial_ph_stated"] = _num(conditions.get("initial_ph"))
    t_start = _num(conditions.get("temperature_start_c"))
    t_end = _num(conditions.get("temperature_end_c"))
    out["temperature_start_c"] = t_start if t_start is not None else _first(run, "temperature")
    out["temperature_end_c"] = t_end if t_end is not None else _last(run, "temperature")[0]
    status = exp.get("status")
    interrupted = status != "completed"
    out["interrupted"] = _interruption(run) if interrupted else None
    if final_ph is not None and not interrupted:
        target_text = f" (target {target_ph:g}, deviation {final_ph - target_ph:+.3f})" if target_ph is not None else ""
        volume_text = f" after {total_volume:.3f} mL of titrant ({out['drops']} drops)" if total_volume is not None else ""
        ctx.concluded.append(f"final pH {final_ph:.3f}{volume_text}{target_text}")
    elif final_ph is not None:
        # The run stopped before its end: the last pH is where it stopped, not an endpoint, and its
        # distance from the target is not a finding.
        volume_text = f" after {total_volume:.3f} mL of titrant" if total_volume is not None else ""
        ctx.not_concluded.append(f"no endpoint: the run was interrupted; the last pH recorded, {final_ph:.3f}{volume_text}, "
                                 "is where it stopped, not an endpoint"
                                 + (f" (target pH {target_ph:g} was not reached)" if target_ph is not None else ""))
        out["final_ph_deviation"] = None
    elif setup.family != "weighing_dissolution":
        ctx.not_concluded.append("no final pH: no pH was recorded")
    if total_volume is None and setup.family != "weighing_dissolution":
        ctx.not_concluded.append("no total volume: no titrant volume was recorded")
    out["per_drop_rows"] = len(ctx.rows)
    if setup.family in ("acid_base_titration", "unknown") and (ctx.rows or setup.family == "acid_base_titration"):
        _titration(run, setup, opts, out, ctx)
    elif setup.family == "complexometric_titration":
        _complexometric(run, setup, opts, out, ctx)
    elif setup.family == "weighing_dissolution":
        _weighing(run, setup, out, ctx)
    else:
        ctx.not_concluded.append("no titration or weighing data was recorded, so no equivalence point, pKa, "
                                 "concentration or mass can be stated")
    if interrupted:
        info = out["interrupted"]
        why = exp.get("reason") or "no reason recorded"
        ctx.not_concluded.insert(0, f"the run did not complete (status {status or 'not recorded'}: {why}): interrupted, "
                                    f"{info['text']}; results cover only the data recorded until then")
    out["concluded"] = list(ctx.concluded)
    out["not_concluded"] = list(dict.fromkeys(ctx.not_concluded))
    ctx.not_concluded = out["not_concluded"]
    return ctx
