"""The vision supervisor's ROS-free decisions: which endpoint the plan asks for, the colour endpoint
(hold on a candidate, endpoint after the hold, verification), the pH endpoint alongside it, and bad
evidence (NaN / out-of-range readings, a stale camera, weak frames) never advancing the machine."""
import math

import pytest

from agentchemist.fsm.commands import Abort, Apply, Report, StopDispensing, name
from agentchemist.fsm.supervision import Supervision, SupervisionConfig
from agentchemist.perception.colour_change import HueReadingError
from agentchemist.perception.ph_stability import ReadingError

MAGENTA, BLUE = 329.0, 228.0


def _to_titrating(sup, t=0.0):
    for sym in ("grasp_ok", "draw_ok", "act", "titrate"):
        t += 1.0
        assert sup.apply(sym, t) is not None, sup.rejected
    assert sup.machine.state == "titrating"
    return t


def _frames(sup, start, hue, seconds, dt=0.5, confidence=1.0):
    """Feed frames of one hue; return (commands, time after the last frame)."""
    out, t = [], start
    n = int(round(seconds / dt))
    for i in range(n):
        t = start + i * dt
        out += [(t, c) for c in sup.on_colour(t, hue, confidence)]
    return out, start + n * dt


def _kinds(cmds):
    return [(name(c), c.symbol) if isinstance(c, Apply) else name(c) for _, c in cmds]


def _run_commands(sup, cmds):
    for t, c in cmds:
        if isinstance(c, Apply):
            sup.apply(c.symbol, t, "vision_supervisor")


# ---------------------------------------------------------------- which endpoint
def test_the_plan_decides_the_endpoint_channel(ca_plan, ph_plan):
    ca = Supervision(ca_plan, 0.0)
    assert ca.colour_endpoint and ca.track_colour and ca.target_ph is None
    assert ca.endpoint_hold_s == 5.0 and ca.verify_hold_s == 10.0
    ph = Supervision(ph_plan, 0.0)
    assert not ph.colour_endpoint and ph.target_ph == 10.0
    # the pH plan ignores colour for its decisions
    assert ph.on_colour(1.0, BLUE) == []


def test_a_colour_plan_without_colours_is_refused(ca_plan):
    vision = ca_plan.module_instantiation.vision.model_copy(update={"colour_to": None})
    mods = ca_plan.module_instantiation.model_copy(update={"vision": vision})
    with pytest.raises(ValueError, match="colour_from / colour_to"):
        Supervision(ca_plan.model_copy(update={"module_instantiation": mods}), 0.0)


# ---------------------------------------------------------------- colour endpoint
def test_colour_run_holds_on_the_change_then_endpoint_and_verification(ca_plan):
    sup = Supervision(ca_plan, 0.0)
    cmds, t = _frames(sup, 0.0, MAGENTA, 2.0)  # the start colour is seen before anything moves
    assert cmds == [] and sup.colour_change.armed
    t = _to_titrating(sup, t)
    # a drop -> waiting_mix; the colour settles over the 2 s window -> colour_stable
    assert sup.apply("drop", t + 0.5).to_state == "waiting_mix"
    cmds, t = _frames(sup, t + 0.6, MAGENTA, 3.0)
    assert _kinds(cmds).count(("apply", "colour_stable")) >= 1
    first = next(tt for tt, c in cmds if c.symbol == "colour_stable")
    assert first - (t - 3.0) >= 2.0 - 1e-9  # not before the settle window is covered
    sup.apply("colour_stable", first)
    assert sup.machine.state == "titrating"
    # the change: the first blue frame holds the dispenser, the endpoint waits for the 5 s hold
    assert sup.apply("drop", t).to_state == "waiting_mix"
    cmds, t = _frames(sup, t + 0.2, BLUE, 6.0)
    kinds = _kinds(cmds)
    assert kinds[0] == "hold_dispensing" and cmds[0][0] == pytest.approx(t - 6.0)
    assert ("apply", "colour_stable") not in kinds  # no settling into titrating during the change
    i = kinds.index(("apply", "endpoint"))
    assert kinds[i - 1] == "stop_dispensing"
    assert cmds[i][0] - cmds[0][0] == pytest.approx(5.0)
    assert kinds.count("hold_dispensing") == 1
    _run_commands(sup, cmds)
    assert sup.machine.state == "done"
    # verification: blue for verify_hold_s (10 s) after the endpoint
    cmds, t = _frames(sup, t, BLUE, 12.0)
    verified = [tt for tt, c in cmds if c.symbol == "verified"]
    assert verified and verified[0] - sup.verify_since == pytest.approx(10.0, abs=0.5)
    sup.apply("verified", verified[0])
    assert sup.machine.state == "accepted" and sup.machine.accepting


