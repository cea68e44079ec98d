"""The dispenser's bookkeeping between goals (agentchemist.control.dispense_session): one job at a time,
the supervisor's standing holds, the experiment's cumulative titrant volume, what a control tick sends,
the action result; and the solid pour's tilt kinematics (policy.primitives.pour_kinematics)."""
import math

import pytest

from agentchemist.control.calibration import Calibration
from agentchemist.contracts.dispense import GoalFields
from agentchemist.control.dispense_session import (CALIBRATION, DROPS, SOLID_POUR, DispenseSession, GoalOutcome,
                                                   Job, Refusal, refused, state_change)
from agentchemist.control.dispenser import DispenserConfig
from agentchemist.control.solid_pour import SolidPourConfig
from agentchemist.perception.ph_stability import ReadingError
from agentchemist.policy.primitives import (POUR_POSE, PrimitiveError, bottle_tilt_deg, bottle_tilt_joints,
                                            load_poses, pour_kinematics)

CFG = DispenserConfig()
POSES = load_poses()


def make_session(opening_mm=60.0, **kw) -> DispenseSession:
    s = DispenseSession(CFG, SolidPourConfig(), **kw)
    if opening_mm is not None:
        s.on_joints(["right_gripper"], [opening_mm / 1000.0])
    return s


def drops(experiment="e1", subtask="s1", **fields) -> GoalFields:
    return GoalFields(experiment_id=experiment, subtask_id=subtask, **{"target_volume_ml": 5.0, **fields})


def pour(experiment="e1", subtask="w1", **fields) -> GoalFields:
    return GoalFields(experiment_id=experiment, subtask_id=subtask, mode=SOLID_POUR,
                       **{"target_mass_g": 2.0, **fields})


def run(s, t0, t1, dt=0.02, cancel_at=None, ph=None):
    """Step the session with an ideal gripper (it follows the command) whose pipette drips like the twin's (a
    drop, heard, once a drop volume has been squeezed out) and, with `ph`, a steady pH reading every tick."""
    ticks, t = [], t0
    start, heard = s.opening_mm, 0
    while t < t1 - 1e-9:
        t = round(t + dt, 9)
        if ph is not None:
            s.on_ph(t, ph, 0.005)
        if (start - s.opening_mm) * CFG.k_ml_per_mm >= (heard + 1) * CFG.drop_volume_ml:
            heard += 1
            s.on_droplet(t, "expected")
        tick = s.step(t, cancel=cancel_at is not None and t >= cancel_at)
        if tick is None:
            continue
        ticks.append(tick)
        s.on_joints(["right_gripper"], [tick.gripper_opening_mm / 1000.0])
        if tick.done is not None:
            break
    return ticks, t


# ------------------------------------------------------------------------------ one job at a time
def test_one_job_has_the_gripper_at_a_time():
    s = make_session()
    assert s.busy() == "" and s.ids() == ("", "")
    job = s.start(drops(), now=0.0)
    assert s.job is job and job.mode == DROPS and s.ids() == ("e1", "s1")
    for start, why in ((lambda: s.start(drops("e2"), now=0.0), "a dispensing goal is running"),
                       (lambda: s.start(pour(), now=0.0), "a dispensing goal is running"),
                       (lambda: s.start_calibration(samples=0, liquid="water", pipette_id="p1", now=0.0),
                        "a dispensing goal is running")):
        with pytest.raises(Refusal) as refusal:
            start()
        # the refused goal never ran: its anomaly names no experiment
        assert str(refusal.value) == why and (refusal.value.experiment_id, refusal.value.subtask_id) == ("", "")
    assert s.job is job
    assert s.finish() is job and s.busy() == "" and s.ids() == ("", "")
    poured = s.start(pour(), now=1.0)
    assert poured.mode == SOLID_POUR and s.busy() == "a solid pour is running"
    s.finish()
    cal = s.start_calibration(samples=0, liquid="water", pipette_id="p1", now=2.0)
    assert cal.mode == CALIBRATION and s.ids() == ("", "calibration")
    assert s.busy() == "a pipette calibration is running"
    with pytest.raises(Refusal, match="a pipette calibration is running"):
        s.start(pour(), now=2.0)


