"""Peers watched by their heartbeats (agentchemist.fsm.node_watch), the supervisor's use of it (the
executor holds dispensing on a lost agent, aborts on a restarted goal holder or a long loss) and the
dispenser's (it holds its goal while its endpoint judge is lost)."""
import pytest

from agentchemist.control.dispense_session import JUDGE_LOST
from agentchemist.fsm.commands import Report
from agentchemist.fsm.effects import Tell
from agentchemist.fsm.executor import Executor
from agentchemist.fsm.node_watch import NodeWatch, NodeWatchConfig
from agentchemist.fsm.supervision import SupervisionConfig
from tests.unit.test_control_dispense_session import drops, make_session, run
from tests.unit.test_fsm_executor import of, recorded, run_to_dispensing


def beat(watch, node, t, instance="a"):
    return [(e.node, e.what) for e in watch.on_heartbeat(node, instance, t)]


def checks(check, t0, t1, dt=0.5):
    """What a watcher's timer (every `dt`) sees from after t0 through t1."""
    events, t = [], t0
    while t < t1 - 1e-9:
        t = round(t + dt, 9)
        events += check(t)
    return events


def test_a_peer_heard_then_silent_is_lost_once_then_back():
    w = NodeWatch(NodeWatchConfig(stale_s=2.0, lost_abort_s=10.0))
    assert w.check(0.0) == []                        # nobody heard: nothing watched
    for k in range(5):
        assert beat(w, "/dispenser_controller", 0.5 * k) == []   # the namespace is dropped
        assert w.check(0.5 * k) == []
    assert checks(w.check, 2.0, 4.0) == []           # 2.0 s silent: not yet
    assert [(e.node, e.what) for e in w.check(4.5)] == [("dispenser_controller", "lost")]
    assert checks(w.check, 4.5, 5.5) == [] and w.lost == ["dispenser_controller"]     # once per loss
    assert beat(w, "dispenser_controller", 6.0) == [("dispenser_controller", "back")]
    assert w.lost == []


def test_a_peer_gone_too_long_aborts_once_and_a_restart_is_told_apart():
    w = NodeWatch(NodeWatchConfig(stale_s=2.0, lost_abort_s=10.0))
    beat(w, "action_policy", 0.0, "one")
    assert [e.what for e in checks(w.check, 0.0, 3.0)] == ["lost"]
    assert [e.what for e in checks(w.check, 3.0, 10.5)] == ["abort"]
    assert checks(w.check, 10.5, 20.0) == []
    assert beat(w, "action_policy", 21.0, "two") == [("action_policy", "restarted"), ("action_policy", "back")]


def test_only_the_named_peers_are_watched_and_ignored_ones_never():
    w = NodeWatch(peers=frozenset({"vision_supervisor"}))
    beat(w, "audio_supervisor", 0.0)
    beat(w, "vision_supervisor", 0.0)
    assert [e.node for e in checks(w.check, 0.0, 6.0)] == ["vision_supervisor"]
    w = NodeWatch(ignore=frozenset({"recorder"}))
    beat(w, "recorder", 0.0)
    assert checks(w.check, 0.0, 6.0) == []


def test_the_stale_limit_leaves_room_for_heartbeats():
    with pytest.raises(ValueError, match="heartbeat"):
        NodeWatchConfig(stale_s=0.5)


def alive_recorder(ex, plan, t):
    ex.on_recorder_status(plan.experiment_id, True, t, t, None)


def test_the_supervisor_holds_dispensing_while_an_agent_is_lost(ph_plan):
    ex = recorded(ph_plan)
    _goal, _effects, t = run_to_dispensing(ex)
    ex.on_heartbeat("audio_supervisor", "a", t)
    ex.on_heartbeat("summarizer", "s", t)
    alive_recorder(ex, ph_plan, t + 5.5)
    lost = ex.on_tick(t + 5.5)
    reports = of(lost, Report)
    assert [(r.kind, r.severity, r.response) for r in reports] == [("node_lost", "warn", "pause"),
                                                                    ("node_lost", "warn", "")]
    assert "audio_supervisor" in reports[0].description and "summarizer" in reports[1].description
    # only the agent the run depends on holds it
    assert [(e.symbol, e.payload["reason"]) for e in of(lost, Tell)] == [("hold", "peer audio_supervisor")]
    back = ex.on_heartbeat("audio_supervisor", "a", t + 7.0)
    assert [(e.symbol, e.payload["reason"]) for e in of(back, Tell)] == [("release", "peer audio_supervisor")]
    assert of(back, Report)[0].resolved and ex.running


