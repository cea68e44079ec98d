"""Contact-audio synthesis for the lab twin: drops, distractors, stirrer hum and room noise.

A contact microphone on the gripper hears each drop land as a short impact transient (a handful of
decaying resonances), plus labelled distractors (bumps, glass clinks, gripper motor whine, granular
pouring, noise bursts), the stirrer's mains hum and pink room noise. Output is 16-bit mono PCM.

Determinism: the output for a seed is bit-identical however the time span is chunked. The stream is
built from fixed blocks of ``block`` samples aligned to absolute sample index 0; a block depends only
on its index, the seed and the scheduled events, and ``render`` slices blocks. Room noise is white
noise from a counter-based generator (Philox keyed by the seed, counter by block index) shaped by a
finite pinking filter, so block ``b`` needs only the white noise of blocks ``b-1`` and ``b``. Each
event draws its randomness from ``(seed, event index)``.

Levels: full scale is 1.0 (= int16 32767). ``room_noise_dbfs`` is the RMS of the (full-band, pink)
room noise. An event's level is its peak short-time RMS (5 ms window); a drop's level is on average
``snr_db`` above the room-noise RMS (each drop varies by up to +-``drop_level_spread_db``). Because room
noise is pink (most of its power below 1 kHz) a drop stands out more in its own band than ``snr_db``
says; the sample peak of a drop is some 6-9 dB above its level.

Example::

    synth = ContactAudioSynth(ContactAudioConfig(snr_db=15.0, seed=3))
    synth.schedule(AudioEventTruth(time=0.5, kind="droplet", duration=0.0, label="drop 1"))
    chunk = synth.render(0.0, 48000)        # int16, 1 s
"""
from __future__ import annotations

import bisect
import math
from array import array
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
from scipy import fft as sp_fft
from scipy import ndimage, signal

EVENT_KINDS = ("droplet", "bump", "clink", "motor_whine", "pour", "noise_burst")
_IMPULSIVE = ("droplet", "bump", "clink")
_RING_DB = 60.0  # impulsive waveforms are cut when the slowest partial has decayed this far
_NEPER_DB = 20.0 / math.log(10.0)  # dB per neper of amplitude (8.686)
_LEVEL_WINDOW_S = 0.005  # event levels are peak RMS over this window


class AudioSynthError(ValueError):
    """Bad configuration, event or render request for the contact-audio synthesiser."""


@dataclass(frozen=True)
class AudioEventTruth:
    """One ground-truth audio event.

    time: onset, s of sim time (>= 0). kind: one of ``EVENT_KINDS``. duration: s; for sustained kinds
    (motor_whine, pour, noise_burst) the requested length (0 = draw a typical one); for impulsive kinds
    (droplet, bump, clink) ignored on input, and ``truth()`` reports the ringing length (to -60 dB).
    label: free text carried through to the truth list (e.g. "drop 17").
    """

    time: float
    kind: str
    duration: float = 0.0
    label: str = ""

    def __post_init__(self) -> None:
        if not (isinstance(self.time, (int, float)) and math.isfinite(self.time) and self.time >= 0.0):
            raise AudioSynthError(f"AudioEventTruth.time must be a finite number >= 0 s, got {self.time!r}")
        if self.kind not in EVENT_KINDS:
            raise AudioSynthError(f"AudioEventTruth.kind {self.kind!r} is unknown; expected one of {EVENT_KINDS}")
        if not (isinstance(self.duration, (int, float)) and math.isfinite(self.duration)
                and 0.0 <= self.duration <= 60.0):
            raise AudioSynthError(f"AudioEventTruth.duration must be in [0, 60] s, got {self.duration!r}")
        if not isinstance(self.label, str):
            raise AudioSynthError(f"AudioEventTruth.label must be a str, got {type(self.label).__name__}")


