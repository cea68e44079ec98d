"""Serving core of the VLA backend: refusals, aborts on garbage output, limits, ensembling, completion."""
import json

import numpy as np
import pytest
import torch

from agentchemist.policy.vla.configuration_vla import tiny_config
from agentchemist.policy.vla.modeling_vla import VLAPolicy
from agentchemist.policy.vla.serve import (LOWER, UPPER, Observation, PolicyAbort, PolicyRefused, VLARunner,
                                           VLAServeConfig, urdf_velocity_limits)

HOME = np.array([0.0, 0.5, -0.5, 0.0, 0.0, 0.0, 0.06] * 2)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    torch.manual_seed(0)
    d = tmp_path_factory.mktemp("ckpt")
    model = VLAPolicy(tiny_config(tasks=("grasp pipette",)))
    model.set_stats({"observation.state": {"mean": HOME.tolist(), "std": [0.5] * 14},
                     "action": {"mean": HOME.tolist(), "std": [0.01] * 14}})
    model.save_pretrained(d)
    return d


def obs(t=0.0, state=HOME):
    img = np.full((120, 160, 3), 100, np.uint8)
    return Observation(front=img, wrists=[img, img], audio=np.zeros(48000, np.float32), audio_rate=48000,
                       state=np.array(state, float), stamps={"front": t, "joint states": t})


def runner(checkpoint, **kw):
    return VLARunner(VLAServeConfig(checkpoint=str(checkpoint), **kw))


def test_refusals(checkpoint, tmp_path):
    with pytest.raises(PolicyRefused, match="no VLA checkpoint"):
        VLARunner(VLAServeConfig())
    with pytest.raises(PolicyRefused, match="no config.json"):
        VLARunner(VLAServeConfig(checkpoint=str(tmp_path)))
    bad = json.loads((checkpoint / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**bad, "n_blocks": 3}))
    (tmp_path / "model.safetensors").write_bytes((checkpoint / "model.safetensors").read_bytes())
    with pytest.raises(PolicyRefused, match="does not match"):
        VLARunner(VLAServeConfig(checkpoint=str(tmp_path)))
    r = runner(checkpoint)
    assert r.instruction("grasp_pipette", {}) == "grasp pipette"
    assert r.instruction("grasp", {"object": "pipette_1", "side": "right"}) == "grasp pipette"
    with pytest.raises(PolicyRefused, match="not one the VLA policy was trained on"):
        r.instruction("stir_vigorously", {})


def test_missing_and_stale_observations_abort(checkpoint):
    ep = runner(checkpoint).episode("grasp pipette", 0.0)
    o = obs()
    o.front = None
    with pytest.raises(PolicyAbort, match="missing observations: front camera"):
        ep.step(o, 0.0)
    with pytest.raises(PolicyAbort, match="front .stale."):
        ep.step(obs(t=0.0), 5.0)


def test_garbage_model_output_aborts(checkpoint, monkeypatch):
    r = runner(checkpoint)
    monkeypatch.setattr(r.model, "sample_actions", lambda b, steps=None, noise=None: torch.full((1, 10, 14), float("nan")))
    with pytest.raises(PolicyAbort, match="not finite"):
        r.episode("grasp pipette", 0.0).step(obs(), 0.0)
    far = torch.tensor(HOME, dtype=torch.float32).repeat(1, 10, 1)
    far[0, 3, 1] = 4.0  # joint2 limit is 3.14
    monkeypatch.setattr(r.model, "sample_actions", lambda b, steps=None, noise=None: far)
    with pytest.raises(PolicyAbort, match="left_joint2 = 4.000"):
        r.episode("grasp pipette", 0.0).step(obs(), 0.0)


def test_commands_are_clamped_ensembled_and_settle(checkpoint, monkeypatch):
    r = runner(checkpoint, settle_s=0.3)
    vmax = urdf_velocity_limits()
    assert vmax.shape == (14,) and vmax[0] == 3.0 and vmax[6] == 0.05
    target = HOME.copy()
    target[7] = 1.0                      # right joint1: 1 rad away, must be rate-limited to 0.3 rad per tick
    target[13] = 0.0705                  # right gripper: slightly beyond its 0.07 m limit, within the margin
    monkeypatch.setattr(r.model, "sample_actions",
                        lambda b, steps=None, noise=None: torch.tensor(target, dtype=torch.float32).repeat(1, 10, 1))
    ep = r.episode("grasp pipette", 0.0)
    state, prev, t = HOME.copy(), HOME.copy(), 0.0
    commands = []
    while not ep.done and t < 5.0:
        cmd = ep.step(obs(t, state), t)
        assert np.all(cmd >= LOWER - 1e-12) and np.all(cmd <= UPPER + 1e-12)
        assert np.all(np.abs(cmd - prev) <= vmax * r.dt + 1e-9)
        commands.append(cmd)
        prev, state, t = cmd, cmd.copy(), t + r.dt
    assert ep.done and abs(commands[-1][7] - 1.0) < 1e-9 and commands[-1][13] == 0.07
    assert abs(commands[0][7] - 0.3) < 1e-9
    report = ep.report(t, True)
    assert report["success"] and report["chunks"] == report["ticks"] == len(commands) and report["max_clamp"] > 0


