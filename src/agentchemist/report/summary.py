"""The report's content as one JSON-ready dict: the eleven sections of SPEC.md "Summarizer report".

Sections (keys of ``summary["sections"]``): metadata, parameters, procedure, fsm_evolution,
process_data, quantity_records, event_log, anomalies, results, visual_documentation, reproducibility.
Times are kept as the stored stamps (s) plus ``t_s``, seconds since the run started. Nothing here reads
a clock or invents a value: a missing field stays None and the text renderers say "not recorded".
"""

from __future__ import annotations

import platform
from collections import Counter, defaultdict
from collections.abc import Mapping
from pathlib import Path

import matplotlib
import numpy as np
import scipy

import agentchemist
from agentchemist.experiments.report import DEFAULT_SNAPSHOTS, report_of

from .model import RunData
from .results import ResultsContext, compute_results, finite as _num
from .result_sheet import result_sheet
from .stated import stated_results

__all__ = ["SCHEMA_VERSION", "SECTION_TITLES", "build_summary", "resolve_artifact"]

SCHEMA_VERSION = "1.0"
SECTION_TITLES = {
    "metadata": "Experiment metadata",
    "parameters": "Parameters: initial and target conditions",
    "procedure": "Operational procedure",
    "fsm_evolution": "FSM evolution",
    "process_data": "Process data",
    "quantity_records": "Quantity records",
    "event_log": "Key event log",
    "anomalies": "Anomaly records",
    "results": "Results",
    "visual_documentation": "Visual documentation",
    "reproducibility": "Reproducibility guide",
}


def _rel(stamp, t0: float | None) -> float | None:
    s = _num(stamp)
    return None if s is None or t0 is None else s - t0


def _plan(run: RunData) -> dict:
    plan = run.experiment.get("plan")
    return dict(plan) if isinstance(plan, Mapping) else {}


def _get(mapping, *keys, default=None):
    for key in keys:
        if not isinstance(mapping, Mapping) or key not in mapping:
            return default
        mapping = mapping[key]
    return mapping


# ------------------------------------------------------------------------------------ 1 metadata
def _metadata(run: RunData, t0: float | None) -> dict:
    exp = run.experiment
    started, finished = _num(exp.get("started")), _num(exp.get("finished"))
    plan = _plan(run)
    reagents = []
    roles = {r.get("name"): r.get("role") for r in _get(plan, "parsed_instruction", "entities", "reagents", default=[]) or []
             if isinstance(r, Mapping)}
    for r in exp.get("reagents") or []:
        if isinstance(r, Mapping):
            reagents.append({"name": r.get("name"), "role": r.get("role") or roles.get(r.get("name")),
                             "concentration_m": _num(r.get("concentration_m")), "volume_ml": _num(r.get("volume_ml")),
                             "batch": r.get("batch")})
    return {
        "experiment_id": exp.get("experiment_id"),
        "experiment_name": _get(plan, "parsed_instruction", "experiment_name"),
        "family": _get(plan, "parsed_instruction", "family"),
        "instruction": exp.get("instruction"),
        "operator": exp.get("operator"),
        "started": started,
        "finished": finished,
        "calendar_start": exp.get("calendar_start"),
        "calendar_finish": exp.get("calendar_finish"),
        "duration_s": finished - started if started is not None and finished is not None else None,
        "status": exp.get("status"),
        "reason": exp.get("reason"),
        "reagents": reagents,
        "protocol": _get(plan, "protocol"),
        "clock": "epoch" if (t0 or 0) > 1e9 else "run clock (simulated or relative seconds)",
        "data_origin": data_origin(run),
        "source_file": exp.get("source_file"),   # an imported curve's file (report.imported)
        "electrode": exp.get("electrode"),        # the electrode and its calibration, where the run names them
    }


