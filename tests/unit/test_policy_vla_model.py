"""The VLA policy model: shapes and masks (tiny and paper), flow-matching overfit, checkpoint round trip."""
import json

import pytest
import torch

from agentchemist.policy.vla.configuration_vla import VLAConfig, VLAConfigError, paper_config, tiny_config
from agentchemist.policy.vla.modeling_vla import VLAInputError, VLAPolicy, count_parameters


def make_batch(config, b=2, seed=0, text_len=12):
    g = torch.Generator().manual_seed(seed)
    c = config
    return {
        "observation.images.main": torch.randn(b, 3, c.image_size, c.image_size, generator=g),
        "observation.images.wrist": torch.randn(b, c.n_wrist_views, 3, c.wrist_image_size, c.wrist_image_size,
                                                generator=g),
        "observation.wrist_mask": torch.ones(b, c.n_wrist_views, dtype=torch.bool),
        "observation.audio": torch.rand(b, 1, c.audio_frames, c.n_mels, generator=g),
        "observation.audio_mask": torch.ones(b, dtype=torch.bool),
        "observation.state": torch.randn(b, 14, generator=g),
        "text.input_ids": torch.randint(0, 256, (b, text_len), generator=g),
        "text.attention_mask": torch.ones(b, text_len, dtype=torch.long),
        "embodiment": torch.zeros(b, dtype=torch.long),
        "action": torch.randn(b, c.chunk_size, 14, generator=g),
        "action_is_pad": torch.zeros(b, c.chunk_size, dtype=torch.bool),
    }


@pytest.fixture(scope="module")
def tiny():
    torch.manual_seed(0)
    return VLAPolicy(tiny_config()).eval()


def test_tiny_shapes_loss_and_sampler(tiny):
    c = tiny.config
    batch = make_batch(c, b=3)
    loss = tiny(batch)
    assert loss.ndim == 0 and torch.isfinite(loss) and loss > 0
    prefix, mask = tiny.encode_prefix(batch)
    assert prefix.shape[:2] == mask.shape and prefix.shape[0] == 3 and prefix.shape[2] == c.width
    for steps in (1, 4):
        chunk = tiny.sample_actions(batch, steps=steps)
        assert chunk.shape == (3, c.chunk_size, 14) and torch.isfinite(chunk).all()
    # one Euler step from the same noise: the chunk is noise minus the predicted velocity (t 1 -> 0)
    noise = torch.randn(3, c.chunk_size, 14)
    a1 = tiny.sample_actions(batch, steps=1, noise=noise)
    prefix, mask = tiny.encode_prefix(batch)
    u = tiny.velocity(prefix, mask, batch["observation.state"], batch["embodiment"], noise, torch.ones(3))
    assert torch.allclose(a1, tiny.unnormalize_action(noise - u), atol=1e-5)


def test_masks_hide_padding_and_missing_views(tiny):
    c = tiny.config
    batch = make_batch(c, b=2, seed=1)
    noise = torch.randn(2, c.chunk_size, 14)
    # sample 1: the last 4 text tokens are padding, the left wrist view and the audio are missing
    batch["text.attention_mask"][1, -4:] = 0
    batch["observation.wrist_mask"][1, 0] = False
    batch["observation.audio_mask"][1] = False
    ref = tiny.sample_actions(batch, steps=2, noise=noise)
    changed = {k: v.clone() for k, v in batch.items()}
    changed["text.input_ids"][1, -4:] = 7
    changed["observation.images.wrist"][1, 0] += 5.0
    changed["observation.audio"][1] += 1.0
    out = tiny.sample_actions(changed, steps=2, noise=noise)
    assert torch.allclose(out[1], ref[1], atol=1e-4)
    # what is not masked matters: the same change on sample 0 moves its chunk
    changed["observation.images.wrist"][0, 0] += 5.0
    assert not torch.allclose(tiny.sample_actions(changed, steps=2, noise=noise)[0], ref[0], atol=1e-4)


def test_bad_batches_are_refused(tiny):
    c = tiny.config
    batch = make_batch(c)
    bad = dict(batch, **{"observation.state": torch.full((2, 14), float("nan"))})
    with pytest.raises(VLAInputError, match="non-finite"):
        tiny.sample_actions(bad)
    with pytest.raises(VLAInputError, match="shape"):
        tiny.sample_actions(dict(batch, **{"observation.images.main": torch.zeros(2, 3, 8, 8)}))
    with pytest.raises(VLAInputError, match="lacks"):
        tiny.sample_actions({k: v for k, v in batch.items() if k != "observation.audio"})
    with pytest.raises(VLAInputError, match="embodiment"):
        tiny.sample_actions(dict(batch, embodiment=torch.tensor([0, 3])))


