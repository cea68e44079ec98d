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


def test_resuming_with_more_steps_continues_the_schedule(demos, tmp_path):
    """Issue 42: resuming with a larger --steps restarted the cosine at its peak (the saved T_max was kept, so
    past it the cosine climbed back up). The schedule now follows the new total and continues from the step."""
    opts = dict(batch_size=2, save_every=1000, progress=False, threads=1, lr=1e-3, log_every=1)
    train(demos, tmp_path, "tiny", TrainOptions(steps=4, **opts))
    train(demos, tmp_path, "tiny", TrainOptions(steps=8, **opts), resume=True)
    state = torch.load(tmp_path / "checkpoints" / "last" / "training_state.pt", weights_only=True)
    assert state["step"] == 8 and state["total_steps"] == 8
    log = [json.loads(line) for line in (tmp_path / "train_log.jsonl").read_text().splitlines()]
    lrs = [r["lr"] for r in log if r["kind"] == "train"]
    steps = [r["step"] for r in log if r["kind"] == "train"]
    assert steps == sorted(steps) and steps[-1] == 8
    # The cosine over 8 steps, from step 4 on (a logged lr is the one the update at step - 1 used): never
    # back at the peak and falling to the end.
    import math
    resumed = [r for r in log if r["kind"] == "train" and r["step"] > 4]
    assert [r["step"] for r in resumed] == [5, 6, 7, 8]
    for r in resumed:
        assert r["lr"] == pytest.approx(1e-3 * 0.5 * (1 + math.cos(math.pi * (r["step"] - 1) / 8)), rel=1e-6)
    assert all(a >= b for a, b in zip(lrs[len(lrs) - len(resumed):], lrs[len(lrs) - len(resumed) + 1:]))


def test_validation_split_loss_log_and_augmentation(tmp_path_factory, tmp_path):
    """Whole episodes held out, a validation loss every log_every steps, images augmented when asked."""
    data = record_twin_demos(tmp_path_factory.mktemp("two"), 2, seed=7, subtasks=("grasp_pipette",))
    summary = train(data, tmp_path, "tiny", TrainOptions(steps=4, batch_size=2, save_every=100, progress=False,
                                                          threads=1, log_every=2, val_fraction=0.5, augment=True))
    assert len(summary["val_episodes"]) == 1 and summary["val_frames"] > 0 and summary["augment"]
    log = [json.loads(line) for line in (tmp_path / "train_log.jsonl").read_text().splitlines()]
    assert [(r["kind"], r["step"]) for r in log] == [("train", 2), ("val", 2), ("train", 4), ("val", 4)]
    assert all(r["loss"] > 0 and r["loss"] == r["loss"] for r in log)
    assert summary["last_val_loss"] == log[-1]["loss"]


def test_augmentation_shifts_and_jitters_within_bounds():
    from agentchemist.policy.vla.augment import augment_batch, shift_images
    gen = torch.Generator().manual_seed(0)
    x = torch.zeros(1, 3, 8, 8)
    x[0, :, 4, 4] = 1.0
    moved = shift_images(x, 2, gen)
    (ys, xs) = torch.nonzero(moved[0, 0], as_tuple=True)
    assert len(ys) == 1 and abs(int(ys[0]) - 4) <= 2 and abs(int(xs[0]) - 4) <= 2
    batch = {"observation.images.main": torch.randn(4, 3, 8, 8), "observation.images.wrist": torch.randn(4, 2, 3, 8, 8),
             "observation.state": torch.randn(4, 14)}
    out = augment_batch(batch, gen, max_shift=0, colour=0.1)
    assert out["observation.state"] is batch["observation.state"]
    assert out["observation.images.wrist"].shape == (4, 2, 3, 8, 8)
    assert not torch.equal(out["observation.images.main"], batch["observation.images.main"])
    assert (out["observation.images.main"] - batch["observation.images.main"]).abs().max() < 1.0
