"""Configuration of the streaming contact-audio event detector."""
from __future__ import annotations

import math
from dataclasses import dataclass

from .errors import DetectorConfigError


@dataclass(frozen=True)
class DetectorConfig:
    """Streaming detector settings (times in s, levels in dB, frequencies in Hz).

    sample_rate: expected input rate, Hz; chunks at another rate are refused.
    channels: expected channel count of the raw stream (multi-channel chunks are averaged to mono).
    band_hz: (low, high) band-pass edges, Hz: drops ring at 1-6 kHz, room rumble and stirrer hum are
        below, so the band keeps the impacts and drops most of the noise.
    filter_order: Butterworth order of each band edge (the band-pass has 2 * order poles).
    frame: samples per short-time energy frame (256 = 5.3 ms at 48 kHz).
    hop: samples between frame starts (the detector's time resolution before onset refinement); the
        frame must be a whole number of hops.
    threshold_db: an onset needs a frame energy this far above the adaptive noise floor.
    release_db: an event ends when the frame energy stays below floor + release_db ...
    release_hold_s: ... for this long (bridges the dips between partials beating).
    refractory_s: no new onset within this time after an event ends (a decaying tail bouncing around
        the threshold is not a second event).
    max_event_s: an event still going after this long is closed and continued as a new event (keeps
        latency bounded during pours and long noises).
    reonset_db: a second impact inside a ringing event (two drops landing tens of ms apart) starts an
        event of its own when a frame's energy rises this far above the frame just before it (a jump a
        single ring does not make: it only decays, or beats within a frame) ... (0 = never split)
    reonset_after_s: ... no sooner than this after the event's onset (its own attack and the first
        beats of its partials are over by then) ...
    reonset_decayed_db: ... only once the event has decayed this far below its peak, which it reached
        within reonset_after_s of its onset (an impulse's ringing tail, not a sustained sound) ...
    reonset_ripple_db: ... only if no frame since that peak rose more than this above the lowest
        before it (a ring decays smoothly; the level of a pour jitters as its grains land) ...
    reonset_level_db: ... and only if the rise comes back to within this of that peak (a second drop is
        about as loud as the first; the ring's own beats, after a null, come back only to its decayed
        envelope). The detector
        keeps the split only when both parts are heard as droplets; see StreamingDetector._finalise_split.
    floor_tau_s: time constant of the noise-floor tracker (EMA of idle frame energies in dB).
    floor_hold_s: the floor stays frozen this long after an event ends (the decaying tail is not noise).
    floor_adapt_after_s: inside an event longer than this the floor adapts again, so a stationary new
        noise (a fan switched on) becomes background instead of one endless event.
    warmup_s: the initial floor is the median of the first warmup_s of frames; no detection before.
    settle_s: after a filter (re)start (stream start, gap) frames are ignored this long while the
        band-pass settles.
    pre_roll_s: audio kept before each onset for the onset search and the background spectrum.
    clip_level: |int16 sample| at or above this counts as clipped.
    clip_fraction: a chunk with more than this fraction of clipped samples is reported as clipped.
    continuity_tol_s: a chunk starting more than this after (gap) or before (overlap) the previous
        chunk's end is a discontinuity.
    time_jump_s: a chunk starting more than this before the previous chunk's end is a clock reset
        (the stream restarts there), not a re-sent chunk to be trimmed.
    decide_after_s: an event still ringing this long after its onset is judged on what has been heard
        of it so far, once; a droplet verdict is told then (flagged "early"), instead of when its ring has
        faded into the floor (tens to a hundred ms later: the dispenser counts drops as they land).
        Any other verdict waits for the whole sound. 0 = judge every event when it ends.
    told_max_s: a sound told early as a droplet that goes on longer than this (a drop rings 30-200 ms
        above the floor) is judged again whole when it ends: another sound began inside the ring (a noise
        burst, a pour), and unless the whole is a droplet too it is told as well (flagged "after_early").
    min_block: incoming samples are filtered in blocks of at least this many (amortises per-call cost
        of small chunks; adds at most min_block / sample_rate of latency). 0 = process every chunk at once.
    id_prefix: prefix of event ids ("aud-000001" ...).
    """

    sample_rate: int = 48000
    channels: int = 1
    band_hz: tuple[float, float] = (800.0, 12000.0)
    filter_order: int = 4
    frame: int = 256
    hop: int = 128
    threshold_db: float = 8.0
    release_db: float = 3.0
    release_hold_s: float = 0.02
    refractory_s: float = 0.03
    max_event_s: float = 1.5
    reonset_db: float = 6.0
    reonset_after_s: float = 0.012
    reonset_decayed_db: float = 4.0
    reonset_ripple_db: float = 5.0
    reonset_level_db: float = 3.0
    floor_tau_s: float = 1.0
    floor_hold_s: float = 0.05
    floor_adapt_after_s: float = 1.0
    warmup_s: float = 0.1
    settle_s: float = 0.02
    pre_roll_s: float = 0.1
    clip_level: int = 32700
    clip_fraction: float = 0.001
    continuity_tol_s: float = 0.001
    time_jump_s: float = 1.0
    decide_after_s: float = 0.03
    told_max_s: float = 0.3
    min_block: int = 480
    id_prefix: str = "aud"

    def __post_init__(self) -> None:
        def num(name: str, lo: float, hi: float) -> None:
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not lo <= v <= hi:
                raise DetectorConfigError(f"DetectorConfig.{name} must be a number in [{lo}, {hi}], got {v!r}")

        def integer(name: str, lo: int, hi: int) -> None:
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
                raise DetectorConfigError(f"DetectorConfig.{name} must be an int in [{lo}, {hi}], got {v!r}")

        integer("sample_rate", 8000, 384000)
        integer("channels", 1, 32)
        integer("filter_order", 1, 10)
        integer("frame", 16, 1 << 16)
        integer("hop", 1, self.frame)
        integer("clip_level", 1, 32767)
        integer("min_block", 0, 1 << 20)
        if self.frame % self.hop:
            raise DetectorConfigError(f"DetectorConfig.frame ({self.frame}) must be a whole number of hops "
                                      f"({self.hop})")
        if not (isinstance(self.band_hz, tuple) and len(self.band_hz) == 2
                and all(isinstance(f, (int, float)) and math.isfinite(f) for f in self.band_hz)):
            raise DetectorConfigError(f"DetectorConfig.band_hz must be a (low, high) tuple of Hz, "
                                      f"got {self.band_hz!r}")
        lo, hi = self.band_hz
        if not 0.0 < lo < hi < self.sample_rate / 2.0:
            raise DetectorConfigError(f"DetectorConfig.band_hz must satisfy 0 < low < high < sample_rate/2 "
                                      f"= {self.sample_rate / 2.0} Hz, got {self.band_hz!r}")
        num("threshold_db", 0.5, 60.0)
        num("release_db", 0.0, self.threshold_db)
        num("release_hold_s", 0.0, 1.0)
        num("refractory_s", 0.0, 5.0)
        num("max_event_s", 0.05, 60.0)
        num("reonset_db", 0.0, 60.0)
        num("reonset_after_s", 0.0, 1.0)
        num("reonset_decayed_db", 0.0, 60.0)
        num("reonset_ripple_db", 0.0, 60.0)
        num("reonset_level_db", 0.0, 60.0)
        num("floor_tau_s", 0.01, 600.0)
        num("floor_hold_s", 0.0, 10.0)
        num("floor_adapt_after_s", 0.0, 600.0)
        num("warmup_s", 0.0, 10.0)
        num("settle_s", 0.0, 1.0)
        num("pre_roll_s", 0.0, 2.0)
        num("clip_fraction", 0.0, 1.0)
        num("decide_after_s", 0.0, 1.0)
        num("told_max_s", 0.0, 60.0)
        num("continuity_tol_s", 0.0, 1.0)
        num("time_jump_s", self.continuity_tol_s, 3600.0)
        if not isinstance(self.id_prefix, str) or not self.id_prefix:
            raise DetectorConfigError(f"DetectorConfig.id_prefix must be a non-empty str, got {self.id_prefix!r}")
        if self.frame / self.sample_rate > 0.1:
            raise DetectorConfigError(f"DetectorConfig.frame is {self.frame / self.sample_rate * 1e3:.0f} ms; "
                                      f"frames longer than 100 ms cannot resolve drops")

    def samples(self, seconds: float) -> int:
        """Whole samples in ``seconds`` at the configured rate."""
        return int(round(seconds * self.sample_rate))
