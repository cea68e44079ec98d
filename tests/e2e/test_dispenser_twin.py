"""The dispenser controller in closed loop with the lab twin (no ROS), graded against the twin's truth.

Rates are the node graph's (src/agentchemist/sim/closed_loop.py): control every 0.05 s, pH at 5 Hz, joint
states at 10 Hz, contact audio in 0.1 s chunks through the real drop detector and drop context.

About "pH 7 +/- 0.1" with HCl: at equivalence one 0.047 mL drop of 0.1 M NaOH takes 50 mL of solution
from pH 4.6 to 9.7 (the window 6.9..7.1 is about 5e-5 mL of titrant, a thousandth of a drop), so no
drop-wise titration can stop inside it. What a controller can do, and what is asserted, is stop on the
drop that crosses pH 7 (nothing lands after it, overshoot <= one drop from the true crossing volume) on
a settled reading that agrees with the true pH. The +/- 0.1 pH precision is asserted where the curve
allows it: acetic acid to pH 5.00 (buffered), and (slow) maleic acid, buffered by its second pKa, to
pH 7.00.
"""
import pytest

from agentchemist.control.calibration import load_calibration
from agentchemist.control.dispenser import DispenseGoal, DispenserConfig, State
from agentchemist.sim.scenario import load_scenario
from tests.conftest import REPO
from agentchemist.sim.closed_loop import ClosedLoop, LoopRun, grade_titration

SCENARIOS = REPO / "config" / "scenarios"
DROP = 0.046875            # nominal drop of the twin's pipette (mL)
MAX_DROP = 1.3 * DROP      # the twin truncates drop volumes at +30 %


def calibrated_config(**overrides) -> DispenserConfig:
    """The controller as the node runs it: the calibration file's k, drop volume and residual."""
    cal = load_calibration(REPO / "config" / "calibration" / "pipette.yaml")
    return DispenserConfig(k_ml_per_mm=cal.k_ml_per_mm, drop_volume_ml=cal.drop_volume_ml,
                           calibration_residual_ml=cal.residual_ml, **overrides)


def scenario(name: str, seed: int | None = None, **beaker):
    sc = load_scenario(SCENARIOS / f"{name}.yaml")
    update = {}
    if seed is not None:
        update["seed"] = seed
    if beaker:
        update["beaker"] = sc.beaker.model_copy(update=beaker)
    return sc.model_copy(update=update) if update else sc


def landed(loop: ClosedLoop) -> list[dict]:
    return [d for d in loop.twin.truth()["drops"] if d["fate"] in ("beaker", "overflow")]


def assert_estimates_account_for_everything(run: LoopRun) -> None:
    """The statistical channel lost nothing: the increments add up to the final Q_stat, the cumulative
    values only grow, and whatever was dispensed before an anomaly was reported when it happened."""
    result, estimates = run.result, run.estimates
    assert estimates, "no statistical estimate at all"
    assert sum(e.delta_ml for e in estimates) == pytest.approx(result.dispensed_ml, abs=1e-9)
    assert estimates[-1].value_ml == pytest.approx(result.dispensed_ml, abs=1e-9)
    assert all(b.value_ml > a.value_ml for a, b in zip(estimates, estimates[1:]))
    assert all(0.0 < e.confidence <= 1.0 for e in estimates)
    for anomaly in run.anomalies:
        before = [e for e in estimates if e.stamp <= anomaly.stamp]
        after = [e for e in estimates if e.stamp > anomaly.stamp]
        if before and after:
            assert after[0].value_ml > before[-1].value_ml


# ============================================================================================ volume
def test_dispense_5_ml_lands_within_one_drop():
    loop = ClosedLoop(scenario("hcl_naoh"))
    loop.prepare(draw_ml=55.0)
    run = loop.run(DispenseGoal(target_volume_ml=5.0), calibrated_config(), max_s=120.0)
    assert run.result is not None and run.result.success and run.result.reason == "target_volume"
    truth = loop.dispensed_ml()
    assert abs(truth - 5.0) <= DROP, f"{truth:.4f} mL landed for a 5.000 mL goal"
    # Q_stat (displacement x k) agrees with what landed to within the drop still hanging at the tip.
    assert abs(run.result.dispensed_ml - truth) <= DROP
    # Every drop that landed was heard and handed to the controller as an expected droplet.
    assert run.result.drops == len(landed(loop)) == len(run.drops_passed)
    assert_estimates_account_for_everything(run)
    # It finished one drop at a time: the last holds were fine-mode holds.
    assert run.first_transition("near_target_drop") is not None


