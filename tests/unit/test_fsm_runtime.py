"""The executable machine and the subtask scheduler, driven with symbol sequences and explicit times."""

from __future__ import annotations

import math

import pytest

from agentchemist.fsm import (
    ExperimentMachine,
    FsmTimeError,
    RejectedSymbolError,
    SubtaskScheduler,
    UnknownSubtaskError,
)
from tests.factories import titration_plan

PREFIX = [
    ("grasp_ok", "action_policy"),
    ("draw_ok", "action_policy"),
    ("act", "action_policy"),
    ("record", "recorder"),
    ("titrate", "vision_supervisor"),
]


def run(machine: ExperimentMachine, symbols, t0: float = 0.0, dt: float = 1.0) -> float:
    t = t0
    for symbol, source in symbols:
        t += dt
        machine.apply(symbol, t, source=source)
    return t


def test_titration_runs_to_acceptance_with_full_history():
    m = ExperimentMachine.from_plan(titration_plan(), now=0.0)
    assert m.state == "initial" and not m.terminal
    seq = PREFIX + [("drop", "dispenser_controller"), ("record", "recorder"), ("ph_stable", "vision_supervisor")] * 3
    seq += [
        ("drop", "audio_supervisor"),
        ("endpoint", "vision_supervisor"),
        ("record", "recorder"),
        ("verified", "vision_supervisor"),
    ]
    t = run(m, seq)
    assert m.state == "accepted" and m.accepting and m.terminal and not m.aborted
    hist = m.history
    assert [h.symbol for h in hist] == [s for s, _ in seq]
    assert [h.stamp for h in hist] == [float(i) for i in range(1, len(seq) + 1)]
    assert hist[0].from_state == "initial" and hist[0].to_state == "pipette_grasped"
    assert hist[-1].to_state == "accepted" and hist[-1].source == "vision_supervisor"
    assert m.expected_symbols == []
    with pytest.raises(RejectedSymbolError, match="accepting state"):
        m.apply("record", t + 1)


def test_endpoint_is_accepted_from_titrating_and_from_waiting():
    for tail in (
        [("endpoint", "vision_supervisor")],
        [("drop", "dispenser_controller"), ("endpoint", "vision_supervisor")],
    ):
        m = ExperimentMachine.from_plan(titration_plan(), now=0.0)
        run(m, PREFIX + tail)
        assert m.state == "done"


def test_rejected_symbols_leave_the_state_alone_and_say_why():
    m = ExperimentMachine.from_plan(titration_plan(), now=0.0)
    run(m, PREFIX[:3])
    assert m.state == "ready"
    assert not m.can_apply("drop") and m.can_apply("titrate")
    with pytest.raises(RejectedSymbolError) as err:
        m.apply("drop", 10.0, source="audio_supervisor")
    assert err.value.state == "ready" and "expected one of: record, titrate" in err.value.reason
    with pytest.raises(RejectedSymbolError, match="not an input symbol"):
        m.apply("teleport", 10.0)
    with pytest.raises(RejectedSymbolError):
        m.apply("", 10.0)
    assert m.state == "ready" and len(m.history) == 3


def test_drop_while_ph_settles_is_rejected_only_when_settling_is_required():
    strict = ExperimentMachine.from_plan(titration_plan(settle_each_drop=True), now=0.0)
    run(strict, PREFIX + [("drop", "dispenser_controller")])
    assert strict.state == "waiting_ph"
    with pytest.raises(RejectedSymbolError):
        strict.apply("drop", 20.0)
    loose = ExperimentMachine.from_plan(titration_plan(settle_each_drop=False), now=0.0)
    run(loose, PREFIX + [("drop", "dispenser_controller"), ("drop", "dispenser_controller")])
    assert loose.state == "waiting_ph"


def test_timeouts_count_time_in_state_and_record_does_not_reset_them():
    m = ExperimentMachine.from_plan(titration_plan(), now=0.0)
    limit = m.timeout_for("initial")
    assert limit == 180.0
    assert m.check_timeout(limit - 1.0) is None
    reason = m.check_timeout(limit + 1.0)
    assert reason is not None and "'initial'" in reason and "180 s" in reason
    m.apply("grasp_ok", limit + 2.0)
    assert m.check_timeout(limit + 3.0) is None  # new state, new clock
    run(m, [("draw_ok", ""), ("act", ""), ("titrate", "")], t0=limit + 2.0)
    t_enter = limit + 5.0
    # record is a self-loop: it must not hide a stalled dispenser
    for k in range(1, 10):
        m.apply("record", t_enter + 10.0 * k, source="recorder")
    assert m.state == "titrating"
    assert m.check_timeout(t_enter + 91.0) is not None
    m.apply("drop", t_enter + 95.0)
    assert m.check_timeout(t_enter + 96.0) is None


def test_timeout_override_and_states_without_limit():
    m = ExperimentMachine.from_plan(titration_plan(), now=0.0, timeouts_s={"initial": 5.0})
    assert m.check_timeout(6.0) is not None
    run(m, PREFIX + [("endpoint", ""), ("verified", "")], t0=6.0)
    assert m.timeout_for("accepted") is None and m.check_timeout(1e6) is None