@dataclass(frozen=True)
class ContactAudioConfig:
    """Contact-microphone twin settings.

    sample_rate: Hz. snr_db: mean drop level (peak 5 ms RMS) over the room-noise RMS, dB. stirrer_hum_hz: stirrer
    hum fundamental, Hz (harmonics up to 2 kHz fall off as 1/k^2). stirrer_on: hum present.
    room_noise_dbfs: pink room noise RMS, dBFS. seed: randomness for noise and events.
    stirrer_hum_dbfs: hum fundamental amplitude (peak), dBFS. drop_level_spread_db: each drop's level is
    drawn uniformly within +- this of the mean. distractor_level_db: distractor level relative to the mean
    drop level, dB (each varies by +- drop_level_spread_db too). block: samples per synthesis block (the
    unit of determinism; changing it changes the noise realisation). pink_taps: length of the FIR
    pinking filter (odd, < block).
    """

    sample_rate: int = 48000
    snr_db: float = 20.0
    stirrer_hum_hz: float = 50.0
    stirrer_on: bool = True
    room_noise_dbfs: float = -50.0
    seed: int = 0
    stirrer_hum_dbfs: float = -45.0
    drop_level_spread_db: float = 3.0
    distractor_level_db: float = 0.0
    block: int = 8192
    pink_taps: int = 1023

    def __post_init__(self) -> None:
        def finite(name: str, lo: float, hi: float) -> None:
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and lo <= v <= hi):
                raise AudioSynthError(f"ContactAudioConfig.{name} must be in [{lo}, {hi}], got {v!r}")

        if not isinstance(self.sample_rate, int) or not 16000 <= self.sample_rate <= 192000:
            raise AudioSynthError(f"ContactAudioConfig.sample_rate must be an int in [16000, 192000] Hz, "
                                  f"got {self.sample_rate!r}")
        finite("snr_db", -20.0, 80.0)
        finite("stirrer_hum_hz", 1.0, 1000.0)
        finite("room_noise_dbfs", -120.0, -6.0)
        finite("stirrer_hum_dbfs", -120.0, -6.0)
        finite("drop_level_spread_db", 0.0, 20.0)
        finite("distractor_level_db", -40.0, 40.0)
        if not isinstance(self.seed, int) or self.seed < 0:
            raise AudioSynthError(f"ContactAudioConfig.seed must be an int >= 0, got {self.seed!r}")
        if not isinstance(self.stirrer_on, bool):
            raise AudioSynthError(f"ContactAudioConfig.stirrer_on must be a bool, got {self.stirrer_on!r}")
        if not isinstance(self.block, int) or not 256 <= self.block <= 1 << 20:
            raise AudioSynthError(f"ContactAudioConfig.block must be an int in [256, 2**20], got {self.block!r}")
        if not isinstance(self.pink_taps, int) or self.pink_taps % 2 == 0 or not 31 <= self.pink_taps < self.block:
            raise AudioSynthError(f"ContactAudioConfig.pink_taps must be an odd int in [31, block), "
                                  f"got {self.pink_taps!r}")


@dataclass(frozen=True)
class _Scheduled:
    """One event while its waveform is synthesised (the synth keeps events as columns, see __init__)."""
    index: int
    truth: AudioEventTruth  # with the realised duration
    start: int  # first absolute sample index of the waveform
    length: int  # samples
    params: dict