# ============================================================================================ pH target
def titrate(name: str, target: float, seed: int | None = None, **beaker):
    loop = ClosedLoop(scenario(name, seed, **beaker))
    loop.prepare(draw_ml=55.0)
    run = loop.run(DispenseGoal(target_ph=target), calibrated_config(), max_s=1500.0)
    assert run.result is not None, "the titration did not stop"
    return loop, run, grade_titration(loop, run, target)


def check_hcl_endpoint(loop, run, outcome):
    assert run.result.reason == "canceled" and run.judge.reached_at is not None, run.result.message
    assert outcome.cross_ml == pytest.approx(25.0, abs=0.05)  # the twin's equivalence volume
    assert outcome.drops_after_crossing == 0, f"{outcome.drops_after_crossing} drop(s) after pH 7 was crossed"
    assert 0.0 <= outcome.overshoot_ml <= MAX_DROP
    # It stopped on a settled reading that agrees with the solution, past the target.
    assert outcome.reading_ph >= 7.0
    assert abs(outcome.reading_ph - outcome.true_ph) <= 0.1
    # The crossing drop was dosed alone: fine mode held after it (the steep-curve criterion, since the
    # pH was still far below 7.0 - 0.5 one drop before).
    assert run.first_transition("near_target_drop") is not None
    assert_estimates_account_for_everything(run)


def test_titrate_hcl_to_ph_7_without_overshooting_more_than_one_drop():
    check_hcl_endpoint(*titrate("hcl_naoh", 7.0))


@pytest.mark.slow
@pytest.mark.parametrize("seed", [2, 3, 4, 5])
def test_titrate_hcl_to_ph_7_more_seeds(seed):
    check_hcl_endpoint(*titrate("hcl_naoh", 7.0, seed))


def test_prediction_squeezes_through_where_the_reading_merely_moves_fast():
    """HCl to pH 7 at the audible limit (0.25 mm/s), with the curve prediction and without it (a hold on
    every fast change): both stop on the crossing drop; the prediction holds fewer times on the way and
    ends sooner. 10 mL of acid: the jump comes after 10 mL, about 40 s of squeezing."""
    ends = {}
    for predictive in (True, False):
        loop = ClosedLoop(scenario("hcl_naoh", 3, volume_ml=10.0))
        loop.prepare(draw_ml=20.0)
        run = loop.run(DispenseGoal(target_ph=7.0, rate_mm_s=0.25), calibrated_config(predictive=predictive),
                       max_s=600.0)
        outcome = grade_titration(loop, run, 7.0)
        assert run.judge is not None and run.judge.reached_at is not None, run.result
        assert outcome.drops_after_crossing == 0, (predictive, outcome)
        assert len(run.drops_passed) >= len(landed(loop))    # every drop that landed was counted
        holds = sum(cond in ("change_rate_high", "near_target_drop") for _, _, cond, _ in run.transitions)
        ends[predictive] = (outcome.sim_s, holds)
        assert_estimates_account_for_everything(run)
    assert ends[True][0] < ends[False][0] and ends[True][1] < ends[False][1], ends


def test_titrate_acetic_acid_to_ph_5_within_0_1():
    """Buffered (0.004 pH per drop near pH 5): the approach band is crossed in shrinking increments."""
    loop, run, outcome = titrate("acetic_naoh", 5.0, 2)
    assert run.result.reason == "canceled" and run.judge.reached_at is not None, run.result.message
    assert abs(outcome.true_ph - 5.0) <= 0.1, f"stopped at true pH {outcome.true_ph:.3f}"
    assert abs(outcome.reading_ph - outcome.true_ph) <= 0.05
    holds = [t for t, _, cond, _ in run.transitions if cond == "near_target_drop"]
    assert len(holds) < 30  # not one hold per drop across the band (~140 drops from pH 4.5 to 5.0)
    assert_estimates_account_for_everything(run)


