"""Per-event acoustic features: envelope shape, decay time, spectrum peak, SNR.

All functions are pure: they take the event's audio (raw and band-passed, with some pre-roll before the
onset) and return numbers. The detector calls them when an event closes; the rule backend calls them on
a clip handed to it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import ndimage, signal

from .events import EventFeatures

ENV_HOP_S = 0.001  # envelope resolution, s (window = 2 hops)
_NEPER_DB = 20.0 / math.log(10.0)  # dB per neper of amplitude
_TINY = 1e-20  # energy added before log10 (full scale = 1)
_MAX_DECAY_S = 10.0  # reported when the envelope does not decay
_HOLD_SMOOTH = 10  # envelope points (ms) averaged before measuring the hold time
_FLATNESS_FLOOR = 0.01  # -20 dB: see _spectrum
_SPECTRUM_MAX_S = 0.25  # the spectrum looks at the first part of an event, where its energy is
# (from, to) s before the onset: the background just before an event. 30 ms: drops landing 120-150 ms apart
# (a fast squeeze) ring into the 50 ms before the next one; its last 30 ms hold less of that ring.
_PRE_WINDOW_S = (0.03, 0.003)


def envelope_db(y: np.ndarray, sample_rate: int) -> tuple[np.ndarray, np.ndarray]:
    """Short-time energy of ``y`` in dB (full scale 1 = 0 dB): 2 ms windows every 1 ms.

    Returns (centres in s from the start of ``y``, energies in dB)."""
    hop = max(1, int(round(ENV_HOP_S * sample_rate)))
    n = y.size // hop
    if n < 2:
        return np.array([y.size / 2.0 / sample_rate]), np.array([10.0 * math.log10(float(np.mean(y**2)) + _TINY)])
    block = np.sum(y[: n * hop].reshape(n, hop) ** 2, axis=1)
    energy = (block[:-1] + block[1:]) / (2.0 * hop)
    centres = (np.arange(1, n) * hop) / sample_rate
    return centres, 10.0 * np.log10(energy + _TINY)


def frame_energy_db(y: np.ndarray, frame: int, hop: int) -> np.ndarray:
    """Mean-square energy in dB of frames of ``frame`` samples every ``hop`` samples (whole frames only;
    ``frame`` must be a multiple of ``hop``)."""
    return frame_energy_from_blocks(hop_block_energy(y, hop), frame // hop, frame)


def hop_block_energy(y: np.ndarray, hop: int) -> np.ndarray:
    """Sum of squares of each whole block of ``hop`` samples."""
    n = y.size // hop
    return np.sum(y[: n * hop].reshape(n, hop) ** 2, axis=1)


def frame_energy_from_blocks(blocks: np.ndarray, per_frame: int, frame: int) -> np.ndarray:
    """Frame energies in dB from consecutive hop-block sums (frame k = blocks k .. k+per_frame-1)."""
    n = blocks.size - per_frame + 1
    if n <= 0:
        return np.empty(0)
    acc = blocks[:n].copy()
    for i in range(1, per_frame):
        acc += blocks[i: i + n]
    return 10.0 * np.log10(acc / frame + _TINY)


def extract_features(raw: np.ndarray, filtered: np.ndarray, onset: int, end: int, sample_rate: int,
                     floor_db: float, peak_frame_db: float, band_hz: tuple[float, float],
                     clip_level: float, ring_before: RingBefore | None = None) -> EventFeatures:
    """Features of the event occupying samples [onset, end) of ``raw``/``filtered``.

    raw: float audio, full scale 1, including pre-roll before ``onset`` (the background spectrum).
    filtered: the band-passed audio aligned with ``raw``. floor_db: noise floor (frame energy, dB).
    peak_frame_db: the event's peak frame energy, dB. clip_level: clipped magnitude, full scale 1.
    ring_before: the droplet heard before this event, whose ring may still sound before its onset (its
    expected energy there is taken out of pre_level_db: with drops landing 120-150 ms apart, the ring of
    one is still 1-3 dB over the floor when the next lands, and that is not a sustained sound).
    """
    sr = sample_rate
    end = min(max(end, onset + int(0.004 * sr)), filtered.size)
    ev = filtered[onset:end]
    t, env = envelope_db(ev, sr)
    ipk = int(np.argmax(env))
    pk = float(env[ipk])
    attack = float(t[int(np.argmax(env >= pk - 3.0))])
    # hold on a 10 ms envelope: single grains or noise spikes must not pass for the event's peak
    smooth = 10.0 * np.log10(ndimage.uniform_filter1d(10.0 ** (env / 10.0), _HOLD_SMOOTH, mode="nearest"))
    hold = float(np.count_nonzero(smooth >= float(np.max(smooth)) - 6.0)) * ENV_HOP_S
    faded = float(np.max(smooth) - smooth[-1])
    decay, r2 = _decay(t, env, ipk, max(floor_db + 3.0, pk - 40.0))
    # energy centroid above the floor: where the event's energy sits in time (exponential: tau / 2)
    excess = np.maximum(10.0 ** (env / 10.0) - 10.0 ** (floor_db / 10.0), 0.0)
    centroid = float(np.sum(excess * t) / np.sum(excess)) if np.sum(excess) > 0 else float(t[ipk])
    # median step: grains jitter the envelope all the time; beating partials only at their nulls
    gran = float(np.median(np.abs(np.diff(env)))) if env.size > 3 else 0.0
    peak_f, flat, low = _spectrum(raw, onset, end, sr, band_hz)
    # background just before the onset, relative to the floor: a drop lands in quiet, a fragment of a
    # sustained sound (pour, hiss) has sound right before it
    a = max(0, onset - int(_PRE_WINDOW_S[0] * sr))
    b = max(a, onset - int(_PRE_WINDOW_S[1] * sr))
    pre_db = (10.0 * math.log10(float(np.mean(filtered[a:b] ** 2)) + _TINY) - floor_db) if b - a > 0 else 0.0
    if ring_before is not None and b - a > 0:
        ring = ring_before.mean_excess(-(onset - a) / sr, -(onset - b) / sr)  # x the floor's power
        pre_db = 10.0 * math.log10(max(10.0 ** (pre_db / 10.0) - ring, 10.0 ** (pre_db / 10.0 - 20.0), _TINY))
    # clipping in the event or in the background window just before it: either way the features lie
    seg = raw[a:end]
    clip = float(np.mean(np.abs(seg) >= clip_level)) if seg.size else 0.0
    return EventFeatures(duration_s=(end - onset) / sr, snr_db=float(peak_frame_db - floor_db),
                         peak_frequency_hz=peak_f, decay_s=decay, decay_r2=r2, attack_s=attack, hold_s=hold,
                         centroid_s=centroid, pre_level_db=pre_db, faded_db=faded,
                         flatness=flat, low_fraction=low, granularity_db=gran, clip_fraction=clip)


@dataclass(frozen=True)
class RingBefore:
    """A droplet's ring as heard: it peaked ``peak_s`` before the next event's onset (s), ``level_db`` over the
    floor, and decays with amplitude time constant ``decay_s``."""

    peak_s: float
    level_db: float
    decay_s: float

    def mean_excess(self, t0: float, t1: float) -> float:
        """Mean power of the ring over [t0, t1) (s from the next onset, negative before it), as a multiple
        of the floor's power: an exponential energy decay with time constant decay_s / 2."""
        if not (t1 > t0 and self.decay_s > 0 and math.isfinite(self.decay_s)):
            return 0.0
        k = 2.0 / self.decay_s
        since = t0 + self.peak_s  # time since the peak at t0
        if since < 0:
            return 0.0  # the window reaches back before the ring's peak: not a ring's tail alone
        e0 = 10.0 ** (self.level_db / 10.0)
        return float(e0 * math.exp(-k * since) * (1.0 - math.exp(-k * (t1 - t0))) / (k * (t1 - t0)))


