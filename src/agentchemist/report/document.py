"""The report as a render-neutral document: numbered sections made of blocks (paragraphs, key-value
tables, tables, lists, images). Markdown and HTML render the same document, so they cannot disagree.

All text is built here from the summary dict (``summary.build_summary``); numbers are formatted, never
computed, so every figure a reader sees is the analysis's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from agentchemist.experiments.report import reported_as

from .results import stated_pka
from .stated import gum_text
from .summary import SECTION_TITLES
from .uncertainty import BUDGET_HEADERS, budget_rows, interval_text

__all__ = ["Bullets", "Image", "KeyValues", "Para", "Section", "Table", "build_document", "fmt", "fmt_sig", "fmt_t",
           "fmt_text"]

NOT_RECORDED = "not recorded"


@dataclass
class Para:
    text: str
    kind: str = "p"  # "p" | "warn" | "note"


@dataclass
class KeyValues:
    rows: list[tuple[str, str]]


# A table longer than this is written in full to a CSV file beside the report (``name``.csv under
# tables/); the Markdown shows its first PREVIEW_ROWS rows and links the file, the HTML folds it away.
LONG_TABLE_ROWS = 30
PREVIEW_ROWS = 8


@dataclass
class Table:
    headers: list[str]
    rows: list[list[str]]
    caption: str = ""
    scroll: bool = False
    name: str = ""                 # file stem of the CSV a long table is written to
    data_file: Path | None = None  # set by the writer once the CSV exists
    # the CSV's own columns when the table holds measurements: numbers only (None: an empty cell), so a
    # chemist can paste them into a spreadsheet; without them the CSV holds the rows as shown
    csv_headers: list[str] | None = None
    csv_rows: list[list] | None = None

    @property
    def long(self) -> bool:
        return bool(self.name) and len(self.rows) > LONG_TABLE_ROWS


@dataclass
class Bullets:
    items: list[str]
    kind: str = "p"


@dataclass
class Image:
    path: Path
    caption: str
    kind: str = "chart"  # "chart" | "snapshot"


@dataclass
class Section:
    key: str
    number: int | None
    title: str
    blocks: list = field(default_factory=list)


def _number(x):
    """A finite number for a numeric CSV cell (to 9 decimals: no float noise such as 0.027000000000000135),
    else None (an empty cell, never 'n/a')."""
    if not _finite(x):
        return None
    return x if isinstance(x, int) else round(float(x), 9)


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def fmt(x, digits: int = 3, unit: str = "") -> str:
    """A number with ``digits`` decimals (and unit), or "not recorded" / "n/a" for None / NaN."""
    if x is None:
        return NOT_RECORDED
    if isinstance(x, bool):
        return "yes" if x else "no"
    if not _finite(x):
        return str(x) if not isinstance(x, float) else "n/a"
    text = f"{x:.{digits}f}"
    return f"{text} {unit}".rstrip() if unit else text


def fmt_sig(x, sig: int = 4, unit: str = "") -> str:
    """A number to ``sig`` significant figures."""
    if not _finite(x):
        return fmt(x)
    text = f"{x:.{sig}g}"
    return f"{text} {unit}".rstrip() if unit else text


def _no_negative_zero(x: float, digits: int) -> float:
    """x, with values that round to zero made +0.0 (so "-0.000" is never printed)."""
    return 0.0 if round(x, digits) == 0 else x


def fmt_t(t_s) -> str:
    """Elapsed seconds on the run clock, always in seconds with the unit ('12.3 s', '2175.3 s'): one time
    base throughout the report (durations add minutes in brackets, see :func:`fmt_duration`)."""
    if not _finite(t_s):
        return NOT_RECORDED
    return f"{_no_negative_zero(t_s, 1):.1f} s"


def fmt_duration(t_s) -> str:
    """A duration in seconds, with minutes (and hours) in brackets when over a minute."""
    if not _finite(t_s):
        return NOT_RECORDED
    whole = int(round(abs(t_s)))
    if whole < 60:
        return fmt_t(t_s)
    h, rem = divmod(whole, 3600)
    m, sec = divmod(rem, 60)
    return f"{fmt_t(t_s)} ({h} h {m} min {sec} s)" if h else f"{fmt_t(t_s)} ({m} min {sec} s)"


def fmt_when(calendar, stamp) -> str:
    """A start or finish: the ISO 8601 calendar time with zone beside the stored run-clock stamp."""
    run = fmt_stamp(stamp)
    if isinstance(calendar, str) and calendar:
        return f"{calendar} (calendar) / {run}"
    return f"{run}; calendar time not recorded" if _finite(stamp) and stamp <= 1e9 else run


def fmt_stamp(stamp) -> str:
    """A stored stamp: ISO 8601 UTC when it looks like epoch seconds, else seconds on the run clock."""
    if not _finite(stamp):
        return NOT_RECORDED
    if stamp > 1e9:
        return datetime.fromtimestamp(stamp, tz=timezone.utc).isoformat(timespec="seconds")
    return f"{stamp:.3f} s (run clock)"


def _text(x) -> str:
    if x is None or x == "":
        return NOT_RECORDED
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        return fmt_sig(x)
    if isinstance(x, (list, tuple)):
        return ", ".join(_text(i) for i in x) if x else "none"
    if isinstance(x, dict):
        return "; ".join(f"{k}={_text(v)}" for k, v in x.items()) if x else "none"
    return str(x)


#: a recorded value as the report writes it (None: "not recorded"; lists and dicts spelled out)
fmt_text = _text


def _yes(flag) -> str:
    return "yes" if flag else "**no**"


# ----------------------------------------------------------------------------------------- sections
SUMMARY_CHARTS = (("titration_curve", "Titration curve"), ("first_derivative", "First derivative"),
                  ("second_derivative", "Second derivative"), ("jump_zoom", "Zoom on the jump"))


def _answer(results: dict) -> list[tuple[str, str]]:
    """The result in a few rows: equivalence point(s) with uncertainty and theory, concentration, pKa."""
    rows: list[tuple[str, str]] = []
    theory = {(d["quantity"], d["method"]): d for d in results.get("deviations") or []}
    for e in results.get("equivalence_points") or []:
        if not e.get("supported"):
            continue
        v = theory.get((f"equivalence volume {e['index']}", e["method"]))
        p = theory.get((f"equivalence pH {e['index']}", e["method"]))
        u = (e.get("budget") or {}).get("combined_standard_uncertainty", e["uncertainty_ml"])
        rows.append((f"Equivalence point {e['index']}",
                     f"{gum_text(e['volume_ml'], u, 'mL')}"
                     + (f" (theory {fmt(v['reference'], 3)} mL)" if v else "")
                     + (f", pH {fmt(e['ph'], 2)}" if e.get("ph") is not None else
                        ", inside one drop ({} to {} mL)".format(*(fmt(x, 3) for x in e.get("jump_region_ml") or
                                                                    (None, None))))
                     + (f" (theory {fmt(p['reference'], 2)})" if p else "")))
    conc, titrant = results.get("concentration"), results.get("titrant_concentration")
    if titrant and titrant.get("supported") and titrant.get("titrant_m") is not None:
        # A standardisation: the standard's amount is known and the titrant is the result. The analysis's
        # analyte concentration was computed from the titrant's estimate, so it is not an answer here.
        rows.append(("Titrant concentration", f"{gum_text(titrant['titrant_m'], titrant['uncertainty_m'], 'mol/L')} "
                     "(standardised)"))
    elif conc and conc.get("supported"):
        rows.append(("Analyte concentration", f"{gum_text(conc['analyte_m'], conc['uncertainty_m'], 'mol/L')} "
                     f"({conc['method'].replace('_', ' ')})"))
    for index, p in sorted(stated_pka(results.get("pka")).items()):
        rows.append((f"pKa{index}", f"{gum_text(p['value'], p['uncertainty'])} "
                     f"({p['method'].replace('_', ' ')}){interval_text(p.get('budget'))}"))
    if results.get("final_ph") is not None and not results.get("interrupted") and results.get("target_ph") is not None:
        rows.append(("Final pH", f"{fmt(results['final_ph'], 3)} (target {fmt(results['target_ph'], 2)})"))
    if "final_mass_g" in results:
        digits = _balance_decimals()  # a reading is stated to the balance's readability, never finer
        rows.append(("Weighed mass", f"{fmt(results.get('final_mass_g'), digits, 'g')} (target "
                     f"{fmt(results.get('target_mass_g'), digits, 'g')}; balance readability "
                     f"{10.0 ** -digits:g} g)"))
    if "calcium_m" in results:
        rows.append(("Ca2+ concentration", f"{fmt(results['calcium_m'], 5)} mol/L"))
    return rows


def _balance_decimals() -> int:
    """Decimal places of the balance's readability (the hardware registry's balance resolution; 3 if unknown)."""
    try:
        from agentchemist.plan.registry import HardwareRegistry
        resolution = HardwareRegistry.load().balance_resolution_g
    except (OSError, ValueError, KeyError, TypeError):
        return 3
    return max(0, -math.floor(math.log10(resolution) + 1e-9)) if resolution > 0 else 3


def _summary_section(summary: dict, narrative: dict | None, charts: dict[str, Path] | None = None) -> Section:
    sec = Section("summary", None, "Summary")
    status = summary.get("status") or NOT_RECORDED
    interrupted = summary.get("interrupted")
    if interrupted:
        sec.blocks.append(Para(f"Experiment {summary.get('experiment_id') or NOT_RECORDED}: **interrupted** "
                               f"(status {status}): {interrupted.get('text')}. No endpoint finding is stated.", "warn"))
    else:
        sec.blocks.append(Para(f"Experiment {summary.get('experiment_id') or NOT_RECORDED}: status {status}."))
    outcome = summary.get("outcome")
    if outcome and outcome.get("kind") != "completed":
        # not a success: the chemist reads what is missing and why before any number
        sec.blocks.insert(0, Para(f"**Outcome: {outcome['kind'].replace('_', ' ')}**: {outcome.get('message')}", "warn"))
    answer = _answer(summary.get("sections", {}).get("results", {}))
    if answer:
        sec.blocks.append(Para("Result (± combined standard uncertainty, all sources; the evidence for each number "
                               "and its uncertainty budget are in section 9):"))
        sec.blocks.append(KeyValues(answer))
    for name, caption in SUMMARY_CHARTS:
        if charts and name in charts:
            sec.blocks.append(Image(charts[name], caption))
    concluded = summary.get("concluded") or []
    sec.blocks.append(Para("Findings supported by the data:"))
    sec.blocks.append(Bullets(concluded or ["none: nothing could be concluded from this run"]))
    not_concluded = summary.get("not_concluded") or []
    if not_concluded:
        sec.blocks.append(Para("What could not be concluded, and why:", "warn"))
        sec.blocks.append(Bullets(not_concluded, "warn"))
    anomalies = summary.get("sections", {}).get("anomalies", {})
    if anomalies.get("n"):
        open_ = [g for g in anomalies.get("groups", []) if g.get("unresolved")]
        unresolved = sum(g["unresolved"] for g in open_)
        text = f"{anomalies['n'] - anomalies.get('resolutions', 0)} anomaly record(s), {unresolved} unresolved"
        if open_:  # repeated ones grouped: one phrase per kind and source
            text += ": " + "; ".join(group_phrase(g) for g in open_)
        sec.blocks.append(Para(text + " (section 8).", "warn" if open_ else "p"))
    if narrative:
        if narrative.get("text"):
            sec.blocks.append(Para("Narrative (written by a language model from this report's numbers; the tables "
                                   "below are authoritative):", "note"))
            sec.blocks.append(Para(narrative["text"]))
        for note in narrative.get("notes", []):
            sec.blocks.append(Para(note, "warn"))
    return sec


def _result_sheet_section(sheet: dict) -> Section:
    """The sheet a lab files (report.result_sheet): sample, method, titrant, electrode, operator, results, and
    a sign-off block left blank."""
    sec = Section("result_sheet", None, "Result sheet")
    if sheet.get("banner"):
        sec.blocks.append(Para(f"**{sheet['banner']}**: not a measurement of a sample." if sheet["data_origin"] == "twin"
                               else f"**{sheet['banner']}**", "warn"))
    sample, method, titrant, electrode = sheet["sample"], sheet["method"], sheet["titrant"], sheet["electrode"]
    u_rel = titrant.get("titer_relative_u")
    date = electrode.get("calibration_date")
    calibrated = fmt_stamp(date) if _finite(date) else _text(date)
    titer = (f"{fmt_sig(titrant['titer_m'], 4)} mol/L" if _finite(titrant.get("titer_m")) else _text(titrant.get("titer_m")))
    if _finite(u_rel):
        titer += f" (relative standard uncertainty {100 * u_rel:.2g} %)"
    rows = [("Sample id", _text(sample["id"])), ("Sample", f"{_text(sample['analyte'])}, {_text(sample['size'])}"),
            ("Method", _text(method["name"])), ("Software", f"{method['software']} (configuration "
                                                              f"{_text(method['configuration'])})"),
            ("Titrant and titer", f"{_text(titrant['name'])} {titer}; titer date {_text(titrant['titer_date'])}; batch "
                                  f"{_text(titrant['batch'])}"),
            ("Electrode", (f"{_text(electrode['id'])}: slope {fmt(electrode['slope_pct'], 1)} %, offset "
                           f"{fmt(electrode['offset_mv'], 1)} mV, calibrated {calibrated} ({_text(electrode['source'])})")
             if _finite(electrode.get("slope_pct")) else f"{_text(electrode['id'])} ({_text(electrode['source'])})"),
            ("Operator", _text(sheet["operator"]))]
    if electrode.get("fitted_with_the_curve"):
        f = electrode["fitted_with_the_curve"]
        rows.append(("Electrode as fitted", f"offset {fmt(f.get('offset_ph'), 2)} pH, slope {fmt(f.get('slope'), 3)} of Nernst"))
    for item in sheet.get("results") or []:
        d = item.get("decimals", 3)
        unit = f" {item['unit']}" if item.get("unit") else ""
        if item.get("u") is not None:
            lo, hi = item["interval"]
            rows.append((item["quantity"], f"{item['value']:.{d}f} ± {item['u']:.{d}f}{unit} (95 %: {lo:.{d}f} to "
                                           f"{hi:.{d}f})"))
    rows.append(("Replicates", _text(sheet.get("replicates"))))
    sec.blocks.append(KeyValues(rows))
    sec.blocks.append(Table(["", "Name", "Date", "Signature"],
                            [["Analysed by", sheet["sign_off"].get("analysed_by") or "", "", ""],
                             ["Reviewed by", "", "", ""]], "Review and signature"))
    return sec


def _metadata(s: dict) -> list:
    kv = [("Experiment id", _text(s.get("experiment_id"))), ("Name", _text(s.get("experiment_name"))),
          ("Family", _text(s.get("family"))), ("Instruction", _text(s.get("instruction"))),
          ("Operator", _text(s.get("operator"))), ("Started", fmt_when(s.get("calendar_start"), s.get("started"))),
          ("Finished", fmt_when(s.get("calendar_finish"), s.get("finished"))),
          ("Duration", fmt_duration(s.get("duration_s"))),
          ("Status", _text(s.get("status"))), ("Reason", _text(s.get("reason"))),
          ("Protocol", _text(s.get("protocol"))), ("Clock", _text(s.get("clock")))]
    origin = s.get("data_origin")
    if origin:
        kv.insert(0, ("Data", {"twin": "SIMULATED in the digital twin: not a measurement",
                               "imported": "IMPORTED from a file: measured elsewhere, analysed here",
                               "robot": "measured by the robot's instruments"}.get(origin, str(origin))))
    source = s.get("source_file") or {}
    if source:
        kv.append(("Source file", f"{source.get('path')} ({source.get('rows')} rows; volume column "
                                  f"{source.get('volume_column')!r} in {source.get('volume_unit')}, written to "
                                  f"{fmt_sig(source.get('volume_resolution_ml'), 2)} mL; pH column "
                                  f"{source.get('ph_column')!r}; {source.get('increment_note')})"))
        for note in source.get("notes") or []:
            kv.append(("Reading note", note))
    electrode = s.get("electrode") or {}
    if electrode:
        kv.append(("Electrode", _text({k: v for k, v in electrode.items()})))
    blocks: list = [KeyValues(kv)]
    rows = [[_text(r["name"]), _text(r.get("role")), fmt_sig(r.get("concentration_m"), 4), fmt(r.get("volume_ml"), 2),
             _text(r.get("batch"))] for r in s.get("reagents", [])]
    blocks.append(Table(["Reagent", "Role", "Concentration (mol/L)", "Volume (mL)", "Batch"], rows,
                        "Reagents and batches") if rows else Para("Reagents: not recorded.", "warn"))
    return blocks


def _parameters(s: dict) -> list:
    blocks: list = []
    for key, title in (("initial_conditions", "Initial conditions (stated)"), ("target_conditions", "Target conditions")):
        items = [(k, _text(v)) for k, v in (s.get(key) or {}).items() if v is not None]
        blocks.append(Para(f"{title}:"))
        blocks.append(KeyValues(items) if items else Para(NOT_RECORDED, "warn"))
    m = s.get("measured") or {}
    blocks.append(Para("Measured at the bench:"))
    blocks.append(KeyValues([("Initial pH", fmt(m.get("initial_ph"), 2)),
                             ("Temperature at start", fmt(m.get("temperature_start_c"), 1, "°C")),
                             ("Temperature at end", fmt(m.get("temperature_end_c"), 1, "°C"))]))
    modules = s.get("modules") or {}
    rows = []
    for module, params in modules.items():
        if isinstance(params, dict):
            rows += [[module, k, _text(v)] for k, v in params.items()]
    if rows:
        blocks.append(Table(["Module", "Parameter", "Value"], rows, "Module instantiation (from the plan)"))
    run_params = s.get("run_parameters") or {}
    if run_params:
        blocks.append(Table(["Parameter", "Value"], [[k, _text(v)] for k, v in run_params.items()], "Run parameters"))
    return blocks


def _procedure(s: dict) -> list:
    rows = [[st["id"], _text(st.get("agent")), _text(st.get("description")), _text(st.get("dependencies")),
             _text(st.get("fsm_state")),
             (f"{st['expected_transition'].get('symbol')} -> {st['expected_transition'].get('target')}"
              if st.get("expected_transition") else "-"),
             fmt_t(st.get("first_t_s")) if st.get("first_t_s") is not None else "-",
             fmt_t(st.get("completed_t_s")) if st.get("completed_t_s") is not None else "-", st["status"]]
            for st in s.get("subtasks", [])]
    if not rows:
        return [Para("No plan and no subtask was recorded: the procedure cannot be reconstructed.", "warn")]
    return [Table(["Subtask", "Agent", "Description", "Depends on", "FSM state", "Expected transition", "First seen",
                   "Completed", "Status"], rows, "Subtasks with timeline (times since start; continuous subtasks such as "
            "monitoring leave no transition)")]


def _fsm(s: dict) -> list:
    kv = [("Initial state", _text(s.get("initial_state"))), ("Final state", _text(s.get("final_state"))),
          ("Accepting states", _text(s.get("accepting_states"))),
          ("Reached an accepting state", fmt(s.get("accepted")) if s.get("accepted") is not None else NOT_RECORDED),
          ("Transitions", str(len(s.get("transitions", []))))]
    blocks: list = [KeyValues(kv)]
    time_in = s.get("time_in_state_s") or {}
    if time_in:
        blocks.append(Table(["State", "Visits", "Time in state"],
                            [[k, str(s.get("visits", {}).get(k, 0)), fmt_t(v)] for k, v in time_in.items()],
                            "Time spent per state"))
    rows = [[str(i + 1), fmt_t(t.get("t_s")), _text(t.get("from_state")), _text(t.get("symbol")),
             _text(t.get("to_state")), t.get("subtask_id") or "", t.get("agent") or ""]
            for i, t in enumerate(s.get("transitions", []))]
    blocks.append(Table(["#", "t", "From", "Symbol", "To", "Subtask", "Agent"], rows, "Full transition history",
                        scroll=True, name="transitions") if rows else Para("No transition was recorded.", "warn"))
    return blocks


def _process(s: dict, charts: dict[str, Path]) -> list:
    rows = [[q, _text(st.get("unit")), str(st["n"]), fmt_sig(st["first"]), fmt_sig(st["last"]), fmt_sig(st["min"]),
             fmt_sig(st["max"]), fmt_t(st.get("t_first_s")), fmt_t(st.get("t_last_s"))]
            for q, st in (s.get("series") or {}).items() if st]
    blocks: list = [Table(["Quantity", "Unit", "Records", "First", "Last", "Min", "Max", "From", "To"], rows,
                          "Fused time series") if rows else Para("No fused record was stored.", "warn")]
    raw = s.get("raw_observations") or []
    if raw:
        blocks.append(Table(["Sensor", "Quantity", "Raw observations"],
                            [[r["sensor"], r["quantity"], str(r["n"])] for r in raw]))
    for name, caption in (("ph_time", "pH against time"), ("volume_time", "Titrant volume against time"),
                          ("mass_time", "Balance reading against time, to the weighed mass"),
                          ("temperature_time", "Temperature against time")):
        if name in charts:
            blocks.append(Image(charts[name], caption))
    if "titration_curve" in charts:
        blocks.append(Para("The titration curve (pH against titrant volume) and its derivatives are in the summary."))
    return blocks


def _quantities(s: dict) -> list:
    rows = []
    for q, st in (s.get("per_quantity") or {}).items():
        channels = "; ".join(f"{c} ({v['n']}, mean conf {v['mean_confidence']:.2f})" for c, v in st["channels"].items())
        rows.append([q, _text(st.get("unit")), str(st["n"]), fmt(st.get("mean_confidence"), 2),
                     fmt(st.get("min_confidence"), 2), channels or "-", str(st["flagged"]),
                     _text(st.get("flags")) if st.get("flags") else "-"])
    blocks: list = [Table(["Quantity", "Unit", "Records", "Mean confidence", "Min confidence", "Channels",
                           "Flagged", "Flags"], rows, "Fused records by quantity") if rows
                    else Para("No quantity record was stored.", "warn")]
    totals = s.get("volume_channel_totals")
    if totals:
        kv = [("Fused total", f"{fmt(totals.get('fused'), 4, 'mL')} (confidence {fmt(totals.get('fused_confidence'), 2)})")]
        for k, v in totals.items():
            if isinstance(v, dict):
                kv.append((f"{k} channel", f"{fmt(v.get('value'), 4, 'mL')} (confidence {fmt(v.get('confidence'), 2)})"))
        blocks.append(Para("Total titrant volume by channel (last record):"))
        blocks.append(KeyValues(kv))
    if s.get("counts"):
        blocks.append(Para("Counts, reconciled:"))
        blocks.append(Bullets(list(s["counts"])))
    audio = s.get("audio_events") or {}
    classes = _text(audio.get("by_classification")) if audio.get("n") else "none"
    blocks.append(Para(f"Audio events: {audio.get('n', 0)} ({classes}), "
                       f"mean confidence {fmt(audio.get('mean_confidence'), 2)}."))
    drops = s.get("per_drop") or []
    if drops:
        channel_names = sorted({c for r in drops for c in r["volume_channels"]})
        headers = ["#", "t", (s.get("increments_called") or "drops").capitalize(), "V (mL)", "ΔV (mL)", "pH", "ΔpH"] + [f"{c} (mL, conf)" for c in channel_names] + [
            "conf V", "conf pH", "T (°C)", "Flags"]
        rows = []
        for r in drops:
            ch = [f"{fmt(r['volume_channels'][c]['value'], 4)} ({fmt(r['volume_channels'][c]['confidence'], 2)})"
                  if c in r["volume_channels"] else "-" for c in channel_names]
            rows.append([str(r["reading"]), fmt_t(r.get("t_s")), str(r["drops"]), fmt(r["volume_ml"], 4),
                         fmt(r["d_volume_ml"], 4) if _finite(r["d_volume_ml"]) else "-", fmt(r["ph"], 3),
                         fmt(r["d_ph"], 3) if _finite(r["d_ph"]) else "-", *ch, fmt(r["volume_confidence"], 2),
                         fmt(r["ph_confidence"], 2), fmt(r["temperature_c"], 1) if _finite(r["temperature_c"]) else "-",
                         ", ".join(r["flags"]) or ""])
        called = s.get("increments_called") or "drops"
        caption = (f"Per-drop table ({len(rows)} drops from the meter's trace, the reading's lags taken out)"
                   if called == "drops" and s.get("curve_source") == "meter trace"
                   else f"Per-drop table ({len(rows)} settled pH readings)" if called == "drops"
                   else f"Per-addition table ({len(rows)} readings, one per {called[:-1]})")
        csv_headers = ["reading", "t_s", called, "volume_ml", "d_volume_ml", "ph", "d_ph"]
        for c in channel_names:
            csv_headers += [f"{c}_ml", f"{c}_confidence"]
        csv_headers += ["volume_confidence", "ph_confidence", "temperature_c", "flagged"]
        csv_rows = []
        for r in drops:
            ch = []
            for c in channel_names:
                got = r["volume_channels"].get(c) or {}
                ch += [_number(got.get("value")), _number(got.get("confidence"))]
            csv_rows.append([r["reading"], _number(r.get("t_s")), r["drops"], _number(r["volume_ml"]),
                             _number(r["d_volume_ml"]), _number(r["ph"]), _number(r["d_ph"]), *ch,
                             _number(r["volume_confidence"]), _number(r["ph_confidence"]),
                             _number(r["temperature_c"]), 1 if r["flags"] else 0])
        blocks.append(Table(headers, rows, caption, scroll=True, name="per_drop", csv_headers=csv_headers,
                            csv_rows=csv_rows))
    elif "titrant_volume" in (s.get("per_quantity") or {}) or "ph" in (s.get("per_quantity") or {}):
        # titrant or pH was recorded but never a settled pH; a weighing has neither and no table to miss
        blocks.append(Para("Per-drop table: no settled pH reading was recorded.", "warn"))
    return blocks


def _events(s: dict) -> list:
    blocks: list = []
    drops = s.get("drops")
    if drops:
        every = f", one every {drops['mean_interval_s']:.1f} s on average" if drops.get("mean_interval_s") else ""
        blocks.append(Para(f"Drops: {drops['n']} between {fmt_t(drops.get('first_t_s'))} and {fmt_t(drops.get('last_t_s'))}"
                           + every
                           + " (each drop with its pH is in the per-drop table)."))
    if s.get("additions"):  # an imported curve: rows of a file, no clock
        blocks.append(Para(f"Additions: {s['additions']['n']} (an imported curve has no event log: each addition with "
                           "its pH is in the per-addition table)."))
    if s.get("routine_transitions"):
        blocks.append(Para(f"{s['routine_transitions']} routine drop / settle transitions are not repeated here "
                           "(section 4 lists every transition, section 6 every drop)."))
    rows = [[fmt_t(e.get("t_s")), e["kind"], e.get("source") or "", e["text"]] for e in s.get("events", [])]
    blocks.append(Table(["t", "Kind", "Source", "Event"], rows, "Transitions, completions, anomalies, snapshots",
                        scroll=True, name="events") if rows else Para("No event was recorded.", "warn"))
    return blocks


def _resolved_cell(a: dict) -> str:
    if a.get("resolution"):
        return "(resolution)"
    if a["resolved"]:
        return f"yes, at {fmt_t(a['resolved_t_s'])}" if a.get("resolved_t_s") is not None else "yes"
    return "**no**"


def group_phrase(g: dict) -> str:
    """'no_drop (warn) x3 at 12.1-30.5 s, response retry' for a group of anomalies (summary.group_anomalies)."""
    when = fmt_t(g.get("first_t_s")) if g["n"] == 1 else f"{fmt_t(g.get('first_t_s'))} to {fmt_t(g.get('last_t_s'))}"
    times = "" if g["n"] == 1 else f" x{g['n']}"
    return (f"{g.get('kind')} ({g.get('severity')}){times} at {when}, response "
            f"{', '.join(g.get('responses') or []) or 'none'}")


def _anomalies(s: dict) -> list:
    recs = s.get("records") or []
    resolutions = s.get("resolutions", 0)
    blocks: list = [Para(f"{len(recs) - resolutions} anomaly record(s)"
                         + (f" and {resolutions} resolution(s)" if resolutions else "")
                         + f", {s.get('unresolved', 0)} unresolved.",
                         "warn" if s.get("unresolved") else "p")]
    groups = s.get("groups") or []
    if any(g["n"] > 1 for g in groups):
        blocks.append(Table(["Type", "Source", "Worst severity", "Records", "First", "Last", "Unresolved", "Responses",
                             "First description"],
                            [[_text(g["kind"]), _text(g["source"]), _text(g["severity"]), str(g["n"]),
                              fmt_t(g["first_t_s"]), fmt_t(g["last_t_s"]), str(g["unresolved"]),
                              _text(", ".join(g["responses"]) or "none"), _text(g["description"])] for g in groups],
                            "Anomalies by type (repeated ones grouped)", name="anomaly_groups"))
    if recs:
        blocks.append(Table(["t", "Type", "Severity", "Source", "FSM state", "Description", "Response", "Resolved"],
                            [[fmt_t(a.get("t_s")), _text(a.get("kind")), _text(a.get("severity")), _text(a.get("source")),
                              _text(a.get("fsm_state")), _text(a.get("description")), _text(a.get("response")),
                              _resolved_cell(a)] for a in recs], "Anomaly audit", scroll=True, name="anomalies"))
    audio = s.get("audio_anomalies") or []
    if audio:
        blocks.append(Table(["t", "Event", "Kind", "Classification", "Confidence"],
                            [[fmt_t(a.get("t_s")), _text(a.get("event_id")), _text(a.get("kind")),
                              _text(a.get("classification")), fmt(a.get("confidence"), 2)] for a in audio],
                            "Audio events classified anomalous or timeout"))
    flags = s.get("data_quality_flags") or {}
    if flags:
        blocks.append(Table(["Data-quality flag", "Records"], [[k, str(v)] for k, v in flags.items()],
                            "Recorder data-quality flags"))
    return blocks


def _results(s: dict, charts: dict[str, Path]) -> list:
    blocks: list = []
    setup = s.get("setup") or {}
    kv = [("Final pH", fmt(s.get("final_ph"), 3)), ("Target pH", fmt(s.get("target_ph"), 2)),
          ("Final pH - target", fmt(s.get("final_ph_deviation"), 3)),
          ("Total titrant volume", fmt(s.get("total_volume_ml"), 4, "mL")),
          (str(s.get("increments_called") or "drops").capitalize(), str(s.get("drops", 0))),
          ("Initial pH (measured / stated)",
           f"{fmt(s.get('initial_ph_measured'), 3)} / {fmt(s.get('initial_ph_stated'), 2)}"),
          ("Temperature start / end",
           f"{fmt(s.get('temperature_start_c'), 1, '°C')} / {fmt(s.get('temperature_end_c'), 1, '°C')}")]
    family = reported_as(setup.get("family"))  # the family's own rows: a weighing keeps none of the pH rows
    blocks.append(KeyValues(family.key_values(s, kv) if family is not None else kv))
    eqs = s.get("equivalence_points")
    if eqs is not None:
        rows = [[str(e["index"]), fmt(e["volume_ml"], 3), fmt_sig(e["uncertainty_ml"], 2),
                 fmt_sig((e.get("budget") or {}).get("combined_standard_uncertainty"), 2), fmt(e["ph"], 2),
                 e["method"], _yes(e["supported"]), e["reason"]] for e in eqs]
        blocks.append(Table(["#", "V_eq (mL)", "± on the curve (mL)", "± all sources (mL)", "pH", "Method",
                             "Supported", "Evidence"], rows,
                            "Equivalence points (± all sources: the budget below)") if rows
                      else Para("No equivalence point was found.", "warn"))
    pka = s.get("pka")
    if pka is not None:
        rows = [[f"pKa{p['index']}", fmt(p["value"], 3), fmt_sig(p["uncertainty"], 2), p["method"].replace("_", " "),
                 fmt(p.get("half_equivalence_volume_ml"), 3),
                 _yes(p["supported"]), p["reason"]] for p in pka]
        blocks.append(Table(["", "Value", "±", "Method", "V_half (mL)", "Supported", "Evidence"], rows,
                            "pKa (V_half: the half-equivalence volume used, or implied by the fit)")
                      if rows else Para("No pKa estimate.", "warn"))
    conc = s.get("concentration")
    if conc:
        kv = [("Analyte concentration", f"{fmt(conc['analyte_m'], 5)} ± {fmt_sig(conc['uncertainty_m'], 2)} mol/L"),
              ("Method", conc["method"].replace("_", " ")), ("Supported", _yes(conc["supported"])),
              ("Evidence", _text(conc.get("reason")))]
        if conc.get("curve_fit"):
            c = conc["curve_fit"]
            kv.append(("Curve fit", f"{fmt(c['analyte_m'], 5)} ± {fmt_sig(c['uncertainty_m'], 2)} mol/L"))
        blocks.append(Para("Concentration:" if not s.get("titrant_concentration") else
                           "Concentration of the standard as the analysis computed it from the titrant's planning "
                           "estimate (a check on the analysis, not a result: the result is the titrant's, above):"))
        blocks.append(KeyValues(kv))
    fit = s.get("curve_fit")
    if fit:
        params = "; ".join(f"{k} = {fmt_sig(v, 6)} ± {fmt_sig(fit['uncertainties'].get(k), 2)}"
                           for k, v in fit["parameters"].items())
        implied = ", ".join(fmt(v, 3, "mL") for v in fit["equivalence_volumes_ml"]) or "-"
        blocks.append(Para("Equilibrium-model fit:"))
        blocks.append(KeyValues([("Model", fit["model"]), ("Parameters", params or "none"),
                                 ("Residual rms", fmt(fit["rms_ph"], 4, "pH")),
                                 ("Points", f"{fit['n_points']} used, {fit['excluded_points']} excluded (flagged)"),
                                 ("Converged", _yes(fit["converged"])), ("Solver", fit["message"]),
                                 ("Implied equivalence volumes", implied),
                                 ("Note", fit["uncertainty_note"])]))
    electrode = s.get("electrode_fit")
    if electrode:
        blocks.append(Para(f"Electrode fitted with the curve (no calibration relied on): the meter reads 7 + slope "
                           f"(pH - 7) + offset with offset {fmt(electrode.get('offset_ph'), 3)} ± "
                           f"{fmt_sig(electrode.get('u_offset_ph'), 2)} pH and slope {fmt(electrode.get('slope'), 3)} ± "
                           f"{fmt_sig(electrode.get('u_slope'), 2)} of Nernst; the pKa budgets carry their "
                           "uncertainty through the fit."))
    gran = s.get("gran") or []
    if gran:
        blocks.append(Table(["#", "Gran line", "V_eq (mL)", "± (mL)", "Points", "r²", "Agrees with the curve"],
                            [[str(g["index"]), f"{g['side']} the equivalence point", fmt(g["volume_ml"], 3),
                              fmt_sig(g["uncertainty_ml"], 2), str(g["n_points"]), fmt(g["r2"], 3), _yes(g["agrees"])]
                             for g in gran], "Gran functions: an independent check of the equivalence volume "
                                             "(agrees: within 2 x the two location uncertainties combined)"))
    budgets = budget_rows(s)
    if budgets:
        blocks.append(Table(BUDGET_HEADERS, budgets, "Uncertainty budgets: what each stated value depends on "
                            "(standard uncertainties; 95 % interval = value ± k x combined, k = 2)"))
    devs = s.get("deviations") or []
    if devs:
        digits = {"mL": 3, "mol/L": 5}
        rows = [[d["quantity"] + (f" ({d['unit']})" if d["unit"] else ""), d["method"].replace("_", " "),
                 fmt(d["measured"], digits.get(d["unit"], 3)), fmt(d["reference"], digits.get(d["unit"], 3)),
                 d["reference_kind"], fmt_sig(d["deviation"], 3),
                 f"{100 * d['relative_deviation']:+.2f} %" if _finite(d["relative_deviation"]) else "n/a",
                 _yes(d["supported"]), d["source"] + (f" ({d['note']})" if d.get("note") else "")] for d in devs]
        blocks.append(Table(["Quantity", "Method", "Measured", "Reference", "Kind", "Deviation", "Relative",
                             "Supported", "Reference source"], rows, "Deviation from theory and literature"))
    curve = s.get("theory_curve")
    if curve:
        blocks.append(Para(f"Point-by-point comparison with the theoretical curve ({curve['n_points']} points): rms "
                           f"{curve['rms_ph']:.3f} pH, mean {_no_negative_zero(curve['mean_ph'], 3):+.3f} pH, "
                           f"largest {curve['max_abs_ph']:.3f} pH "
                           f"({curve['source']})."))
    sm = s.get("smoothing")
    if sm:
        blocks.append(Para(f"Smoothing: {sm.get('reason')}."))
        shown = sm.get("display_derivative")
        if shown:
            blocks.append(Para(f"The derivative charts are smoothed over {shown['window_points']} grid points "
                               f"({shown['window_ml']:.3g} mL: {shown['reason']}), chosen by the data density; the "
                               "equivalence point itself comes from the model fitted across the jump where the "
                               "table above says so."))
        local = sm.get("local_windows") or []
        if local:
            blocks.append(Para("Local windows at the equivalence points: " + "; ".join(
                f"#{w['index']}: {w['window_points']} points ({w['window_ml']:.3g} mL)" for w in local) + "."))
    if any(name in charts for name, _ in SUMMARY_CHARTS):
        blocks.append(Para("The four titration charts (curve, first and second derivative, zoom on the jump) are "
                           "in the summary at the top."))
    if "colour_curve" in charts:
        blocks.append(Image(charts["colour_curve"], "Solution colour (the front camera's hue) against titrant volume"))
    if s.get("chart_notes"):
        blocks.append(Bullets(s["chart_notes"], "warn"))
    return blocks


def _visual(s: dict) -> list:
    blocks: list = []
    snaps = s.get("snapshots") or []
    for snap in snaps:
        caption = (f"{snap['label'] or 'snapshot'}: {fmt_t(snap.get('t_s'))} after the start "
                   f"(run clock {fmt_t(snap.get('stamp'))}; file {Path(snap['path']).name})")
        if snap["exists"]:
            blocks.append(Image(Path(snap["path"]), caption, "snapshot"))
        else:
            blocks.append(Para(f"Snapshot '{snap['label']}' ({snap['path']}) is missing on disk.", "warn"))
    if s.get("missing"):
        blocks.append(Para("No snapshot for: " + ", ".join(s["missing"]) + ".", "warn"))
    charts = s.get("charts") or {}
    if charts:
        blocks.append(Para("Charts: " + ", ".join(f"{name} ({Path(p).name})" for name, p in charts.items()) + "."))
    return blocks


def _reproducibility(s: dict) -> list:
    kv = [("Software version", _text(s.get("software_version"))), ("Configuration hash", _text(s.get("config_hash"))),
          ("Report writer", f"agentchemist {s.get('report_writer_version')}"),
          ("Libraries", _text(s.get("libraries"))), ("Protocol", _text(s.get("protocol"))),
          ("Regenerate this report", s.get("regenerate"))]
    blocks: list = [KeyValues(kv)]
    reagents = s.get("reagents") or []
    if reagents:
        blocks.append(Para("Prepare: " + "; ".join(
            r["name"] + (f" {fmt_sig(r.get('concentration_m'))} mol/L" if r.get("concentration_m") is not None
                         else (f" ({r['role']})" if r.get("role") else ""))
            + (f", {fmt(r.get('volume_ml'), 2)} mL" if r.get("volume_ml") else "")
            + (f" (batch {r['batch']})" if r.get("batch") else "") for r in reagents) + "."))
    if s.get("conditions"):
        blocks.append(Para("Conditions: " + _text(s["conditions"]) + "."))
    if s.get("dispenser"):
        blocks.append(Para("Dispenser: " + _text(s["dispenser"]) + "."))
    if s.get("parameters"):
        blocks.append(Para("Parameters: " + _text(s["parameters"]) + "."))
    if s.get("procedure"):
        blocks.append(Para("Procedure, in order:"))
        blocks.append(Bullets(list(s["procedure"])))
    setup = s.get("analysis_setup")
    if setup:
        options = f"; options {_text(s['analysis_options'])}" if s.get("analysis_options") else ""
        blocks.append(Para("Analysis: " + _text(setup) + options
                           + (f"; smoothing {s['smoothing'].get('reason')}" if s.get("smoothing") else "") + "."))
    return blocks


def build_document(summary: dict, charts: dict[str, Path], narrative: dict | None = None) -> list[Section]:
    """Summary + the eleven numbered sections, in SPEC.md order."""
    sections = summary["sections"]
    builders = {
        "metadata": lambda s: _metadata(s),
        "parameters": lambda s: _parameters(s),
        "procedure": lambda s: _procedure(s),
        "fsm_evolution": lambda s: _fsm(s),
        "process_data": lambda s: _process(s, charts),
        "quantity_records": lambda s: _quantities(s),
        "event_log": lambda s: _events(s),
        "anomalies": lambda s: _anomalies(s),
        "results": lambda s: _results(s, charts),
        "visual_documentation": lambda s: _visual(s),
        "reproducibility": lambda s: _reproducibility(s),
    }
    doc = [_summary_section(summary, narrative, charts)]
    if summary.get("result_sheet"):
        doc.append(_result_sheet_section(summary["result_sheet"]))
    for number, (key, title) in enumerate(SECTION_TITLES.items(), start=1):
        doc.append(Section(key, number, title, builders[key](sections[key])))
    return doc