def test_a_candidate_that_reverts_releases_the_dispenser(ca_plan):
    sup = Supervision(ca_plan, 0.0)
    _frames(sup, 0.0, MAGENTA, 2.0)
    t = _to_titrating(sup, 2.0)
    cmds, t = _frames(sup, t, BLUE, 2.0)  # a local flash of blue where the drop fell
    assert _kinds(cmds) == ["hold_dispensing"]
    cmds, t = _frames(sup, t, MAGENTA, 10.0)
    assert _kinds(cmds)[0] == "resume_dispensing" and ("apply", "endpoint") not in _kinds(cmds)
    assert sup.machine.state == "titrating" and not sup.holds


def test_verification_fails_when_the_colour_comes_back(ca_plan):
    sup = Supervision(ca_plan, 0.0)
    _frames(sup, 0.0, MAGENTA, 2.0)
    t = _to_titrating(sup, 2.0)
    cmds, t = _frames(sup, t, BLUE, 6.0)
    _run_commands(sup, cmds)
    assert sup.machine.state == "done"
    cmds, t = _frames(sup, t, MAGENTA, 1.0)
    assert cmds and isinstance(cmds[0][1], Abort)
    assert "not verified" in cmds[0][1].reason
    assert sup.machine.state == "done"  # the node aborts; the supervisor never applies verified


def test_end_colour_before_the_start_colour_is_an_anomaly_not_an_endpoint(ca_plan):
    sup = Supervision(ca_plan, 0.0)
    t = _to_titrating(sup)
    cmds, t = _frames(sup, t, BLUE, 20.0)
    kinds = _kinds(cmds)
    assert kinds == ["report", "hold_dispensing"] and cmds[0][1].kind == "unexpected_colour"
    assert "magenta" in cmds[0][1].description
    assert sup.machine.state == "titrating"
    # it was a passing reflection: the start colour shows, the dispenser goes on, the change counts again
    cmds, t = _frames(sup, t, MAGENTA, 2.0)
    assert _kinds(cmds) == ["resume_dispensing"]
    cmds, t = _frames(sup, t, BLUE, 6.0)
    assert _kinds(cmds)[0] == "hold_dispensing" and ("apply", "endpoint") in _kinds(cmds)


def test_end_colour_before_titration_is_an_anomaly_and_needs_the_start_colour_again(ca_plan):
    sup = Supervision(ca_plan, 0.0)
    cmds, t = _frames(sup, 0.0, MAGENTA, 1.0)
    cmds, t = _frames(sup, t, BLUE, 1.0)
    assert _kinds(cmds) == ["report"] and cmds[0][1].kind == "unexpected_colour"
    assert not sup.colour_change.armed and sup.machine.state == "initial"


# ---------------------------------------------------------------- bad evidence never advances
def test_stale_camera_is_reported_once_holds_and_does_not_confirm(ca_plan):
    sup = Supervision(ca_plan, 0.0, SupervisionConfig(camera_stale_s=5.0, colour_max_gap_s=2.0))
    _frames(sup, 0.0, MAGENTA, 2.0)
    t = _to_titrating(sup, 2.0)
    cmds, t = _frames(sup, t, MAGENTA, 2.0)
    assert sup.check_camera(t + 4.0) == []
    cmds = sup.check_camera(t + 6.0)
    assert [name(c) for c in cmds] == ["report", "hold_dispensing"]
    assert cmds[0].kind == "camera_stale" and "no usable front camera image" in cmds[0].description
    assert sup.check_camera(t + 7.0) == []  # reported once per outage
    # the camera returns already blue: a candidate again (held), confirmation needs 5 s of frames
    cmds, t2 = _frames(sup, t + 8.0, BLUE, 1.0)
    kinds = _kinds(cmds)
    assert "report" in kinds and ("apply", "endpoint") not in kinds
    recovered = [c for _, c in cmds if isinstance(c, Report)]
    assert recovered[0].kind == "camera_stale" and recovered[0].severity == "info"  # pairs with the warn
    assert sup.holds == {"colour_candidate"}
    # frames stop again during the hold: a long gap restarts the confirmation
    cmds, t3 = _frames(sup, t2 + 4.0, BLUE, 4.5)
    assert ("apply", "endpoint") not in _kinds(cmds)
    cmds, _ = _frames(sup, t3, BLUE, 1.0)
    assert ("apply", "endpoint") in _kinds(cmds)


def test_weak_frames_are_not_evidence(ca_plan):
    sup = Supervision(ca_plan, 0.0)
    _frames(sup, 0.0, MAGENTA, 2.0)
    t = _to_titrating(sup, 2.0)
    cmds, t = _frames(sup, t, BLUE, 30.0, confidence=0.1)
    assert cmds == [] and sup.machine.state == "titrating"
    # ... and they do not keep the camera fresh either
    assert [name(c) for c in sup.check_camera(t)][0] == "report"


@pytest.mark.parametrize("hue", [float("nan"), float("inf"), -5.0, 360.0, 725.0])
def test_bad_hue_raises_and_changes_nothing(ca_plan, hue):
    sup = Supervision(ca_plan, 0.0)
    _frames(sup, 0.0, MAGENTA, 2.0)
    t = _to_titrating(sup, 2.0)
    history = list(sup.machine.history)
    with pytest.raises(HueReadingError):
        sup.on_colour(t, hue)
    with pytest.raises(HueReadingError):
        sup.on_colour(t, BLUE, confidence=1.5)
    assert sup.machine.history == history and sup.last_hue == MAGENTA


