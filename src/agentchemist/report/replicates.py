"""Replicates: the same determination run several times, summarised as a lab files it.

`agentchemist report RUN RUN ... --replicates` reads each run's report.json (a run folder with records.db is
reported first; a folder written by `agentchemist analyze` already holds its report.json) and states, for
every quantity all runs state (V_eq1, the analyte's concentration, pKa1 ...): the values with their own
uncertainties, the mean, the sample standard deviation SD, the relative SD (RSD = SD / mean), and whether
the scatter is covered by the stated uncertainties (SD against the root mean square of the runs' u: a
ratio above 2 means the budgets leave out a source the replicates show). Each run is linked.
"""
from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

__all__ = ["ReplicateError", "replicate_summary", "write_replicates"]


class ReplicateError(ValueError):
    """Replicates that cannot be summarised: fewer than two runs, a run without a report."""


def _load(path: Path) -> dict:
    target = path / "report.json" if path.is_dir() else path
    if not target.is_file():
        raise ReplicateError(f"{path}: no report.json (run `agentchemist report {path}` or `agentchemist analyze` first)")
    try:
        return json.loads(target.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ReplicateError(f"{target}: not a readable report ({exc})") from None


def replicate_summary(reports: Sequence[tuple[str, dict]]) -> dict:
    """The replicate statistics of ``reports`` ((link, report.json dict) pairs)."""
    if len(reports) < 2:
        raise ReplicateError(f"replicates need at least two runs, got {len(reports)}")
    per_run = []
    for link, summary in reports:
        stated = {r["quantity"]: r for r in summary.get("results") or []}
        per_run.append({"run": link, "experiment_id": summary.get("experiment_id"),
                        "data_origin": summary.get("data_origin"), "stated": stated})
    quantities = sorted(set.intersection(*(set(r["stated"]) for r in per_run)))
    rows = []
    for q in quantities:
        values = [r["stated"][q]["value"] for r in per_run]
        us = [r["stated"][q].get("u") for r in per_run]
        n = len(values)
        mean = sum(values) / n
        sd = math.sqrt(sum((x - mean) ** 2 for x in values) / (n - 1))
        u_rms = math.sqrt(sum(u**2 for u in us) / n) if all(u is not None for u in us) else None
        rows.append({"quantity": q, "unit": per_run[0]["stated"][q].get("unit", ""), "n": n, "values": values,
                     "u": us, "mean": mean, "sd": sd, "rsd": sd / abs(mean) if mean else None,
                     "u_rms": u_rms, "scatter_over_u": sd / u_rms if u_rms else None,
                     "covered": (sd <= 2.0 * u_rms) if u_rms else None})
    missing = sorted(set().union(*(set(r["stated"]) for r in per_run)) - set(quantities))
    origins = sorted({str(r["data_origin"]) for r in per_run})
    return {"runs": [{"run": r["run"], "experiment_id": r["experiment_id"], "data_origin": r["data_origin"]}
                     for r in per_run],
            "quantities": rows, "not_in_every_run": missing, "data_origins": origins,
            "banner": "SIMULATED (digital twin)" if "twin" in origins else None}


def _fmt(x, digits: int = 4) -> str:
    return "n/a" if x is None or not math.isfinite(x) else f"{x:.{digits}g}"


def write_replicates(paths: Sequence[str | Path], out_dir: str | Path) -> tuple[Path, Path]:
    """Write replicates.md and replicates.json into ``out_dir`` for the runs at ``paths``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    reports = [(str(Path(p)), _load(Path(p))) for p in paths]
    summary = replicate_summary(reports)
    lines = []
    if summary["banner"]:
        lines.append(f"# {summary['banner']}: replicates")
    else:
        lines.append("# Replicates")
    lines += ["", f"{len(summary['runs'])} runs (data: {', '.join(summary['data_origins'])}):", ""]
    for r in summary["runs"]:
        target = Path(r["run"])
        link = (target / "report.md") if target.is_dir() else target.with_suffix(".md")
        lines.append(f"- [{r['experiment_id'] or r['run']}]({link})")
    lines += ["", "| Quantity | Values (± u) | Mean | SD | RSD | SD / u | Scatter covered by the budgets |",
              "|---|---|---|---|---|---|---|"]
    for q in summary["quantities"]:
        unit = f" {q['unit']}" if q["unit"] else ""
        values = "; ".join(f"{v:g}" + (f" ± {u:g}" if u is not None else "") for v, u in zip(q["values"], q["u"]))
        covered = "n/a" if q["covered"] is None else ("yes" if q["covered"] else "**no**: the budgets leave out a source")
        rsd = "n/a" if q["rsd"] is None else f"{100 * q['rsd']:.2g} %"
        lines.append(f"| {q['quantity']}{unit} | {values} | {_fmt(q['mean'])} | {_fmt(q['sd'], 2)} | {rsd} | "
                     f"{_fmt(q['scatter_over_u'], 2)} | {covered} |")
    if summary["not_in_every_run"]:
        lines += ["", "Not stated in every run (no replicate statistics): " + ", ".join(summary["not_in_every_run"])]
    lines += ["", "SD: sample standard deviation (n - 1); RSD = SD / mean; SD / u: against the root mean square of "
              "the runs' stated standard uncertainties (above 2: not covered)."]
    md, js = out / "replicates.md", out / "replicates.json"
    md.write_text("\n".join(lines) + "\n", encoding="utf-8")
    js.write_text(json.dumps(summary, indent=1), encoding="utf-8")
    return md, js