@pytest.mark.slow
def test_titrate_maleic_acid_to_ph_7_within_0_1():
    """Maleic acid's second pKa buffers pH 7 (0.02 pH per drop): +/- 0.1 is within reach there."""
    loop, run, outcome = titrate("maleic_naoh", 7.0)
    assert run.result.reason == "canceled" and run.judge.reached_at is not None, run.result.message
    assert abs(outcome.true_ph - 7.0) <= 0.1, f"stopped at true pH {outcome.true_ph:.3f}"
    assert outcome.overshoot_ml <= 3 * DROP
    assert_estimates_account_for_everything(run)


def test_wait_triggers_on_a_ph_jump():
    """5 mL of 0.1 M HCl: the equivalence jump comes after ~107 drops. A volume goal (no pH target, so
    no fine mode) squeezes at the constant rate; the jump alone must make the controller hold."""
    loop = ClosedLoop(scenario("hcl_naoh", volume_ml=5.0))
    loop.prepare(draw_ml=20.0)
    run = loop.run(DispenseGoal(target_volume_ml=5.5, rate_mm_s=0.2), calibrated_config(), max_s=200.0)
    assert run.result is not None and run.result.success
    truth = loop.twin.truth()
    history = truth["ph_history"]
    jumps = [t for (t0, p0), (t, p) in zip(history, history[1:]) if p - p0 > 2.0]
    assert len(jumps) == 1, "expected exactly one equivalence jump"
    jump = jumps[0]
    hold = run.first_transition("change_rate_high", after=jump - 0.6)
    assert hold is not None and hold - jump <= 1.0, f"hold {hold} s for a jump at {jump:.2f} s"
    # The gripper held still from the hold command until the controller resumed.
    resume = run.first_transition("settled", after=hold)
    assert resume is not None and resume - hold >= 1.5
    held = {c for t, c in run.commands if hold <= t < resume}
    assert len(held) == 1
    # At most the drop already hanging at the tip fell after the jump before the hold.
    after_jump = [d for d in landed(loop) if jump < d["time"] <= resume]
    assert len(after_jump) <= 1


# ============================================================================================ faults
def fault_run(kind: str, goal: DispenseGoal, *, inject_after_s: float, duration_s: float = 0.0,
              pipette=None, draw_ml=20.0, **params):
    sc = scenario("hcl_naoh")
    if pipette:
        sc = sc.model_copy(update={"pipette": sc.pipette.model_copy(update=pipette)})
    loop = ClosedLoop(sc)
    loop.prepare(draw_ml=draw_ml)
    if kind:
        when = loop.now + inject_after_s
        fired = []

        def inject(lp, now):
            if not fired and now >= when:
                fired.append(now)
                lp.twin.inject_fault(kind, now, duration_s, **params)
        loop.hooks.append(inject)
    run = loop.run(goal, calibrated_config(), max_s=300.0)
    assert run.result is not None, "the controller never stopped"
    return loop, run


def assert_reset_with(run: LoopRun, kind: str):
    assert run.anomalies, "no anomaly reported"
    assert run.anomalies[0].kind == kind, [a.kind for a in run.anomalies]
    entered = [(t, cond) for t, src, cond, dst in run.transitions if dst == State.RESET]
    assert entered and entered[0][1] == "anomaly" and entered[0][0] == run.anomalies[0].stamp
    # RESET opened the gripper to the safe opening.
    reset_commands = [c for t, c in run.commands if t >= entered[0][0]]
    assert reset_commands[0] == pytest.approx(calibrated_config().safe_opening_mm)


GOAL = DispenseGoal(target_volume_ml=1.5, target_ph=12.0)