def test_paper_config_builds_on_meta_with_12_blocks():
    c = paper_config()
    with torch.device("meta"):
        model = VLAPolicy(c)
    counts = count_parameters(model)
    assert len(model.backbone.layers) == 12 and c.width == 768
    # Florence-2-base's encoder side (DaViT + projector + BART-base encoder) is ~ 150 M, ViT-B/16 ~ 86 M,
    # HTSAT-base ~ 28 M, 12 blocks 768 wide ~ 85 M
    assert 100e6 < counts["florence2_encoder"] < 200e6
    assert 80e6 < counts["wrist_vit"] < 90e6
    assert 20e6 < counts["clap_audio"] < 40e6
    assert 80e6 < counts["backbone"] < 90e6
    assert counts["total"] > 300e6


@pytest.mark.slow(reason="builds the paper-size model (~370 M parameters) on CPU and runs it at 224 px")
def test_paper_config_forward_shapes():
    torch.manual_seed(0)
    model = VLAPolicy(paper_config()).eval()
    batch = make_batch(model.config, b=1)
    chunk = model.sample_actions(batch, steps=2)
    assert chunk.shape == (1, 50, 14) and torch.isfinite(chunk).all()


def test_tiny_overfits_ten_demonstrations():
    """Ten demonstrations (each a chunk ramping from its state toward its own goal): the flow-matching loss,
    measured at fixed noise and times, falls 10x within a few hundred AdamW steps."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # faster than two contended threads on a shared machine
    try:
        torch.manual_seed(0)
        model = VLAPolicy(tiny_config())
        c = model.config
        batch = make_batch(c, b=10, seed=3)
        g = torch.Generator().manual_seed(4)
        goal = torch.randn(10, 14, generator=g)
        state = batch["observation.state"][:, None]
        batch["action"] = state + (goal[:, None] - state) * torch.linspace(0.1, 1.0, c.chunk_size)[None, :, None]
        eval_noise = torch.randn(10, c.chunk_size, 14, generator=g)
        eval_t = torch.rand(10, generator=g) * 0.9 + 0.05
        with torch.no_grad():
            before = model(batch, noise=eval_noise, t=eval_t).item()
        steps = 400
        opt = torch.optim.AdamW(model.parameters(), lr=8e-3, weight_decay=0.01)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
        after = before
        for step in range(steps):
            loss = model(batch)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            if step % 25 == 24:
                with torch.no_grad():
                    after = model(batch, noise=eval_noise, t=eval_t).item()
                if after < before / 10:
                    break
    finally:
        torch.set_num_threads(threads)
    assert after < before / 10, (before, after)


def test_checkpoint_round_trip(tmp_path, tiny):
    tiny.set_stats({"observation.state": {"mean": [0.1] * 14, "std": [2.0] * 14},
                    "action": {"mean": [0.2] * 14, "std": [0.5] * 14}})
    tiny.save_pretrained(tmp_path)
    assert json.loads((tmp_path / "config.json").read_text())["name"] == "tiny"
    loaded = VLAPolicy.from_pretrained(tmp_path)
    batch = make_batch(tiny.config)
    noise = torch.randn(2, tiny.config.chunk_size, 14)
    assert torch.equal(tiny.sample_actions(batch, noise=noise), loaded.sample_actions(batch, noise=noise))
    assert torch.equal(loaded.action_std, torch.full((14,), 0.5))


def test_checkpoint_not_matching_its_config_is_refused(tmp_path, tiny):
    tiny.save_pretrained(tmp_path)
    data = json.loads((tmp_path / "config.json").read_text())
    data["width"] = 32
    (tmp_path / "config.json").write_text(json.dumps(data))
    with pytest.raises(VLAConfigError, match="does not match"):
        VLAPolicy.from_pretrained(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({**data, "widht": 64}))
    with pytest.raises(VLAConfigError, match="unknown"):
        VLAPolicy.from_pretrained(tmp_path)
    with pytest.raises(VLAConfigError, match="multiple of n_heads"):
        VLAConfig.from_dict({**tiny.config.to_dict(), "width": 66})
