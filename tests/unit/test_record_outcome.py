"""The one judge of a run's outcome (agentchemist.record.outcome): each outcome, the recorder's verdict at
the close (and its revision by a halt heard after it), the record_closed note that carries it, and the
planner node reading it instead of judging."""
import ast
from pathlib import Path

import pytest

from agentchemist.contracts import note_from
from agentchemist.contracts.notes import RecordClosed
from agentchemist.contracts.outcome import OutcomeKind, RunOutcome, outcome_kind
from agentchemist.record.outcome import closed_outcome, judge, returned_outcome, unrecorded, without_report
from agentchemist.record.recording import AnomalyNote, FsmUpdate, RecorderConfig, Recording
from tests.conftest import REPO

PLANNER = REPO / "ros2_ws" / "src" / "agentchemist_ros" / "agentchemist_ros" / "planner_node.py"


def _anomaly(kind, severity, description, stamp=2.0, experiment_id="exp-1"):
    return AnomalyNote(stamp, "vision_supervisor", kind, severity, description, "titrating", "s1", "", False,
                       experiment_id)


def _end(state, accepting, stamp=5.0, experiment_id="exp-1"):
    return FsmUpdate(experiment_id, stamp, state, "titrating", "done" if accepting else "abort", "s1", accepting,
                     True)


# ------------------------------------------------------------------------------------------ the judge
def test_an_accepting_end_is_completed_whatever_else_was_reported():
    seen = [_anomaly("state_timeout", "warn", "slow"), _anomaly("operator_halt", "halt", "late")]
    outcome = judge("accepted", True, seen)
    assert outcome == RunOutcome(OutcomeKind.COMPLETED, "experiment completed")
    assert outcome.success and outcome.status == "completed"


def test_an_accepting_end_with_record_gaps_is_completed_with_gap_and_not_a_success():
    gaps = [_anomaly("record_gap", "warn", "the record has a gap from 10.0 s to 22.0 s"),
            _anomaly("recorder_lost", "info", "back", stamp=22.0),
            _anomaly("record_gap", "warn", "the record has a gap from 40.0 s to 41.0 s", stamp=41.0)]
    outcome = judge("accepted", True, gaps)
    assert outcome.kind == OutcomeKind.COMPLETED_WITH_GAP == "completed_with_gap"
    assert outcome.message == ("the record has a gap from 10.0 s to 22.0 s; "
                               "the record has a gap from 40.0 s to 41.0 s")
    assert len(outcome.reasons) == 2
    assert not outcome.success and outcome.status == "completed"  # the store's word: it ended accepting


def test_an_abort_says_the_distinct_halts_in_their_order_or_the_state_it_ended_in():
    halts = [_anomaly("reagent_mismatch", "halt", "the bottle holds KOH"),
             _anomaly("state_timeout", "warn", "not a halt"),
             _anomaly("node_error", "halt", "recorder: KeyError"),
             _anomaly("reagent_mismatch", "halt", "the bottle holds KOH")]
    outcome = judge("aborted", False, halts)
    assert outcome.kind == OutcomeKind.ABORTED and not outcome.success and outcome.status == "aborted"
    assert outcome.message == "reagent_mismatch: the bottle holds KOH; node_error: recorder: KeyError"
    assert outcome.reasons == ("reagent_mismatch: the bottle holds KOH", "node_error: recorder: KeyError")
    # a gap does not make an abort anything else, and with no halt the state says where it ended
    assert judge("aborted", False, [_anomaly("record_gap", "warn", "gap")]) == \
        RunOutcome(OutcomeKind.ABORTED, "ended in aborted")


def test_the_report_and_the_missing_record_are_said_in_the_message():
    completed = judge("accepted", True, [])
    assert without_report(completed).message == "experiment completed; the report was not written in time"
    aborted = judge("aborted", False, [_anomaly("node_lost", "halt", "executor gone: the experiment ends here")])
    assert without_report(aborted) == aborted  # the halts already say why there is none
    fallback = unrecorded(aborted)
    assert fallback.kind == OutcomeKind.ABORTED
    assert fallback.message.startswith("node_lost: executor gone: the experiment ends here (no record was closed")