class ContactAudioSynth:
    """Renders contact audio for scheduled events; see the module docstring."""

    def __init__(self, config: ContactAudioConfig) -> None:
        if not isinstance(config, ContactAudioConfig):
            raise AudioSynthError(f"config must be a ContactAudioConfig, got {type(config).__name__}")
        self.config = config
        sr = config.sample_rate
        self._room_rms = 10.0 ** (config.room_noise_dbfs / 20.0)
        self._drop_level = self._room_rms * 10.0 ** (config.snr_db / 20.0)
        self._pink = _pinking_filter(config.pink_taps, sr)
        self._pink_spectrum: tuple[int, int, np.ndarray] | None = None  # (full length, FFT size, rfft): _pinked
        self._noise_key = np.random.SeedSequence([config.seed, 0x6E6F697365]).generate_state(2, np.uint64)
        period = sr / config.stirrer_hum_hz
        self._hum_exact = abs(period - round(period)) < 1e-9
        self._hum_table = _hum_period(config, int(round(period)) if self._hum_exact else 8193, self._hum_exact)
        # Every scheduled event, by index, as columns: the twin keeps them all for its truth, and a long run
        # schedules one per drop (a _Scheduled with its parameter arrays cost about 1 kB; a row costs about
        # 100 bytes). The random parameters are not kept: they are drawn again from (seed, index) and the
        # event as requested whenever its waveform is synthesised.
        self._ev_time = array("d")
        self._ev_kind = array("B")      # index into EVENT_KINDS
        self._ev_requested = array("d")  # duration as requested (the parameter draw depends on it)
        self._ev_duration = array("d")   # realised duration (s)
        self._ev_label: list[str] = []
        self._ev_start = array("q")      # first absolute sample of the waveform
        self._ev_length = array("q")     # samples
        self._starts = array("q")        # waveform starts, sorted, for block lookup ...
        self._order = array("q")         # ... and the event index of each
        self._max_len = 0
        self._horizon = 0  # one past the last absolute sample returned by render()
        self._blocks: OrderedDict[int, np.ndarray] = OrderedDict()
        self._white: OrderedDict[int, np.ndarray] = OrderedDict()
        self._waves: OrderedDict[int, np.ndarray] = OrderedDict()

    # ------------------------------------------------------------------ public API
    def schedule(self, event: AudioEventTruth) -> None:
        """Add an event. Its onset must not precede audio already rendered (raises AudioSynthError)."""
        if not isinstance(event, AudioEventTruth):
            raise AudioSynthError(f"schedule() takes an AudioEventTruth, got {type(event).__name__}")
        sr = self.config.sample_rate
        start = math.ceil(event.time * sr - 1e-9)
        if start < self._horizon:
            raise AudioSynthError(
                f"event {event.kind!r} at t={event.time:.6f} s is before the audio already rendered "
                f"(up to {self._horizon / sr:.6f} s); schedule events before rendering their onset")
        index = len(self._ev_time)
        params = self._params(event, index)
        length = int(math.ceil(params["length_s"] * sr)) + 1
        self._ev_time.append(event.time)
        self._ev_kind.append(EVENT_KINDS.index(event.kind))
        self._ev_requested.append(event.duration)
        self._ev_duration.append(float(params["length_s"]))
        self._ev_label.append(event.label)
        self._ev_start.append(start)
        self._ev_length.append(length)
        at = bisect.bisect_right(self._starts, start)  # after equal starts: ties stay in index order
        self._starts.insert(at, start)
        self._order.insert(at, index)
        self._max_len = max(self._max_len, length)
        b = self.config.block
        for blk in [k for k in self._blocks if k * b < start + length and (k + 1) * b > start]:
            del self._blocks[blk]

    def render(self, t0: float, n_samples: int) -> np.ndarray:
        """int16 mono samples for [t0, t0 + n_samples / sample_rate); t0 is rounded to a sample."""
        if not (isinstance(t0, (int, float)) and math.isfinite(t0) and t0 >= 0.0):
            raise AudioSynthError(f"render t0 must be a finite number >= 0 s, got {t0!r}")
        if isinstance(n_samples, bool) or not isinstance(n_samples, (int, np.integer)) or n_samples < 0:
            raise AudioSynthError(f"render n_samples must be an int >= 0, got {n_samples!r}")
        s0 = int(round(t0 * self.config.sample_rate))
        n = int(n_samples)
        out = np.empty(n, dtype=np.int16)
        b = self.config.block
        pos = s0
        while pos < s0 + n:
            blk = pos // b
            data = self._block(blk)
            lo = pos - blk * b
            hi = min(b, s0 + n - blk * b)
            out[pos - s0: pos - s0 + hi - lo] = data[lo:hi]
            pos += hi - lo
        self._horizon = max(self._horizon, s0 + n)
        return out

    def truth(self) -> list[AudioEventTruth]:
        """Scheduled events sorted by onset (stable), with realised durations."""
        return [self._truth(i) for i in sorted(range(len(self._ev_time)), key=self._ev_time.__getitem__)]

    def _truth(self, index: int, *, requested: bool = False) -> AudioEventTruth:
        duration = (self._ev_requested if requested else self._ev_duration)[index]
        return AudioEventTruth(self._ev_time[index], EVENT_KINDS[self._ev_kind[index]], duration,
                               self._ev_label[index])

    def _params(self, event: AudioEventTruth, index: int) -> dict:
        """The event's random parameters: the same for the same (seed, index, requested event)."""
        rng = np.random.default_rng([self.config.seed, 0x657674, index])
        return _draw_params(event, rng, self._drop_level, self.config)

    def _scheduled(self, index: int) -> _Scheduled:
        params = self._params(self._truth(index, requested=True), index)
        return _Scheduled(index, self._truth(index), self._ev_start[index], self._ev_length[index], params)

    # ------------------------------------------------------------------ blocks
    def _block(self, blk: int) -> np.ndarray:
        cached = self._blocks.get(blk)
        if cached is not None:
            self._blocks.move_to_end(blk)
            return cached
        cfg = self.config
        b = cfg.block
        taps = self._pink.size
        white = np.concatenate([self._white_block(blk - 1)[b - taps + 1:], self._white_block(blk)])
        x = self._pinked(white) * self._room_rms
        if cfg.stirrer_on:
            period = self._hum_table.size
            if self._hum_exact:  # the hum period is a whole number of samples: index the table
                x += self._hum_table[np.arange(blk * b, (blk + 1) * b, dtype=np.int64) % period]
            else:  # fundamental phase in cycles mod 1 keeps precision over hours
                n = np.arange(blk * b, (blk + 1) * b, dtype=np.float64)
                cyc = np.mod(cfg.stirrer_hum_hz * n / cfg.sample_rate, 1.0)
                x += np.interp(cyc, np.linspace(0.0, 1.0, period), self._hum_table)
        lo = bisect.bisect_left(self._starts, blk * b - self._max_len)
        hi = bisect.bisect_left(self._starts, (blk + 1) * b)
        for idx in sorted(self._order[lo:hi]):
            start, length = self._ev_start[idx], self._ev_length[idx]
            a, z = max(start, blk * b), min(start + length, (blk + 1) * b)
            if a < z:
                wave = self._wave(idx)
                x[a - blk * b: z - blk * b] += wave[a - start: z - start]
        pcm = np.clip(np.round(x * 32767.0), -32768, 32767).astype(np.int16)
        self._blocks[blk] = pcm
        while len(self._blocks) > 4:
            self._blocks.popitem(last=False)
        self._evict_waves(blk * b)
        return pcm

    def _pinked(self, white: np.ndarray) -> np.ndarray:
        """signal.fftconvolve(white, pink, mode="valid"), step for step (the same transforms of the same
        sizes, so the same bits), with the filter's transform computed once instead of once per block."""
        taps = self._pink.size
        full = white.size + taps - 1
        if self._pink_spectrum is None or self._pink_spectrum[0] != full:
            n = sp_fft.next_fast_len(full, True)
            self._pink_spectrum = (full, n, sp_fft.rfftn(self._pink, [n], axes=[0]))
        _, n, spectrum = self._pink_spectrum
        out = sp_fft.irfftn(sp_fft.rfftn(white, [n], axes=[0]) * spectrum, [n], axes=[0])
        return out[taps - 1: white.size].copy()  # mode "valid": white.size - taps + 1 samples

    def _white_block(self, blk: int) -> np.ndarray:
        cached = self._white.get(blk)
        if cached is None:
            # counter word 1 = block index (+1 so block -1 exists): streams of different blocks never overlap
            gen = np.random.Generator(np.random.Philox(key=self._noise_key, counter=(blk + 1) << 64))
            cached = gen.standard_normal(self.config.block)
            self._white[blk] = cached
            while len(self._white) > 4:
                self._white.popitem(last=False)
        return cached

    def _wave(self, index: int) -> np.ndarray:
        wave = self._waves.get(index)
        if wave is None:
            rng = np.random.default_rng([self.config.seed, 0x77617665, index])
            wave = _synthesise(self._scheduled(index), rng, self.config.sample_rate)
            self._waves[index] = wave
        return wave

    def _evict_waves(self, block_start: int) -> None:
        # waveforms wholly before the current block are regenerated on demand if ever needed again
        for idx in [i for i in self._waves if self._ev_start[i] + self._ev_length[i] < block_start]:
            del self._waves[idx]


