"""Frame-level event segmentation: adaptive noise floor, threshold, hysteresis, refractory period.

Works on absolute sample indices (frame starts) and frame energies in dB; knows nothing about chunks,
so the same frames give the same segments however the stream was cut.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .config import DetectorConfig

MIN_FLOOR_DB = -90.0  # a floor below this is a muted or digital-silence input, not a room


@dataclass(frozen=True)
class Segment:
    """A closed event in samples: [start, end), peak frame energy and the floor it was measured against.

    continued: it continues one cut at max_event_s. cut: it was itself cut at max_event_s.
    truncated: closed early by a stream gap or flush. reonset: a new impact inside the ringing of the
    event before it (see DetectorConfig.reonset_db); base_db is then the frame energy just before it.
    split: closed by such a new impact (the next segment is its reonset)."""

    start: int
    end: int
    peak_db: float
    floor_db: float
    continued: bool = False
    cut: bool = False
    truncated: bool = False
    reonset: bool = False
    base_db: float | None = None
    split: bool = False


@dataclass(frozen=True)
class _Past:
    """One frame of an open event, with the event's state after it (for the reonset test)."""

    start: int
    energy_db: float
    peak_db: float
    peak_at: int
    ripple_db: float


@dataclass
class _Open:
    start: int
    peak_db: float
    last_above_end: int
    below: int = 0
    continued: bool = False
    reonset: bool = False
    base_db: float | None = None
    recent: list[_Past] = field(default_factory=list)  # the last frame // hop + 1 frames
    trough_db: float = math.inf  # the lowest frame energy since the peak ...
    ripple_db: float = 0.0       # ... and the most any frame since the peak rose above the trough before it
    peak_at: int = 0             # start of the peak frame
    origin: int | None = None    # a reonset: where the event it split from began (max_event_s counts from there)


