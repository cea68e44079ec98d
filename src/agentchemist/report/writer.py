"""Write the report of one run: report.md, report.json, report.html and the PNG charts.

    paths = write_report(run, Path("runs/exp-001/report"))
    paths.html        # self-contained page
    paths.charts      # {"titration_curve": Path(...), ...}

The report is always written, whatever the data: an empty or aborted run, too few points or flagged
data give a report that says what could not be concluded and why. Chart failures are reported in the
document instead of aborting it. report.json follows ``SCHEMA_VERSION``; NaN becomes null.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from agentchemist.experiments.report import report_of

from . import charts as ch
from .document import build_document
from .html import render_html
from .markdown import render_markdown
from .model import RunData, series
from .narrative import NarrativeBackend, run_narrative
from .results import ResultsContext
from .summary import build_summary

__all__ = ["ReportPaths", "write_report"]

#: the temperature chart spans at least this (degC): a thermostatted beaker reads 25.00 +- 0.02
TEMPERATURE_MIN_SPAN_C = 1.0


@dataclass(frozen=True)
class ReportPaths:
    """Where the report went: the three documents and the charts by name."""

    markdown: Path
    json: Path
    html: Path
    charts: dict[str, Path] = field(default_factory=dict)
    tables: dict[str, Path] = field(default_factory=dict)  # long tables in full, as CSV


def _jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [_jsonable(v) for v in obj.tolist()]
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return float(obj) if math.isfinite(obj) else None
    if isinstance(obj, Path):
        return str(obj)
    return obj


def _label(ctx: ResultsContext) -> str:
    from agentchemist.chemistry.reagents import default_library

    try:
        reagent = default_library().get(ctx.setup.titrant)
    except ValueError:
        return "Titrant"
    return reagent.formula


def _charts(run: RunData, ctx: ResultsContext, out_dir: Path, results: Mapping | None = None
            ) -> tuple[dict[str, Path], list[str]]:
    made: dict[str, Path] = {}
    notes: list[str] = []
    t0 = run.started

    def attempt(name: str, build) -> None:
        try:
            fig = build()
            made[name] = ch.save_png(fig, out_dir / f"{name}.png")
        except Exception as exc:  # a broken chart must not cost the report; the document names it
            notes.append(f"chart {name} could not be drawn ({type(exc).__name__}: {exc})")

    analysis = ctx.analysis
    titrant = _label(ctx)
    family = report_of(ctx.setup.family)  # its own charts (an unknown family's run has none of its own)
    if analysis is not None and analysis.grid_ml.size:
        name = run.experiment.get("experiment_id") or ""
        theory = ctx.curve.theory_ph if ctx.curve is not None else None
        standardised = (results or {}).get("titrant_concentration") or {}
        standardised_m = standardised.get("titrant_m") if standardised.get("supported") else None
        attempt("titration_curve", lambda: ch.titration_curve_figure(analysis, titrant_label=titrant, theory_ph=theory,
                                                                     title=f"Titration curve {name}".strip(),
                                                                     standardised_m=standardised_m))
        attempt("first_derivative", lambda: ch.first_derivative_figure(analysis, titrant_label=titrant))
        attempt("second_derivative", lambda: ch.second_derivative_figure(analysis, titrant_label=titrant))
        attempt("jump_zoom", lambda: ch.jump_zoom_figure(analysis, titrant_label=titrant))
    elif getattr(family, "TITRATION_CURVE", False):
        why = analysis.smoothing.get("reason") if analysis is not None else "no titration data"
        notes.append(f"the four titration charts were not drawn: {why}")
    anomalies = [(float(a["stamp"]), str(a.get("kind"))) for a in run.anomalies]
    if hasattr(family, "charts"):
        family.charts(run, ctx, attempt, titrant)
    s_ph, v_ph = series(run, "ph")
    s_set, v_set = series(run, "ph_settled")
    if t0 is not None and (v_ph.size or v_set.size):
        base = (s_ph, v_ph, "pH (fused meter readings)") if v_ph.size else (s_set, v_set, "settled pH")
        marks = (s_set, v_set, "settled pH (after each drop)") if v_ph.size and v_set.size else None
        attempt("ph_time", lambda: ch.time_series_figure(base[0], base[1], t0=t0, ylabel="pH", title="pH against time",
                                                         label=base[2], markers=marks, events=anomalies))
    s_v, v_v = series(run, "titrant_volume")
    if t0 is not None and v_v.size:
        extra = []
        for channel in sorted({c for r in run.fused("titrant_volume") for c in (r.get("channels") or [])}):
            pts = [(float(r["stamp"]), float(v)) for r in run.fused("titrant_volume")
                   for c, v in zip(r.get("channels") or [], r.get("channel_values") or [])
                   if c == channel and isinstance(v, (int, float)) and math.isfinite(v)]
            if pts:
                extra.append((np.array([p[0] for p in pts]), np.array([p[1] for p in pts]), channel))
        attempt("volume_time", lambda: ch.time_series_figure(s_v, v_v, t0=t0, ylabel="Titrant volume (mL)",
                                                             title="Cumulative titrant volume against time",
                                                             label="fused", extra=extra, events=anomalies))
    s_m, v_m = series(run, "mass")
    if t0 is not None and v_m.size:
        # Up to the weighed mass: after that the beaker leaves the pan and the display shows minus the
        # beaker, which would squash the pour into a flat line.
        s_w, v_w = series(run, "mass_weighed")
        s_s, v_s = series(run, "mass_settled")
        last = s_w if s_w.size else s_s
        end = float(last[-1]) + 5.0 if last.size else float(s_m[-1])
        # ... and from the tare: the beaker and its water before it would squash the pour just as much.
        zeroed = np.nonzero(np.abs(v_m) < 0.5)[0]
        start = float(s_m[zeroed[0]]) if zeroed.size else float(s_m[0])
        keep = (s_m >= start) & (s_m <= end) & (v_m > -0.5)  # not the beaker leaving the pan
        marks = (np.concatenate([s_s, s_w]), np.concatenate([v_s, v_w]), "settled after each pour / weighed")
        attempt("mass_time", lambda: ch.time_series_figure(s_m[keep], v_m[keep], t0=t0, ylabel="Balance (g)",
                                                           title="Balance reading against time (tared)",
                                                           label="balance", markers=marks, events=anomalies))
    s_t, v_t = series(run, "temperature")
    if t0 is not None and v_t.size:
        attempt("temperature_time", lambda: ch.time_series_figure(s_t, v_t, t0=t0, ylabel="Temperature (°C)",
                                                                  title="Temperature against time", label="temperature",
                                                                  min_span=TEMPERATURE_MIN_SPAN_C))
    return made, notes


TABLES_DIR = "tables"


def _write_long_tables(document, out: Path) -> None:
    """Each long table of the document in full as CSV under ``out``/tables/ (the Markdown links it), and every
    table of measurements (the per-drop table) as numbers, however short."""
    import csv

    from .document import Table

    for section in document:
        for block in section.blocks:
            if isinstance(block, Table) and (block.long or block.csv_rows is not None):
                path = out / TABLES_DIR / f"{block.name}.csv"
                path.parent.mkdir(parents=True, exist_ok=True)
                with path.open("w", newline="", encoding="utf-8") as fh:
                    writer = csv.writer(fh)
                    if block.csv_rows is not None:  # measurements: numbers only (None -> an empty cell)
                        writer.writerow(block.csv_headers)
                        writer.writerows([["" if x is None else x for x in row] for row in block.csv_rows])
                    else:
                        writer.writerow(block.headers)
                        writer.writerows(block.rows)
                block.data_file = path


def write_report(
    run: RunData,
    out_dir: Path,
    *,
    analysis_options: Mapping | None = None,
    narrative_backend: NarrativeBackend | None = None,
) -> ReportPaths:
    """Write report.md, report.json, report.html and the charts into ``out_dir`` (created if needed).

    ``analysis_options`` override what the run states (analyte, analyte_m, analyte_volume_ml, titrant,
    titrant_m, expected_equivalents, temperature_c, activity, fit, config, family, sample_volume_ml,
    uncertainty: a dict of UncertaintyInputs fields for the budgets).
    ``narrative_backend`` is an optional callable(summary_dict) -> str; its numbers are checked.
    Raises ReportInputError (ValueError) for unknown options; never for bad or missing data.
    """
    if not isinstance(run, RunData):
        raise TypeError(f"run must be a RunData, got {type(run).__name__}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary, ctx = build_summary(run, out, analysis_options)
    charts, chart_notes = _charts(run, ctx, out, summary["sections"]["results"])
    summary["sections"]["visual_documentation"]["charts"] = {k: str(v) for k, v in charts.items()}
    summary["sections"]["results"]["chart_notes"] = chart_notes
    if chart_notes:
        summary["not_concluded"].extend(chart_notes)
    narrative = run_narrative(narrative_backend, _jsonable(summary))
    if narrative is not None:
        summary["narrative"] = narrative
    meta = summary["sections"]["metadata"]
    title = f"Experiment report: {meta.get('experiment_name') or meta.get('experiment_id') or 'unnamed run'}"
    if summary.get("banner"):  # the first line a reader sees: simulated or imported data, never a measurement
        title = f"{summary['banner']}: {title}"
    document = build_document(summary, charts, narrative)
    _write_long_tables(document, out)
    tables = {b.name: b.data_file for sec in document for b in sec.blocks if getattr(b, "data_file", None)}
    paths = ReportPaths(markdown=out / "report.md", json=out / "report.json", html=out / "report.html", charts=charts,
                        tables=tables)
    paths.json.write_text(json.dumps(_jsonable(summary), indent=1, allow_nan=False), encoding="utf-8")
    paths.markdown.write_text(render_markdown(title, document, out), encoding="utf-8")
    paths.html.write_text(render_html(title, document, out), encoding="utf-8")
    return paths
