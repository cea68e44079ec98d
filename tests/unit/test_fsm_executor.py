"""The executor (agentchemist.fsm.executor) without ROS: typed events in, typed effects out, for the short
HCl/NaOH plan from the first subtask to the endpoint, plus bad input and aborts."""
import pytest

from agentchemist.fsm.commands import Report
from agentchemist.fsm.dispensing import DispenseOutcome
from agentchemist.fsm.effects import Cancel, PublishState, SendGoal, Snapshot, Tell
from agentchemist.fsm.executor import Executor
from agentchemist.fsm.plan_gate import idle_abort, rejected
from agentchemist.fsm.record_watch import RecordWatchConfig
from agentchemist.fsm.supervision import SupervisionConfig


def recorded(plan, now=0.0, **watch):
    """An executor whose recorder has acknowledged the plan (fsm/record_watch.py; its own tests below)."""
    ex = Executor(plan, now, SupervisionConfig(recorder=RecordWatchConfig(**watch)))
    assert ex.on_recorder_status(plan.experiment_id, True, now, now, None) == []
    return ex


def of(effects, kind):
    return [e for e in effects if isinstance(e, kind)]


def run_to_dispensing(ex, t=0.0):
    """Answer every action-policy goal with its symbol until the dispense goal goes out."""
    effects = ex.start(t, None, require_scene=False)
    for _ in range(10):
        goals = [e for e in of(effects, SendGoal) if e.goal is not None]
        if goals:
            return goals[0], effects, t
        policy = of(effects, SendGoal)
        assert policy, f"stuck in {ex.machine.state}: {effects}"
        t += 1.0
        effects = ex.on_policy_result(policy[0].task, True, policy[0].payload["symbol"], "", t)
    raise AssertionError("no dispense goal")


def test_start_dispatches_the_first_subtask_and_takes_a_snapshot(ph_plan):
    ex = recorded(ph_plan)
    effects = ex.start(0.0, None, require_scene=False)
    assert of(effects, Snapshot) == [Snapshot("start")]
    dispatch = [e for e in of(effects, Tell) if e.symbol == "dispatch"]
    assert dispatch and dispatch[0].receiver == "action_policy" and dispatch[0].instruction
    assert len(of(effects, SendGoal)) == 1 and of(effects, SendGoal)[0].goal is None


def test_a_missing_scene_image_aborts_before_anything_moves(ph_plan):
    ex = recorded(ph_plan)
    effects = ex.start(0.0, None, require_scene=True)
    assert not of(effects, SendGoal) and not ex.running
    halt = of(effects, Report)[0]
    assert (halt.kind, halt.severity, halt.response) == ("scene_unavailable", "halt", "abort")
    assert halt.fsm_state == "initial"  # decided before the machine went to aborted
    assert of(effects, PublishState)[-1].terminal


def test_the_dispense_goal_carries_the_direction_decided_once(ph_plan):
    ex = recorded(ph_plan)
    ex.on_ph(0.5, 1.2, 0.005)  # the acid before the first drop
    send, effects, t = run_to_dispensing(ex)
    goal = send.goal
    assert goal.target_ph == pytest.approx(ph_plan.module_instantiation.dispenser.target_ph)
    assert goal.ph_direction == 1 and ex.machine.state == "titrating"
    assert [e.state for e in of(effects, PublishState)][-1] == "titrating"


def test_the_endpoint_holds_the_dispenser_then_stops_it_and_the_result_finishes_the_subtask(ph_plan):
    ex = recorded(ph_plan)
    send, _, t = run_to_dispensing(ex)
    assert ex.book.accepted() is False  # accepted, nothing to cancel
    target = send.goal.target_ph
    effects = []
    noise = (0.004, -0.003, 0.001, -0.005, 0.002, 0.0, -0.001, 0.003)  # a live meter, not a frozen one
    for i in range(40):  # 8 s settled just past the target
        t += 0.2
        effects += ex.on_ph(t, round(target + 0.02 + noise[i % len(noise)], 3), 0.005)
    tells = [(e.receiver, e.symbol, dict(e.payload).get("reason")) for e in of(effects, Tell)]
    assert ("dispenser_controller", "hold", "endpoint") in tells  # no drop falls while it is confirmed
    assert Cancel("dispenser_controller") in effects and ex.machine.state == "done"
    assert ("recorder", "endpoint", None) in tells and Snapshot("endpoint") in effects
    # the cancelled goal's result ends the subtask; the verification follows from the pH stream
    after = ex.on_dispense_result(send.task, DispenseOutcome(False, "canceled", "canceled by the supervisor"), t)
    assert send.task.id in ex.sup.scheduler.done and not of(after, Report)


