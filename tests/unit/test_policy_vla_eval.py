"""`agentchemist policy eval`: randomised twin episodes per subtask, Wilson interval, failure frames, JSON
result with commit/machine/load, and the policy card beside the checkpoint."""
import json

import pytest

from agentchemist.cli import main
from agentchemist.policy.vla.card import CARD_JSON, CARD_MD
from agentchemist.policy.vla.train import TrainOptions, train
from agentchemist.sim.vla_demos import record_twin_demos
from agentchemist.sim.vla_eval import wilson


def test_wilson_interval_known_values():
    assert wilson(8, 10) == pytest.approx((0.4902, 0.9433), abs=1e-4)
    assert wilson(0, 2) == pytest.approx((0.0, 0.6576), abs=1e-4)
    lo, hi = wilson(100, 100)
    assert hi == 1.0 and lo == pytest.approx(0.9630, abs=1e-4)


def test_eval_writes_result_failures_and_the_card(tmp_path_factory, tmp_path, capsys):
    demos = record_twin_demos(tmp_path_factory.mktemp("demos"), 1, seed=5, subtasks=("grasp_pipette",))
    train(demos, tmp_path / "run", "tiny", TrainOptions(steps=2, batch_size=2, progress=False, threads=1))
    ckpt = tmp_path / "run" / "checkpoints" / "last"
    card = json.loads((ckpt / CARD_JSON).read_text())
    assert card["training"]["steps"] == 2 and card["training"]["hardware"]["cpu_count"] >= 1
    assert card["training"]["tasks"] == ["grasp pipette"]
    out = tmp_path / "eval"
    # Two steps of training cannot grasp; 1 s of twin time per episode keeps the test short: failures.
    assert main(["policy", "eval", "--checkpoint", str(ckpt), "--out", str(out), "--episodes", "2", "--seed", "3",
                 "--subtasks", "grasp_pipette", "--max-duration", "1"]) == 0
    result = json.loads((out / "eval.json").read_text())
    r = result["subtasks"]["grasp_pipette"]
    assert r["episodes"] == 2 and r["seeds"] == [3000, 3001] and r["successes"] + len(r["failures"]) == 2
    assert r["wilson95"] == [round(x, 4) for x in wilson(r["successes"], 2)]
    assert result["commit"] and "cores" in result["machine"] and len(result["load_average"]) == 3
    for f in r["failures"]:
        assert (out / "failures" / f"grasp_pipette-seed{f['seed']}.png").is_file() and f["reason"]
    card = json.loads((ckpt / CARD_JSON).read_text())
    assert card["evaluation"]["subtasks"]["grasp_pipette"]["episodes"] == 2 and "training" in card
    assert "| grasp_pipette |" in (ckpt / CARD_MD).read_text()
    assert main(["policy", "eval", "--checkpoint", str(ckpt), "--out", str(out), "--subtasks", "draw_titrant"]) == 2
    assert "no success condition in the twin" in capsys.readouterr().err
