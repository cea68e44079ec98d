"""Section 9 of the report: results, computed by the analysis from the recorded data only.

:func:`titration_setup` works out what was titrated with what (analysis options first, then the
experiment's reagent list, then the plan's parsed instruction, then reagent kinds); :func:`compute_results`
states what every run shows and hands the run to its family's results (``experiments/<folder>/results.py``,
see :mod:`agentchemist.experiments.results`), returning the JSON-ready results plus the objects the
charts need. Every number here comes from the records or the analysis; what cannot be concluded is
listed in ``not_concluded`` with the reason.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from agentchemist.chemistry.analysis import TitrationAnalysis
from agentchemist.chemistry.analysis_compare import CurveComparison
# A glass electrode responds to the activity of H+, and so does the twin's simulated meter: fit and compare
# with Davies activities unless the caller says the pH values are concentrations (one default: the analysis's).
from agentchemist.chemistry.analysis_types import DEFAULT_ACTIVITY
from agentchemist.chemistry.reagents import Reagent, default_library
from agentchemist.experiments.results import UNKNOWN, recognised_from, results_of, unlabelled

from .curve_rows import curve_rows, curve_source
from .delivery import report_outcome
from .model import DropRow, ReportInputError, RunData, series

__all__ = ["ResultsContext", "TitrationSetup", "canonical", "compute_results", "finite", "stated_pka",
           "titration_setup"]


_OPTION_KEYS = {
    "analyte", "analyte_m", "analyte_volume_ml", "titrant", "titrant_m", "expected_equivalents",
    "temperature_c", "activity", "fit", "config", "family", "sample_volume_ml", "uncertainty",
    "imported",  # a curve read from a file (report.imported): no robot-specific corrections
    "reading_lags_s",  # the meter trace's lags (report.curve_rows), when the electrode is known to differ
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


def finite(x) -> float | None:
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


def canonical(name: str | None, notes: list[str]) -> Reagent | None:
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
        family = recognised_from(lambda quantity: bool(run.fused(quantity))) or UNKNOWN
    setup = TitrationSetup(family=str(family), notes=notes)
    reagents = [r for r in (exp.get("reagents") or []) if isinstance(r, Mapping)]
    roles = {str(r.get("role")): r for r in [*_plan_reagents(plan), *reagents] if r.get("role")}
    analyte_entry, titrant_entry = roles.get("analyte"), roles.get("titrant")
    if (analyte_entry is None or titrant_entry is None) and reagents:
        # No roles recorded: a strong base (or EDTA) is the titrant, the other reagent the analyte.
        kinds = {id(r): canonical(r.get("name"), []) for r in reagents}
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
        reagent = canonical(analyte_entry.get("name"), notes)
        setup.analyte = reagent.name if reagent else None
        # a determination's analyte concentration is the result; the plan's number is only its estimate
        setup.analyte_unknown = bool(analyte_entry.get("unknown"))
        setup.analyte_m = None if setup.analyte_unknown else finite(analyte_entry.get("concentration_m"))
        setup.analyte_volume_ml = finite(analyte_entry.get("volume_ml"))
    if titrant_entry is not None and titrant_entry.get("name"):
        reagent = canonical(titrant_entry.get("name"), notes)
        if reagent is not None:
            setup.titrant = reagent.name
        setup.titrant_m = finite(titrant_entry.get("concentration_m"))
        setup.titrant_unknown = bool(titrant_entry.get("unknown"))
    if setup.analyte_volume_ml is None:
        try:
            setup.analyte_volume_ml = finite(parsed["initial_conditions"]["analyte_volume_ml"])
        except (KeyError, TypeError):
            pass
    conditions = exp.get("conditions") if isinstance(exp.get("conditions"), Mapping) else {}
    temperature = finite(conditions.get("temperature_start_c"))
    if temperature is None:
        _, temps = series(run, "temperature")
        temperature = float(np.median(temps)) if temps.size else None
    if temperature is not None and 0.0 <= temperature <= 100.0:
        setup.temperature_c = temperature
    for key in ("analyte", "analyte_m", "analyte_volume_ml", "titrant", "titrant_m", "temperature_c"):
        if key in opts and opts[key] is not None:
            value = opts[key]
            if key in ("analyte", "titrant"):
                reagent = canonical(value, notes)
                value = reagent.name if reagent else (None if key == "analyte" else setup.titrant)
            setattr(setup, key, value)
    return setup


def _last(run: RunData, quantity: str) -> tuple[float | None, float | None]:
    stamps, values = series(run, quantity)
    return (float(values[-1]), float(stamps[-1])) if values.size else (None, None)


def _first(run: RunData, quantity: str) -> float | None:
    _, values = series(run, quantity)
    return float(values[0]) if values.size else None


def stated_pka(pka: list[Mapping] | None) -> dict[int, Mapping]:
    """The pKa the report states for each index: of the supported estimates (results["pka"] rows), the one
    with the smallest standard uncertainty. The report's answer and the scenario scoring both read this."""
    best: dict[int, Mapping] = {}
    for p in pka or []:
        value, u = finite(p.get("value")), finite(p.get("uncertainty"))
        if p.get("supported") and value is not None and u is not None:
            if p["index"] not in best or u < best[p["index"]]["uncertainty"]:
                best[p["index"]] = p
    return best