def _decay(t: np.ndarray, env: np.ndarray, ipk: int, stop_db: float) -> tuple[float, float]:
    """Amplitude time constant (s) and R^2 of a line fitted to the dB envelope from the peak down to
    ``stop_db`` (or the end)."""
    below = np.nonzero(env[ipk:] < stop_db)[0]
    j = ipk + (int(below[0]) if below.size else env.size - ipk)
    if j - ipk >= 3:
        slope, icept = np.polyfit(t[ipk:j], env[ipk:j], 1)
        resid = env[ipk:j] - (slope * t[ipk:j] + icept)
        var = float(np.var(env[ipk:j]))
        r2 = 1.0 - float(np.var(resid)) / var if var > 0 else 0.0
    elif j - ipk == 2 or (j < env.size and j > ipk):
        k = min(j, env.size - 1)
        slope = (env[k] - env[ipk]) / max(t[k] - t[ipk], ENV_HOP_S)
        r2 = 0.0
    else:
        return _MAX_DECAY_S, 0.0
    if slope >= -_NEPER_DB / _MAX_DECAY_S:
        return _MAX_DECAY_S, max(0.0, r2)
    return float(_NEPER_DB / -slope), max(0.0, r2)


def _spectrum(raw: np.ndarray, onset: int, end: int, sr: int,
              band_hz: tuple[float, float]) -> tuple[float, float, float]:
    """(peak frequency Hz, flatness in band, low-frequency share) of the event against the background.

    The peak frequency is where the event stands out most from the background just before it (largest
    ratio of the two spectra, lightly smoothed): room noise is loudest at low frequencies, so the largest
    absolute excess would often be a fluctuation of the rumble rather than the event."""
    seg = raw[onset: min(end, onset + int(_SPECTRUM_MAX_S * sr))]
    guard = int(0.002 * sr)  # keep the refined-onset uncertainty out of the background
    pre = raw[: max(0, onset - guard)]
    nper = 1 << int(math.floor(math.log2(max(64, min(seg.size, 1024)))))
    if seg.size < nper:
        seg = np.pad(seg, (0, nper - seg.size))
    f, pe = signal.welch(seg, fs=sr, window="hann", nperseg=nper, noverlap=nper // 2)
    usable = (f >= 40.0) & (f <= 0.45 * sr)
    if pre.size >= nper:
        _, pn = signal.welch(pre, fs=sr, window="hann", nperseg=nper, noverlap=nper // 2)
        pn = np.maximum(pn, 1e-30)
        ratio = ndimage.uniform_filter1d(pe / pn, 3, mode="nearest")
        # "significant" excess: twice the background, so rumble fluctuations do not count
        excess = np.maximum(pe - 2.0 * pn, 0.0)
    else:
        ratio = pe
        excess = pe
    peak_f = float(f[usable][int(np.argmax(ratio[usable]))])
    in_band = (f >= band_hz[0]) & (f <= band_hz[1])
    e_band = excess[in_band]
    # A bin where the background masks the event (the ring of a drop just before it, in the pre-roll) is a
    # deep notch, not -inf dB: without a floor a few such bins (5 % of the band) take a white noise burst's
    # flatness from 0.97 to 0.02. Floored at _FLATNESS_FLOOR of the band's mean, a tone (excess in a few
    # bins) still scores about the floor and white noise with 10 % of its bins masked about 0.6.
    flat = 0.0
    if e_band.size:
        e_band = np.maximum(e_band, _FLATNESS_FLOOR * float(np.mean(e_band))) + 1e-30
        flat = float(np.exp(np.mean(np.log(e_band))) / np.mean(e_band))
    total = float(np.sum(excess[usable]))
    low = float(np.sum(excess[usable & (f < 600.0)]) / total) if total > 0 else 0.0
    return peak_f, flat, low
