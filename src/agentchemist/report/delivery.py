"""The run's outcome as the report states it: how the run ended, and whether it delivered what was asked.

The verdict is the one judge's (agentchemist.record.outcome): :func:`judge` on the run's record (its
status and its anomalies, as the recorder judged at close), then :func:`delivered` with the results the
instruction asked for that the report could not state (the family's result contract,
agentchemist.experiments.results.missing_results). The report's first paragraph, its JSON and the
summarizer's ``report_written`` note carry it; the planner returns it.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from dataclasses import dataclass

from agentchemist.contracts.outcome import RunOutcome
from agentchemist.experiments.results import missing_results
from agentchemist.record.outcome import delivered, judge
from agentchemist.report.model import RunData

__all__ = ["report_outcome", "stated_outcome"]


@dataclass(frozen=True)
class _Seen:
    kind: str
    severity: str
    description: str


def _last_state(run: RunData) -> str:
    states = [str(t.get("to_state") or "") for t in run.transitions]
    return states[-1] if states else ""


def report_outcome(run: RunData, results: Mapping) -> dict | None:
    """``{kind, message, reasons, missing: [{result, reason}]}`` for a run that ended (status completed or
    aborted); None for a run still running or data that are not a run (an imported curve)."""
    status = run.experiment.get("status")
    if status not in ("completed", "aborted"):
        return None
    anomalies = [_Seen(str(a.get("kind") or ""), str(a.get("severity") or ""), str(a.get("description") or ""))
                 for a in run.anomalies]
    base = judge(_last_state(run) or str(status), status == "completed", anomalies)
    if status == "aborted" and run.experiment.get("reason") and not base.reasons:
        base = RunOutcome(base.kind, str(run.experiment["reason"]))
    plan = run.experiment.get("plan") if isinstance(run.experiment.get("plan"), Mapping) else {}
    missing = missing_results(results.get("family"), plan, results)
    verdict = delivered(base, missing)
    return {"kind": verdict.kind.value, "message": verdict.message, "reasons": list(verdict.reasons),
            "missing": [{"result": name, "reason": why} for name, why in missing]}


def stated_outcome(report_json: str | Path) -> RunOutcome | None:
    """The verdict a written report states (its JSON's ``outcome``), or None when it states none or the file
    cannot be read as a report (the recorder's verdict then stands)."""
    try:
        outcome = json.loads(Path(report_json).read_text(encoding="utf-8")).get("outcome")
        return RunOutcome(outcome["kind"], str(outcome.get("message") or "")) if outcome else None
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None