# ---------------------------------------------------------------------- synthesis
def _hum_period(cfg: ContactAudioConfig, points: int, exact: bool) -> np.ndarray:
    """One period of the stirrer hum (harmonics up to 2 kHz, 1/k^2, random phases).

    ``exact``: ``points`` is the number of samples per period and the table is indexed directly;
    otherwise the table is a closed grid of ``points`` (0..1 cycle inclusive) for interpolation."""
    rng = np.random.default_rng([cfg.seed, 0x68756D])
    k = np.arange(1, max(1, int(2000.0 // cfg.stirrer_hum_hz)) + 1, dtype=np.float64)
    amp = 10.0 ** (cfg.stirrer_hum_dbfs / 20.0) / k**2
    phase = rng.uniform(0.0, 2.0 * np.pi, k.size)
    c = np.arange(points) / points if exact else np.linspace(0.0, 1.0, points)
    return np.sum(amp[:, None] * np.sin(2.0 * np.pi * k[:, None] * c[None, :] + phase[:, None]), axis=0)


def _pinking_filter(taps: int, sr: int) -> np.ndarray:
    """FIR with a -3 dB/octave slope above 50 Hz, normalised to unit output variance for white input."""
    f = np.array([0.0, 50.0, 100.0, 200.0, 400.0, 800.0, 1600.0, 3200.0, 6400.0, 12800.0, sr / 2.0])
    f = f[f <= sr / 2.0]
    gain = 1.0 / np.sqrt(np.maximum(f, 50.0) / 50.0)
    h = signal.firwin2(taps, f, gain, fs=sr)
    return h / np.sqrt(np.sum(h**2))


@dataclass(frozen=True)
class _ImpulseRanges:
    """Ranges an impulsive event's partials are drawn from: count [lo, hi), frequency (Hz), ring time
    constant (s), relative amplitude, pitch glide, attack (s) and the impact click's relative amplitude."""

    partials: tuple[int, int]
    freq_hz: tuple[float, float]
    tau_s: tuple[float, float]
    amp: tuple[float, float]
    glide: tuple[float, float]
    attack_s: float
    click: tuple[float, float]


_IMPULSE_RANGES = {
    # a drop: a few bubble resonances at 1-6 kHz ringing 5-40 ms, rising in pitch as they ring
    "droplet": _ImpulseRanges((3, 7), (1000.0, 6000.0), (0.005, 0.040), (0.3, 1.0), (0.05, 0.2), 0.0003, (0.1, 0.4)),
    # a bump: low thuds, a soft attack
    "bump": _ImpulseRanges((1, 4), (100.0, 400.0), (0.020, 0.080), (0.4, 1.0), (0.0, 0.0), 0.002, (0.0, 0.1)),
    # a glass clink: high, clean, long rings
    "clink": _ImpulseRanges((1, 4), (4000.0, 9000.0), (0.100, 0.300), (0.4, 1.0), (0.0, 0.0), 0.0002, (0.05, 0.2)),
}


def _draw_params(ev: AudioEventTruth, rng: np.random.Generator, drop_level: float,
                 cfg: ContactAudioConfig) -> dict:
    """Random parameters of one event (drawn at schedule time so truth knows the ringing length)."""
    spread = cfg.drop_level_spread_db
    level_db = rng.uniform(-spread, spread) if spread > 0 else 0.0
    if ev.kind != "droplet":
        level_db += cfg.distractor_level_db
    p: dict = {"level": drop_level * 10.0 ** (level_db / 20.0)}
    kind = ev.kind
    if kind in _IMPULSIVE:
        r = _IMPULSE_RANGES[kind]
        n = int(rng.integers(*r.partials))
        if kind == "droplet":  # bubble resonances spread over octaves: log-uniform
            p["freqs"] = np.exp(rng.uniform(math.log(r.freq_hz[0]), math.log(r.freq_hz[1]), n))
        else:
            p["freqs"] = rng.uniform(*r.freq_hz, n)
        p["taus"] = rng.uniform(*r.tau_s, n)
        p["amps"] = rng.uniform(*r.amp, n)
        p["glide"] = rng.uniform(*r.glide) if r.glide[1] > 0 else 0.0
        p["attack"] = r.attack_s
        p["click"] = rng.uniform(*r.click)
    elif kind == "motor_whine":
        p["dur"] = ev.duration if ev.duration > 0 else rng.uniform(0.2, 1.0)
        p["f0"] = rng.uniform(1000.0, 3000.0)
        p["sweep"] = rng.uniform(1.2, 1.6)  # end/start frequency ratio
        p["ramp"] = 0.03
    elif kind == "pour":
        p["dur"] = ev.duration if ev.duration > 0 else rng.uniform(1.0, 4.0)
        p["rate"] = rng.uniform(300.0, 1500.0)  # grains per second
        p["ramp"] = 0.002  # grains start and stop abruptly; back-to-back pour segments stay seamless
    else:  # noise_burst
        p["dur"] = ev.duration if ev.duration > 0 else rng.uniform(0.05, 0.4)
        p["ramp"] = 0.002
    if kind in _IMPULSIVE:
        p["length_s"] = float(np.max(p["taus"]) * _RING_DB / _NEPER_DB)
    else:
        p["length_s"] = float(p["dur"])
    return p


def _synthesise(ev: _Scheduled, rng: np.random.Generator, sr: int) -> np.ndarray:
    """The event's waveform at absolute samples [start, start + length), normalised to its level."""
    p = ev.params
    t = (ev.start + np.arange(ev.length)) / sr - ev.truth.time  # s since onset (>= 0, sub-sample exact)
    kind = ev.truth.kind
    if kind in _IMPULSIVE:
        x = np.zeros_like(t)
        for f, tau, a in zip(p["freqs"], p["taus"], p["amps"]):
            # instantaneous frequency f * (1 + glide * (1 - exp(-t/tau))): integrate for the phase
            phase = 2.0 * np.pi * f * (t + p["glide"] * (t - tau * (1.0 - np.exp(-t / tau))))
            x += a * np.exp(-t / tau) * np.sin(phase + rng.uniform(0.0, 2.0 * np.pi))
        click_tau = 0.0005
        x += p["click"] * np.exp(-t / click_tau) * rng.standard_normal(t.size)
        x *= _ramp_in(t, p["attack"])
    elif kind == "motor_whine":
        dur = p["dur"]
        f = p["f0"] * (1.0 + (p["sweep"] - 1.0) * np.clip(t / dur, 0.0, 1.0))
        phase = 2.0 * np.pi * np.cumsum(f) / sr
        x = np.sin(phase) + 0.5 * np.sin(2.0 * phase + 1.0) + 0.25 * np.sin(3.0 * phase + 2.0)
        x *= 1.0 + 0.1 * np.sin(2.0 * np.pi * 30.0 * t)  # commutator ripple
        x *= _ramp_in(t, p["ramp"]) * _ramp_in(dur - t, p["ramp"])
    elif kind == "pour":
        x = _granular(t, p, rng, sr)
        x *= _ramp_in(t, p["ramp"]) * _ramp_in(p["dur"] - t, p["ramp"])
    else:  # noise_burst
        x = rng.standard_normal(t.size) * _ramp_in(t, p["ramp"]) * _ramp_in(p["dur"] - t, p["ramp"])
    # level = peak short-time RMS (5 ms window), the loudness a detector's energy frames see
    loud = math.sqrt(float(np.max(ndimage.uniform_filter1d(x * x, max(1, int(_LEVEL_WINDOW_S * sr)),
                                                               mode="constant"))))
    return x * (p["level"] / loud) if loud > 0 else x


def _granular(t: np.ndarray, p: dict, rng: np.random.Generator, sr: int) -> np.ndarray:
    """Many tiny grain impacts: Poisson impulse trains per frequency band, each convolved with a
    short damped resonance (grains of a powder or crystals hitting a weighing boat)."""
    n = t.size
    x = np.zeros(n)
    bands = np.exp(np.linspace(math.log(1500.0), math.log(10000.0), 8))
    kt = np.arange(int(0.006 * sr)) / sr
    for fc in bands:
        count = rng.poisson(p["rate"] / bands.size * n / sr)
        pos = rng.integers(0, n, count)
        train = np.zeros(n)
        np.add.at(train, pos, rng.lognormal(0.0, 0.6, count) * rng.choice([-1.0, 1.0], count))
        tau = rng.uniform(0.0003, 0.0015)
        kernel = np.exp(-kt / tau) * np.sin(2.0 * np.pi * fc * kt)
        x += signal.fftconvolve(train, kernel)[:n]
    return x


def _ramp_in(t: np.ndarray, ramp: float) -> np.ndarray:
    """Raised-cosine gain 0 -> 1 over [0, ramp] s of t; 0 for t < 0."""
    r = np.clip(t / ramp, 0.0, 1.0)
    return 0.5 - 0.5 * np.cos(np.pi * r)


def drop_train(n_drops: int, *, seed: int, start: float = 0.5, interval_s: tuple[float, float] = (0.2, 2.0),
               distractor_rate: float = 0.15,
               distractors: tuple[str, ...] = ("bump", "clink", "motor_whine", "noise_burst", "pour"),
               guard_s: float = 0.25) -> list[AudioEventTruth]:
    """A scenario: ``n_drops`` droplets at random intervals, with distractors inserted between drops.

    After each drop a distractor follows with probability ``distractor_rate``; it starts ``guard_s``
    after the drop and the next drop waits until it has rung out plus ``guard_s`` (distractors never
    overlap drops, as when the gripper moves between squeezes). Returns events sorted by time.
    """
    if not isinstance(n_drops, int) or n_drops < 0:
        raise AudioSynthError(f"n_drops must be an int >= 0, got {n_drops!r}")
    lo, hi = interval_s
    if not (0.0 < lo <= hi) or not 0.0 <= distractor_rate <= 1.0 or guard_s < 0 or start < 0:
        raise AudioSynthError(f"drop_train: need 0 < interval lo <= hi, distractor_rate in [0, 1], "
                              f"guard_s >= 0 and start >= 0; got {interval_s}, {distractor_rate}, {guard_s}, {start}")
    bad = [d for d in distractors if d not in EVENT_KINDS or d == "droplet"]
    if bad:
        raise AudioSynthError(f"drop_train: unknown distractor kinds {bad}")
    rng = np.random.default_rng([seed, 0x747261696E])
    # ringing time of each distractor after its nominal duration (about -60 dB for the slowest partials)
    ring = {"bump": 0.6, "clink": 2.1, "motor_whine": 0.0, "noise_burst": 0.0, "pour": 0.0}
    drop_ring = 0.3
    events: list[AudioEventTruth] = []
    t = start
    for i in range(n_drops):
        events.append(AudioEventTruth(time=round(t, 6), kind="droplet", duration=0.0, label=f"drop {i + 1}"))
        t_next = t + rng.uniform(lo, hi)
        if distractors and rng.uniform() < distractor_rate:
            kind = str(rng.choice(list(distractors)))
            dur = {"motor_whine": rng.uniform(0.2, 1.0), "noise_burst": rng.uniform(0.05, 0.4),
                   "pour": rng.uniform(0.5, 1.5)}.get(kind, 0.0)
            t_d = t + drop_ring + guard_s
            events.append(AudioEventTruth(time=round(t_d, 6), kind=kind, duration=float(dur),
                                          label=f"distractor {kind}"))
            t_next = max(t_next, t_d + dur + ring[kind] + guard_s)
        t = t_next
    return events
