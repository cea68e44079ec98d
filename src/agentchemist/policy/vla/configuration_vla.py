"""Configuration of the action agent's audio-visual-language-action policy (LeRobot's per-policy layout:
configuration / modeling / processor).

The architecture is the paper's (SPEC.md, action_policy row): the main-view image and the subtask text go
through a Florence-2 encoder (DaViT vision tower + BART text encoder, transformers' own classes); the two
wrist views through one shared ViT; contact audio through CLAP's audio tower (HTSAT) on log-mel features;
14-joint proprioception, the flow-matching time step and the noisy action chunk form the control tokens. A
shared linear projection brings the encoders' tokens to the backbone's width, per-embodiment soft prompts
and input/output projections absorb the robot's form, and a stack of standard transformer blocks fuses it
all. ``tiny`` is for tests and CPU; ``paper`` has the described sizes (Florence-2-base encoder, ViT-B/16,
HTSAT-base, 12 backbone blocks).
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CONFIG_NAME = "config.json"
WEIGHTS_NAME = "model.safetensors"

#: 2 arms x (6 joints + gripper), in the bench's JOINT_NAMES order (left then right).
N_JOINTS = 14


class VLAConfigError(ValueError):
    """A configuration that cannot build a model, or one that does not match a checkpoint."""


@dataclass
class VLAConfig:
    name: str = "tiny"
    #: Main (front) camera image, square, pixels.
    image_size: int = 64
    #: Wrist cameras (left, right), square, pixels; both through the one shared ViT.
    wrist_image_size: int = 64
    n_wrist_views: int = 2
    #: Contact audio: sample rate, window length and log-mel bins fed to the CLAP audio tower.
    audio_sample_rate: int = 16000
    audio_window_s: float = 1.0
    n_mels: int = 32
    audio_frames: int = 64
    #: Subtask text: at most this many tokens (bytes when no tokenizer directory is given).
    max_text_tokens: int = 48
    n_joints: int = N_JOINTS
    #: Actions predicted per forward pass (an action chunk), at the control rate.
    chunk_size: int = 10
    control_rate_hz: float = 10.0
    #: Backbone: width, standard transformer blocks, heads, feed-forward width.
    width: int = 64
    n_blocks: int = 2
    n_heads: int = 4
    ffn_dim: int = 128
    dropout: float = 0.0
    #: Width every encoder's tokens have before the shared projection.
    encoder_dim: int = 64
    time_embed_dim: int = 32
    #: Embodiments with their own soft prompts and control projections; the first is this robot.
    embodiments: tuple[str, ...] = ("aloha_piper",)
    n_soft_prompts: int = 4
    #: Flow matching: Euler steps of the sampler (t from 1 = noise to 0 = action).
    ode_steps: int = 10
    #: transformers sub-configurations (dicts of the config classes' fields).
    florence_vision: dict[str, Any] = field(default_factory=dict)
    florence_text: dict[str, Any] = field(default_factory=dict)
    wrist_vit: dict[str, Any] = field(default_factory=dict)
    clap_audio: dict[str, Any] = field(default_factory=dict)
    #: Local directories of pretrained weights (never a hub id): Florence-2, a ViT, a CLAP model, tokenizer.
    florence_pretrained: str = ""
    vit_pretrained: str = ""
    clap_pretrained: str = ""
    tokenizer_dir: str = ""
    #: The instructions (subtask texts) the policy was trained on; serving refuses others. Set by training.
    tasks: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        self.embodiments = tuple(self.embodiments)
        self.tasks = tuple(self.tasks)
        self.validate()

    def validate(self) -> None:
        problems = []
        if self.n_joints != N_JOINTS:
            problems.append(f"n_joints must be {N_JOINTS} (2 x (6 + gripper)), got {self.n_joints}")
        if self.width % self.n_heads:
            problems.append(f"width {self.width} is not a multiple of n_heads {self.n_heads}")
        if self.chunk_size < 1 or self.ode_steps < 1 or self.n_blocks < 1:
            problems.append("chunk_size, ode_steps and n_blocks must be >= 1")
        if not self.embodiments:
            problems.append("at least one embodiment is needed")
        fv, ft = self.florence_vision, self.florence_text
        if fv.get("projection_dim", self.encoder_dim) != self.encoder_dim or \
                ft.get("d_model", self.encoder_dim) != self.encoder_dim:
            problems.append("Florence-2's projection_dim and text d_model must equal encoder_dim (shared projection)")
        if self.wrist_vit.get("hidden_size", self.encoder_dim) != self.encoder_dim:
            problems.append("the wrist ViT's hidden_size must equal encoder_dim (shared projection)")
        ca = self.clap_audio
        if ca and ca["patch_embeds_hidden_size"] * 2 ** (len(ca["depths"]) - 1) != self.encoder_dim:
            problems.append("CLAP's last-stage width (patch_embeds_hidden_size * 2^(stages-1)) must equal encoder_dim")
        if ca and ca.get("num_mel_bins", self.n_mels) != self.n_mels:
            problems.append("CLAP's num_mel_bins must equal n_mels")
        if problems:
            raise VLAConfigError("; ".join(problems))

    @property
    def audio_samples(self) -> int:
        return int(round(self.audio_sample_rate * self.audio_window_s))

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["embodiments"] = list(self.embodiments)
        d["tasks"] = list(self.tasks)
        return d

    def save(self, directory: str | Path) -> Path:
        path = Path(directory) / CONFIG_NAME
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n")
        return path

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "VLAConfig":
        if not isinstance(data, dict):
            raise VLAConfigError(f"a VLA config must be a JSON object, got {type(data).__name__}")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise VLAConfigError(f"unknown VLA config fields: {', '.join(unknown)}")
        try:
            return cls(**data)
        except TypeError as exc:
            raise VLAConfigError(f"bad VLA config: {exc}") from None

    @classmethod
    def load(cls, directory: str | Path) -> "VLAConfig":
        path = Path(directory) / CONFIG_NAME
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            raise VLAConfigError(f"no {CONFIG_NAME} in {directory}") from None
        except json.JSONDecodeError as exc:
            raise VLAConfigError(f"{path} is not JSON: {exc}") from None
        return cls.from_dict(data)


def tiny_config(**overrides: Any) -> VLAConfig:
    """A few hundred thousand parameters: tests, CPU training on twin demonstrations, fast serving."""
    e = 64
    base = dict(
        name="tiny", image_size=32, wrist_image_size=32, n_mels=16, audio_frames=32, audio_window_s=0.5,
        width=64, n_blocks=2, n_heads=4, ffn_dim=128, encoder_dim=e, chunk_size=10, max_text_tokens=32,
        florence_vision=dict(depths=[1, 1], patch_size=[7, 3], patch_stride=[4, 2], patch_padding=[3, 1],
                             patch_prenorm=[False, True], embed_dim=[32, 64], num_heads=[2, 4], num_groups=[2, 4],
                             window_size=2, projection_dim=e, max_position_embeddings=8, drop_path_rate=0.0),
        florence_text=dict(vocab_size=260, d_model=e, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                           decoder_attention_heads=2, encoder_ffn_dim=128, decoder_ffn_dim=128,
                           max_position_embeddings=256, dropout=0.0, attention_dropout=0.0, activation_dropout=0.0),
        wrist_vit=dict(hidden_size=e, num_hidden_layers=1, num_attention_heads=2, intermediate_size=128,
                       image_size=32, patch_size=16, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0),
        clap_audio=dict(spec_size=32, num_mel_bins=16, window_size=2, depths=[1, 1], num_attention_heads=[2, 4],
                        patch_embeds_hidden_size=32, hidden_size=e, patch_stride=[4, 4], patch_size=4,
                        hidden_dropout_prob=0.0, drop_path_rate=0.0),
    )
    base.update(overrides)
    return VLAConfig(**base)


def paper_config(**overrides: Any) -> VLAConfig:
    """The described sizes: Florence-2-base's encoder (DaViT 1-1-9-1, 128..1024 channels, BART-base text
    encoder, 768 wide), a ViT-B/16 shared by the wrist views, CLAP's HTSAT-base audio tower, 12 backbone
    blocks 768 wide. Images 224 x 224 (Florence-2 itself uses 768; the paper gives no resolution here)."""
    e = 768
    base = dict(
        name="paper", image_size=224, wrist_image_size=224, n_mels=64, audio_frames=1001, audio_window_s=10.0,
        audio_sample_rate=48000, max_text_tokens=64, width=768, n_blocks=12, n_heads=12, ffn_dim=3072,
        encoder_dim=e, chunk_size=50, control_rate_hz=50.0, dropout=0.1, time_embed_dim=128, n_soft_prompts=8,
        embodiments=("aloha_piper", "single_arm", "dual_arm_other"),
        florence_vision=dict(depths=[1, 1, 9, 1], embed_dim=[128, 256, 512, 1024], num_heads=[4, 8, 16, 32],
                             num_groups=[4, 8, 16, 32], window_size=12, projection_dim=e,
                             max_position_embeddings=50, drop_path_rate=0.1),
        florence_text=dict(vocab_size=51289, d_model=e, encoder_layers=6, decoder_layers=6,
                           encoder_attention_heads=12, decoder_attention_heads=12, encoder_ffn_dim=3072,
                           decoder_ffn_dim=3072, max_position_embeddings=1024),
        wrist_vit=dict(hidden_size=e, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
                       image_size=224, patch_size=16),
        clap_audio=dict(spec_size=256, num_mel_bins=64, window_size=8, depths=[2, 2, 6, 2],
                        num_attention_heads=[4, 8, 16, 32], patch_embeds_hidden_size=96, hidden_size=e),
    )
    base.update(overrides)
    return VLAConfig(**base)


PRESETS = {"tiny": tiny_config, "paper": paper_config}


def preset(name: str, **overrides: Any) -> VLAConfig:
    try:
        return PRESETS[name](**overrides)
    except KeyError:
        raise VLAConfigError(f"unknown VLA preset '{name}' (known: {', '.join(PRESETS)})") from None
