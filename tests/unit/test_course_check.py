"""The pH course check (fsm/course_check.py) on synthetic courses from the chemistry, and in the executor:
a course the plan's reagents give (with a probe offset, noise and a miscounted drop) raises nothing; a 5x
titrant halts the run with reagent_mismatch and the dispenser cancelled."""
from __future__ import annotations

import numpy as np
import pytest

from agentchemist.chemistry.equilibrium import titration_curve
from agentchemist.fsm.commands import Report
from agentchemist.experiments.acid_base.course_check import CourseCheck, CourseCheckConfig
from agentchemist.fsm.effects import Cancel
from agentchemist.fsm.executor import Executor
from agentchemist.fsm.record_watch import RecordWatchConfig
from agentchemist.fsm.supervision import SupervisionConfig

DROP = 0.046875


def course(titrant_m: float, volumes, acid="hcl", offset=0.0, seed=0):
    rng = np.random.default_rng(seed)
    ph = titration_curve({acid: 0.1}, 25.0, {"naoh": titrant_m}, np.asarray(volumes), activity=True)
    return ph + offset + rng.normal(0.0, 0.01, len(ph))


@pytest.mark.parametrize("titrant_m, offset", [(0.1, 0.0), (0.085, 0.3), (0.115, -0.3), (0.1, 0.5)])
def test_plausible_errors_raise_nothing(titrant_m, offset):
    """+-15 % titrant, a 0.3-0.5 pH probe offset, the drop count 2 % off: inside, all the way past the jump."""
    check = CourseCheck({"hcl": 0.1}, 25.0, {"naoh": 0.1})
    true_ml = np.arange(1, 1200) * DROP
    for v, ph in zip(true_ml * 1.02, course(titrant_m, true_ml, offset=offset)):
        verdict = check.on_settled(float(v), float(ph))
        assert not verdict.outside, verdict
    assert not check.alarmed


def test_five_times_the_titrant_is_caught_before_the_jump():
    check = CourseCheck({"hcl": 0.1}, 25.0, {"naoh": 0.1})
    true_ml = np.arange(1, 200) * DROP
    alarms = [(v, check.on_settled(float(v), float(ph)).alarm) for v, ph in zip(true_ml, course(0.5, true_ml))]
    fired = [(v, a) for v, a in alarms if a]
    assert len(fired) == 1, "the alarm is raised once"
    volume, text = fired[0]
    assert volume < 5.0  # the 5x titrant's jump is at 5 mL; the plan's at 25
    assert "does not match the plan" in text and "0.1 M sodium hydroxide" in text and "above" in text


def test_one_reading_outside_is_not_yet_an_alarm_but_the_endpoint_reading_is():
    check = CourseCheck({"hcl": 0.1}, 25.0, {"naoh": 0.1}, config=CourseCheckConfig(confirm_points=3))
    assert check.on_settled(1.0, 9.0).outside and not check.alarmed
    assert not check.on_settled(1.05, 1.15).outside and check.outside_run == 0  # back inside: run restarts
    assert check.on_settled(1.1, 10.0, final=True).alarm.endswith("at the endpoint: the titrant or the sample "
                                                                  "is not what the plan says")


def test_a_weak_acid_for_a_strong_one_is_caught_at_the_start():
    check = CourseCheck({"hcl": 0.1}, 25.0, {"naoh": 0.1})
    true_ml = np.arange(1, 20) * DROP
    alarms = [check.on_settled(float(v), float(ph)).alarm for v, ph in zip(true_ml, course(0.1, true_ml, "acetic_acid"))]
    assert alarms.index(next(a for a in alarms if a)) == 2  # the third settled reading


@pytest.mark.parametrize("volume, ph", [(float("nan"), 3.0), (-1.0, 3.0), (1.0, float("inf"))])
def test_bad_input_is_refused(volume, ph):
    with pytest.raises(ValueError):
        CourseCheck({"hcl": 0.1}, 25.0, {"naoh": 0.1}).on_settled(volume, ph)


def test_plans_it_cannot_judge(ca_plan, weighing_plan, ph_plan):
    assert CourseCheck.from_plan(ca_plan) is None and CourseCheck.from_plan(weighing_plan) is None
    check = CourseCheck.from_plan(ph_plan)
    assert check is not None and check.titrant == {"naoh": 0.1} and check.analyte_ml == 5.0


