"""Reading a finished run back for scoring: its record store and its report, by run folder.

Used by the scenario runner (what it puts in a RunRecord) and by bench/scenarios.py --rescore (filling
what older runners did not record), so both read a run the same way. No ROS.
"""
from __future__ import annotations

import json
from pathlib import Path

__all__ = ["experiment_seconds", "load_run", "report_results", "settled_ph", "store_counts"]


def load_run(run_dir: Path, experiment_id: str) -> dict | None:
    """Everything the run's record store (run_dir/records.db) holds for `experiment_id`; None without one."""
    from agentchemist.record import open_store

    db = Path(run_dir) / "records.db"
    if not db.exists():
        return None
    store = open_store(str(db))
    try:
        return store.load_run(experiment_id)
    finally:
        store.close()


def settled_ph(run: dict | None) -> list[float]:
    """The pH after each drop, in order: the report's curve (agentchemist.report.curve_rows), the settled
    readings of a run that settled every drop, else the meter's trace, drop-resolved with the lags taken out."""
    if run is None:
        return []
    from agentchemist.report.curve_rows import curve_rows  # the report's libraries only where a run is scored
    from agentchemist.report.model import RunData
    return [r.ph for r in curve_rows(RunData.from_mapping(run)) if r.usable]


def experiment_seconds(run: dict | None) -> float | None:
    """How long the experiment itself ran on the twin's clock, from its start to its terminal state (the
    store's started / finished). The twin's clock when the result comes back is later: the report is
    written after the end, in wall seconds during which the clock runs on at many times real time."""
    if run is None:
        return None
    started, finished = run["experiment"].get("started"), run["experiment"].get("finished")
    if not all(isinstance(x, (int, float)) for x in (started, finished)) or finished < started:
        return None
    return float(finished) - float(started)


def store_counts(run: dict | None) -> dict[str, int]:
    """Rows per kind in a loaded run: fused records by quantity, raw observations, audio events,
    transitions, anomalies."""
    if run is None:
        return {}
    counts: dict[str, int] = {}
    for row in run["fused_records"]:
        counts[row["quantity"]] = counts.get(row["quantity"], 0) + 1
    counts["raw_observations"] = len(run["raw_observations"])
    counts["audio_events"] = len(run["audio_events"])
    counts["transitions"] = len(run["transitions"])
    counts["anomalies"] = len(run["anomalies"])
    return counts


def report_results(report_path: str) -> dict:
    """The results section of the run's report.json (next to `report_path`); {} when there is none."""
    if not report_path:
        return {}
    path = Path(report_path).with_suffix(".json")
    if not path.exists():
        return {}
    data = json.loads(path.read_text())
    return (data.get("sections") or {}).get("results") or {}
