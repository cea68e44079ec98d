"""Where the run folders of `agentchemist run` and `agentchemist console` go, and the past runs in them.

Not the checkout: a run written into the clone mixes a user's data with the source tree (issue 40). `make
demo` and the graph tests keep `runs/` in the checkout (agentchemist.paths.default_runs_dir).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PastRun", "past_runs", "user_runs_dir"]


def user_runs_dir() -> Path:
    """$AGENTCHEMIST_RUNS, else $XDG_DATA_HOME/agentchemist/runs, else ~/.local/share/agentchemist/runs."""
    env = os.environ.get("AGENTCHEMIST_RUNS")
    if env:
        return Path(env).expanduser()
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "agentchemist" / "runs"


@dataclass(frozen=True)
class PastRun:
    experiment_id: str
    outcome: str        #: the report's outcome kind; "no report" while a run has none
    message: str
    title: str
    modified: float     #: the report's (or folder's) modification time, for the newest-first order
    report_html: str    #: path relative to the runs folder, "" without a report

    def as_dict(self) -> dict:
        return {"experiment_id": self.experiment_id, "outcome": self.outcome, "message": self.message,
                "title": self.title, "modified": self.modified, "report_html": self.report_html}


def past_runs(runs_dir: Path, limit: int = 50) -> list[PastRun]:
    """The run folders under `runs_dir`, newest first, each with the outcome its report.json states."""
    runs_dir = Path(runs_dir)
    if not runs_dir.is_dir():
        return []
    out = []
    for folder in runs_dir.iterdir():
        if not folder.is_dir() or folder.name.startswith("."):
            continue
        report = folder / "report.json"
        outcome, message, title = "no report", "", ""
        if report.is_file():
            try:
                data = json.loads(report.read_text())
            except (OSError, ValueError):
                data = {}
            kind = data.get("outcome")
            if isinstance(kind, dict):
                outcome, message = str(kind.get("kind", "")), str(kind.get("message", ""))
            elif kind:
                outcome = str(kind)
            title = str(data.get("title") or data.get("experiment_name") or "")
        html = folder / "report.html"
        stamp = (report if report.is_file() else folder).stat().st_mtime
        out.append(PastRun(folder.name, outcome or "unknown", message, title, stamp,
                           f"{folder.name}/report.html" if html.is_file() else ""))
    return sorted(out, key=lambda r: r.modified, reverse=True)[:limit]
