"""Static validation of experiment machines: good ones pass, each kind of bad one is named."""

from __future__ import annotations

import copy

import pytest

from agentchemist.fsm import ExperimentMachine, InvalidMachineError, SubtaskScheduler, validate_machine
from agentchemist.plan.schema import Plan
from tests.factories import titration_plan_dict


def reasons_for(data: dict) -> list[str]:
    return validate_machine(Plan.model_validate(data))


def test_titration_protocol_machine_is_valid_and_matches_spec():
    data = titration_plan_dict()
    plan = Plan.model_validate(data)
    assert validate_machine(plan) == []
    sm = plan.state_machine
    assert sm.states == [
        "initial",
        "pipette_grasped",
        "solution_drawn",
        "ready",
        "titrating",
        "waiting_ph",
        "done",
        "accepted",
    ]
    assert set(sm.input_symbols) == {
        "act",
        "grasp_ok",
        "draw_ok",
        "titrate",
        "drop",
        "ph_stable",
        "record",
        "endpoint",
        "verified",
    }
    edges = {(t.source, t.symbol): t.target for t in sm.transitions}
    assert edges[("titrating", "endpoint")] == "done" and edges[("waiting_ph", "endpoint")] == "done"
    assert edges[("solution_drawn", "act")] == "ready"
    # settle_each_drop: a drop while the pH settles is not a legal move
    assert ("waiting_ph", "drop") not in edges


def test_without_settling_a_drop_may_fall_while_waiting():
    plan = Plan.model_validate(titration_plan_dict(settle_each_drop=False))
    assert validate_machine(plan) == []
    edges = {(t.source, t.symbol): t.target for t in plan.state_machine.transitions}
    assert edges[("waiting_ph", "drop")] == "waiting_ph"


@pytest.mark.parametrize("family", ["complexometric_titration", "weighing_dissolution"])
def test_other_protocol_machines_are_valid(family):
    values = dict(
        colour_from="magenta",
        colour_to="blue",
        indicator_display="calcon",
        stop_on="colour",
        solid_name="nacl",
        solid_display="sodium chloride",
        target_mass_g=2.5,
        water_volume_ml=50.0,
    )
    if family == "weighing_dissolution":
        values["stop_on"] = "mass"
    data = titration_plan_dict(family, **values)
    data["parsed_instruction"]["target_conditions"] = {"target_mass_g": 2.5}
    assert reasons_for(data) == []


def test_unreachable_state_is_named():
    data = titration_plan_dict()
    data["state_machine"]["states"].append("orphan")
    data["state_machine"]["transitions"].append({"source": "orphan", "symbol": "verified", "target": "accepted"})
    reasons = reasons_for(data)
    assert any("'orphan' is unreachable" in r for r in reasons)


def test_no_accepting_state_reachable():
    data = titration_plan_dict()
    sm = data["state_machine"]
    sm["transitions"] = [t for t in sm["transitions"] if t["target"] != "accepted"]
    sm["input_symbols"].remove("verified")
    for task in data["task_decomposition"]:
        if task["expected_transition"] and task["expected_transition"]["symbol"] == "verified":
            task["expected_transition"] = None
    reasons = reasons_for(data)
    assert any("no accepting state is reachable" in r for r in reasons)


def test_ambiguous_transition_is_rejected():
    data = titration_plan_dict()
    data["state_machine"]["transitions"].append({"source": "titrating", "symbol": "drop", "target": "done"})
    reasons = reasons_for(data)
    assert any("ambiguous transition" in r and "'titrating'" in r and "'drop'" in r for r in reasons)