def test_refusals_name_the_goal_when_it_could_have_run():
    s = make_session()
    cases = [(GoalFields(experiment_id="e1", subtask_id="s1", mode="spray"), "unknown dispensing mode 'spray'", True),
             (drops(target_volume_ml=float("nan")), "", True),                    # the controller's GoalError
             (pour(side="up"), "side 'up' is not left or right", True),
             (pour(side="right"), "no pose 'pour_over_beaker' for the right arm", True),
             (pour(target_mass_g=-1.0), "", True)]
    for request, text, named in cases:
        with pytest.raises(Refusal) as refusal:
            s.start(request, now=0.0)
        assert text in str(refusal.value)
        assert (refusal.value.experiment_id, refusal.value.subtask_id) == (request.experiment_id, request.subtask_id)
        assert s.job is None
    blind = make_session(opening_mm=None)
    with pytest.raises(Refusal, match="no joint state for right_gripper yet") as refusal:
        blind.start(drops(), now=0.0)
    assert refusal.value.experiment_id == ""
    with pytest.raises(Refusal, match="no joint state for right_gripper yet"):
        blind.start_calibration(samples=0, liquid="water", pipette_id="p1", now=0.0)
    with pytest.raises(Refusal):
        s.start_calibration(samples=0, liquid=" ", pipette_id="p1", now=0.0)   # CalibrationError
    assert s.job is None


def test_refused_results_leave_a_pours_masses_unknown():
    assert refused("drops", "why") == GoalOutcome(success=False, stop_reason="rejected", message="why")
    pour_result = refused(SOLID_POUR, "why")
    assert pour_result.stop_reason == "rejected" and math.isnan(pour_result.dispensed_g)
    assert math.isnan(pour_result.final_mass_g) and math.isnan(pour_result.final_ph)


# ------------------------------------------------------------------------------ holds
def test_holds_outlive_a_goal_and_apply_to_the_next_one_of_the_experiment():
    s = make_session()
    assert s.set_hold("e1", "pipette missing", True) == ["pipette missing"]
    job = s.start(drops(), now=0.0)
    assert job.controller.holds == {"pipette missing"}          # sent while a hold is in force: starts held
    assert s.set_hold("e1", "microphone deaf", True) == ["microphone deaf", "pipette missing"]
    assert job.controller.holds == {"pipette missing", "microphone deaf"}
    assert s.set_hold("e1", "pipette missing", False) == ["microphone deaf"]
    assert job.controller.holds == {"microphone deaf"}
    s.finish()
    assert s.start(pour(), now=1.0).controller.holds == {"microphone deaf"}   # the next goal, a pour too
    s.finish()
    assert s.start(drops("e2"), now=2.0).controller.holds == set()           # a new experiment starts free
    s.finish()
    s.set_hold("e2", "pipette missing", True)
    s.start_calibration(samples=0, liquid="water", pipette_id="p1", now=3.0)
    # a calibration belongs to no experiment and is never held (a CalibrationProcedure has no hold at all)
    assert s.set_hold("e2", "microphone deaf", True) == ["microphone deaf", "pipette missing"]
    s.finish()
    assert s.start(drops("e2"), now=4.0).controller.holds == {"pipette missing", "microphone deaf"}


def test_a_held_goal_waits_and_goes_on_when_released():
    s = make_session()
    s.set_hold("e1", "pipette missing", True)
    s.start(drops(rate_mm_s=0.2), now=0.0)
    ticks, t = run(s, 0.0, 1.0)
    assert {tick.gripper_opening_mm for tick in ticks} == {60.0}
    s.set_hold("e1", "pipette missing", False)
    ticks, _ = run(s, t, t + 1.0)
    assert ticks[-1].gripper_opening_mm < 60.0 - 0.1


# ------------------------------------------------------------------------------ the experiment's volume
def test_titrant_volume_is_cumulative_over_the_goals_of_an_experiment():
    s = make_session()
    s.start(drops(rate_mm_s=0.2), now=0.0)
    ticks, t = run(s, 0.0, 2.0, cancel_at=1.5)
    first = [e.value_ml for tick in ticks for e in tick.estimates]
    assert first and first == sorted(first) and ticks[-1].done.reason == "canceled"
    s.finish()
    total = first[-1]
    job = s.start(drops("e1", "s2", rate_mm_s=0.2), now=t)
    assert job.volume_offset_ml == total
    ticks, t = run(s, t, t + 1.0)
    second = [e.value_ml for tick in ticks for e in tick.estimates]
    assert second and min(second) >= total and second[-1] > total
    assert {(tick.experiment_id, tick.subtask_id) for tick in ticks} == {("e1", "s2")}
    assert second[-1] - total <= job.controller.q_stat + 1e-9  # the goal's own count, on top of the first's
    s.finish()
    assert s.start(drops("e2"), now=t).volume_offset_ml == 0.0


