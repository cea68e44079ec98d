"""Checking and normalising incoming audio chunks (the sensor-fault side of the detector)."""
from __future__ import annotations

import math

import numpy as np

from .config import DetectorConfig

INT16_FULL_SCALE = 32768.0


def to_mono(samples: object, channels: int | None) -> np.ndarray | None:
    """int16-scale samples -> float mono in [-1, 1), or None when the chunk cannot be used.

    Accepts any integer array (values outside int16 are clipped): 1-D mono, 1-D interleaved with
    ``channels`` > 1, or 2-D (frames, channels). Multi-channel audio is averaged."""
    try:
        a = np.asarray(samples)
    except Exception:  # noqa: BLE001 - anything not array-like is an unusable chunk, not a crash
        return None
    if a.dtype.kind not in "iu":
        return None
    if a.ndim == 1:
        ch = 1 if channels is None else channels
        if ch < 1 or a.size % ch:
            return None
        a = a.reshape(-1, ch)
    elif a.ndim == 2:
        if channels is not None and a.shape[1] != channels:
            return None
    else:
        return None
    x = np.clip(a.astype(np.float64), -32768.0, 32767.0) / INT16_FULL_SCALE
    return x[:, 0].copy() if x.shape[1] == 1 else x.mean(axis=1)


def chunk_problems(samples: object, sample_rate: int, channels: int, t0: float, config: DetectorConfig,
                   expected_t0: float | None) -> list[str]:
    """Reasons a chunk is not clean audio, each as "code: detail".

    Codes: bad_time, wrong_rate, wrong_channels, bad_dtype, bad_shape, empty, clipped, gap, overlap.
    ``expected_t0``: end time of the previous chunk (None for the first)."""
    out: list[str] = []
    t_ok = _is_time(t0)
    if not t_ok:
        out.append(f"bad_time: chunk start time {t0!r} s is not a finite time >= 0")
    if sample_rate != config.sample_rate:
        out.append(f"wrong_rate: {sample_rate} Hz, expected {config.sample_rate} Hz")
    if channels != config.channels:
        out.append(f"wrong_channels: {channels} channels, expected {config.channels}")
    try:
        a = np.asarray(samples)
    except Exception:  # noqa: BLE001
        return out + ["bad_dtype: samples are not an array"]
    if a.dtype.kind not in "iu":
        out.append(f"bad_dtype: {a.dtype} samples, expected int16")
    if a.size == 0:
        out.append("empty: no samples")
        return out
    ch = max(1, channels) if isinstance(channels, int) else 1
    if a.ndim > 2 or (a.ndim == 1 and a.size % ch) or (a.ndim == 2 and a.shape[1] != ch):
        out.append(f"bad_shape: array of shape {a.shape} does not hold whole frames of {ch} channels")
    if a.dtype.kind in "iuf":
        with np.errstate(invalid="ignore"):
            frac = float(np.mean(np.abs(a.astype(np.float64)) >= config.clip_level))
        if frac > config.clip_fraction:
            out.append(f"clipped: {100 * frac:.2f} % of samples at full scale "
                       f"(limit {100 * config.clip_fraction:.2f} %)")
    if expected_t0 is not None and t_ok:
        dt = float(t0) - expected_t0  # type: ignore[arg-type]
        if dt > config.continuity_tol_s:
            out.append(f"gap: chunk starts {1e3 * dt:.1f} ms after the previous chunk ended")
        elif dt < -config.continuity_tol_s:
            out.append(f"overlap: chunk starts {-1e3 * dt:.1f} ms before the previous chunk ended")
    return out


def chunk_duration(samples: object, sample_rate: int, channels: int) -> float | None:
    """Length of a chunk in s from its declared rate and channels (None when it cannot be known)."""
    try:
        a = np.asarray(samples)
    except Exception:  # noqa: BLE001
        return None
    if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in (sample_rate, channels)):
        return None
    frames = a.shape[0] if a.ndim == 2 else a.size // channels
    return frames / sample_rate


def _is_time(t: object) -> bool:
    return isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t) and t >= 0
