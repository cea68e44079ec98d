"""What a RunExperiment goal came to: one kind from one vocabulary, with the message and its reasons.

Before a run the planner answers by itself (``refused``, ``question``, ``planned`` for a dry run, ``failed``
when planning broke). A run's end is judged once, in :mod:`agentchemist.record.outcome`, by the recorder
when it closes the record; the planner reads that judgement from the ``record_closed`` note.

``OutcomeKind`` is a ``StrEnum``: a member equals the string the action result, the note and the scoring
carry (``completed``, ``aborted`` ...).
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

__all__ = ["OutcomeKind", "RunOutcome", "outcome_kind"]


class OutcomeKind(StrEnum):
    # ---- a run's end (the judge's)
    COMPLETED = "completed"                     #: ended accepting, all of it on record
    COMPLETED_WITH_GAP = "completed_with_gap"   #: ended accepting, but the record has a gap: not a success
    #: ended accepting, but without a result the instruction asked for (a curve, an equivalence point, a pKa,
    #: a concentration, a mass): not a success; the message names what is missing and why
    COMPLETED_WITHOUT_RESULT = "completed_without_result"
    ABORTED = "aborted"                         #: ended in a state that does not accept
    # ---- before a run (the planner's)
    REFUSED = "refused"
    QUESTION = "question"
    PLANNED = "planned"                         #: a dry run: the plan only
    FAILED = "failed"                           #: planning itself failed


#: the kinds a run's end can have (the others are answered before anything moves)
RUN_ENDS = frozenset({OutcomeKind.COMPLETED, OutcomeKind.COMPLETED_WITH_GAP, OutcomeKind.COMPLETED_WITHOUT_RESULT,
                      OutcomeKind.ABORTED})


def outcome_kind(text: str) -> OutcomeKind:
    """The kind named ``text``; ValueError that lists the kinds for any other word."""
    try:
        return OutcomeKind(text)
    except ValueError:
        raise ValueError(f"unknown outcome {text!r}; outcomes: {', '.join(OutcomeKind)}") from None


@dataclass(frozen=True)
class RunOutcome:
    """One goal's outcome: its kind, the message the chemist reads, and the reasons that message joins
    (the halts of an abort, the gaps of a completed run; empty when the message says it all)."""
    kind: OutcomeKind
    message: str = ""
    reasons: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", outcome_kind(str(self.kind)))
        object.__setattr__(self, "reasons", tuple(self.reasons))

    @property
    def success(self) -> bool:
        """The goal succeeded: a run completed with all of it on record, or a dry run's plan."""
        return self.kind in (OutcomeKind.COMPLETED, OutcomeKind.PLANNED)

    @property
    def status(self) -> str:
        """The experiment's status word in the store (its readers know completed and aborted): a run that
        ended accepting is completed there, gap or not (the gap is its own anomaly row)."""
        if self.kind not in RUN_ENDS:
            raise ValueError(f"a {self.kind} goal ran nothing: it has no status in the store")
        return "aborted" if self.kind == OutcomeKind.ABORTED else "completed"