# ---------------------------------------------------------------------------------- 2 parameters
def _parameters(run: RunData, ctx: ResultsContext) -> dict:
    plan = _plan(run)
    conditions = run.experiment.get("conditions") if isinstance(run.experiment.get("conditions"), Mapping) else {}
    r = ctx.results
    initial = dict(_get(plan, "parsed_instruction", "initial_conditions", default={}) or {})
    target = dict(_get(plan, "parsed_instruction", "target_conditions", default={}) or {})
    for key, value in conditions.items():
        # the run's stored conditions repeat the plan's target conditions (to_equivalence, colour_change):
        # they are not initial conditions
        is_target = key in target or key.startswith("target") or key in ("to_equivalence", "colour_change")
        (target if is_target else initial).setdefault(key, value)
    return {
        "initial_conditions": initial,
        "target_conditions": target,
        "measured": {
            "initial_ph": r.get("initial_ph_measured"),
            "temperature_start_c": r.get("temperature_start_c"),
            "temperature_end_c": r.get("temperature_end_c"),
        },
        "modules": _get(plan, "module_instantiation", default={}) or {},
        "run_parameters": dict(run.experiment.get("parameters") or {}),
        "environment_check": _get(plan, "environment_check"),
    }


# ----------------------------------------------------------------------------------- 3 procedure
def _procedure(run: RunData, t0: float | None) -> dict:
    plan = _plan(run)
    by_subtask: dict[str, list[dict]] = defaultdict(list)
    unattributed: list[dict] = []
    for t in run.transitions:
        if t.get("subtask_id"):
            by_subtask[str(t["subtask_id"])].append(t)
        else:
            unattributed.append(t)
    subtasks = []
    planned = [s for s in plan.get("task_decomposition") or [] if isinstance(s, Mapping)]
    for s in planned:
        sid = str(s.get("id"))
        history = list(by_subtask.get(sid, []))
        expected = s.get("expected_transition") if isinstance(s.get("expected_transition"), Mapping) else None
        done = None
        if expected:
            def is_expected(t):
                return t.get("symbol") == expected.get("symbol") and t.get("to_state") == expected.get("target")
            done = next((t for t in history if is_expected(t)), None)
            if done is None:
                # The supervisor's own decisions (tare_ok from the balance, the pH endpoint, dissolved,
                # verified) carry no subtask id: the plan's expected transition says whose they are.
                done = next((t for t in unattributed if is_expected(t)), None)
                if done is not None:
                    history = sorted(history + [done], key=lambda t: t["stamp"])
        status = "completed" if done else ("started" if history else "no transition recorded")
        if not expected and history:
            status = "ran"
        if s.get("primitive") == "report" and not history:
            status = "this report"
        subtasks.append({
            "id": sid, "agent": s.get("receiver"), "description": s.get("description"),
            "dependencies": list(s.get("dependencies") or []), "fsm_state": s.get("fsm_state"),
            "expected_transition": expected, "primitive": s.get("primitive"),
            "first_t_s": _rel(history[0]["stamp"], t0) if history else None,
            "last_t_s": _rel(history[-1]["stamp"], t0) if history else None,
            "completed_t_s": _rel(done["stamp"], t0) if done else None,
            "transitions": len(history), "status": status,
        })
    unplanned = sorted(set(by_subtask) - {s["id"] for s in subtasks})
    for sid in unplanned:
        history = by_subtask[sid]
        subtasks.append({"id": sid, "agent": history[0].get("agent"), "description": "(not in the plan)",
                         "dependencies": [], "fsm_state": history[0].get("from_state"), "expected_transition": None,
                         "primitive": None, "first_t_s": _rel(history[0]["stamp"], t0),
                         "last_t_s": _rel(history[-1]["stamp"], t0), "completed_t_s": None,
                         "transitions": len(history), "status": "ran"})
    return {"subtasks": subtasks, "planned": len(planned)}