def drive(ph_plan, titrant_m: float, drops: int):
    """The executor of the short HCl plan (5 mL 0.1 M HCl to pH 10): each drop heard, then 2 s of settled
    readings of what `titrant_m` NaOH gives; stops at a terminal state."""
    ex = Executor(ph_plan, 0.0, SupervisionConfig(recorder=RecordWatchConfig()))
    ex.on_recorder_status(ph_plan.experiment_id, True, 0.0, 0.0, None)
    from tests.unit.test_fsm_executor import run_to_dispensing  # the same walk to the dispense goal
    send, _, t = run_to_dispensing(ex)
    volumes = np.arange(1, drops + 1) * ph_plan.module_instantiation.dispenser.drop_volume_ml
    phs = titration_curve({"hcl": 0.1}, 5.0, {"naoh": titrant_m}, volumes, activity=True)
    effects = []
    noise = (0.003, -0.002, 0.001, -0.004, 0.002, 0.0, -0.001, 0.002)
    for k, ph in enumerate(phs):
        t += 0.5
        effects += ex.on_agent_symbol("drop", t, "audio_supervisor", send.task.id)
        for i in range(12):
            t += 0.2
            effects += ex.on_ph(t, round(float(ph) + noise[i % 8], 3), 0.005)
        if not ex.running or ex.machine.state == "done":
            break
    return ex, effects


def test_the_executor_halts_a_5x_titrant_with_reagent_mismatch(ph_plan):
    ex, effects = drive(ph_plan, 0.5, 60)
    halts = [e for e in effects if isinstance(e, Report) and e.severity == "halt"]
    assert [h.kind for h in halts] == ["reagent_mismatch"], halts
    assert halts[0].response == "abort" and Cancel("dispenser_controller") in effects
    assert ex.machine.state == "aborted" and ex.drops_heard <= 30  # 21 drops are the 5x equivalence


def test_the_executor_raises_nothing_on_the_planned_course(ph_plan):
    ex, effects = drive(ph_plan, 0.1, 140)
    alarms = [e for e in effects if isinstance(e, Report) and e.severity in ("warn", "halt")]
    assert not alarms and ex.machine.state == "done" and ex.course.points


def test_an_endpoint_the_plan_cannot_reach_so_soon_is_not_a_result(ph_plan):
    """Three drops (0.15 mL) settle where the plan says; then the target pH holds as if reached: the plan's
    reagents need about 5 mL for it, so the endpoint reading alone halts (no later reading could confirm)."""
    ex = Executor(ph_plan, 0.0, SupervisionConfig(recorder=RecordWatchConfig()))
    ex.on_recorder_status(ph_plan.experiment_id, True, 0.0, 0.0, None)
    from tests.unit.test_fsm_executor import run_to_dispensing
    send, _, t = run_to_dispensing(ex)
    noise = (0.003, -0.002, 0.001, -0.004, 0.002, 0.0, -0.001, 0.002)
    effects = []
    for _ in range(3):
        t += 0.5
        effects += ex.on_agent_symbol("drop", t, "audio_supervisor", send.task.id)
        for i in range(12):
            t += 0.2
            effects += ex.on_ph(t, round(1.13 + noise[i % 8], 3), 0.005)
    assert ex.machine.state == "titrating" and len(ex.course.points) == 3 and not ex.course.alarmed
    target = send.goal.target_ph
    for i in range(40):
        t += 0.2
        effects += ex.on_ph(t, round(target + 0.02 + noise[i % 8], 3), 0.005)
    halts = [e for e in effects if isinstance(e, Report) and e.severity == "halt"]
    assert [h.kind for h in halts] == ["reagent_mismatch"] and "at the endpoint" in halts[0].description
    assert ex.machine.state == "aborted"


# ------------------------------------------------------------------ the sample, before the first drop (issue 37)
def test_the_initial_ph_of_another_sample_is_a_mismatch_with_the_numbers():
    check = CourseCheck({"acetic_acid": 0.1}, 25.0, {"naoh": 0.1})
    assert check.on_initial(2.95) == ""                     # acetic acid reads about 2.9
    alarm = check.on_initial(1.11)                          # 0.1 M HCl on the bench
    assert alarm.startswith("the sample does not match the plan: its pH before the first drop is 1.11, below the 2.")
    assert "25 mL of 0.1 M acetic acid" in alarm and alarm.endswith("no titrant was added")
    assert check.on_initial(1.11) == ""                     # raised once
    with pytest.raises(ValueError):
        CourseCheck({"hcl": 0.1}, 25.0, {"naoh": 0.1}).on_initial(float("nan"))


