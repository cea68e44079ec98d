"""The audio-visual-language-action policy (the paper's Action Agent model), in torch through transformers.

Tokens, in order: per-embodiment soft prompts | Florence-2 encoder tokens (main image, then subtask text)
| wrist-view ViT tokens (one shared ViT) | contact-audio tokens (CLAP's HTSAT tower) | control tokens. The
encoders' tokens share one linear projection to the backbone's width (plus a learned modality embedding);
each control token is [proprioception, flow-matching time embedding, noisy action k] through the
embodiment's own input projection. Standard transformer blocks fuse the sequence with global
self-attention (padding masked); the embodiment's output projection maps the control tokens to the
flow-matching velocity of the action chunk (both arms, 14 values per step).

Flow matching (rectified flow): x_t = t * noise + (1 - t) * action, the network predicts u = noise - action;
the sampler integrates dx/dt = u from t = 1 (noise) to t = 0 (action) with Euler steps. States and actions are
normalised with statistics kept as buffers, so a checkpoint carries them.
"""
from __future__ import annotations

import math
from pathlib import Path

import torch
from torch import Tensor, nn
from transformers import (BartConfig, ClapAudioConfig, ClapAudioModel, Florence2Config, Florence2Model,
                          Florence2VisionConfig, ViTConfig, ViTModel)

from agentchemist.policy.vla.configuration_vla import CONFIG_NAME, WEIGHTS_NAME, VLAConfig, VLAConfigError

#: Modality embeddings added after the shared projection.
PROMPT, MAIN, TEXT, WRIST, AUDIO, CONTROL = range(6)


class VLAInputError(ValueError):
    """A batch the model cannot take: a missing key, a wrong shape, a non-finite value."""


def _sinusoid(t: Tensor, dim: int) -> Tensor:
    """Sinusoidal embedding of the flow-matching time t in [0, 1] (B,) -> (B, dim)."""
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, device=t.device, dtype=torch.float32) / half)
    angles = t.float()[:, None] * 1000.0 * freqs[None]
    return torch.cat([angles.sin(), angles.cos()], dim=-1)


def build_florence(config: VLAConfig, pretrained: bool) -> Florence2Model:
    """Florence-2 (DaViT vision tower, projector, BART) from the config, or from a local directory. Only its
    encoder side is used: the BART decoder is dropped (the policy decodes actions, not text)."""
    if pretrained and config.florence_pretrained:
        model = Florence2Model.from_pretrained(config.florence_pretrained, local_files_only=True)
        dims = (model.config.vision_config.projection_dim, model.config.text_config.d_model)
        if dims != (config.encoder_dim, config.encoder_dim):
            raise VLAConfigError(f"Florence-2 in {config.florence_pretrained} is {dims[1]} wide; encoder_dim is "
                                 f"{config.encoder_dim}")
    else:
        text = BartConfig(**config.florence_text)
        fc = Florence2Config(vision_config=Florence2VisionConfig(**config.florence_vision).to_dict(),
                             text_config=text.to_dict(), image_token_id=text.vocab_size - 1)
        model = Florence2Model(fc)
    model.language_model.decoder = None
    return model