# ------------------------------------------------------------------------------------------ 4 FSM
def _fsm(run: RunData, t0: float | None) -> dict:
    plan = _plan(run)
    machine = plan.get("state_machine") if isinstance(plan.get("state_machine"), Mapping) else {}
    transitions = [{"stamp": _num(t["stamp"]), "t_s": _rel(t["stamp"], t0), "from_state": t.get("from_state"),
                    "symbol": t.get("symbol"), "to_state": t.get("to_state"), "subtask_id": t.get("subtask_id"),
                    "agent": t.get("agent")} for t in run.transitions]
    time_in: dict[str, float] = defaultdict(float)
    visits: Counter = Counter()
    end = _num(run.experiment.get("finished"))
    for i, t in enumerate(run.transitions):
        nxt = run.transitions[i + 1]["stamp"] if i + 1 < len(run.transitions) else end
        visits[str(t.get("to_state"))] += 1
        if nxt is not None:
            time_in[str(t.get("to_state"))] += float(nxt) - float(t["stamp"])
    final = run.transitions[-1].get("to_state") if run.transitions else None
    accepting = list(machine.get("accepting_states") or [])
    return {
        "initial_state": machine.get("initial_state") or (run.transitions[0].get("from_state") if run.transitions else None),
        "final_state": final,
        "accepting_states": accepting,
        "accepted": (final in accepting) if final is not None and accepting else None,
        "transitions": transitions,
        "time_in_state_s": dict(time_in),
        "visits": dict(visits),
        "symbol_counts": dict(Counter(str(t.get("symbol")) for t in run.transitions)),
    }


# --------------------------------------------------------------------------------- 5 process data
def _series_stats(run: RunData, quantity: str, t0: float | None) -> dict | None:
    recs = [r for r in run.fused(quantity) if _num(r.get("value")) is not None]
    if not recs:
        return None
    values = np.array([float(r["value"]) for r in recs])
    return {"unit": recs[0].get("unit"), "n": len(recs), "first": float(values[0]), "last": float(values[-1]),
            "min": float(values.min()), "max": float(values.max()), "t_first_s": _rel(recs[0]["stamp"], t0),
            "t_last_s": _rel(recs[-1]["stamp"], t0)}


def _process(run: RunData, t0: float | None) -> dict:
    quantities = sorted({str(r.get("quantity")) for r in run.fused_records})
    raw = Counter((str(r.get("sensor") or r.get("channel")), str(r.get("quantity"))) for r in run.raw_observations)
    return {
        "series": {q: _series_stats(run, q, t0) for q in quantities},
        "raw_observations": [{"sensor": s, "quantity": q, "n": n} for (s, q), n in sorted(raw.items())],
        "raw_total": len(run.raw_observations),
    }