def test_an_uncalibrated_probe_offset_is_no_mismatch():
    check = CourseCheck({"hcl": 0.1}, 25.0, {"naoh": 0.1})
    assert check.on_initial(1.1 + 0.5) == "" and check.on_initial(1.1 - 0.5) == ""


def test_the_executor_refuses_to_dispense_into_another_sample(ph_plan):
    """The plan's 5 mL of 0.1 M HCl reads 1.1; the beaker reads 2.9 (acetic acid): the dispense goal never goes
    out, the run ends in reagent_mismatch before the first drop, whatever the settle mode."""
    ex = Executor(ph_plan, 0.0, SupervisionConfig(recorder=RecordWatchConfig()))
    ex.on_recorder_status(ph_plan.experiment_id, True, 0.0, 0.0, None)
    effects = ex.start(0.0, None, require_scene=False)   # no reading yet: nothing judged at the start
    from tests.unit.test_fsm_executor import of
    from agentchemist.fsm.effects import SendGoal
    t = 0.0
    noise = (0.003, -0.002, 0.001, -0.004, 0.002, 0.0, -0.001, 0.002)
    for _ in range(10):
        for i in range(12):
            t += 0.2
            effects += ex.on_ph(t, round(2.9 + noise[i % 8], 3), 0.005)
        policy = [e for e in of(effects, SendGoal) if e.goal is None]
        if not ex.running or not policy:
            break
        t += 1.0
        effects = ex.on_policy_result(policy[-1].task, True, policy[-1].payload["symbol"], "", t)
    assert not [e for e in of(effects, SendGoal) if e.goal is not None]   # no dispense goal
    halts = [e for e in effects if isinstance(e, Report) and e.severity == "halt"]
    assert [h.kind for h in halts] == ["reagent_mismatch"] and "before the first drop is 2.9" in halts[0].description
    assert ex.machine.state == "aborted" and ex.drops_heard == 0


def test_a_run_that_does_not_settle_each_drop_has_its_course_checked_on_the_trace():
    """No settle phrase (the chemist's plain words): a drop every 0.5 s and the supervisor's settle test never
    passes (it restarts at every drop); the readings (3 s behind the drops) are still judged on the steady
    stretches, at the volume they show. The plan says 5 mL of HCl, the beaker holds 25 mL: the pH stays near 1.2
    past the 5 mL where the plan's jump is, a reagent_mismatch long before the real jump at 25 mL; the 5 mL the
    plan names raises nothing."""
    from agentchemist.plan.planner import plan_instruction
    from tests.unit.test_fsm_executor import run_to_dispensing
    plain = plan_instruction("Titrate 5 mL of 0.1 M hydrochloric acid with 0.1 M sodium hydroxide to pH 10").plan
    assert plain.module_instantiation.dispenser.settle_each_drop is False
    drop_ml = plain.module_instantiation.dispenser.drop_volume_ml

    def drive(bench_ml):
        ex = Executor(plain, 0.0, SupervisionConfig(recorder=RecordWatchConfig()))
        ex.on_recorder_status(plain.experiment_id, True, 0.0, 0.0, None)
        send, _, t = run_to_dispensing(ex)
        volumes = np.arange(0, 200) * drop_ml
        phs = titration_curve({"hcl": 0.1}, bench_ml, {"naoh": 0.1}, volumes, activity=True)
        effects, t0 = [], t
        for k in range(1, 200):
            t = t0 + 0.5 * k
            effects += ex.on_agent_symbol("drop", t, "audio_supervisor", send.task.id)
            shown = max(0, int((t - 3.0 - t0) / 0.5))            # the reading shows the drops 3 s back
            for i in range(5):
                effects += ex.on_ph(t + 0.1 * i, round(float(phs[shown]) + 0.002 * (-1) ** i, 3), 0.005)
            if not ex.running or ex.machine.state == "done":
                break
        return ex, [e for e in effects if isinstance(e, Report) and e.severity in ("warn", "halt")]

    ex, alarms = drive(25.0)
    assert [a.kind for a in alarms] == ["reagent_mismatch"] and ex.machine.state == "aborted", alarms
    assert ex.drops_heard * drop_ml < 9.0                     # the real jump is at 25 mL
    ex, alarms = drive(5.0)
    assert alarms == [] and ex.course.points                  # judged, and nothing raised