def test_the_kinds_before_a_run_have_no_store_status():
    assert {k.value for k in OutcomeKind} == {"completed", "completed_with_gap", "completed_without_result", "aborted",
                                              "refused", "question", "planned", "failed"}
    assert RunOutcome(OutcomeKind.PLANNED, "dry run: plan only").success
    assert not RunOutcome("refused", "no").success and RunOutcome("refused").kind is OutcomeKind.REFUSED
    with pytest.raises(ValueError, match="has no status"):
        RunOutcome(OutcomeKind.QUESTION, "which acid?").status
    with pytest.raises(ValueError, match="unknown outcome 'complete'"):
        outcome_kind("complete")


# ------------------------------------------------------------------------------------------ the note
def test_the_record_closed_note_carries_the_verdict():
    note = note_from("record_closed", {"store": "", "status": "completed", "outcome": "completed_with_gap",
                                       "message": "gap"})
    assert closed_outcome(note) == RunOutcome(OutcomeKind.COMPLETED_WITH_GAP, "gap")
    # a recorder that sent no verdict (recorded bags): the reader judges with the same rules
    assert closed_outcome(note_from("record_closed", {"status": "aborted"})) is None
    with pytest.raises(ValueError, match="record_closed note: outcome='done'"):
        RecordClosed("", "completed", "done")


# ------------------------------------------------------------------------------------------ the recorder
def _open(tmp_path):
    return Recording.open(RecorderConfig(runs_dir=str(tmp_path)), "exp-1", now=1.0, plan_json="{}")


def test_the_recorder_judges_at_the_close_from_this_runs_anomalies(tmp_path):
    rec = _open(tmp_path)
    rec.on_anomaly(_anomaly("record_gap", "warn", "the record has a gap from 3.0 s to 4.0 s"))
    rec.on_anomaly(_anomaly("record_gap", "warn", "another run's gap", experiment_id="exp-0"))
    closed = rec.on_fsm(_end("accepted", True))
    gap = "the record has a gap from 3.0 s to 4.0 s"
    assert closed.outcome == RunOutcome(OutcomeKind.COMPLETED_WITH_GAP, gap, (gap,))
    assert closed.status == "completed"
    assert rec.store.load_run("exp-1")["experiment"]["status"] == "completed"  # the store's word, as before
    assert rec.take_revision() is None


def test_a_halt_heard_after_the_close_revises_the_verdict_once(tmp_path):
    rec = _open(tmp_path)
    closed = rec.on_fsm(_end("aborted", False))
    assert closed.outcome == RunOutcome(OutcomeKind.ABORTED, "ended in aborted") and closed.status == "aborted"
    # the executor publishes its halt with the terminal state; it may arrive second
    rec.on_anomaly(_anomaly("state_timeout", "halt", "titrating for 600 s", stamp=5.0))
    revised = rec.take_revision()
    assert revised.outcome.message == "state_timeout: titrating for 600 s"
    assert (revised.experiment_id, revised.stamp, revised.status, revised.store) == \
        ("exp-1", 5.0, "aborted", closed.store)
    assert rec.take_revision() is None
    # the same halt again, a warning, or another run's halt change nothing
    rec.on_anomaly(_anomaly("state_timeout", "halt", "titrating for 600 s", stamp=5.1))
    rec.on_anomaly(_anomaly("spill_unreplayed", "warn", "rows left", stamp=5.2))
    rec.on_anomaly(_anomaly("node_lost", "halt", "gone", stamp=5.3, experiment_id="exp-2"))
    assert rec.take_revision() is None
    run = rec.store.load_run("exp-1")["experiment"]
    assert (run["status"], run["reason"]) == ("aborted", "ended in aborted")
    rec.close()