# ----------------------------------------------------------------------------- 6 quantity records
def _quantities(run: RunData, ctx: ResultsContext, t0: float | None) -> dict:
    per_quantity = {}
    groups: dict[str, list[dict]] = defaultdict(list)
    for r in run.fused_records:
        groups[str(r.get("quantity"))].append(r)
    for q, recs in sorted(groups.items()):
        conf = [c for c in (_num(r.get("confidence")) for r in recs) if c is not None]
        channels: dict[str, list[float]] = defaultdict(list)
        for r in recs:
            for name, c in zip(r.get("channels") or [], r.get("channel_confidences") or []):
                if _num(c) is not None:
                    channels[str(name)].append(float(c))
        flags = Counter(f for r in recs for f in (r.get("quality_flags") or []))
        per_quantity[q] = {
            "unit": recs[0].get("unit"), "n": len(recs),
            "mean_confidence": float(np.mean(conf)) if conf else None,
            "min_confidence": float(np.min(conf)) if conf else None,
            "channels": {name: {"n": len(cs), "mean_confidence": float(np.mean(cs))} for name, cs in channels.items()},
            "flagged": sum(1 for r in recs if r.get("quality_flags")), "flags": dict(flags),
        }
    last_volume = next((r for r in reversed(run.fused_records) if r.get("quantity") == "titrant_volume"), None)
    channel_totals = None
    if last_volume is not None:
        channel_totals = {"fused": _num(last_volume.get("value")), "fused_confidence": _num(last_volume.get("confidence"))}
        for name, v, c in zip(last_volume.get("channels") or [], last_volume.get("channel_values") or [],
                              last_volume.get("channel_confidences") or []):
            channel_totals[str(name)] = {"value": _num(v), "confidence": _num(c)}
    audio = Counter(str(e.get("classification")) for e in run.audio_events)
    audio_conf = [c for c in (_num(e.get("confidence")) for e in run.audio_events) if c is not None]
    rows = [{
        "reading": r.reading, "stamp": r.stamp, "t_s": _rel(r.stamp, t0), "drops": r.drops, "volume_ml": r.volume_ml,
        "d_volume_ml": r.d_volume_ml, "ph": r.ph, "d_ph": r.d_ph, "ph_confidence": r.ph_confidence,
        "volume_confidence": r.volume_confidence,
        "volume_channels": {k: {"value": v, "confidence": c} for k, (v, c) in r.volume_channels.items()},
        "temperature_c": r.temperature_c, "flags": list(r.flags), "fsm_state": r.fsm_state, "usable": r.usable,
    } for r in ctx.rows]
    return {
        "per_quantity": per_quantity,
        "counts": _reconcile_counts(run, ctx),
        "volume_channel_totals": channel_totals,
        "audio_events": {"n": len(run.audio_events), "by_classification": dict(audio),
                         "mean_confidence": float(np.mean(audio_conf)) if audio_conf else None},
        "per_drop": rows,
        "increments_called": ctx.results.get("increments_called") or "drops",
        "curve_source": ctx.results.get("curve_source"),   # settled readings, or the meter trace (report.curve_rows)
    }


def _reconcile_counts(run: RunData, ctx: ResultsContext) -> list[str]:
    """Why the counts of drops, audio events, channel estimates and settled readings differ, from the data."""
    volumes = [r for r in run.fused_records if r.get("quantity") == "titrant_volume"]
    n_drops = len(volumes)
    if not n_drops and not run.audio_events:
        return []
    if ctx.results.get("increments_called") == "additions":  # an imported curve: the file's rows, no drops
        return [f"{n_drops} additions: one titrant volume per row of the file after the first"]
    out = [f"{n_drops} drops: one fused titrant-volume record per drop"]
    kinds = Counter(str(e.get("kind") or "unclassified") for e in run.audio_events)
    if run.audio_events:
        droplets = kinds.get("droplet", 0)
        others = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()) if k != "droplet")
        text = f"{len(run.audio_events)} audio events: {droplets} droplet(s)" + (f" and {others}" if others else "")
        if droplets != n_drops:
            text += (f"; {abs(droplets - n_drops)} droplet sound(s) "
                     + ("more than drops (heard twice, or after the last recorded drop)" if droplets > n_drops
                        else "fewer than drops (drops the microphone missed: their volume came from the other channel)"))
        out.append(text)
    used = Counter(str(name) for r in volumes for name in (r.get("channels") or []))
    raw = Counter(str(r.get("sensor") or r.get("channel")) for r in run.raw_observations
                  if r.get("quantity") == "titrant_volume")
    for channel in sorted(set(used) | set(raw)):
        if raw.get(channel, 0) == used.get(channel, 0) == n_drops:
            continue
        text = f"{raw.get(channel, 0)} {channel} estimate(s), used in {used.get(channel, 0)} of the {n_drops} drops"
        if channel == "statistical":
            text += (" (the dispenser's displacement estimate comes at its own pace, not once per drop; a drop "
                     "without a fresh estimate is fused with the latest one)")
        out.append(text)
    usable = sum(1 for r in ctx.rows if r.usable)
    if ctx.rows:
        if ctx.results.get("curve_source") == "meter trace":
            out.append(f"{len(ctx.rows)} per-drop rows from the meter's trace (one per drop the readings resolve, the "
                       f"reading's lags taken out), {usable} usable")
            return out
        text = f"{len(ctx.rows)} per-drop rows (settled pH readings), {usable} usable"
        if len(ctx.rows) != n_drops:
            text += (" (a reading settles after one or more drops: rows count settled readings, drops count drops)"
                     if len(ctx.rows) < n_drops else " (readings without a new drop, e.g. the final check)")
        out.append(text)
    return out


