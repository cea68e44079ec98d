"""The session hosts one job object per mode; a request's unset settings are the dispenser's configuration,
resolved once when its job is made."""
import dataclasses

import pytest

from agentchemist.contracts.dispense import DropsRequest, PourRequest
from agentchemist.control.dispense_session import DispenseSession, Refusal
from agentchemist.control.dispenser import DispenserConfig
from agentchemist.control.jobs import CalibrationJob, DropsJob, PourJob
from agentchemist.control.solid_pour import SolidPourConfig

CFG = DispenserConfig()
POUR = SolidPourConfig()


def session() -> DispenseSession:
    s = DispenseSession(CFG, POUR, pour_side="left")
    s.on_joints(["right_gripper"], [0.060])
    return s


def test_a_drops_request_takes_the_configured_defaults_for_what_it_leaves_unset():
    job = session().start(DropsRequest("e1", "s1", target_ph=7.0, ph_direction=1), now=0.0)
    assert isinstance(job, DropsJob)
    c = job.controller
    assert (c.rate, c.timeout, c.pacing.change_threshold) == (CFG.rate_mm_s, CFG.operation_timeout_s,
                                                               CFG.change_rate_threshold)
    assert c.pacing.settle.config == CFG.settle      # the configured window, its longest window unchanged
    assert c.goal.target_volume_ml == 0.0 and c.goal.target_ph == 7.0


def test_a_drops_requests_own_settings_are_kept():
    job = session().start(DropsRequest("e1", "s1", target_volume_ml=2.0, rate_mm_s=0.1, stable_window_s=2.5,
                                       change_rate_threshold_ph_s=0.08, timeout_s=60.0), now=0.0)
    c = job.controller
    assert (c.rate, c.timeout, c.pacing.change_threshold) == (0.1, 60.0, 0.08)
    assert c.pacing.settle.config.window_s == 2.5
    assert c.goal.ph_direction == 1   # no pH target, no reading: rising


def test_the_direction_comes_from_the_latest_reading_when_the_request_leaves_it_open():
    s = session()
    s.on_ph(0.0, 11.5, 0.005)
    job = s.start(DropsRequest("e1", "s1", target_ph=7.0), now=0.1)
    assert job.controller.goal.ph_direction == -1


def test_a_pour_request_takes_the_configured_side_tolerance_and_rate():
    job = session().start(PourRequest("e1", "w1", target_mass_g=2.0), now=0.0)
    assert isinstance(job, PourJob) and job.arm[0] == "left"
    c = job.controller
    assert (c.tolerance, c.rate, c.window_s, c.timeout_s) == (POUR.default_tolerance_g, POUR.default_tilt_rate_deg_s,
                                                              POUR.default_stable_window_s, POUR.operation_timeout_s)
    own = session().start(PourRequest("e1", "w1", target_mass_g=2.0, mass_tolerance_g=0.05, tilt_rate_deg_s=3.0),
                          now=0.0)
    assert (own.controller.tolerance, own.controller.rate) == (0.05, 3.0)


def test_what_only_the_configuration_can_judge_is_refused_by_the_controller():
    slow_limit = dataclasses.replace(CFG, max_rate_mm_s=0.5)
    s = DispenseSession(slow_limit, POUR)
    s.on_joints(["right_gripper"], [0.060])
    with pytest.raises(Refusal, match="exceeds the gripper's dispensing limit") as refusal:
        s.start(DropsRequest("e1", "s1", target_volume_ml=1.0, rate_mm_s=1.0), now=0.0)
    assert (refusal.value.experiment_id, refusal.value.subtask_id) == ("e1", "s1")


def test_a_calibration_is_a_job_the_supervisors_holds_do_not_reach():
    s = session()
    s.set_hold("e1", "pipette missing", True)
    job = s.start_calibration(samples=0, liquid="water", pipette_id="p1", now=0.0)
    assert isinstance(job, CalibrationJob) and not job.supervised
    s.set_hold("", "microphone deaf", True)   # applied to the running job: a calibration ignores it
    assert job.on_ph(0.1, 7.0, 0.005) is False and s.resume() is None
    assert job.start_state().reason == "calibrate" and job.start_state().drop_interval_s > 0.0