# ------------------------------------------------------------------------------ ticks, states, results
def test_a_drops_goal_publishes_its_start_transitions_and_end():
    s = make_session(feedback_period_s=0.5)
    s.on_ph(0.0, 3.0, float("nan"))
    job = s.start(drops(rate_mm_s=0.2, target_volume_ml=0.3), now=0.0)
    start = s.start_state(job)
    assert (start.mode, start.state, start.previous_state, start.reason, start.active) == (DROPS, "MOTION", "IDLE",
                                                                                          "goal", True)
    assert start.drop_interval_s == pytest.approx(CFG.drop_volume_ml / (CFG.k_ml_per_mm * 0.2))
    ticks, _ = run(s, 0.0, 60.0, ph=3.0)
    done = ticks[-1].done
    assert done is not None and done.reason == "target_volume"
    states = [st for tick in ticks for st in tick.states]
    assert states and all(st.state != "DONE" for st in states)       # the end goes out with the result
    assert all(st.drop_interval_s == 0.0 for st in states if st.state != "MOTION")
    feedback = [tick.feedback for tick in ticks if tick.feedback is not None]
    assert 1 < len(feedback) < len(ticks) and feedback[-1].ph == 3.0 and feedback[-1].gripper_position_mm > 0
    s.finish()
    outcome = s.outcome(job)
    assert outcome.success and outcome.stop_reason == "target_volume" and outcome.final_ph == done.final_ph
    assert outcome.dispensed_ml == job.controller.q_stat and outcome.drops == job.controller.drops
    end = s.end_state(job, outcome.stop_reason)
    assert (end.state, end.reason, end.active, end.drops) == ("IDLE", "target_volume", False, job.controller.drops)


def test_state_changes_carry_the_drop_interval_only_while_squeezing_and_mark_priming():
    job = Job(DROPS, "e1", "s1", controller=None)
    assert state_change(job, "WAIT", "MOTION", "hold_command", interval=0.5).drop_interval_s == 0.0
    after_reset = state_change(job, "MOTION", "RESET", "recovered", interval=0.5)
    assert after_reset.drop_interval_s == 0.5 and after_reset.priming
    assert not state_change(job, "MOTION", "WAIT", "settled", interval=0.5).priming


def test_an_unfinished_goal_ends_aborted():
    s = make_session()
    job = s.start(drops(), now=0.0)
    s.finish()
    outcome = s.outcome(job)
    assert (outcome.success, outcome.stop_reason, outcome.message) == (False, "aborted", "node shut down")
    assert math.isnan(outcome.final_ph)


def test_readings_go_to_the_running_job():
    s = make_session()
    s.on_ph(0.0, 7.0, 0.01)
    assert s.last_ph == 7.0                  # kept without a goal (a goal without a direction uses it)
    s.start(drops(target_ph=5.0, use_target_ph=True), now=0.0)
    assert s.job.controller.goal.ph_direction == -1
    s.on_droplet(0.1, "unexpected")          # a drops goal counts the expected droplets only
    assert s.job.controller.drops == 0
    s.on_mass(0.1, 1.0, self_check_ok=False)  # no balance reading matters to a drops goal
    s.finish()
    s.start(pour(), now=1.0)
    with pytest.raises(ReadingError, match="self-check"):
        s.on_mass(1.1, 1.0, self_check_ok=False)
    s.on_mass(1.2, 1.0)
    assert s.job.controller.latest_mass == 1.0


def test_a_pour_commands_the_arm_and_reports_its_phase_once():
    s = make_session(approach_time_s=2.0)
    job = s.start(pour(), now=0.0)
    assert s.start_state(job) is None       # its first phase comes with its first tick
    first = s.step(0.05)
    assert first.arm[0] == "left" and first.arm[2] == 2.0            # far from the pour pose: time to get there
    assert first.arm[1] == pytest.approx(bottle_tilt_joints(POSES, 0.0))
    assert [(st.state, st.previous_state) for st in first.states] == [("APPROACH", "")]
    assert first.feedback is not None and math.isnan(first.feedback.ph)
    s.arm_positions["left"] = POSES.pose("left", POUR_POSE)
    second = s.step(0.1)
    assert second.arm[2] == SolidPourConfig().control_period_s       # at the pose: a step per control period
    assert second.states == []
    s.step(0.15, cancel=True)
    end = s.end_state(job, "canceled")
    assert (end.mode, end.state, end.previous_state, end.active) == (SOLID_POUR, "IDLE", job.phase, False)