# ------------------------------------------------------------------------------------ 7 event log
# The per-drop cycle (titrating --drop--> waiting_ph --ph_stable--> titrating) repeats once per drop;
# it is in the FSM history and the per-drop table, so the key event log leaves it out and counts it.
ROUTINE_SYMBOLS = frozenset({"drop", "ph_stable", "record"})


def _events(run: RunData, t0: float | None) -> dict:
    events = []
    routine = 0
    for t in run.transitions:
        if t.get("symbol") in ROUTINE_SYMBOLS:
            routine += 1
            continue
        kind = "completion" if t.get("agent") and t.get("subtask_id") else "transition"
        events.append({"stamp": t["stamp"], "kind": kind, "source": t.get("agent") or "",
                       "text": f"{t.get('from_state')} --{t.get('symbol')}--> {t.get('to_state')}"
                               + (f" (subtask {t.get('subtask_id')})" if t.get("subtask_id") else "")})
    for a in run.anomalies:
        events.append({"stamp": a["stamp"], "kind": "anomaly", "source": a.get("source") or "",
                       "text": f"{a.get('severity')}: {a.get('kind')}: {a.get('description')}"})
    for e in run.audio_events:
        if e.get("classification") in ("anomalous", "timeout"):
            events.append({"stamp": e["stamp"], "kind": f"audio_{e.get('classification')}", "source": "audio",
                           "text": f"{e.get('kind')} event {e.get('event_id')} classified {e.get('classification')}"})
    for a in run.artifacts:
        events.append({"stamp": a["stamp"], "kind": "artifact", "source": str(a.get("kind") or ""),
                       "text": f"{a.get('kind')} {a.get('label') or ''}".strip()})
    events.sort(key=lambda e: float(e["stamp"]))
    for e in events:
        e["t_s"] = _rel(e["stamp"], t0)
    drops = run.fused("titrant_volume")
    drop_summary = None
    if drops:
        stamps = [float(d["stamp"]) for d in drops]
        drop_summary = {"n": len(drops), "first_t_s": _rel(stamps[0], t0), "last_t_s": _rel(stamps[-1], t0),
                        "mean_interval_s": (stamps[-1] - stamps[0]) / (len(stamps) - 1) if len(stamps) > 1 else None}
    return {"events": events, "drops": drop_summary, "routine_transitions": routine,
            "counts": dict(Counter(e["kind"] for e in events))}


# ------------------------------------------------------------------------------------ 8 anomalies
def _anomalies(run: RunData, t0: float | None) -> dict:
    records = [{"stamp": a["stamp"], "t_s": _rel(a["stamp"], t0), "kind": a.get("kind"), "severity": a.get("severity"),
                "source": a.get("source"), "description": a.get("description"), "fsm_state": a.get("fsm_state"),
                "subtask_id": a.get("subtask_id"), "response": a.get("response") or None,
                "resolved": bool(a.get("resolved"))} for a in run.anomalies]
    # An agent reports a problem and, when it is over, the same kind again with resolved set (noise on a
    # microphone, a dispenser RESET whose cause cleared): that later record resolves the earlier ones of its
    # kind and source. Records that are themselves resolutions are marked as such.
    for r in records:
        r["resolution"] = r["resolved"] and r["severity"] == "info"
    for i, r in enumerate(records):
        if r["resolved"]:
            continue
        later = next((q for q in records[i + 1:] if q["resolution"] and q["kind"] == r["kind"]
                      and q["source"] == r["source"] and q["stamp"] >= r["stamp"]), None)
        if later is not None:
            r["resolved"], r["resolved_t_s"] = True, later["t_s"]
    audio = [{"stamp": e["stamp"], "t_s": _rel(e["stamp"], t0), "event_id": e.get("event_id"), "kind": e.get("kind"),
              "classification": e.get("classification"), "confidence": _num(e.get("confidence"))}
             for e in run.audio_events if e.get("classification") in ("anomalous", "timeout")]
    flags = Counter(f for r in run.fused_records for f in (r.get("quality_flags") or []))
    return {"records": records, "n": len(records), "unresolved": sum(1 for r in records if not r["resolved"]),
            "resolutions": sum(1 for r in records if r["resolution"]), "groups": group_anomalies(records),
            "audio_anomalies": audio, "data_quality_flags": dict(flags)}