def test_a_refused_reading_is_reported_with_the_state_and_moves_nothing(ph_plan):
    ex = recorded(ph_plan)
    run_to_dispensing(ex)
    effects = ex.on_ph(30.0, float("nan"), None)
    assert [(r.kind, r.severity, r.fsm_state) for r in effects] == [("bad_reading", "warn", "titrating")]


def test_bad_readings_are_one_anomaly_per_episode(ph_plan):
    """200 NaN readings at 10 Hz are one warn and one resolution, not 200 anomalies."""
    ex = recorded(ph_plan)
    run_to_dispensing(ex)
    reports = []
    for k in range(200):
        reports += of(ex.on_ph(30.0 + 0.1 * k, float("nan") if k % 2 else float("inf"), None), Report)
    reports += of(ex.on_ph(50.5, 3.0, 0.005), Report)
    reports += of(ex.on_ph(50.6, float("nan"), None), Report)  # a new episode
    assert [(r.kind, r.severity, r.resolved) for r in reports] == [
        ("bad_reading", "warn", False), ("bad_reading", "info", True), ("bad_reading", "warn", False)]
    assert "200 refused over 20.5 s" in reports[1].description


def test_a_failed_dispense_goal_aborts_and_cancels_what_runs(ph_plan):
    ex = recorded(ph_plan)
    send, _, t = run_to_dispensing(ex)
    ex.book.accepted()
    effects = ex.on_dispense_result(send.task, DispenseOutcome(False, "anomaly", "pipette empty"), t + 1)
    halt = of(effects, Report)[0]
    assert halt.kind == "dispense_failed" and halt.fsm_state == "titrating"
    assert Cancel("dispenser_controller") in effects and Cancel("action_policy") in effects
    assert of(effects, PublishState)[-1].terminal and Snapshot("anomaly") in effects
    # a second abort of the ended experiment states it again, without a second snapshot
    again = ex.abort("again", "operator_halt", t + 2)
    assert of(again, PublishState) == [PublishState("aborted", "", "abort", terminal=True)]


def test_rejected_plans_and_idle_aborts_are_terminal_at_once():
    for effects in (rejected(ValueError("bad")), idle_abort("halt", "operator_halt")):
        assert of(effects, Report)[0].severity == "halt" and of(effects, PublishState)[-1].terminal


# ---------------------------------------------------------------------------------------------- the record
def test_nothing_moves_before_the_recorder_acknowledges_the_plan(ph_plan):
    ex = Executor(ph_plan, 0.0)
    assert not of(ex.start(0.0, None, require_scene=False), Tell)       # waiting: no dispatch, no snapshot
    assert ex.on_recorder_status("another-experiment", True, 0.5, 0.5, None) == []
    effects = ex.on_recorder_status(ph_plan.experiment_id, True, 1.0, 1.0, None)
    assert of(effects, Snapshot) == [Snapshot("start")] and [e for e in of(effects, Tell) if e.symbol == "dispatch"]


def test_no_acknowledgement_aborts_with_nothing_moved(ph_plan):
    ex = Executor(ph_plan, 0.0)
    ex.start(0.0, None, require_scene=False)
    assert not of(ex.on_tick(29.0), Report)
    effects = ex.on_tick(31.0)
    assert [(r.kind, r.severity) for r in of(effects, Report)] == [("recorder_unavailable", "halt")]
    assert not [e for e in of(effects, Tell) if e.symbol == "dispatch"] and not ex.running