def test_hue_time_going_backwards_raises(ca_plan):
    sup = Supervision(ca_plan, 0.0)
    sup.on_colour(5.0, MAGENTA)
    with pytest.raises(HueReadingError, match="older"):
        sup.on_colour(4.0, BLUE)


@pytest.mark.parametrize("ph", [float("nan"), 16.0, -3.0])
def test_bad_ph_raises_and_never_reaches_the_endpoint(ph_plan, ph):
    sup = Supervision(ph_plan, 0.0)
    t = _to_titrating(sup)
    sup.start_dispensing(t, 2.0)
    history = list(sup.machine.history)
    for i in range(40):  # 8 s of nonsense readings
        with pytest.raises(ReadingError):
            sup.on_ph(t + 0.2 * i, ph)
    assert sup.machine.history == history and sup.last_ph is None


@pytest.mark.parametrize("value", [float("nan"), 250.0, -40.0])
def test_bad_temperature_raises(ph_plan, value):
    sup = Supervision(ph_plan, 0.0)
    sup.on_temperature(24.8)
    with pytest.raises(ReadingError, match="temperature"):
        sup.on_temperature(value)
    assert sup.last_temperature == 24.8 and sup.start_temperature == 24.8


# ---------------------------------------------------------------- pH endpoint alongside
def test_ph_endpoint_needs_target_and_hold(ph_plan):
    sup = Supervision(ph_plan, 0.0)
    t = _to_titrating(sup)
    sup.start_dispensing(t, 2.0)
    out = []
    for i in range(60):  # 12 s at pH 10.02, stable
        stamp = t + 0.2 * i
        out += [(stamp, c) for c in sup.on_ph(stamp, 10.02)]
    kinds = _kinds(out)
    assert ("apply", "endpoint") in kinds and kinds[kinds.index(("apply", "endpoint")) - 1] == "stop_dispensing"
    when = next(s for s, c in out if isinstance(c, Apply) and c.symbol == "endpoint")
    assert when - t > 5.0
    # the one judge holds the dispenser from the first settled reading at the target until it decides
    paused = next(s for s, c in out if name(c) == "pause_dispensing")
    assert [c.reason for _, c in out if name(c) == "pause_dispensing"] == ["endpoint"] and paused < when - 5.0


def test_ph_endpoint_hold_is_released_when_the_ph_falls_back_short(ph_plan):
    """A settled level at the target pauses the dispenser; the level falling back under the target
    (tolerance 0.01) before the hold is over releases it, so that it squeezes the next drop: nobody
    else judges the target, and nothing waits for a confirmation that cannot come."""
    sup = Supervision(ph_plan, 0.0)
    t = _to_titrating(sup)
    assert sup.start_dispensing(t, 2.0) == [] and sup.ph_direction == 1
    out = []
    for i in range(15):  # 3 s settled at the target: the hold starts
        out += sup.on_ph(t + 0.2 * i, 10.0)
    assert [name(c) for c in out] == ["pause_dispensing"] and out[0].reason == "endpoint"
    back = []
    for i in range(15, 40):  # then it settles 0.05 below: released, no endpoint
        back += sup.on_ph(t + 0.2 * i, 9.95)
    assert [name(c) for c in back] == ["unpause_dispensing"] and sup.pauses == set()
    # the direction was decided once: a later start keeps it although the pH is now past the target
    sup.on_ph(t + 9.0, 10.5)
    sup.start_dispensing(t + 9.1, 10.5)
    assert sup.ph_direction == 1
    # colour frames never stand in for the pH channel
    sup2 = Supervision(ph_plan, 0.0)
    t = _to_titrating(sup2)
    cmds, _ = _frames(sup2, t, BLUE, 20.0)
    assert cmds == [] and sup2.machine.state == "titrating" and sup2.check_camera(t + 100.0) == []


def test_verification_subtask_is_marked_done_when_verified(ca_plan):
    sup = Supervision(ca_plan, 0.0)
    _frames(sup, 0.0, MAGENTA, 2.0)
    t = 0.0
    for sym in ("grasp_ok", "draw_ok", "act"):
        (task,) = sup.dispatchable()
        t += 1.0
        sup.apply(sym, t)
        sup.subtask_finished(task.id, True)
    (titrate,) = sup.dispatchable()
    assert titrate.receiver == "dispenser_controller"
    sup.apply("titrate", t + 1.0)
    cmds, t = _frames(sup, t + 2.0, BLUE, 6.0)
    _run_commands(sup, cmds)
    sup.subtask_finished(titrate.id, True)
    (verify,) = sup.dispatchable()
    assert verify.receiver == "vision_supervisor"
    cmds, t = _frames(sup, t, BLUE, 12.0)
    _run_commands(sup, cmds)
    assert sup.machine.accepting and verify.id in sup.scheduler.done
    assert math.isfinite(sup.last_hue)
