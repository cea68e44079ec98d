"""`agentchemist policy train`: checkpoints with config beside, stats carried, resumable."""
import json

import pytest
import torch

from agentchemist.cli import main
from agentchemist.policy.vla.modeling_vla import VLAPolicy
from agentchemist.policy.vla.train import TrainOptions, train
from agentchemist.sim.vla_demos import record_twin_demos


@pytest.fixture(scope="module")
def demos(tmp_path_factory):
    return record_twin_demos(tmp_path_factory.mktemp("demos"), 1, seed=5, subtasks=("grasp_pipette",))


def test_train_saves_checkpoints_and_resumes(demos, tmp_path):
    opts = TrainOptions(steps=4, batch_size=4, save_every=2, progress=False, threads=1)
    first = train(demos, tmp_path, "tiny", opts)
    assert first["resumed_from"] == 0 and first["device"] == "cpu" and not first["bf16"]
    for name in ("step-000002", "step-000004", "last"):
        d = tmp_path / "checkpoints" / name
        assert (d / "config.json").is_file() and (d / "model.safetensors").is_file()
        assert (d / "training_state.pt").is_file()
    model = VLAPolicy.from_pretrained(tmp_path / "checkpoints" / "last")
    stats = json.loads((demos / "meta" / "stats.json").read_text())
    assert torch.allclose(model.action_mean, torch.tensor(stats["action"]["mean"], dtype=torch.float32))
    more = train(demos, tmp_path, "tiny", TrainOptions(steps=6, batch_size=4, save_every=100, progress=False,
                                                        threads=1), resume=True)
    assert more["resumed_from"] == 4 and more["steps"] == 6
    assert torch.load(tmp_path / "checkpoints" / "last" / "training_state.pt", weights_only=True)["step"] == 6


def test_cli_train_and_a_missing_dataset(demos, tmp_path, capsys):
    assert main(["policy", "train", "--dataset", str(demos), "--out", str(tmp_path), "--steps", "2",
                 "--batch-size", "2", "--threads", "1"]) == 0
    assert json.loads((tmp_path / "train_summary.json").read_text())["steps"] == 2
    assert main(["policy", "train", "--dataset", str(tmp_path / "nowhere"), "--out", str(tmp_path)]) == 2
    assert "not a readable LeRobot v3 dataset" in capsys.readouterr().err