def test_a_silent_recorder_holds_dispensing_and_its_return_leaves_a_stated_gap(ph_plan):
    ex = recorded(ph_plan)
    _goal, _effects, t = run_to_dispensing(ex)
    for k in range(1, 5):  # statuses every second: nothing happens
        ex.on_recorder_status(ph_plan.experiment_id, True, t + k, t + k, None)
        assert not of(ex.on_tick(t + k + 0.5), Report)
    t += 4.0
    lost = ex.on_tick(t + 3.5)  # 3.5 s silent > stale_s 3 s
    assert [(r.kind, r.severity) for r in of(lost, Report)] == [("recorder_lost", "warn")]
    assert [(e.receiver, e.symbol, e.payload["reason"]) for e in of(lost, Tell)] == \
        [("dispenser_controller", "hold", "recorder")]
    assert ex.on_tick(t + 10.0) == []  # one anomaly per episode
    back = ex.on_recorder_status(ph_plan.experiment_id, True, t + 12.0, t + 12.0, None)
    assert [(e.symbol, e.payload["reason"]) for e in of(back, Tell)] == [("release", "recorder")]
    reports = {r.kind: r for r in of(back, Report)}
    assert reports["recorder_lost"].resolved and reports["record_gap"].severity == "warn"
    # from the last status heard (t) to the return (t + 12)
    assert f"from {t:.1f} s to {t + 12.0:.1f} s" in reports["record_gap"].description
    assert [(g.start, g.end) for g in ex.record_watch.gaps] == [(t, t + 12.0)]


def test_a_recorder_gone_too_long_aborts(ph_plan):
    ex = recorded(ph_plan, lost_abort_s=60.0)
    _goal, _effects, t = run_to_dispensing(ex)
    ex.on_recorder_status(ph_plan.experiment_id, True, t, t, None)
    assert of(ex.on_tick(t + 4.0), Report)[0].kind == "recorder_lost"
    assert ex.on_tick(t + 59.0) == []
    effects = ex.on_tick(t + 61.0)
    assert [(r.kind, r.severity) for r in of(effects, Report)] == [("recorder_lost", "halt")] and not ex.running


def test_a_recorder_falling_behind_counts_as_lost(ph_plan):
    ex = recorded(ph_plan)
    _goal, _effects, t = run_to_dispensing(ex, t=10.0)
    ex.on_recorder_status(ph_plan.experiment_id, True, t - 6.0, t, None)  # alive, but its store is 6 s behind
    assert "6.1 s old" in of(ex.on_tick(t + 0.1), Report)[0].description


def test_the_arm_passing_the_bench_hides_no_labware_but_what_it_leaves_changed_is_seen(ph_plan, monkeypatch):
    """A titration's own motions (grasp, draw, move over the beaker) move no labware: frames taken while one
    runs are not compared (in MuJoCo the arm hid a beaker's tag for seconds), and after them the scene
    check's bench is still the reference."""
    import numpy as np

    import agentchemist.fsm.executor as executor_module
    seen = {1: (160.0, 200.0), 3: (160.0, 230.0), 4: (150.0, 190.0)}   # beaker_main, stirrer, ph_probe
    monkeypatch.setattr(executor_module, "detect_markers", lambda frame: dict(seen))
    frame = np.zeros((240, 320, 3), np.uint8)
    ex = recorded(ph_plan)
    effects, t = ex.start(0.0, frame, require_scene=False), 0.0
    del seen[4]  # the arm is in front of the probe's tag
    while not [e for e in of(effects, SendGoal) if e.goal is not None]:
        policy = of(effects, SendGoal)[0]
        for k in range(1, 5):
            frame_effects = ex.on_frame(t + 0.2 * k, frame)
            assert not of(frame_effects, Report) and not of(frame_effects, Tell), frame_effects
        t += 1.0
        effects = ex.on_policy_result(policy.task, True, policy.payload["symbol"], "", t)
    # dispensing: the probe's tag is still gone, now that no motion of the robot's explains it
    later = ex.on_frame(t + 0.2, frame) + ex.on_frame(t + 0.4, frame)
    assert [r.kind for r in of(later, Report)] == ["labware_missing"]