class VLAPolicy(nn.Module):
    def __init__(self, config: VLAConfig, load_pretrained: bool = True):
        super().__init__()
        config.validate()
        self.config = c = config
        self.florence = build_florence(c, load_pretrained)
        if load_pretrained and c.vit_pretrained:
            self.wrist_vit = ViTModel.from_pretrained(c.vit_pretrained, local_files_only=True, add_pooling_layer=False)
        else:
            self.wrist_vit = ViTModel(ViTConfig(**c.wrist_vit), add_pooling_layer=False)
        if load_pretrained and c.clap_pretrained:
            self.audio_tower = ClapAudioModel.from_pretrained(c.clap_pretrained, local_files_only=True)
        else:
            self.audio_tower = ClapAudioModel(ClapAudioConfig(**c.clap_audio))
        self.shared_projection = nn.Linear(c.encoder_dim, c.width)
        self.modality = nn.Embedding(6, c.width)
        self.wrist_view = nn.Embedding(c.n_wrist_views, c.width)
        n_emb = len(c.embodiments)
        self.soft_prompts = nn.Parameter(torch.randn(n_emb, c.n_soft_prompts, c.width) * 0.02)
        control_in = 2 * c.n_joints + c.time_embed_dim
        self.control_in = nn.ModuleList(nn.Linear(control_in, c.width) for _ in range(n_emb))
        self.control_pos = nn.Parameter(torch.randn(c.chunk_size, c.width) * 0.02)
        block = nn.TransformerEncoderLayer(c.width, c.n_heads, c.ffn_dim, c.dropout, activation="gelu",
                                           batch_first=True, norm_first=True)
        self.backbone = nn.TransformerEncoder(block, c.n_blocks, norm=nn.LayerNorm(c.width),
                                              enable_nested_tensor=False)
        self.control_out = nn.ModuleList(nn.Linear(c.width, c.n_joints) for _ in range(n_emb))
        for name in ("state_mean", "action_mean"):
            self.register_buffer(name, torch.zeros(c.n_joints))
        for name in ("state_std", "action_std"):
            self.register_buffer(name, torch.ones(c.n_joints))

    # -- normalisation -------------------------------------------------------------------------------
    def set_stats(self, stats: dict) -> None:
        """Mean/std of observation.state and action (as the dataset's stats.json gives them)."""
        for key, prefix in (("observation.state", "state"), ("action", "action")):
            mean = torch.as_tensor(stats[key]["mean"], dtype=torch.float32).reshape(-1)
            std = torch.as_tensor(stats[key]["std"], dtype=torch.float32).reshape(-1)
            if mean.shape != (self.config.n_joints,) or std.shape != mean.shape or not torch.isfinite(mean).all() \
                    or not torch.isfinite(std).all():
                raise VLAConfigError(f"stats for {key} must be {self.config.n_joints} finite means and stds")
            getattr(self, f"{prefix}_mean").copy_(mean)
            getattr(self, f"{prefix}_std").copy_(std.clamp_min(1e-3))

    def normalize_action(self, a: Tensor) -> Tensor:
        return (a - self.action_mean) / self.action_std

    def unnormalize_action(self, a: Tensor) -> Tensor:
        return a * self.action_std + self.action_mean

    # -- encoders -----------------------------------------------------------------------------------
    def check_batch(self, batch: dict, need_action: bool = False) -> int:
        c = self.config
        shapes = {
            "observation.images.main": (3, c.image_size, c.image_size),
            "observation.images.wrist": (c.n_wrist_views, 3, c.wrist_image_size, c.wrist_image_size),
            "observation.wrist_mask": (c.n_wrist_views,),
            "observation.audio": (1, c.audio_frames, c.n_mels),
            "observation.audio_mask": (),
            "observation.state": (c.n_joints,),
            "text.input_ids": None, "text.attention_mask": None, "embodiment": (),
        }
        if need_action:
            shapes.update({"action": (c.chunk_size, c.n_joints), "action_is_pad": (c.chunk_size,)})
        missing = [k for k in shapes if k not in batch]
        if missing:
            raise VLAInputError(f"batch lacks {', '.join(missing)}")
        b = batch["observation.state"].shape[0]
        for key, shape in shapes.items():
            x = batch[key]
            if shape is not None and tuple(x.shape) != (b, *shape):
                raise VLAInputError(f"{key} has shape {tuple(x.shape)}, expected {(b, *shape)}")
            if x.is_floating_point() and not torch.isfinite(x).all():
                raise VLAInputError(f"{key} has non-finite values")
        ids, mask = batch["text.input_ids"], batch["text.attention_mask"]
        if ids.ndim != 2 or ids.shape[0] != b or mask.shape != ids.shape or ids.shape[1] > c.max_text_tokens:
            raise VLAInputError(f"text.input_ids/attention_mask must be ({b}, <= {c.max_text_tokens}), "
                                f"got {tuple(ids.shape)} / {tuple(mask.shape)}")
        emb = batch["embodiment"]
        if emb.numel() and (emb.min() < 0 or emb.max() >= len(c.embodiments)):
            raise VLAInputError(f"embodiment ids must be in 0..{len(c.embodiments) - 1}")
        return b

    def encode_prefix(self, batch: dict) -> tuple[Tensor, Tensor]:
        """The observation tokens (B, N, width) and their validity mask (B, N), computed once per chunk."""
        c = self.config
        b = batch["observation.state"].shape[0]
        proj = self.shared_projection
        img = self.florence.get_image_features(batch["observation.images.main"]).pooler_output
        encoder = self.florence.language_model.encoder
        text = encoder.embed_tokens(batch["text.input_ids"])
        text_mask = batch["text.attention_mask"].bool()
        img_mask = torch.ones(img.shape[:2], dtype=torch.bool, device=img.device)
        fused = encoder(inputs_embeds=torch.cat([img, text.to(img.dtype)], 1),
                        attention_mask=torch.cat([img_mask, text_mask], 1).long()).last_hidden_state
        n_img = img.shape[1]
        kinds = torch.cat([torch.full((n_img,), MAIN), torch.full((fused.shape[1] - n_img,), TEXT)]).to(img.device)
        florence_tokens = proj(fused) + self.modality(kinds)
        wrist = batch["observation.images.wrist"]
        v = wrist.shape[1]
        wt = self.wrist_vit(pixel_values=wrist.flatten(0, 1)).last_hidden_state  # (B*V, P, D)
        p = wt.shape[1]
        views = torch.arange(v, device=wt.device).repeat_interleave(p)
        wrist_tokens = proj(wt.reshape(b, v * p, -1)) + self.modality.weight[WRIST] + self.wrist_view(views)
        wrist_mask = batch["observation.wrist_mask"].bool().repeat_interleave(p, dim=1)
        at = self.audio_tower(input_features=batch["observation.audio"]).last_hidden_state  # (B, D, f, t)
        at = at.flatten(2).transpose(1, 2)
        audio_tokens = proj(at) + self.modality.weight[AUDIO]
        audio_mask = batch["observation.audio_mask"].bool()[:, None].expand(b, at.shape[1])
        prompts = self.soft_prompts[batch["embodiment"]] + self.modality.weight[PROMPT]
        prompt_mask = torch.ones(prompts.shape[:2], dtype=torch.bool, device=prompts.device)
        tokens = torch.cat([prompts, florence_tokens, wrist_tokens, audio_tokens], 1)
        mask = torch.cat([prompt_mask, img_mask, text_mask, wrist_mask, audio_mask], 1)
        return tokens, mask

    def velocity(self, prefix: Tensor, prefix_mask: Tensor, state: Tensor, embodiment: Tensor, x_t: Tensor,
                 t: Tensor) -> Tensor:
        """Predicted flow-matching velocity (B, chunk, 14) for normalised noisy actions x_t at times t (B,)."""
        c = self.config
        b = x_t.shape[0]
        state_n = ((state - self.state_mean) / self.state_std)[:, None].expand(b, c.chunk_size, c.n_joints)
        temb = _sinusoid(t, c.time_embed_dim)[:, None].expand(b, c.chunk_size, c.time_embed_dim)
        raw = torch.cat([state_n, temb.to(x_t.dtype), x_t], -1)
        control = self._per_embodiment(self.control_in, raw, embodiment, c.width).to(prefix.dtype)
        control = control + self.control_pos + self.modality.weight[CONTROL]
        seq = torch.cat([prefix, control], 1)
        valid = torch.cat([prefix_mask, torch.ones(b, c.chunk_size, dtype=torch.bool, device=x_t.device)], 1)
        out = self.backbone(seq, src_key_padding_mask=~valid)[:, -c.chunk_size:]
        return self._per_embodiment(self.control_out, out, embodiment, c.n_joints)

    @staticmethod
    def _per_embodiment(layers: nn.ModuleList, x: Tensor, embodiment: Tensor, width: int) -> Tensor:
        """Each sample through its embodiment's own projection (one call when the batch has one)."""
        kinds = embodiment.unique().tolist()
        if len(kinds) == 1:
            return layers[kinds[0]](x)
        out = x.new_zeros(*x.shape[:-1], width)
        for e in kinds:
            rows = embodiment == e
            out[rows] = layers[e](x[rows])
        return out

    # -- training and sampling ------------------------------------------------------------------------
    def forward(self, batch: dict, noise: Tensor | None = None, t: Tensor | None = None) -> Tensor:
        """Flow-matching loss (mean squared velocity error over the unpadded action steps)."""
        b = self.check_batch(batch, need_action=True)
        actions = self.normalize_action(batch["action"].float())
        noise = torch.randn_like(actions) if noise is None else noise
        if t is None:  # more weight near t = 1 (noisy) as in pi0: Beta(1.5, 1)
            t = torch.distributions.Beta(1.5, 1.0).sample((b,)).to(actions.device) * 0.999 + 0.001
        x_t = t[:, None, None] * noise + (1 - t[:, None, None]) * actions
        prefix, mask = self.encode_prefix(batch)
        u = self.velocity(prefix, mask, batch["observation.state"].float(), batch["embodiment"], x_t, t)
        err = ((u.float() - (noise - actions)) ** 2).mean(-1)
        keep = (~batch["action_is_pad"].bool()).float()
        return (err * keep).sum() / keep.sum().clamp_min(1.0)

    @torch.no_grad()
    def sample_actions(self, batch: dict, steps: int | None = None, noise: Tensor | None = None) -> Tensor:
        """An action chunk (B, chunk, 14) in joint units: Euler integration of the learned flow, `steps`
        steps (the config's ode_steps by default) from noise at t = 1 to t = 0. For a batch of one, `noise`
        may hold K draws: K chunks for the one observation, encoded once."""
        b = self.check_batch(batch)
        steps = int(steps or self.config.ode_steps)
        if steps < 1:
            raise ValueError("the sampler needs at least one step")
        c = self.config
        device = batch["observation.state"].device
        x = torch.randn(b, c.chunk_size, c.n_joints, device=device) if noise is None else noise.clone()
        prefix, mask = self.encode_prefix(batch)
        state, embodiment = batch["observation.state"].float(), batch["embodiment"]
        if x.shape[0] != b:
            if b != 1:
                raise VLAInputError(f"noise has {x.shape[0]} draws for a batch of {b} (several only for one)")
            k = x.shape[0]
            prefix, mask = prefix.expand(k, -1, -1), mask.expand(k, -1)
            state, embodiment = state.expand(k, -1), embodiment.expand(k)
        dt = -1.0 / steps
        for i in range(steps):
            t = torch.full((x.shape[0],), 1.0 + i * dt, device=device)
            x = x + dt * self.velocity(prefix, mask, state, embodiment, x, t).float()
        return self.unnormalize_action(x)

    # -- checkpoints ----------------------------------------------------------------------------------
    def save_pretrained(self, directory: str | Path) -> Path:
        """config.json and model.safetensors in `directory` (the LeRobot / transformers layout)."""
        from safetensors.torch import save_model
        directory = Path(directory)
        self.config.save(directory)
        save_model(self, str(directory / WEIGHTS_NAME))
        return directory

    @classmethod
    def from_pretrained(cls, directory: str | Path, map_location: str = "cpu") -> "VLAPolicy":
        """A policy from a checkpoint directory; VLAConfigError when the weights do not fit its config."""
        from safetensors import SafetensorError
        from safetensors.torch import load_model
        directory = Path(directory)
        config = VLAConfig.load(directory)
        weights = directory / WEIGHTS_NAME
        if not weights.is_file():
            raise VLAConfigError(f"no {WEIGHTS_NAME} in {directory}")
        model = cls(config, load_pretrained=False)
        try:
            missing, unexpected = load_model(model, str(weights), strict=False, device=map_location)
        except (RuntimeError, SafetensorError, OSError) as exc:
            raise VLAConfigError(f"{weights} does not match {directory / CONFIG_NAME}: {str(exc)[:300]}") from None
        if missing or unexpected:
            raise VLAConfigError(f"{weights} does not match {directory / CONFIG_NAME}: missing {sorted(missing)[:5]}, "
                                 f"unexpected {sorted(unexpected)[:5]}")
        return model.eval()


def count_parameters(model: nn.Module) -> dict[str, int]:
    parts = {"florence2_encoder": model.florence, "wrist_vit": model.wrist_vit, "clap_audio": model.audio_tower,
             "backbone": model.backbone}
    counts = {k: sum(p.numel() for p in m.parameters()) for k, m in parts.items()}
    counts["total"] = sum(p.numel() for p in model.parameters())
    counts["other"] = counts["total"] - sum(v for k, v in counts.items() if k != "total")
    return counts
