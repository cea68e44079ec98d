"""Demonstrations of what a titration plan sends the action policy: the grasp, the draw at the titrant
bottle (which fills the pipette in the twin, as lab_sim does on the graph) and the move over the beaker,
each starting where the one before ends, recorded under the instruction texts the plan's subtasks map to."""
import numpy as np
import pytest

from agentchemist.policy.vla.dataset import Dataset
from agentchemist.policy.vla.serve import subtask_instruction
from agentchemist.sim.vla_demos import TITRATION_SUBTASKS, random_scene, record_twin_demos, start_episode

#: The action_policy subtasks of hcl_short's plan on the graph (primitive, parameters), as the planner sends them.
PLAN = {"grasp_pipette": ("grasp", {"location": "beaker_main", "object": "pipette"}),
        "draw_titrant": ("draw", {"container": "titrant_bottle", "reagent": "naoh", "volume_ml": 6.5}),
        "position_over_beaker": ("move_to", {"target": "beaker_main"})}


def test_plan_subtasks_map_to_their_instruction_texts():
    texts = {k: subtask_instruction(*v) for k, v in PLAN.items()}
    assert texts == {"grasp_pipette": "grasp pipette (location=beaker_main)",
                     "draw_titrant": "draw titrant (container=titrant_bottle, reagent=naoh, volume_ml=6.5)",
                     "position_over_beaker": "position over beaker (target=beaker_main)"}


def test_the_draw_fills_the_pipette_and_the_move_starts_at_the_bottle():
    scene = random_scene(np.random.default_rng(0), 3)
    expert = start_episode(scene, "draw_titrant", chain=TITRATION_SUBTASKS)
    assert expert.twin.truth()["pipette"]["content_ml"] == 0.0
    assert expert.run("draw_titrant", [])
    assert expert.twin.truth()["pipette"]["content_ml"] > 5.0
    moved = start_episode(scene, "position_over_beaker", chain=TITRATION_SUBTASKS)
    bottle = np.asarray(moved.poses.pose("right", "titrant_bottle"))
    assert np.abs(np.asarray(moved.twin.arms["right"].position) - bottle).max() < 0.1  # jitter is 0.05


def test_recorded_under_the_plans_texts(tmp_path):
    texts = {k: subtask_instruction(*v) for k, v in PLAN.items()}
    root = record_twin_demos(tmp_path / "demos", 1, seed=5, subtasks=TITRATION_SUBTASKS, instructions=texts)
    assert sorted(Dataset(root).tasks.values()) == sorted(texts.values())
    with pytest.raises(ValueError, match="return_pipette"):
        record_twin_demos(tmp_path / "bad", 1, subtasks=TITRATION_SUBTASKS, instructions={"return_pipette": "x"})


def test_record_cli_refuses_a_malformed_instruction(tmp_path, capsys):
    from agentchemist.vla_cli import main

    assert main(["record", "--out", str(tmp_path / "d"), "--episodes", "1", "--instruction", "no equals sign"]) == 2
    assert "SUBTASK=TEXT" in capsys.readouterr().err
    assert not (tmp_path / "d").exists()  # refused before recording anything