class Segmenter:
    """Turns frame energies into segments; see DetectorConfig for every threshold."""

    def __init__(self, config: DetectorConfig) -> None:
        self.config = config
        c = config
        self._alpha = c.hop / (c.floor_tau_s * c.sample_rate)
        self._warm_frames = max(1, int(math.ceil(c.warmup_s * c.sample_rate / c.hop)))
        self._release_hold = c.samples(c.release_hold_s)
        self._refractory = c.samples(c.refractory_s)
        self._floor_hold = c.samples(c.floor_hold_s)
        self._max_event = c.samples(c.max_event_s)
        self._adapt_after = c.samples(c.floor_adapt_after_s)
        self._reonset_after = c.samples(c.reonset_after_s)
        self._per_frame = c.frame // c.hop
        self.floor_db: float | None = None
        self._warm: list[float] = []
        self._open: _Open | None = None
        self._refractory_until = -(1 << 62)
        self._floor_frozen_until = -(1 << 62)
        self._blank_until = -(1 << 62)

    @property
    def active_start(self) -> int | None:
        """Start sample of the open event, if any."""
        return None if self._open is None else self._open.start

    @property
    def active_peak_db(self) -> float | None:
        """Peak frame energy (dB) of the open event so far, if any."""
        return None if self._open is None else self._open.peak_db

    @property
    def active_continued(self) -> bool:
        """The open event continues one cut at max_event_s (it has no onset of its own)."""
        return self._open is not None and self._open.continued

    def so_far(self, end: int) -> Segment | None:
        """The open event as heard up to sample ``end`` (for a verdict before it closes); None if none."""
        ev = self._open
        if ev is None:
            return None
        return Segment(ev.start, max(end, ev.start + 1), ev.peak_db, self._floor(), ev.continued, reonset=ev.reonset,
                       base_db=ev.base_db)

    def restart(self, at: int) -> None:
        """The signal restarts at sample ``at`` (stream start or after a gap): ignore frames while the
        band-pass settles; keep the floor (the room did not change because packets were lost)."""
        self._open = None
        self._blank_until = at + self.config.samples(self.config.settle_s)
        self._refractory_until = -(1 << 62)

    def close(self, end: int) -> Segment | None:
        """Close the open event at sample ``end`` (stream gap or end); None if nothing is open."""
        ev = self._open
        if ev is None:
            return None
        self._open = None
        return Segment(ev.start, max(end, ev.start + 1), ev.peak_db, self._floor(), ev.continued, truncated=True,
                       reonset=ev.reonset, base_db=ev.base_db)

    def feed(self, starts: np.ndarray, energies: np.ndarray) -> list[Segment]:
        """Consume frames (absolute start sample, energy dB) in order; return the segments that closed."""
        c = self.config
        out: list[Segment] = []
        frame = c.frame
        for s, e in zip(starts.tolist(), energies.tolist()):
            if s < self._blank_until:
                continue
            if self.floor_db is None:
                self._warm.append(e)
                if len(self._warm) >= self._warm_frames:
                    self.floor_db = max(MIN_FLOOR_DB, float(np.median(self._warm)))
                    self._warm = []
                continue
            floor = self.floor_db
            ev = self._open
            if ev is None:
                if e > floor + c.threshold_db and s >= self._refractory_until:
                    self._open = _Open(start=s, peak_db=e, last_above_end=s + frame, peak_at=s)
                elif s >= self._floor_frozen_until:
                    self._track(e)
                continue
            low = self._reonset_from(ev, s, e, floor)
            if low is not None:  # a second impact rose from the frame ``low``: the first event ends there
                split = low.start + c.hop
                out.append(Segment(ev.start, split, low.peak_db, floor, ev.continued, base_db=ev.base_db, split=True))
                rise = [p for p in ev.recent if p.start >= split] + [_Past(s, e, e, s, 0.0)]
                top = max(rise, key=lambda p: p.energy_db)
                self._open = _Open(start=split, peak_db=top.energy_db, last_above_end=s + frame, peak_at=top.start,
                                   reonset=True, base_db=low.energy_db, origin=ev.start)
                continue
            if e > ev.peak_db:
                ev.peak_db, ev.trough_db, ev.ripple_db, ev.peak_at = e, e, 0.0, s
            else:
                ev.ripple_db = max(ev.ripple_db, e - ev.trough_db)
                ev.trough_db = min(ev.trough_db, e)
            ev.recent = (ev.recent + [_Past(s, e, ev.peak_db, ev.peak_at, ev.ripple_db)])[-self._per_frame - 1:]
            if e >= floor + c.release_db:
                ev.last_above_end = s + frame
                ev.below = 0
            else:
                ev.below += c.hop
            if s - ev.start >= self._adapt_after:
                self._track(e)  # a long stationary sound becomes the new background
            if ev.below >= self._release_hold:
                out.append(Segment(ev.start, ev.last_above_end, ev.peak_db, floor, ev.continued,
                                   reonset=ev.reonset, base_db=ev.base_db))
                self._open = None
                self._refractory_until = ev.last_above_end + self._refractory
                self._floor_frozen_until = ev.last_above_end + self._floor_hold
            elif s + frame - (ev.start if ev.origin is None else ev.origin) >= self._max_event:
                end = s + frame
                out.append(Segment(ev.start, end, ev.peak_db, floor, ev.continued, cut=True, reonset=ev.reonset,
                                   base_db=ev.base_db))
                self._open = None
                self._floor_frozen_until = end + self._floor_hold
                if e > floor + c.threshold_db:
                    self._open = _Open(start=end, peak_db=e, last_above_end=end, continued=True)
                else:
                    self._refractory_until = end + self._refractory
        return out

    def _reonset_from(self, ev: _Open, s: int, e: float, floor: float) -> _Past | None:
        """The frame a second impact inside the open event rose from, if the frame at ``s`` (energy ``e``)
        ends such a rise: ``e`` is reonset_db above the lowest of the frame // hop + 1 frames before it
        (an impact's jump, spread over the two frames its onset straddles), loud enough to be an onset of
        its own and back within reonset_level_db of the event's peak. At that lowest frame the event had
        peaked within reonset_after_s of its onset (an impulse), decayed reonset_decayed_db below that
        peak with no ripple over reonset_ripple_db (a smooth ring), and was reonset_after_s old."""
        c = self.config
        if c.reonset_db <= 0 or ev.continued or ev.reonset or len(ev.recent) <= self._per_frame:
            return None
        low = min(ev.recent, key=lambda p: p.energy_db)
        rose = (e >= low.energy_db + c.reonset_db and e > floor + c.threshold_db
                and e >= low.peak_db - c.reonset_level_db)
        ringing = (low.peak_at - ev.start <= self._reonset_after <= low.start + c.hop - ev.start
                   and low.energy_db <= low.peak_db - c.reonset_decayed_db and low.ripple_db <= c.reonset_ripple_db)
        return low if rose and ringing else None

    def _track(self, e: float) -> None:
        assert self.floor_db is not None
        self.floor_db = max(MIN_FLOOR_DB, self.floor_db + self._alpha * (e - self.floor_db))

    def _floor(self) -> float:
        return self.floor_db if self.floor_db is not None else MIN_FLOOR_DB
