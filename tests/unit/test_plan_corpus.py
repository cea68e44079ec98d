"""The instruction corpus: every case gets its expected outcome and entities, and every plan is sound."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from agentchemist.fsm import ExperimentMachine, validate_machine
from agentchemist.plan import Plan, Planner, verify_plan
from agentchemist.plan.evaluation import check_case, evaluate, load_corpus

CORPUS = Path(__file__).resolve().parents[1] / "data" / "instructions.yaml"
CASES = load_corpus(CORPUS)
PLANNER = Planner()


def test_corpus_is_large_and_covers_every_outcome():
    assert len(CASES) >= 60
    kinds = {c.expect.get("kind", "plan") for c in CASES}
    assert kinds == {"plan", "refusal", "question"}
    families = {c.expect.get("family") for c in CASES} - {None}
    assert families == {"acid_base_titration", "complexometric_titration", "weighing_dissolution"}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_case(case):
    outcome = PLANNER.plan(case.text, case.scene)
    assert check_case(case, outcome) == []
    if outcome.kind == "plan":
        plan = outcome.plan
        # the plan survives the wire, is a runnable machine, and passes the rule engine as it stands
        again = Plan.model_validate_json(plan.model_dump_json())
        assert again == plan
        assert validate_machine(again) == []
        ExperimentMachine.from_plan(again)
        leftover = [
            f
            for f in verify_plan(again, PLANNER.registry, PLANNER.library)
            if f.fix is not None or f.severity == "HALT"
        ]
        assert leftover == []
        assert plan.environment_check.satisfied
    elif outcome.kind == "refusal":
        assert outcome.plan is None and outcome.reasons and all(r.strip() for r in outcome.reasons)
    else:
        assert outcome.plan is None and "?" in outcome.message


def test_worked_example_matches_the_paper():
    case = next(c for c in CASES if c.id == "worked_example")
    plan = PLANNER.plan(case.text).plan
    pi = plan.parsed_instruction
    assert set(pi.entities.instruments) == {"pipette", "beaker", "magnetic_stirrer", "ph_meter"}
    titrant, analyte = plan.reagent("titrant"), plan.reagent("analyte")
    assert (titrant.name, titrant.concentration_m) == ("naoh", 0.1)
    assert (analyte.name, analyte.concentration_m, analyte.volume_ml) == ("hcl", 0.1, 25.0)
    assert pi.initial_conditions.initial_ph == 1.06 and pi.target_conditions.target_ph == 12.5
    assert any("analyte volume not stated" in w for w in plan.warnings)
    disp = plan.module_instantiation.dispenser
    assert disp.settle_each_drop and disp.target_ph == 12.5
    assert disp.endpoint_stable_s == 5.0 and disp.settle_window_s == 1.0
    assert plan.module_instantiation.recorder.tau == 0.3
    assert plan.module_instantiation.recorder.quantities == ["titrant_volume", "ph", "ph_settled", "temperature"]
    assert "four_charts" in pi.output_format and "pka" in pi.output_format
    titrate = plan.subtask("titrate")
    assert titrate.receiver == "dispenser_controller" and titrate.fsm_state == "ready"
    assert set(titrate.parameters) >= {
        "target_ph",
        "rate_mm_s",
        "settle_each_drop",
        "stable_window_s",
        "wait_on_change_threshold",
    }
    assert [t.receiver for t in plan.task_decomposition] == [
        "action_policy",
        "action_policy",
        "action_policy",
        "dispenser_controller",
        "vision_supervisor",
        "summarizer",
    ]
    # pH 12.5 as the glass electrode reads it (Davies) takes 58.3 mL of 0.1 M NaOH from 25 mL of 0.1 M HCl
    # (48.6 mL by concentration): one full 60 mL draw, and the dispenser may give all of it (the 100 mL
    # beaker holds 90 mL)
    assert plan.subtask("draw_titrant").parameters["volume_ml"] == 60.0
    assert 58.3 < disp.max_volume_ml <= 60.0


def test_parse_accuracy_and_latency_are_measured():
    report = evaluate(CASES, PLANNER, time.perf_counter)
    assert report.accuracy() == 1.0, {k: v for k, v in report.results.items() if v}
    assert len(report.latencies_s) == len(CASES)
    summary = report.latency_summary()
    assert 0.0 < summary["median_s"] <= summary["max_s"]