def test_ph_dropout_is_a_sensor_timeout_then_resumes():
    loop, run = fault_run("ph_dropout", GOAL, inject_after_s=2.0, duration_s=6.0)
    assert_reset_with(run, "sensor_timeout")
    # it waited for the meter, once, and said so when the meter reported again
    assert [(a.kind, a.resolved) for a in run.anomalies] == [("sensor_timeout", False), ("sensor_timeout", True)]
    resumed = run.first_transition("retracted_resume")
    assert resumed is not None and resumed >= run.anomalies[0].stamp + 3.0  # not before readings returned
    assert run.anomalies[1].stamp == resumed
    assert run.result.success and run.result.reason == "target_volume"
    assert abs(loop.dispensed_ml() - 1.5) <= DROP
    assert abs(run.result.dispensed_ml - loop.dispensed_ml()) <= DROP  # re-squeezing air added nothing
    assert_estimates_account_for_everything(run)


def test_failing_drops_are_a_no_drop_anomaly_then_resumes():
    loop, run = fault_run("drop_fails", GOAL, inject_after_s=2.0, count=6)
    assert_reset_with(run, "no_drop")
    assert run.result.success and run.result.reason == "target_volume"
    assert abs(run.result.dispensed_ml - loop.dispensed_ml()) <= MAX_DROP
    assert_estimates_account_for_everything(run)


def test_gripper_stall_is_detected_then_resumes():
    loop, run = fault_run("gripper_stall", GOAL, inject_after_s=2.0, duration_s=4.0)
    assert_reset_with(run, "gripper_stall")
    assert run.result.success and run.result.reason == "target_volume"
    assert abs(run.result.dispensed_ml - loop.dispensed_ml()) <= DROP
    assert_estimates_account_for_everything(run)


def test_permanent_gripper_stall_gives_up_when_it_cannot_retract():
    loop, run = fault_run("gripper_stall", GOAL, inject_after_s=2.0, duration_s=0.0)
    assert_reset_with(run, "gripper_stall")
    assert run.transitions[-1][2] == "retract_timeout"
    assert not run.result.success and run.result.reason == "anomaly"
    assert "did not retract" in run.result.message
    assert_estimates_account_for_everything(run)


def test_empty_pipette_gives_up():
    """A 3 mL bulb, full: squeezed flat, it is empty."""
    loop, run = fault_run("", DispenseGoal(target_volume_ml=10.0), inject_after_s=0.0,
                          pipette={"capacity_ml": 3.0, "contact_opening_mm": 3.0}, draw_ml=3.0)
    assert_reset_with(run, "pipette_empty")
    assert run.transitions[-1][2] == "retracted_give_up"
    assert not run.result.success and run.result.reason == "anomaly"
    truth = loop.dispensed_ml()
    assert truth == pytest.approx(3.0, abs=MAX_DROP)  # all of it landed (but the last hanging drop)
    assert abs(run.result.dispensed_ml - truth) <= MAX_DROP
    assert_estimates_account_for_everything(run)


# ============================================================================================ calibration
def test_calibration_procedure_recovers_the_twin_pipette():
    """The Calibrate service's state machine, fed as the node feeds it (every droplet heard, the balance
    at 2 Hz), on the calibration bench: k and the drop volume against the twin's truth."""
    from agentchemist.control.calibration_procedure import (CalibrationProcedure, CalibrationProcedureConfig,
                                                            Phase)
    loop = ClosedLoop(scenario("calibration_naoh"))
    loop.prepare(draw_ml=55.0)
    proc = CalibrationProcedure(CalibrationProcedureConfig(samples=4), calibrated_config(),
                                start_opening_mm=loop.measured_mm, now=loop.now, liquid="naoh 0.1 M",
                                pipette_id="rubber_bulb_60ml")
    step = loop.calibrate(proc, max_s=300.0)
    assert step.phase == Phase.DONE, step.error
    truth = loop.twin.truth()
    assert proc.drops == truth["drops_landed"]  # every drop heard, none invented
    assert step.calibration.k_ml_per_mm == pytest.approx(loop.scenario.pipette.k_ml_per_mm, rel=0.03)
    assert step.calibration.drop_volume_ml == pytest.approx(truth["dispensed_ml"] / truth["drops_landed"], rel=0.03)
