"""The pH course check (agentchemist.experiments.acid_base.course_check) on the twin's chemistry, without the graph: the
dispenser drives the twin to the plan's target (agentchemist.sim.closed_loop), and the settled readings
with the counted volume (heard drops x the calibrated drop, as the supervisor counts) go to the check.

Zero false alarms on the clean library's titrations; a halt for a titrant five times stronger than the
plan says (the mislabelled bottle) well before the target, and for a weak acid where the plan has a strong
one (the swapped analyte)."""
from __future__ import annotations

import pytest

from agentchemist.control.dispenser import DispenseGoal, DispenserConfig
from agentchemist.control.calibration import load_calibration
from agentchemist.experiments.acid_base.course_check import CourseCheck
from agentchemist.plan import plan_instruction
from agentchemist.sim.closed_loop import ClosedLoop
from agentchemist.sim.scenario import load_scenario
from tests.conftest import REPO

SCENARIOS = REPO / "config" / "scenarios"
CAL = load_calibration(REPO / "config" / "calibration" / "pipette.yaml")


def run_course(sc, plan, draw_ml: float, max_s: float = 2500.0):
    """Titrate on the twin to the plan's target; feed every settled reading (the last one before each drop
    and the final one) with the counted volume; the verdicts and the twin's truth."""
    check = CourseCheck.from_plan(plan)
    assert check is not None
    loop = ClosedLoop(sc)
    loop.prepare(draw_ml=draw_ml)
    target = plan.module_instantiation.dispenser.target_ph
    config = DispenserConfig(k_ml_per_mm=CAL.k_ml_per_mm, drop_volume_ml=CAL.drop_volume_ml,
                             calibration_residual_ml=CAL.residual_ml)
    run = loop.run(DispenseGoal(target_ph=target), config, max_s=max_s)
    drops, verdicts, alarm_at = sorted(run.drops_passed), [], None
    readings = run.ph_readings
    for i, (t, ph) in enumerate(readings):
        nxt = next((d for d in drops if d > t), None)
        last = i == len(readings) - 1
        if not last and (nxt is None or readings[i + 1][0] < nxt):
            continue  # settled: the reading just before the next drop falls
        heard = sum(1 for d in drops if d < t)
        verdict = check.on_settled(heard * CAL.drop_volume_ml, ph)
        verdicts.append(verdict)
        if verdict.alarm and alarm_at is None:
            alarm_at = (heard * CAL.drop_volume_ml, ph)
    return check, verdicts, alarm_at, loop


CLEAN = ["hcl_naoh", "acetic_naoh", "maleic_naoh", "phosphoric_naoh", "titration_cluttered"]


@pytest.mark.parametrize("name", CLEAN)
def test_no_false_alarm_on_the_clean_library(name):
    sc = load_scenario(SCENARIOS / f"{name}.yaml")
    plan = plan_instruction(sc.instruction).plan
    check, verdicts, alarm_at, _ = run_course(sc, plan, draw_ml=sc.pipette.capacity_ml - 1.0)
    assert len(verdicts) > 50, "too few settled readings to judge"
    assert alarm_at is None, f"{name}: false alarm at {alarm_at}: {[v for v in verdicts if v.outside][:3]}"
    # not only silent: every reading sat inside the envelope, with room (a margin the noise cannot eat)
    assert not any(v.outside for v in verdicts)


def test_colour_endpoint_titration_is_not_judged_by_ph():
    sc = load_scenario(SCENARIOS / "ca_edta.yaml")
    assert CourseCheck.from_plan(plan_instruction(sc.instruction).plan) is None


def test_titrant_five_times_stronger_halts_before_the_target():
    sc = load_scenario(SCENARIOS / "hcl_naoh.yaml")
    plan = plan_instruction(sc.instruction).plan   # the plan believes 0.1 M NaOH
    wrong = sc.model_copy(update={"titrant": {"naoh": 0.5}})
    check, verdicts, alarm_at, loop = run_course(wrong, plan, draw_ml=20.0)
    assert alarm_at is not None, "a 5x titrant went unnoticed"
    volume, ph = alarm_at
    # the jump comes at 5 mL instead of 25; the course is already too steep before it: halted by then,
    # long before pH 12.5
    assert volume <= 5.2 and ph < 12.5, alarm_at
    alarm = next(v.alarm for v in verdicts if v.alarm)
    assert "does not match the plan" in alarm and "0.1 M sodium hydroxide" in alarm


def test_weak_acid_in_place_of_a_strong_one_halts_at_once():
    sc = load_scenario(SCENARIOS / "hcl_naoh.yaml")
    plan = plan_instruction(sc.instruction).plan   # the plan believes 0.1 M HCl
    swapped = sc.model_copy(update={"beaker": sc.beaker.model_copy(update={"solution": {"acetic_acid": 0.1}})})
    _, verdicts, alarm_at, _ = run_course(swapped, plan, draw_ml=30.0, max_s=150.0)  # the first mL or so
    assert alarm_at is not None and alarm_at[0] < 1.0, alarm_at
