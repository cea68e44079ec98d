"""The dispenser controller's transition table, row by row, plus goal validation and Q_stat accounting."""
import math

import pytest

from agentchemist.control.dispenser import (TRANSITIONS, DispenseGoal, DispenserConfig, DispenserController,
                                            GoalError, State)

CFG = DispenserConfig()


def make(goal=None, opening=60.0, now=0.0, config=CFG):
    return DispenserController(config, goal or DispenseGoal(target_volume_ml=5.0), start_opening_mm=opening, now=now)


def run_motion(c, t0, t1, dt=0.02, opening=None, ph=None):
    """Step with the gripper following the command exactly (an ideal gripper); a drop every 0.1 s."""
    out, t = None, t0
    measured = c.command if opening is None else opening
    while t < t1 - 1e-9:
        t = round(t + dt, 9)
        if int(t / 0.1) != int((t - dt) / 0.1):
            c.on_drop(t)
        if ph is not None:
            c.on_ph(t, ph(t) if callable(ph) else ph)
        out = c.update(t, measured)
        measured = out.command_opening_mm if opening is None else opening
        if out.done:
            break
    return out, t


def collect(c, t0, t1, **kw):
    seen = []
    t = t0
    measured = c.command
    while t < t1 - 1e-9:
        t = round(t + 0.02, 9)
        if "ph" in kw:
            c.on_ph(t, kw["ph"](t))
        if "drop_every" in kw and int(t / kw["drop_every"]) != int((t - 0.02) / kw["drop_every"]):
            c.on_drop(t)
        if kw.get("drops_by_volume") and (60.0 - measured) * CFG.k_ml_per_mm >= (c.drops + 1) * CFG.drop_volume_ml:
            c.on_drop(t)  # like the twin: a drop falls once a drop volume has been expelled
        out = c.update(t, measured)
        measured = out.command_opening_mm
        seen += out.transitions
        if out.done:
            break
    return seen, out


def test_table_covers_every_state_and_condition():
    conditions = {(s, cond) for s, cond, _, _ in TRANSITIONS}
    assert len(conditions) == len(TRANSITIONS), "ambiguous transition in the table"
    assert {s for s, *_ in TRANSITIONS} == {State.MOTION, State.WAIT, State.RESET}


def test_starts_in_motion_and_closes_at_the_commanded_rate():
    c = make(DispenseGoal(target_volume_ml=5.0, rate_mm_s=0.2))
    assert c.state == State.MOTION
    out, _ = run_motion(c, 0.0, 1.0)
    assert out.command_opening_mm == pytest.approx(60.0 - 0.2, abs=0.005)
    # Q_stat from the measured position: one drop at priming (t = 0.1 s), then k * displacement
    assert c.q_stat == pytest.approx(CFG.drop_volume_ml + 1.0 * 0.18, abs=0.005)


def test_priming_dead_travel_is_not_counted_and_has_an_allowance():
    c = make(DispenseGoal(target_volume_ml=5.0, rate_mm_s=0.5))
    t, measured = 0.0, 60.0
    while t < 2.0:  # 1 mm of squeeze with nothing falling: bulb slack
        t = round(t + 0.02, 9)
        out = c.update(t, measured)
        measured = out.command_opening_mm
    assert c.q_stat == 0.0 and c.state == State.MOTION and not out.anomalies
    assert c.dead_travel_mm == pytest.approx(1.0, abs=0.02)
    c.on_drop(t)
    assert c.primed and c.q_stat == CFG.drop_volume_ml
    c2 = make(DispenseGoal(target_volume_ml=5.0, rate_mm_s=0.5))
    t, measured, kinds = 0.0, 60.0, []
    while t < 6.0 and not kinds:
        t = round(t + 0.02, 9)
        out = c2.update(t, measured)
        measured = out.command_opening_mm
        kinds = [a.kind for a in out.anomalies]
    assert kinds == ["no_drop"]  # beyond the allowance: the pipette is not dripping


def test_qstat_uses_measured_not_commanded_position():
    c = make()
    for i in range(1, 51):
        c.update(i * 0.02, 60.0)  # the gripper never moves (commanded moves)
    assert c.q_stat == 0.0


def test_opening_does_not_count_as_dispensing():
    c = make()
    c.on_drop(0.0)
    c.update(0.02, 59.0)
    c.update(0.04, 60.0)
    assert c.q_stat == pytest.approx(CFG.drop_volume_ml + 1.0)


def test_motion_to_done_on_target_volume():
    c = make(DispenseGoal(target_volume_ml=0.5, rate_mm_s=1.0))
    seen, out = collect(c, 0.0, 60.0, drops_by_volume=True)
    assert seen[-1][1:] == ("goal_reached", State.DONE)
    assert (State.MOTION, "near_target_drop", State.WAIT) in seen
    assert out.done.success and out.done.reason == "target_volume"
    assert abs(out.done.dispensed_ml - 0.5) <= CFG.drop_volume_ml


