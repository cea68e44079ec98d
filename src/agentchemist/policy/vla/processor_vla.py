"""Raw observations -> the policy's batch tensors (LeRobot's processor role), and the subtask's text.

Images: RGB uint8 (H, W, 3) resized with OpenCV and normalised per encoder (Florence-2's ImageNet mean/std
for the main view, ViT's 0.5/0.5 for the wrists). Contact audio: the last ``audio_window_s`` of mono samples
as a log-mel spectrogram (librosa), (1, frames, mels) as CLAP's audio tower takes it. Text: the subtask's
instruction through a tokenizer loaded from a local directory when the config names one, otherwise as
UTF-8 bytes (ids 0..255, then BOS/EOS/PAD), so nothing is fetched from a hub.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np
import torch

from agentchemist.policy.vla.configuration_vla import VLAConfig

BOS, EOS, PAD = 256, 257, 258
IMAGENET_MEAN = np.array([0.485, 0.456, 0.406], np.float32)
IMAGENET_STD = np.array([0.229, 0.224, 0.225], np.float32)


class ObservationError(ValueError):
    """An observation the policy cannot take (missing, wrong shape, not finite)."""


def instruction_text(primitive: str, parameters: dict | None = None) -> str:
    """The subtask as the instruction the model reads: the primitive, then its parameters, sorted."""
    p = parameters or {}
    extra = ", ".join(f"{k}={p[k]}" for k in sorted(p) if isinstance(p[k], (str, int, float)))
    return f"{primitive.replace('_', ' ')}" + (f" ({extra})" if extra else "")


def _image(img, size: int, mean, std, what: str) -> np.ndarray:
    a = np.asarray(img)
    if a.ndim != 3 or a.shape[2] != 3 or a.shape[0] < 8 or a.shape[1] < 8:
        raise ObservationError(f"{what} must be an RGB image (H, W, 3), got shape {a.shape}")
    if a.dtype != np.uint8:
        if not np.isfinite(a).all():
            raise ObservationError(f"{what} has non-finite pixels")
        a = np.clip(a, 0, 255).astype(np.uint8)
    a = cv2.resize(a, (size, size), interpolation=cv2.INTER_AREA).astype(np.float32) / 255.0
    return ((a - mean) / std).transpose(2, 0, 1)


@dataclass
class VLAProcessor:
    config: VLAConfig

    def __post_init__(self) -> None:
        self.tokenizer = None
        if self.config.tokenizer_dir:
            from transformers import AutoTokenizer
            self.tokenizer = AutoTokenizer.from_pretrained(self.config.tokenizer_dir, local_files_only=True)
        c = self.config
        self.n_fft = 1 << max(6, int(math.ceil(math.log2(2 * c.audio_samples / max(c.audio_frames - 1, 1)))))
        self.hop = max(1, c.audio_samples // max(c.audio_frames - 1, 1))

    # -- pieces -----------------------------------------------------------------------------------
    def tokens(self, text: str) -> list[int]:
        n = self.config.max_text_tokens
        if self.tokenizer is not None:
            return list(self.tokenizer(text, truncation=True, max_length=n)["input_ids"])
        return ([BOS] + list(text.encode("utf-8"))[: n - 2] + [EOS])[:n]

    def log_mel(self, samples) -> np.ndarray:
        """(1, audio_frames, n_mels) log-mel of the last audio window; zeros pad a short history."""
        import librosa
        c = self.config
        y = np.asarray(samples, dtype=np.float32).reshape(-1)
        if not np.isfinite(y).all():
            raise ObservationError("audio has non-finite samples")
        if y.size and np.abs(y).max() > 1.0:  # int16 counts -> [-1, 1]
            y = y / 32768.0
        y = np.concatenate([np.zeros(max(0, c.audio_samples - y.size), np.float32), y[-c.audio_samples:]])
        mel = librosa.feature.melspectrogram(y=y, sr=c.audio_sample_rate, n_fft=self.n_fft, hop_length=self.hop,
                                             n_mels=c.n_mels, power=2.0)
        db = librosa.power_to_db(mel, ref=1.0, top_db=80.0)
        feats = ((db + 80.0) / 80.0).T[: c.audio_frames]  # roughly [0, 1]
        if feats.shape[0] < c.audio_frames:
            feats = np.pad(feats, ((0, c.audio_frames - feats.shape[0]), (0, 0)))
        return feats[None].astype(np.float32)

    # -- one observation ---------------------------------------------------------------------------
    def observation(self, main, wrists, audio, state, text: str, embodiment: str | None = None) -> dict:
        """A batch of one. ``wrists``: a list of n_wrist_views images, None for a camera that gave none
        (masked out); ``audio``: mono samples or None (masked out); ``state``: the 14 joint positions."""
        c = self.config
        if main is None:
            raise ObservationError("no main (front) camera image")
        s = np.asarray(state, dtype=np.float32).reshape(-1)
        if s.shape != (c.n_joints,) or not np.isfinite(s).all():
            raise ObservationError(f"state must be {c.n_joints} finite joint positions, got {np.asarray(state).shape}")
        wrists = list(wrists) if wrists is not None else []
        if len(wrists) != c.n_wrist_views:
            raise ObservationError(f"{c.n_wrist_views} wrist views expected (None for a missing one), got {len(wrists)}")
        size = c.wrist_image_size
        wimgs = [np.zeros((3, size, size), np.float32) if w is None else
                 _image(w, size, np.float32(0.5), np.float32(0.5), f"wrist view {i}") for i, w in enumerate(wrists)]
        name = embodiment or c.embodiments[0]
        if name not in c.embodiments:
            raise ObservationError(f"unknown embodiment '{name}' (known: {', '.join(c.embodiments)})")
        ids = self.tokens(text)
        return {
            "observation.images.main": torch.from_numpy(_image(main, c.image_size, IMAGENET_MEAN, IMAGENET_STD,
                                                               "main image"))[None],
            "observation.images.wrist": torch.from_numpy(np.stack(wimgs))[None],
            "observation.wrist_mask": torch.tensor([[w is not None for w in wrists]]),
            "observation.audio": torch.from_numpy(self.log_mel(audio if audio is not None else []))[None],
            "observation.audio_mask": torch.tensor([audio is not None]),
            "observation.state": torch.from_numpy(s)[None],
            "text.input_ids": torch.tensor([ids], dtype=torch.long),
            "text.attention_mask": torch.ones(1, len(ids), dtype=torch.long),
            "embodiment": torch.tensor([c.embodiments.index(name)]),
        }


def collate(items: list[dict]) -> dict:
    """Stack single-sample batches; text is right-padded with PAD (masked)."""
    out = {}
    n = max(i["text.input_ids"].shape[1] for i in items)
    for key in items[0]:
        if key in ("text.input_ids", "text.attention_mask"):
            fill = PAD if key == "text.input_ids" else 0
            out[key] = torch.cat([torch.nn.functional.pad(i[key], (0, n - i[key].shape[1]), value=fill)
                                  for i in items])
        else:
            out[key] = torch.cat([i[key] for i in items])
    return out