def test_symbol_produced_by_no_agent():
    data = titration_plan_dict()
    sm = data["state_machine"]
    sm["input_symbols"].append("magic")
    sm["transitions"].append({"source": "ready", "symbol": "magic", "target": "done"})
    reasons = reasons_for(data)
    assert any("'magic' is produced by no agent" in r for r in reasons)
    # ... unless some subtask expects it: then its receiver reports it
    data["task_decomposition"].append(
        {
            "id": "do_magic",
            "receiver": "action_policy",
            "description": "do it",
            "fsm_state": "ready",
            "expected_transition": {"symbol": "magic", "target": "done"},
            "primitive": "wave",
        }
    )
    assert not any("magic" in r for r in reasons_for(data))


def test_unknown_agent_and_unknown_dependency_and_cycle():
    data = titration_plan_dict()
    tasks = data["task_decomposition"]
    tasks[0]["receiver"] = "butler"
    tasks[1]["dependencies"] = ["grasp_pipette", "no_such_task"]
    tasks[0]["dependencies"] = ["position_over_beaker"]  # grasp <- draw <- position <- grasp
    reasons = reasons_for(data)
    assert any("unknown agent 'butler'" in r for r in reasons)
    assert any("unknown subtask 'no_such_task'" in r for r in reasons)
    assert any(r.startswith("dependency cycle:") and "grasp_pipette" in r for r in reasons)
    with pytest.raises(InvalidMachineError) as err:
        ExperimentMachine.from_plan(Plan.model_validate(data))
    assert len(err.value.reasons) >= 3
    with pytest.raises(InvalidMachineError):
        SubtaskScheduler(Plan.model_validate(data))


def test_subtask_state_and_expected_transition_must_fit_the_machine():
    data = titration_plan_dict()
    tasks = data["task_decomposition"]
    tasks[2]["fsm_state"] = "nowhere"
    tasks[4]["expected_transition"] = {"symbol": "grasp_ok", "target": "pipette_grasped"}  # cannot follow 'done'
    reasons = reasons_for(data)
    assert any("runs in unknown state 'nowhere'" in r for r in reasons)
    assert any("'verify_endpoint'" in r and "is reachable from its state 'done'" in r for r in reasons)


def test_dependency_that_can_never_come_back_is_a_deadlock():
    data = titration_plan_dict()
    tasks = data["task_decomposition"]
    tasks[0]["dependencies"] = ["verify_endpoint"]  # grasp in 'initial' waits for something done in 'done'
    reasons = reasons_for(data)
    assert any("'grasp_pipette'" in r and "cannot follow 'done'" in r for r in reasons)


def test_reserved_names_dead_ends_and_duplicates():
    data = titration_plan_dict()
    sm = data["state_machine"]
    sm["states"].append("aborted")
    sm["states"].append("limbo")
    sm["input_symbols"].append("pause")
    sm["transitions"] += [
        {"source": "ready", "symbol": "pause", "target": "aborted"},
        {"source": "done", "symbol": "drop", "target": "limbo"},
    ]
    sm["state_timeouts_s"]["ghost"] = 5.0
    reasons = reasons_for(data)
    assert any("'aborted' is reserved" in r for r in reasons)
    assert any("'pause' is reserved" in r for r in reasons)
    assert any("'limbo' is a dead end" in r for r in reasons)
    assert any("unknown state 'ghost'" in r for r in reasons)


def test_schema_rejects_malformed_identifiers_and_extra_keys():
    data = titration_plan_dict()
    data["state_machine"]["states"][0] = "Initial State"
    with pytest.raises(ValueError, match="lower snake case"):
        Plan.model_validate(data)
    data = titration_plan_dict()
    data["state_machine"]["colour"] = "blue"
    with pytest.raises(ValueError, match="Extra inputs are not permitted"):
        Plan.model_validate(data)


def test_plan_json_round_trip_is_lossless():
    plan = Plan.model_validate(titration_plan_dict())
    again = Plan.model_validate_json(plan.model_dump_json())
    assert again == plan
    broken = copy.deepcopy(titration_plan_dict())
    broken["module_instantiation"]["dispenser"]["rate_mm_s"] = "fast"
    with pytest.raises(ValueError, match="rate_mm_s"):
        Plan.model_validate(broken)