def test_runs_out_of_time(checkpoint, monkeypatch):
    # One chunk from zero noise: the untrained model's random draws reach 0.08 m for a gripper (its action
    # std here is 0.01 about 0.06), beyond the gripper margin, which would abort before the clock runs out.
    r = runner(checkpoint, max_duration_s=1.0, samples=1)
    ep = r.episode("grasp pipette", 0.0)
    ep.step(obs(0.0), 0.0)
    with pytest.raises(PolicyAbort, match="did not complete"):
        ep.step(obs(1.5), 1.5)


def test_gripper_output_margin_is_in_the_grippers_unit(checkpoint, monkeypatch):
    """Issue 42: the margin was 0.5 for every joint, 7x a gripper's 0.07 m range: a gripper output of 0.3 m
    passed. The grippers have their own margin in metres (0.01)."""
    r = runner(checkpoint)
    wide = torch.tensor(HOME, dtype=torch.float32).repeat(1, 10, 1)
    wide[0, 2, 13] = 0.3
    monkeypatch.setattr(r.model, "sample_actions", lambda b, steps=None, noise=None: wide)
    with pytest.raises(PolicyAbort, match="right_gripper = 0.300"):
        r.episode("grasp pipette", 0.0).step(obs(), 0.0)


def _two_chunk_flow(model):
    """The exact rectified-flow velocity of a target that is, in normalised units, the chunk of all -1 or the
    chunk of all +1 with equal odds (a gripper that squeezes or releases): u = (x - E[a | x_t]) / t with
    E[a | x_t] = tanh((1 - t) sum(x_t) / t^2) for the direction of ones."""
    def velocity(prefix, mask, state, embodiment, x, t):
        tt = t[:, None, None].clamp_min(1e-3)
        mean = torch.tanh((1 - tt) * x.sum(dim=(1, 2), keepdim=True) / tt ** 2)
        return (x - mean) / tt
    return velocity


def test_a_bimodal_target_is_sampled_in_a_mode_not_between(checkpoint, monkeypatch):
    """Zero noise (the old deterministic rule) gives the median of a two-mode target: the midpoint, a half
    closed gripper. The medoid of fixed-noise samples lies in a mode and is the same every query."""
    one = runner(checkpoint, samples=1)
    monkeypatch.setattr(one.model, "velocity", _two_chunk_flow(one.model))
    batch = one.processor.observation(obs().front, obs().wrists, np.zeros(8000, np.float32), HOME, "grasp pipette")
    std, mean = one.model.action_std.numpy(), one.model.action_mean.numpy()
    mid = (one.sample(batch) - mean) / std
    assert np.abs(mid).max() < 1e-3                        # the median: between the modes
    many = runner(checkpoint, samples=8)
    monkeypatch.setattr(many.model, "velocity", _two_chunk_flow(many.model))
    first = (many.sample(batch) - mean) / std
    assert np.abs(np.abs(first) - 1.0).max() < 0.15       # in one of the modes
    assert np.all(np.sign(first) == np.sign(first[0, 0]))
    np.testing.assert_allclose(many.sample(batch), first * std + mean)  # deterministic


def test_medoid_keeps_the_majority_mode():
    from agentchemist.policy.vla.serve import medoid
    up, down = np.ones((10, 14)), -np.ones((10, 14))
    chunks = np.stack([up, up + 0.01, down, up - 0.02, down + 0.01])
    assert np.all(np.abs(medoid(chunks, np.ones(14)) - up) <= 0.021)


def test_a_draw_ends_on_its_squeeze_and_release_not_on_the_first_pause(tmp_path):
    """Issue 42: a draw pauses at the bottle before it squeezes; the settle rule alone ended it there with
    the pipette empty. Now it ends only after the measured right gripper squeezed and released."""
    torch.manual_seed(0)
    model = VLAPolicy(tiny_config(tasks=("draw titrant", "grasp pipette")))
    model.set_stats({"observation.state": {"mean": HOME.tolist(), "std": [0.5] * 14},
                     "action": {"mean": HOME.tolist(), "std": [0.01] * 14}})
    model.save_pretrained(tmp_path)
    r = VLARunner(VLAServeConfig(checkpoint=str(tmp_path), settle_s=0.3))
    plan = {0.0: 0.06, 2.0: 0.012, 3.0: 0.06}          # hold (the pause), squeeze at 2 s, release at 3 s
    current = {"g": 0.06}

    def chunk(b, steps=None, noise=None):
        target = HOME.copy()
        target[13] = current["g"]
        return torch.tensor(target, dtype=torch.float32).repeat(1, 10, 1)

    r.model.sample_actions = chunk
    ep, state, t = r.episode("draw titrant", 0.0), HOME.copy(), 0.0
    ended = None
    while t < 6.0:
        current["g"] = [g for start, g in plan.items() if t >= start - 1e-9][-1]
        cmd = ep.step(obs(t, state), t)
        state = cmd.copy()
        if ep.done:
            ended = t
            break
        t = round(t + r.dt, 6)
    assert ended is not None and ended > 3.0, ended    # not at the pause before the squeeze (0.3 s)
    assert ep.report(t, True)["condition"] == "released"
    pose = r.episode("grasp pipette", 0.0)              # a pose subtask still ends when the pose is held
    state, t = HOME.copy(), 0.0
    while not pose.done and t < 2.0:
        state = pose.step(obs(t, state), t).copy()
        t = round(t + r.dt, 6)
    assert pose.done and t < 1.0