def test_a_calibration_is_stepped_and_concluded(tmp_path):
    s = make_session()
    job = s.start_calibration(samples=3, liquid="water", pipette_id="p1", now=0.0)
    start = s.start_state(job)
    assert (start.mode, start.state, start.subtask_id) == ("calibration", "MOTION", "calibration")
    assert start.drop_interval_s == pytest.approx(
        CFG.drop_volume_ml / (CFG.k_ml_per_mm * job.controller.config.rate_mm_s) + job.controller.config.pause_s)
    tick = s.step(0.05)
    assert tick.gripper_opening_mm is not None and tick.done is None and tick.feedback is None

    class Step:
        calibration, error = None, "too few samples"
    assert s.conclude_calibration(job, Step(), save=False).fit_failed
    cal = Calibration(k_ml_per_mm=0.9, drop_volume_ml=0.05, residual_ml=0.001, drop_volume_sd_ml=0.001, samples=3,
                      rate_mm_s=0.2, liquid="water", density_g_ml=1.0, pipette_id="p1", created="now")
    Step.calibration = cal
    outcome = s.conclude_calibration(job, Step(), save=True, path=str(tmp_path / "pipette.yaml"))
    assert outcome.success and outcome.saved_path == str(tmp_path / "pipette.yaml")
    assert "saved to" in outcome.message and set(outcome.response_fields()) == {
        "success", "message", "k_ml_per_mm", "drop_volume_ml", "residual_ml", "saved_path"}
    assert (s.config.k_ml_per_mm, s.config.drop_volume_ml) == (0.9, 0.05)


# ------------------------------------------------------------------------------ pour kinematics
def test_pour_kinematics_of_the_bottle_arm_are_the_bottle_tilt_helpers():
    joints, tilt = pour_kinematics("left", POSES)
    assert joints(30.0) == bottle_tilt_joints(POSES, 30.0)
    at = bottle_tilt_joints(POSES, 30.0)
    assert tilt(at) == pytest.approx(bottle_tilt_deg(POSES, at)) == pytest.approx(30.0)
    with pytest.raises(PrimitiveError):
        joints(400.0)                        # beyond the wrist's limit
    with pytest.raises(PrimitiveError, match="no pose 'pour_over_beaker' for the right arm"):
        pour_kinematics("right", POSES)


def test_pour_kinematics_of_another_arm_turn_its_wrist_at_its_pour_pose():
    pose = (0.1, 0.2, 0.3, 0.0, 0.5, -0.6)
    poses = type(POSES)(arms={"right": {POUR_POSE: pose}}, gripper_mm={}, tolerance_rad=0.03)
    joints, tilt = pour_kinematics("right", poses)
    target = joints(20.0)
    assert target[:5] == pose[:5] and target[5] == pytest.approx(pose[5] + math.radians(20.0))
    assert tilt(target) == pytest.approx(20.0)
    assert tilt((0.5, *target[1:])) is None  # joints 1..5 away from the pose: upright
    assert tilt(pose) == 0.0


def test_a_goal_names_the_inputs_that_have_not_reached_the_node_yet():
    blind = make_session(opening_mm=None)
    ph_goal = drops(use_target_ph=True, target_ph=7.0)
    assert blind.missing_inputs(ph_goal, now=10.0) == ["the right gripper's position", "a pH reading"]
    assert blind.missing_inputs(drops(), now=10.0) == ["the right gripper's position"]  # a volume goal: no pH
    assert blind.missing_inputs(pour(), now=10.0) == []
    s = make_session()
    s.on_ph(9.0, 3.0, 0.01)
    assert s.missing_inputs(ph_goal, now=10.0) == []
    # a reading older than the sensor timeout is not an input: the meter may have stopped
    late = 9.0 + s.config.sensor_timeout_s + 0.1
    assert s.missing_inputs(ph_goal, now=late) == ["a pH reading"]
    assert s.missing_inputs(drops(settle_each_drop=True), now=late) == ["a pH reading"]