def _interruption(run: RunData) -> dict:
    """The last FSM state and the last stamp of any record of a run that did not complete."""
    last_state, state_stamp = None, None
    for t in run.transitions:
        stamp = finite(t.get("stamp"))
        if stamp is not None and (state_stamp is None or stamp >= state_stamp):
            last_state, state_stamp = t.get("to_state"), stamp
    stamps = [finite(r.get("stamp")) for table in (run.transitions, run.raw_observations, run.fused_records,
                                                  run.anomalies, run.audio_events) for r in table]
    stamps = [x for x in stamps if x is not None]
    last = max(stamps) if stamps else None
    t0 = finite(run.experiment.get("started"))
    def rel(x):
        return None if x is None else (x - t0 if t0 is not None else x)
    parts = [f"last state {last_state!r} at {rel(state_stamp):.1f} s" if last_state else "no state recorded"]
    if last is not None:
        parts.append(f"last record at {rel(last):.1f} s after the start (run clock {last:.1f} s)")
    return {"last_state": last_state, "last_state_stamp": state_stamp, "last_record_stamp": last,
            "status": run.experiment.get("status"), "text": ", ".join(parts)}


def _robot_config(opts: dict) -> dict:
    """A robot's or the twin's run: each settled reading is paired with the dispenser's volume, so a repeated
    volume is a re-reading, not a typing slip (AnalysisConfig.check_volume_order off); a file's curve keeps it."""
    if opts.get("imported"):
        return opts
    import dataclasses

    from agentchemist.chemistry.analysis_types import AnalysisConfig
    config = opts.get("config")
    if config is None:
        opts["config"] = {"check_volume_order": False}
    elif isinstance(config, Mapping):
        opts["config"] = {"check_volume_order": False, **config}
    elif isinstance(config, AnalysisConfig):
        opts["config"] = dataclasses.replace(config, check_volume_order=False)
    return opts