def test_motion_to_done_directly_when_far_steps_reach_the_target():
    c = make(DispenseGoal(target_volume_ml=0.5, rate_mm_s=1.0), config=DispenserConfig(near_target_ml=0.0))
    seen, out = collect(c, 0.0, 5.0, drops_by_volume=True)
    assert seen == [(State.MOTION, "goal_reached", State.DONE)]


def test_motion_to_wait_on_high_change_rate_then_settled_back_to_motion():
    c = make(DispenseGoal(target_volume_ml=10.0, target_ph=12.0))
    ph = lambda t: 3.0 + (0.5 * (t - 0.5) if 0.5 < t < 1.5 else (0.5 if t >= 1.5 else 0.0))  # noqa: E731
    seen, _ = collect(c, 0.0, 4.0, ph=ph, drop_every=0.2)
    assert (State.MOTION, "change_rate_high", State.WAIT) in seen
    assert (State.WAIT, "settled", State.MOTION) in seen


def test_drop_landed_settle_when_asked():
    c = make(DispenseGoal(target_volume_ml=10.0, target_ph=12.0, settle_each_drop=True))
    seen, _ = collect(c, 0.0, 3.0, ph=lambda t: 3.0, drop_every=0.2)
    assert (State.MOTION, "drop_landed_settle", State.WAIT) in seen
    assert (State.WAIT, "settled", State.MOTION) in seen


def test_near_target_one_drop_at_a_time():
    c = make(DispenseGoal(target_volume_ml=10.0, target_ph=7.0))
    seen, _ = collect(c, 0.0, 2.0, ph=lambda t: 6.8, drop_every=0.2)
    assert (State.MOTION, "near_target_drop", State.WAIT) in seen


def test_wait_resume_command():
    c = make(DispenseGoal(target_volume_ml=10.0, target_ph=12.0, settle_each_drop=True))
    c.on_ph(0.01, 3.0)
    c.on_drop(0.01)
    out = c.update(0.02, 60.0)
    assert out.state == State.WAIT
    c.request_resume()
    out = c.update(0.04, 60.0)
    assert (State.WAIT, "resume_command", State.MOTION) in out.transitions


def test_the_target_ph_paces_but_never_ends_the_goal():
    """The endpoint is the supervisor's (agentchemist.fsm.endpoint): past the target the controller goes
    on until the supervisor holds it or cancels the goal."""
    c = make(DispenseGoal(target_volume_ml=0.0, target_ph=7.0, settle_each_drop=True))
    seen, out = collect(c, 0.0, 3.0, ph=lambda t: 7.05, drop_every=0.1)
    assert out.done is None and "settled" in [cond for _, cond, _ in seen]
    c.cancel()
    out = c.update(3.02, out.command_opening_mm)
    assert out.done is not None and out.done.reason == "canceled" and not out.done.success


@pytest.mark.parametrize("kind", ["no_drop", "sensor_timeout", "gripper_stall", "pipette_empty", "operation_timeout"])
def test_each_anomaly_ends_in_reset_with_its_kind(kind):
    goal = DispenseGoal(target_volume_ml=10.0, target_ph=12.0 if kind == "sensor_timeout" else None, timeout_s=1.0
                        if kind == "operation_timeout" else 0.0, rate_mm_s=1.0)
    opening = 0.5 if kind == "pipette_empty" else 60.0
    c = make(goal, opening=opening)
    anomalies, t, measured = [], 0.0, opening
    for _ in range(400):
        t = round(t + 0.02, 9)
        if kind == "sensor_timeout":
            pass  # no pH at all
        elif goal.target_ph is not None:
            c.on_ph(t, 3.0)
        # a stalled gripper squeezes nothing out: drops then would be unbidden ones (unexpected_drop)
        if kind not in ("no_drop", "gripper_stall") and int(t / 0.04) != int((t - 0.02) / 0.04):
            c.on_drop(t)
        out = c.update(t, measured)
        # drops on a clock, not from the squeeze, are also unbidden ones: reported, but no RESET
        anomalies += [a for a in out.anomalies if a.kind != "unexpected_drop"]
        if kind != "gripper_stall":
            measured = out.command_opening_mm
        if out.state == State.RESET or out.done:
            break
    assert anomalies and anomalies[0].kind == kind
    assert c.state in (State.RESET, State.DONE)
    # the response says what the RESET leads to: an empty pipette or a goal out of time ends the goal
    assert anomalies[0].response == ("abort" if kind in ("pipette_empty", "operation_timeout") else "retry")


def test_reset_retracts_then_resumes_or_gives_up():
    c = make(DispenseGoal(target_volume_ml=10.0, rate_mm_s=1.0))
    # no drops at all -> no_drop anomaly -> RESET -> retract to the safe opening
    seen, responses, t, measured = [], [], 0.0, 60.0
    for _ in range(3000):
        t = round(t + 0.02, 9)
        out = c.update(t, measured)
        seen += out.transitions
        responses += [a.response for a in out.anomalies]
        measured = out.command_opening_mm
        if out.done:
            break
    assert responses == ["retry"] * CFG.max_resets + ["abort"]  # the last RESET is the one that gives up
    assert (State.RESET, "retracted_resume", State.MOTION) in seen
    assert (State.RESET, "retracted_give_up", State.DONE) in seen
    assert out.done.reason == "anomaly" and not out.done.success
    assert c.resets == CFG.max_resets + 1