_SEVERITY_RANK = {"info": 0, "warn": 1, "halt": 2}


def group_anomalies(records: list[dict]) -> list[dict]:
    """Repeated anomalies as one line each: the records (not their resolutions) of one kind from one source,
    with how many, the worst severity, first and last time, how many are unresolved, the responses and the
    first description. In order of first appearance, so the summary reads as the run went."""
    groups: dict[tuple, dict] = {}
    for r in records:
        if r.get("resolution"):
            continue
        g = groups.setdefault((r.get("kind"), r.get("source")), {
            "kind": r.get("kind"), "source": r.get("source"), "severity": r.get("severity"), "n": 0,
            "first_t_s": r.get("t_s"), "last_t_s": r.get("t_s"), "unresolved": 0, "responses": [],
            "description": r.get("description")})
        g["n"] += 1
        g["last_t_s"] = r.get("t_s")
        g["unresolved"] += 0 if r.get("resolved") else 1
        if _SEVERITY_RANK.get(r.get("severity"), 0) > _SEVERITY_RANK.get(g["severity"], 0):
            g["severity"] = r.get("severity")
        if r.get("response") and r["response"] not in g["responses"]:
            g["responses"].append(r["response"])
    return list(groups.values())


# ------------------------------------------------------------------------------- 10 visual / 11
def resolve_artifact(run: RunData, path: str, out_dir: Path) -> Path:
    """An artifact path: absolute as is; relative against ``run.run_dir``, else the report folder and its parent."""
    p = Path(path)
    if p.is_absolute():
        return p
    bases = [run.run_dir] if run.run_dir is not None else [out_dir, out_dir.parent]
    for base in bases:
        if (base / p).exists():
            return base / p
    return bases[0] / p


def _visual(run: RunData, t0: float | None, out_dir: Path) -> dict:
    snapshots = []
    for a in run.artifacts:
        if a.get("kind") != "snapshot":
            continue
        path = resolve_artifact(run, str(a.get("path") or ""), out_dir)
        snapshots.append({"stamp": a["stamp"], "t_s": _rel(a["stamp"], t0), "label": a.get("label") or "",
                          "path": str(path), "exists": path.is_file()})
    labels = {s["label"].split(":")[0] for s in snapshots if s["exists"]}
    # The moments a chemist wants to see: the bench at the start and at the end point of a titration, or
    # the weighed beaker and the dissolved solution of a weighing.
    family = report_of(_get(_plan(run), "parsed_instruction", "family"))
    wanted = getattr(family, "SNAPSHOTS", DEFAULT_SNAPSHOTS)
    missing = [want for want in wanted if want not in labels]
    if run.anomalies and "anomaly" not in labels:
        missing.append("anomaly")
    return {"snapshots": snapshots, "missing": missing, "charts": {}}


