"""The one judge of how a run ended (issue 36, "one judge, one count"), free of ROS.

The recorder calls :func:`judge` when it closes the record (it sees the terminal state and every anomaly of
the run) and sends the verdict in its ``record_closed`` note; the planner only reads it
(:func:`returned_outcome`). When no record is closed (the recorder or the executor was lost) the planner's
reading calls the same :func:`judge` with what it saw, and :func:`unrecorded` says so in the message.

The rules:

- ended accepting with a ``record_gap`` anomaly: ``completed_with_gap``, the gaps' descriptions joined
  (the chemistry ended well, but what happened is not all on record);
- ended accepting otherwise: ``completed``;
- any other end: ``aborted``, with the distinct halts as "kind: description" (in the order they came),
  or "ended in <state>" when no halt said why.

What the run delivered is judged here too, by :func:`delivered`, once the results are computed (the
report's, after the record is closed): a run that ended accepting without a result its instruction asked for
(the family's result contract, agentchemist.experiments.results) is ``completed_without_result``, the
missing results and their reasons in the message. The report states that verdict on its first line, the
summarizer sends it in ``report_written``, and the planner returns it (the recorder's verdict when no
report came).

The judge needs no clock: the anomalies are the run's, in the order they arrived.
"""
from __future__ import annotations

from typing import Iterable, Protocol

from agentchemist.contracts import AnomalyKind, Severity
from agentchemist.contracts.notes import RecordClosed
from agentchemist.contracts.outcome import OutcomeKind, RunOutcome

__all__ = ["SeenAnomaly", "closed_outcome", "delivered", "judge", "report_verdict", "returned_outcome", "unrecorded",
           "without_report"]

#: the message of a run that completed with everything on record
COMPLETED_MESSAGE = "experiment completed"


class SeenAnomaly(Protocol):
    """What the judge reads of an anomaly (an Anomaly message and the recorder's AnomalyNote both have it)."""
    kind: str
    severity: str
    description: str


def judge(state: str, accepting: bool, anomalies: Iterable[SeenAnomaly]) -> RunOutcome:
    """The outcome of a run that ended in ``state`` (``accepting``: an accepting end) after ``anomalies``
    (this run's, in arrival order)."""
    anomalies = list(anomalies)
    if accepting:
        gaps = tuple(a.description for a in anomalies if a.kind == AnomalyKind.RECORD_GAP)
        if gaps:
            return RunOutcome(OutcomeKind.COMPLETED_WITH_GAP, "; ".join(gaps), gaps)
        return RunOutcome(OutcomeKind.COMPLETED, COMPLETED_MESSAGE)
    halts = tuple(dict.fromkeys(f"{a.kind}: {a.description}" for a in anomalies if a.severity == Severity.HALT))
    return RunOutcome(OutcomeKind.ABORTED, "; ".join(halts) or f"ended in {state}", halts)


def delivered(outcome: RunOutcome, missing: Iterable[tuple[str, str]]) -> RunOutcome:
    """The verdict once the results are known: an accepting end (completed, with or without a gap) that
    lacks results the instruction asked for (``missing``: (result, why) pairs) is ``completed_without_result``,
    each missing result named with its reason (and a gap still said); any other verdict stands."""
    missing = tuple((str(name), str(why)) for name, why in missing)
    if not missing or outcome.kind not in (OutcomeKind.COMPLETED, OutcomeKind.COMPLETED_WITH_GAP):
        return outcome
    reasons = tuple(f"no {name}: {why}" if why else f"no {name}" for name, why in missing)
    message = "completed without " + ", ".join(name for name, _ in missing) + ": " + "; ".join(reasons)
    if outcome.kind == OutcomeKind.COMPLETED_WITH_GAP:
        message += "; record gap: " + outcome.message
        reasons += outcome.reasons
    return RunOutcome(OutcomeKind.COMPLETED_WITHOUT_RESULT, message, reasons)


def without_report(outcome: RunOutcome) -> RunOutcome:
    """A completed run whose report did not come in time says so (the other outcomes already say why)."""
    if outcome.kind != OutcomeKind.COMPLETED:
        return outcome
    return RunOutcome(outcome.kind, outcome.message + "; the report was not written in time", outcome.reasons)


def unrecorded(outcome: RunOutcome) -> RunOutcome:
    """The planner judged the run itself, no record having been closed: the message says so."""
    return RunOutcome(outcome.kind, outcome.message + " (no record was closed: judged from what the planner saw)",
                      outcome.reasons)


def closed_outcome(note: RecordClosed) -> RunOutcome | None:
    """The recorder's verdict in its ``record_closed`` note; None when the note carries none (a recorder
    from before the verdict was in the note, as in recorded bags: the reader judges with the same rules)."""
    if not note.outcome:
        return None
    return RunOutcome(note.outcome, note.message)


def report_verdict(note) -> RunOutcome | None:
    """The verdict a ``report_written`` note carries (the report's: :func:`delivered`), or None (no note, a
    ``report_failed`` one, or a summarizer from before the verdict was in the note)."""
    kind = getattr(note, "outcome", "") if note is not None else ""
    return RunOutcome(kind, getattr(note, "message", "")) if kind else None


def returned_outcome(closed: RecordClosed | None, reported: bool, state: str, accepting: bool,
                     anomalies: Iterable[SeenAnomaly], report_verdict: RunOutcome | None = None) -> RunOutcome:
    """What the planner returns for a run that ended in ``state``: the verdict of the recorder's latest
    ``record_closed`` note (``closed``; None: none came). Without one (no note, or a note without a verdict)
    it judges from the ``anomalies`` it saw, with the same rules; only when neither a note nor a report came
    does the message say no record was closed (a report answers a record_closed, so one was). ``reported``:
    the summarizer answered (report written or failed) in time; ``report_verdict``: the verdict the report
    stated (:func:`delivered`: what the run delivered), which stands over the recorder's when it came."""
    if report_verdict is not None and reported:
        return report_verdict
    verdict = closed_outcome(closed) if closed is not None else None
    if verdict is None:
        verdict = judge(state, accepting, anomalies)
    verdict = verdict if reported else without_report(verdict)
    return unrecorded(verdict) if closed is None and not reported else verdict
