"""Weighing and dissolution the way the robot does it: the solid poured from its bottle held by a gripper,
the water already in the beaker, or a spatula and a graduated cylinder when those are what the bench
has; refused, naming both ways, when the bench offers neither."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from agentchemist.fsm import ExperimentMachine, validate_machine
from agentchemist.fsm.scheduler import SubtaskScheduler
from agentchemist.plan import Planner, ProtocolError, ProtocolLibrary, SceneInfo, verify_plan
from agentchemist.plan.protocols import default_protocols_dir

PLANNER = Planner()
# config/scenarios/nacl_weighing.yaml: the twin's weighing bench and the paper's task
TWIN_TEXT = (
    "Weigh 2.50 g of NaCl solid from the reagent bottle into the beaker containing 50 mL of deionized water on "
    "the balance, place the beaker on the magnetic stirrer, start the stirrer and stir until the solid is "
    "completely dissolved."
)
PLAIN_TEXT = "Weigh 2.50 g of NaCl and dissolve it in 50 mL of water with the magnetic stirrer."
TWIN_BENCH = [
    {"id": "balance", "kind": "balance"},
    {"id": "beaker_main", "kind": "beaker"},
    {"id": "stirrer", "kind": "magnetic_stirrer"},
    {"id": "solid_bottle", "kind": "solid_bottle"},
    {"id": "wash_bottle", "kind": "wash_bottle"},
]
CORE = [o for o in TWIN_BENCH if o["kind"] in ("balance", "beaker", "magnetic_stirrer")]


def scene(objects) -> SceneInfo:
    return SceneInfo.from_dict({"objects": objects})


def run_to_the_end(plan) -> list[str]:
    """Drive the plan's machine as the supervisor does: dispatch what is ready, let each receiver report
    its symbol (the dispenser's portions: dose, tap, mass_stable, tap, target_mass). Returns the order
    of the subtasks' primitives; the machine must end accepted."""
    machine, sched = ExperimentMachine.from_plan(plan, now=0.0), SubtaskScheduler(plan)
    done, t = [], 0.0
    for _ in range(50):
        ready = sched.ready(machine.state)
        if not ready:
            break
        for task in ready:
            sched.mark_dispatched(task.id)
            symbols = [task.expected_transition.symbol] if task.expected_transition else []
            if task.receiver == "dispenser_controller":
                symbols = ["dose", "tap", "mass_stable", "tap", "target_mass"]
            for symbol in symbols:
                t += 1.0
                machine.apply(symbol, t)
            sched.mark_done(task.id)
            done.append(task.primitive)
    assert machine.state == "accepted", machine.state
    return done


def test_the_twins_bench_pours_from_the_bottle_into_the_water_already_in_the_beaker():
    out = PLANNER.plan(TWIN_TEXT, scene(TWIN_BENCH))
    assert out.kind == "plan", out.message
    plan = out.plan
    assert validate_machine(plan) == []
    assert not [f for f in verify_plan(plan, PLANNER.registry) if f.severity == "HALT" or f.fix]
    # place (or confirm) the beaker, grasp the bottle, tare with the water in, pour, move, stir: no water poured
    assert run_to_the_end(plan) == ["place", "grasp", "tare", "pour_solid", "move_to", "press", "observe", "verify",
                                    "report"]
    assert [t.receiver for t in plan.task_decomposition][:4] == [
        "action_policy", "action_policy", "vision_supervisor", "dispenser_controller"]
    pour = plan.subtask("dose_solid")
    assert pour.parameters["source"] == "solid_bottle" and pour.parameters["target"] == "beaker_main"
    assert pour.parameters["target_mass_g"] == 2.5 and pour.parameters["side"] == "left"
    assert plan.subtask("grasp_bottle").parameters == {"object": "solid_bottle", "side": "left"}
    mod = plan.module_instantiation
    assert (mod.dispenser.mode, mod.dispenser.stop_on, mod.audio.event_kind) == ("solid_pour", "mass", "pour")
    assert mod.vision.preconditions == []  # the beaker holds the water: it is not empty
    assert "water_added" not in plan.state_machine.states and "pour_ok" not in plan.state_machine.input_symbols
    pi = plan.parsed_instruction
    assert set(pi.entities.instruments) == {"balance", "beaker", "magnetic_stirrer", "solid_bottle"}
    assert "graduated_cylinder" not in pi.entities.objects and "pour" not in pi.operation_primitives
    assert "already in the beaker" in " ".join(plan.warnings)  # the camera cannot see water: said so


def test_a_bench_with_a_spatula_and_a_cylinder_taps_and_pours_the_water():
    bench = CORE + [{"id": "spatula_1", "kind": "spatula"}, {"id": "cyl", "kind": "graduated_cylinder"}]
    out = PLANNER.plan(PLAIN_TEXT, scene(bench))
    assert out.kind == "plan", out.message
    plan = out.plan
    assert validate_machine(plan) == []
    assert run_to_the_end(plan) == ["place", "tare", "tap", "move_to", "pour", "press", "observe", "verify", "report"]
    assert plan.module_instantiation.dispenser.mode == "solid_taps"
    assert plan.module_instantiation.vision.preconditions == ["balance_clear", "beaker_empty"]
    assert plan.subtask("add_water").parameters == {"source": "cyl", "target": "beaker_main", "volume_ml": 50.0}
    assert "bottle_grasped" not in plan.state_machine.states and "grasp_ok" not in plan.state_machine.input_symbols
    assert plan.subtask("tare_balance").dependencies == ["place_beaker"]  # the bottle's grasp is not there


def test_a_bottle_the_scene_says_holds_the_solid_is_poured_from():
    bench = CORE + [{"id": "nacl_jar", "kind": "reagent_bottle", "label": "NaCl"},
                    {"id": "cyl", "kind": "graduated_cylinder"}]
    out = PLANNER.plan(PLAIN_TEXT, scene(bench))
    assert out.kind == "plan", out.message
    assert out.plan.subtask("dose_solid").parameters["source"] == "nacl_jar"
    assert out.plan.subtask("dose_solid").primitive == "pour_solid"


def test_a_bench_with_neither_way_is_refused_naming_both():
    out = PLANNER.plan(PLAIN_TEXT, scene(CORE))
    assert out.kind == "refusal"
    assert out.message.endswith(
        "The current experimental scene lacks solid reagent bottle or spatula, graduated cylinder or water "
        "already in the beaker.")
    assert out.reasons == ["missing: solid reagent bottle or spatula",
                           "missing: graduated cylinder or water already in the beaker"]


def test_the_means_the_instruction_asks_for_is_required_even_when_another_is_there():
    out = PLANNER.plan(TWIN_TEXT.replace("from the reagent bottle", "with the spatula"), scene(TWIN_BENCH))
    assert out.kind == "refusal" and out.reasons == ["missing: spatula"]


def test_water_said_to_be_in_a_beaker_the_scene_says_holds_something_else():
    bench = [dict(o, contains="hcl") if o["kind"] == "beaker" else o for o in TWIN_BENCH]
    bench = [dict(o, contains="nacl") if o["kind"] == "solid_bottle" else o for o in bench]
    out = PLANNER.plan(TWIN_TEXT, scene(bench))
    assert out.kind == "refusal" and "missing: graduated cylinder or water already in the beaker" in out.reasons


def test_the_cylinder_limits_only_water_that_is_poured():
    # 120 mL exceeds the 100 mL cylinder; already in a 150 mL beaker it is not measured with it
    poured = PLANNER.plan("Weigh 2.5 g of NaCl and dissolve it in 120 mL of water.")
    assert poured.kind == "refusal" and any("CYLINDER_CAPACITY" in r for r in poured.reasons)
    in_beaker = PLANNER.plan("Pour 2.5 g of NaCl from its bottle into the 150 mL beaker containing 120 mL of water "
                             "and dissolve it.")
    assert in_beaker.kind == "plan", in_beaker.message
    assert not any(t.primitive == "pour" for t in in_beaker.plan.task_decomposition)


# ---------------------------------------------------------------------------------------------- template
def test_variants_drop_their_states_symbols_and_subtasks_and_keep_the_chain():
    proto = PLANNER.protocols.for_family("weighing_dissolution")
    base = {"experiment_name": "w", "solid_name": "nacl", "solid_display": "NaCl", "target_mass_g": 1.0,
            "water_volume_ml": 20.0, "output_format": ["report"]}
    for solid in ("bottle", "spatula"):
        for water in ("beaker", "cylinder"):
            filled = proto.fill({**base, "solid_source": solid, "water_source": water})
            ids = [t["id"] for t in filled["task_decomposition"]]
            assert len(ids) == len(set(ids))
            assert ("grasp_bottle" in ids) == (solid == "bottle") and ("add_water" in ids) == (water == "cylinder")
            for t in filled["task_decomposition"]:
                assert set(t["dependencies"]) <= set(ids), (solid, water, t)
            machine = filled["state_machine"]
            assert ("bottle_grasped" in machine["states"]) == (solid == "bottle")
            assert set(machine["state_timeouts_s"]) == set(machine["states"]) - {"accepted"}
    with pytest.raises(ProtocolError, match="solid_source='shovel'"):
        proto.fill({**base, "solid_source": "shovel"})


def test_a_malformed_alternatives_block_is_refused_at_load(tmp_path: Path):
    doc = yaml.safe_load((default_protocols_dir() / "weighing_dissolution.yaml").read_text())
    doc["alternatives"][1]["options"][0]["condition"] = "water_in_the_flask"
    (tmp_path / "w.yaml").write_text(yaml.safe_dump(doc))
    with pytest.raises(ProtocolError, match="unknown condition"):
        ProtocolLibrary.load(tmp_path)
    doc = yaml.safe_load((default_protocols_dir() / "weighing_dissolution.yaml").read_text())
    doc["defaults"]["water_source"] = "tap"
    (tmp_path / "w.yaml").write_text(yaml.safe_dump(doc))
    with pytest.raises(ProtocolError, match="water_source='tap'"):
        ProtocolLibrary.load(tmp_path)