def _reproducibility(run: RunData, ctx: ResultsContext, options: Mapping) -> dict:
    exp = run.experiment
    plan = _plan(run)
    analysis = ctx.analysis
    return {
        "software_version": exp.get("software_version"),
        "config_hash": exp.get("config_hash"),
        "report_writer_version": agentchemist.__version__,
        "libraries": {"python": platform.python_version(), "numpy": np.__version__, "scipy": scipy.__version__,
                      "matplotlib": matplotlib.__version__},
        "protocol": plan.get("protocol"),
        "reagents": _metadata(run, None)["reagents"],
        "conditions": dict(exp.get("conditions") or {}),
        "parameters": dict(exp.get("parameters") or {}),
        "dispenser": _get(plan, "module_instantiation", "dispenser"),
        "procedure": [f"{s.get('id')} ({s.get('receiver')}): {s.get('description')}"
                      for s in plan.get("task_decomposition") or [] if isinstance(s, Mapping)],
        "analysis_options": {k: v for k, v in options.items() if k != "config"},
        "analysis_setup": ctx.results.get("setup"),
        "smoothing": analysis.smoothing if analysis is not None else None,
        "regenerate": "agentchemist report <run_dir>",
    }


#: the first line of every report whose data did not come from the robot's instruments
BANNERS = {"twin": "SIMULATED (digital twin)",
           "imported": "IMPORTED DATA (measured elsewhere; analysed by agentchemist)"}


def data_origin(run: RunData) -> str:
    """Where the data came from: "imported" (a file, report.imported), "twin" (the digital twin: its run
    folder holds the twin's ground_truth.json, or the run clock is a simulated one, not epoch seconds), or
    "robot". A simulated run must never be signed as a measurement, so a run that cannot show it was
    measured on a wall clock is called simulated."""
    stated = run.experiment.get("data_origin")
    if stated in ("imported", "twin", "robot"):
        return str(stated)
    if run.run_dir is not None and (Path(run.run_dir) / "ground_truth.json").is_file():
        return "twin"
    t0 = run.started
    return "robot" if t0 is not None and t0 > 1e9 else "twin"


def build_summary(run: RunData, out_dir: Path, options: Mapping | None = None) -> tuple[dict, ResultsContext]:
    """All eleven sections plus the conclusions; also returns the results context for the charts."""
    opts = dict(options or {})
    ctx = compute_results(run, opts)
    t0 = run.started
    origin = data_origin(run)
    source = run.experiment.get("source_file") if isinstance(run.experiment.get("source_file"), Mapping) else {}
    summary = {
        "banner": BANNERS.get(origin),
        "data_origin": origin,
        "schema_version": SCHEMA_VERSION,
        "experiment_id": run.experiment.get("experiment_id"),
        "status": run.experiment.get("status"),
        "outcome": ctx.results.get("outcome"),   # the one judge's verdict (report.delivery)
        "interrupted": ctx.results.get("interrupted"),
        "concluded": ctx.results["concluded"],
        "not_concluded": ctx.results["not_concluded"],
        "results": stated_results(ctx.results, _num(source.get("volume_resolution_ml"))),
        "result_sheet": None,
        "sections": {
            "metadata": _metadata(run, t0),
            "parameters": _parameters(run, ctx),
            "procedure": _procedure(run, t0),
            "fsm_evolution": _fsm(run, t0),
            "process_data": _process(run, t0),
            "quantity_records": _quantities(run, ctx, t0),
            "event_log": _events(run, t0),
            "anomalies": _anomalies(run, t0),
            "results": ctx.results,
            "visual_documentation": _visual(run, t0, out_dir),
            "reproducibility": _reproducibility(run, ctx, opts),
        },
    }
    from agentchemist.chemistry.analysis_uncertainty import UncertaintyInputs
    u_rel = (opts.get("uncertainty") or {}).get("titrant_rel_sd", UncertaintyInputs().titrant_rel_sd)
    summary["result_sheet"] = result_sheet(run.experiment, ctx.results, summary["results"], origin, summary["banner"],
                                           u_rel if ctx.results.get("equivalence_points") is not None else None)
    if ctx.results.get("increments_called") == "additions":
        summary["sections"]["event_log"]["additions"] = summary["sections"]["event_log"].pop("drops")
    return summary, ctx