def compute_results(run: RunData, options: Mapping | None = None) -> ResultsContext:
    """Run the analysis for the run's family; never raises on bad *data* (it is reported instead)."""
    opts = _robot_config(dict(options or {}))
    setup = titration_setup(run, opts)
    part = results_of(setup.family)
    titrant = part.TITRANT if part is not None else True
    # A weighing has no analyte, titrant or equivalents: its setup says only what it is (the titration
    # fields' defaults, e.g. titrant naoh, would read as facts in the report).
    titration_fields = titrant
    out: dict = {"family": setup.family,
                 "setup": {k: v for k, v in setup.__dict__.items()
                           if k != "notes" and (titration_fields or k in ("family", "analyte", "temperature_c"))},
                 "setup_notes": list(setup.notes)}
    ctx = ResultsContext(results=out, analysis=None, rows=curve_rows(run, opts), setup=setup, curve=None,
                         not_concluded=list(setup.notes), concluded=[])
    out["curve_source"] = curve_source(run)
    exp = run.experiment
    conditions = exp.get("conditions") if isinstance(exp.get("conditions"), Mapping) else {}
    plan = exp.get("plan") if isinstance(exp.get("plan"), Mapping) else {}
    try:
        target_ph = finite(plan["parsed_instruction"]["target_conditions"]["target_ph"])
    except (KeyError, TypeError):
        target_ph = None
    target_ph = target_ph if target_ph is not None else finite(conditions.get("target_ph"))
    usable = [r for r in ctx.rows if r.usable]
    final_ph = usable[-1].ph if usable else _last(run, "ph")[0]
    total_volume, _ = _last(run, "titrant_volume")
    out["final_ph"] = final_ph
    out["target_ph"] = target_ph
    out["final_ph_deviation"] = final_ph - target_ph if final_ph is not None and target_ph is not None else None
    out["total_volume_ml"] = total_volume
    out["drops"] = len(run.fused("titrant_volume"))
    # an imported curve's titrant came in additions read off an instrument, not in the robot's drops
    out["increments_called"] = "additions" if opts.get("imported") else "drops"
    out["initial_ph_measured"] = usable[0].ph if usable else _first(run, "ph")
    out["initial_ph_stated"] = finite(conditions.get("initial_ph"))
    t_start = finite(conditions.get("temperature_start_c"))
    t_end = finite(conditions.get("temperature_end_c"))
    out["temperature_start_c"] = t_start if t_start is not None else _first(run, "temperature")
    out["temperature_end_c"] = t_end if t_end is not None else _last(run, "temperature")[0]
    status = exp.get("status")
    interrupted = status != "completed"
    out["interrupted"] = _interruption(run) if interrupted else None
    if final_ph is not None and not interrupted:
        target_text = f" (target {target_ph:g}, deviation {final_ph - target_ph:+.3f})" if target_ph is not None else ""
        volume_text = (f" after {total_volume:.3f} mL of titrant ({out['drops']} {out['increments_called']})"
                       if total_volume is not None else "")
        ctx.concluded.append(f"final pH {final_ph:.3f}{volume_text}{target_text}")
    elif final_ph is not None:
        # The run stopped before its end: the last pH is where it stopped, not an endpoint, and its
        # distance from the target is not a finding.
        volume_text = f" after {total_volume:.3f} mL of titrant" if total_volume is not None else ""
        ctx.not_concluded.append(f"no endpoint: the run was interrupted; the last pH recorded, {final_ph:.3f}{volume_text}, "
                                 "is where it stopped, not an endpoint"
                                 + (f" (target pH {target_ph:g} was not reached)" if target_ph is not None else ""))
        out["final_ph_deviation"] = None
    elif titrant:
        ctx.not_concluded.append("no final pH: no pH was recorded")
    if total_volume is None and titrant:
        ctx.not_concluded.append("no total volume: no titrant volume was recorded")
    out["per_drop_rows"] = len(ctx.rows)
    if part is None and setup.family == UNKNOWN and ctx.rows:
        part = unlabelled()  # settled pH readings of an unnamed experiment: analysed as a titration curve
    if part is not None:
        part.compute(run, setup, opts, out, ctx)
        if ctx.analysis is not None:  # the checks beside the figures (chemistry.analysis_checks)
            out["gran"] = list(ctx.analysis.gran)
            out["electrode_fit"] = ctx.analysis.electrode
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
    out["outcome"] = report_outcome(run, out)  # the one judge's verdict, what was asked for included
    return ctx