@pytest.mark.parametrize("goal, message", [
    (DispenseGoal(target_volume_ml=float("nan")), "not a number"),
    (DispenseGoal(target_volume_ml=-1.0), "negative"),
    (DispenseGoal(target_volume_ml=1.0, rate_mm_s=50.0), "exceeds"),
    (DispenseGoal(target_ph=15.0), "outside"),
    (DispenseGoal(), "neither"),
])
def test_bad_goals_are_refused_with_a_reason(goal, message):
    with pytest.raises(GoalError, match=message):
        make(goal)


def test_bad_start_position_refused():
    with pytest.raises(GoalError):
        make(opening=float("nan"))
    with pytest.raises(GoalError):
        make(opening=80.0)


def test_commands_are_quantised_to_the_gripper_resolution():
    c = make(DispenseGoal(target_volume_ml=5.0, rate_mm_s=0.0123))
    out, _ = run_motion(c, 0.0, 0.5)
    assert math.isclose(out.command_opening_mm * 1000, round(out.command_opening_mm * 1000), abs_tol=1e-6)


@pytest.mark.parametrize("rate, dt", [(0.0625, 0.05), (0.25, 0.05), (0.0625, 0.0125)])
def test_the_squeeze_runs_at_the_commanded_rate_whatever_the_resolution(rate, dt):
    """Each step is below or between multiples of the 0.001 mm resolution (0.0625 mm/s x 0.05 s = 0.003125 mm):
    the fraction carries over, so 4 s close the bulb by rate x 4 s to within one resolution step (rounding
    each step ran 0.0625 mm/s at 0.06 and 0.25 at 0.26; at 12.5 ms updates 0.0625 mm/s rounded to 0.001 mm
    per step ran at 0.08)."""
    c = make(DispenseGoal(target_volume_ml=20.0, rate_mm_s=rate), config=DispenserConfig(near_target_ml=0.0))
    out, _ = run_motion(c, 0.0, 4.0, dt=dt)
    assert c.state == State.MOTION
    assert 60.0 - out.command_opening_mm == pytest.approx(rate * 4.0, abs=CFG.resolution_mm)


def test_statistical_estimates_one_per_drop_volume_with_confidence():
    c = make(DispenseGoal(target_volume_ml=1.0, rate_mm_s=1.0))
    estimates, t, measured = [], 0.0, 60.0
    for _ in range(200):
        t = round(t + 0.02, 9)
        if int(t / 0.04) != int((t - 0.02) / 0.04):
            c.on_drop(t)
        out = c.update(t, measured)
        measured = out.command_opening_mm
        estimates += out.estimates
        if out.done:
            break
    assert len(estimates) >= 15  # 1 mL in steps of one drop volume
    assert all(0.0 < e.confidence <= 1.0 for e in estimates)
    assert all(b.value_ml > a.value_ml for a, b in zip(estimates, estimates[1:]))


def test_resume_on_command_lets_the_supervisor_pace_each_drop():
    goal = DispenseGoal(target_volume_ml=10.0, target_ph=12.0, settle_each_drop=True, resume_on_command=True)
    c = make(goal)
    t = 0.0
    c.on_ph(0.01, 3.0)
    c.on_drop(0.02)
    out = c.update(0.04, 60.0)
    assert out.state == State.WAIT
    for i in range(80):  # a settled pH for 4 s (inside the grace): still waiting for the supervisor
        t = 0.05 + 0.05 * i
        c.on_ph(t, 3.0)
        out = c.update(t, 60.0)
    assert out.state == State.WAIT
    c.request_resume()
    out = c.update(t + 0.05, 60.0)
    assert (State.WAIT, "resume_command", State.MOTION) in out.transitions


def test_without_the_supervisors_resume_it_goes_on_after_the_grace():
    goal = DispenseGoal(target_volume_ml=10.0, target_ph=12.0, settle_each_drop=True, resume_on_command=True)
    c = make(goal)
    c.on_ph(0.01, 3.0)
    c.on_drop(0.02)
    c.update(0.04, 60.0)
    seen, t = [], 0.04
    while t < 12.0 and not seen:
        t = round(t + 0.05, 9)
        c.on_ph(t, 3.0)
        seen = [tr for tr in c.update(t, 60.0).transitions if tr[2] == State.MOTION]
    assert seen == [(State.WAIT, "settled", State.MOTION)]
    settle_done = CFG.settle_delay_s + CFG.settle.window_s
    assert settle_done + CFG.resume_grace_s <= t <= settle_done + CFG.resume_grace_s + 1.0


def test_a_stale_resume_does_not_cut_the_next_wait_short():
    goal = DispenseGoal(target_volume_ml=10.0, target_ph=12.0, settle_each_drop=True, resume_on_command=True)
    c = make(goal)
    c.on_ph(0.01, 3.0)
    c.request_resume()          # meant for an earlier drop
    c.on_drop(0.02)
    out = c.update(0.04, 60.0)
    out = c.update(0.09, 60.0)
    assert out.state == State.WAIT
