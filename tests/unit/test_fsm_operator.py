"""A person's pause and resume (agentchemist.fsm.operator, the console's buttons): the dispenser is held
with its goal kept, the state's timeout stops meanwhile, each is an anomaly naming who, and a pause that
changes nothing is refused with why."""
from agentchemist.fsm.commands import Report
from agentchemist.fsm.effects import Tell
from agentchemist.fsm.operator import set_paused
from tests.unit.test_fsm_executor import of, recorded, run_to_dispensing


def test_pause_holds_the_dispenser_and_resume_releases_it(ph_plan):
    ex = recorded(ph_plan)
    _goal, _effects, t = run_to_dispensing(ex)
    accepted, message, effects = set_paused(ex, True, t + 1.0, "ann")
    assert accepted and "paused" in message
    assert [(e.receiver, e.symbol, e.payload["reason"]) for e in of(effects, Tell)] == \
        [("dispenser_controller", "hold", "operator")]
    [report] = of(effects, Report)
    assert (report.kind, report.severity, report.response) == ("operator_pause", "warn", "hold")
    assert "ann" in report.description and report.fsm_state == ex.machine.state
    assert ex.watch_hold_since == t + 1.0  # the state's clock stops while paused
    assert set_paused(ex, True, t + 2.0, "bob")[:2] == (False, "already paused")
    accepted, _message, effects = set_paused(ex, False, t + 601.0, "ann")
    assert accepted
    assert [(e.symbol, e.payload["reason"]) for e in of(effects, Tell)] == [("release", "operator")]
    assert [(r.kind, r.severity, r.resolved) for r in of(effects, Report)] == [("operator_pause", "info", True)]
    assert ex.watch_hold_since is None
    # ten minutes paused are not counted against the state's timeout (unpaused, this tick times the state out)
    for k in range(1, 603):
        ex.on_recorder_status(ph_plan.experiment_id, True, t + k, t + k, None)
    assert not [r for r in of(ex.on_tick(t + 602.0), Report) if r.kind == "state_timeout"]
    assert ex.running


def test_resume_without_a_pause_and_pause_after_the_end_are_refused(ph_plan):
    ex = recorded(ph_plan)
    run_to_dispensing(ex)
    assert set_paused(ex, False, 5.0)[:2] == (False, "not paused")
    ex.abort("stopped for the test", "operator_stop", 6.0)
    accepted, message, effects = set_paused(ex, True, 7.0)
    assert (accepted, message, effects) == (False, "no experiment is running", [])