def test_a_restarted_goal_holder_aborts_the_run(ph_plan):
    ex = recorded(ph_plan)
    _goal, _effects, t = run_to_dispensing(ex)
    ex.on_heartbeat("dispenser_controller", "old", t)
    alive_recorder(ex, ph_plan, t + 6.0)
    ex.on_tick(t + 6.0)
    effects = ex.on_heartbeat("dispenser_controller", "new", t + 8.0)
    halts = [r for r in of(effects, Report) if r.severity == "halt"]
    assert [r.kind for r in halts] == ["node_lost"] and "restarted" in halts[0].description
    assert not ex.running


def test_the_dispenser_holds_its_goal_while_its_judge_is_lost():
    s = make_session()
    s.start(drops(rate_mm_s=0.2), now=0.0)
    assert s.on_heartbeat("vision_supervisor", "v", 0.0) == []
    assert s.on_heartbeat("audio_supervisor", "x", 0.0) == []    # not its judge: not watched
    assert s.check_judge(4.0) == []
    lost = s.check_judge(5.5)
    assert [(a.kind, a.severity, a.response) for a in lost] == [("node_lost", "warn", "pause")]
    assert JUDGE_LOST in s.job.controller.holds
    opening = s.opening_mm
    ticks, t = run(s, 5.5, 7.0)
    assert {tick.gripper_opening_mm for tick in ticks} == {opening}   # held: the gripper does not squeeze
    back = s.on_heartbeat("vision_supervisor", "v", t)
    assert back[0].resolved and JUDGE_LOST not in s.job.controller.holds


def test_the_dispenser_cancels_a_goal_whose_judge_is_gone_too_long():
    s = make_session()
    s.start(drops(rate_mm_s=0.2), now=0.0)
    s.on_heartbeat("vision_supervisor", "v", 0.0)
    gone = [a for a in checks(s.check_judge, 0.0, 61.0) if a.severity == "halt"]
    assert [(a.kind, a.severity) for a in gone] == [("node_lost", "halt")]
    ticks, _ = run(s, 61.0, 63.0)
    assert ticks[-1].done is not None and ticks[-1].done.reason == "canceled" and not ticks[-1].done.success


def test_a_lost_peer_stops_the_states_timeout_while_it_holds_dispensing(ph_plan):
    ex = Executor(ph_plan, 0.0, SupervisionConfig(peers=NodeWatchConfig(lost_abort_s=1000.0)))
    alive_recorder(ex, ph_plan, 0.0)
    _goal, _effects, t = run_to_dispensing(ex)
    limit = ex.machine._timeouts[ex.machine.state]
    ex.on_heartbeat("audio_supervisor", "a", t)
    for k in range(1, int(limit) + 20):   # lost for longer than the state's limit, statuses from the recorder
        alive_recorder(ex, ph_plan, t + k)
        effects = ex.on_tick(t + k)
        assert not [r for r in of(effects, Report) if r.severity == "halt"], (k, effects)
    back_at = t + limit + 20
    ex.on_heartbeat("audio_supervisor", "a", back_at)
    alive_recorder(ex, ph_plan, back_at + 1.0)
    assert ex.running and not of(ex.on_tick(back_at + 1.0), Report)   # the held time is not counted
    assert ex.machine.time_in_state(back_at + 1.0) < limit


def test_a_watcher_that_was_away_does_not_blame_its_peers():
    w = NodeWatch(NodeWatchConfig(stale_s=2.0))
    beat(w, "dispenser_controller", 0.0)
    assert w.check(0.5) == []
    assert w.check(30.0) == []        # its own timer did not run for 29.5 s: the peer's beats are queued
    assert [e.what for e in checks(w.check, 30.0, 32.5)] == ["lost"]   # from then on, silence counts again


def test_a_stalled_supervisor_does_not_take_the_recorder_for_lost():
    from agentchemist.fsm.record_watch import RecordWatch, RecordWatchConfig
    w = RecordWatch("e1", 0.0, RecordWatchConfig(stale_s=3.0))
    w.on_status("e1", True, 0.0, 0.0)
    assert w.check(0.5) == ""
    assert w.check(20.0) == ""        # the supervisor was stopped for 19.5 s
    w.on_status("e1", True, 19.0, 20.1)   # the queued statuses arrive
    assert w.check(20.5) == "" and w.gaps == []
    assert "lost" in checks(lambda t: [w.check(t)], 20.5, 24.0)   # a real silence is still seen