def test_pause_resume_excludes_paused_time_and_blocks_symbols():
    m = ExperimentMachine.from_plan(titration_plan(), now=0.0)
    m.pause("anomaly: droplet not detected", 100.0)
    assert m.paused and m.pause_reason.startswith("anomaly")
    with pytest.raises(RejectedSymbolError, match="paused"):
        m.apply("grasp_ok", 101.0)
    assert m.check_timeout(1000.0) is None  # no timeout while paused
    with pytest.raises(RejectedSymbolError, match="already paused"):
        m.pause("again", 1000.0)
    m.resume(1000.0, "operator cleared it")
    assert not m.paused
    # 100 s counted before the pause; 180 s limit -> fires 80 s after resuming, not before
    assert m.check_timeout(1079.0) is None
    assert m.check_timeout(1081.0) is not None
    m.apply("grasp_ok", 1082.0)
    kinds = [h.symbol for h in m.history]
    assert kinds == ["pause", "resume", "grasp_ok"]
    assert m.history[0].reason == "anomaly: droplet not detected"
    with pytest.raises(RejectedSymbolError, match="not paused"):
        m.resume(1083.0)


def test_abort_is_terminal_from_any_live_state_even_paused():
    m = ExperimentMachine.from_plan(titration_plan(), now=0.0)
    run(m, PREFIX[:2])
    m.pause("sensor timeout", 5.0)
    rec = m.abort("pH probe failed; robot retracted", 6.0)
    assert rec.from_state == "solution_drawn" and rec.to_state == "aborted" and rec.symbol == "abort"
    assert m.aborted and m.terminal and not m.accepting and not m.paused
    assert m.state == "aborted" and m.previous_state == "solution_drawn"
    with pytest.raises(RejectedSymbolError, match="aborted"):
        m.apply("act", 7.0)
    with pytest.raises(RejectedSymbolError):
        m.abort("twice", 8.0)
    with pytest.raises(ValueError):
        ExperimentMachine.from_plan(titration_plan(), now=0.0).abort("   ", 1.0)


def test_bad_time_stamps_are_refused():
    m = ExperimentMachine.from_plan(titration_plan(), now=10.0)
    with pytest.raises(FsmTimeError, match="earlier"):
        m.apply("grasp_ok", 9.0)
    with pytest.raises(FsmTimeError):
        m.apply("grasp_ok", math.nan)
    with pytest.raises(FsmTimeError):
        m.check_timeout(math.inf)
    assert m.state == "initial" and m.history == []


def test_scheduler_dispatches_in_dependency_and_state_order():
    plan = titration_plan()
    s = SubtaskScheduler(plan)
    assert s.order == [
        "grasp_pipette",
        "draw_titrant",
        "position_over_beaker",
        "titrate",
        "verify_endpoint",
        "write_report",
    ]
    assert [t.id for t in s.ready("initial")] == ["grasp_pipette"]
    assert s.ready("pipette_grasped") == []  # draw waits for the grasp to be done
    s.mark_dispatched("grasp_pipette")
    assert s.ready("initial") == []  # already dispatched
    with pytest.raises(ValueError, match="dependencies"):
        s.mark_done("draw_titrant")
    s.mark_done("grasp_pipette")
    assert [t.id for t in s.ready("pipette_grasped")] == ["draw_titrant"]
    assert [t.id for t in s.ready("pipette_grasped", done={"draw_titrant"})] == []
    with pytest.raises(UnknownSubtaskError):
        s.mark_done("fly")


def test_scheduler_failure_blocks_dependents_until_retry():
    s = SubtaskScheduler(titration_plan())
    s.mark_done("grasp_pipette")
    s.mark_dispatched("draw_titrant")
    s.mark_failed("draw_titrant", "pipette slipped")
    assert s.failed == {"draw_titrant": "pipette slipped"}
    assert s.ready("pipette_grasped") == []
    assert s.blocked()["position_over_beaker"] == "draw_titrant"
    assert "write_report" in s.blocked()
    s.retry("draw_titrant")
    assert [t.id for t in s.ready("pipette_grasped")] == ["draw_titrant"]
    with pytest.raises(ValueError):
        s.mark_failed("draw_titrant", "  ")


def test_machine_and_scheduler_drive_the_experiment_together():
    """The supervisor's loop in miniature: dispatch what is ready, turn completions into symbols."""
    plan = titration_plan()
    m = ExperimentMachine.from_plan(plan, now=0.0)
    s = SubtaskScheduler(plan)
    t = 0.0
    running: dict[str, str] = {}
    drops = 0
    while not m.terminal:
        for task in s.ready(m.state):
            s.mark_dispatched(task.id)
            running[task.id] = task.expected_transition.symbol if task.expected_transition else ""
        t += 1.0
        if m.state == "ready":
            m.apply("titrate", t, source="vision_supervisor")  # pre-checks passed
        elif m.state == "titrating" and drops < 5:
            m.apply("drop", t, source="dispenser_controller")
            drops += 1
        elif m.state == "waiting_ph":
            m.apply("ph_stable", t, source="vision_supervisor")
        else:
            tid = next(i for i, sym in running.items() if m.can_apply(sym))
            m.apply(running.pop(tid), t, source=plan.subtask(tid).receiver, subtask_id=tid)
            s.mark_done(tid)
    assert m.accepting and drops == 5
    assert [t.id for t in s.ready(m.state)] == ["write_report"]
    assert {h.subtask_id for h in m.history if h.subtask_id} == {
        "grasp_pipette",
        "draw_titrant",
        "position_over_beaker",
        "titrate",
        "verify_endpoint",
    }