# ------------------------------------------------------------------------------------------ the planner
def test_the_planner_returns_the_recorders_verdict_even_where_it_saw_otherwise():
    halt = [_anomaly("operator_halt", "halt", "stop")]
    note = RecordClosed("", "aborted", "aborted", "operator_halt: stop; node_error: recorder: KeyError")
    assert returned_outcome(note, True, "aborted", False, halt).message == note.message
    gap = RecordClosed("", "completed", "completed_with_gap", "the record has a gap")
    assert returned_outcome(gap, True, "accepted", True, []).kind == OutcomeKind.COMPLETED_WITH_GAP
    # completed, the report not in time: said after the recorder's message, as before
    done = RecordClosed("", "completed", "completed", "experiment completed")
    assert returned_outcome(done, False, "accepted", True, []).message == \
        "experiment completed; the report was not written in time"


def test_without_a_verdict_the_planner_judges_with_the_same_rules():
    halts = [_anomaly("node_lost", "halt", "the executor is gone: the experiment ends here")]
    # a recorded bag's note (no verdict in it): judged here, no remark (a record was closed)
    old = RecordClosed("", "aborted")
    assert returned_outcome(old, True, "aborted", False, halts) == judge("aborted", False, halts)
    # a report came but the note missed us: a record was closed all the same
    assert returned_outcome(None, True, "accepted", True, []) == RunOutcome(OutcomeKind.COMPLETED,
                                                                             "experiment completed")
    # executor lost: no record closed, no report; the message says who judged
    lost = returned_outcome(None, False, "executor lost", False, halts)
    assert lost.kind == OutcomeKind.ABORTED
    assert lost.message == ("node_lost: the executor is gone: the experiment ends here "
                            "(no record was closed: judged from what the planner saw)")
    # the recorder lost at the very end of a run that completed
    assert returned_outcome(None, False, "accepted", True, []).message == \
        ("experiment completed; the report was not written in time "
         "(no record was closed: judged from what the planner saw)")


def test_the_planner_node_reads_the_verdict_and_judges_only_through_the_judge():
    source = PLANNER.read_text()
    tree = ast.parse(source)
    imported = {(n.module, a.name) for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
    assert ("agentchemist.record.outcome", "returned_outcome") in imported
    # the rules are the judge's: no record_gap, halt filtering or "ended in" text of its own
    for rule in ("RECORD_GAP", "record_gap", "dict.fromkeys", "\"ended in", "completed_with_gap"):
        assert rule not in source, rule


# ------------------------------------------------------------------------------- what was delivered
def test_a_run_without_an_asked_result_is_not_completed():
    from agentchemist.record.outcome import delivered
    completed = judge("accepted", True, [])
    assert delivered(completed, []) == completed
    verdict = delivered(completed, [("titration curve", "only 2 distinct volume(s) measured")])
    assert verdict.kind == OutcomeKind.COMPLETED_WITHOUT_RESULT and not verdict.success
    assert verdict.message == "completed without titration curve: no titration curve: only 2 distinct volume(s) measured"
    assert verdict.status == "completed"   # the store keeps its word; the kind says what was missing
    gap = judge("accepted", True, [_anomaly("record_gap", "warn", "12 s of pH missing")])
    both = delivered(gap, [("pKa", "")])
    assert both.kind == OutcomeKind.COMPLETED_WITHOUT_RESULT and "record gap: 12 s of pH missing" in both.message
    aborted = judge("aborted", False, [_anomaly("reagent_mismatch", "halt", "pH 1.1 is not acetic acid")])
    assert delivered(aborted, [("titration curve", "none")]) == aborted   # an abort already says why


def test_the_planner_returns_the_reports_verdict_when_one_came():
    from agentchemist.record.outcome import report_verdict
    note = note_from("report_written", {"report": "/r.md", "status": "completed", "outcome": "completed_without_result",
                                        "message": "completed without equivalence point: stopped before it"})
    verdict = report_verdict(note)
    assert verdict == RunOutcome(OutcomeKind.COMPLETED_WITHOUT_RESULT,
                                 "completed without equivalence point: stopped before it")
    closed = note_from("record_closed", {"status": "completed", "outcome": "completed", "message": "experiment completed"})
    assert returned_outcome(closed, True, "accepted", True, [], verdict) == verdict
    assert returned_outcome(closed, True, "accepted", True, [], None).kind == OutcomeKind.COMPLETED
    assert report_verdict(note_from("report_written", {"report": "/r.md"})) is None  # an older summarizer
