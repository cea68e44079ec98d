"""Deafened microphone: broadband noise on the contact microphone that hides the drops.

A drop rings for tens of milliseconds; a sound that has lasted ``min_duration_s`` and is broadband
(spectral flatness of its excess over the background at least ``min_flatness``) and that the rule
classifier does not call a pour is a noise burst (a hiss, a compressor, someone knocking on the bench with a
tool). The gripper's own motor whine is tonal (flatness near 0) and a pour is granular (classified
pour): neither deafens the microphone, and neither starts an episode. A burst shorter than
``min_duration_s`` is caught when its event closes (kind noise, broadband, at least ``short_min_s``).

While an episode lasts, the detector cannot be trusted to hear drops: its adaptive floor rises to the
noise within a second and drops sink below the threshold. The episode ends once no sound is open and
the floor is back within ``recover_db`` of the floor before the episode (drops then clear the threshold
again), for ``clear_s``.

    monitor = NoiseMonitor()
    for event in detector.process(chunk, t0):
        monitor.on_event(event)
    monitor.update(t0 + chunk_s, detector.ongoing(monitor.config.min_duration_s), detector.noise_floor_db)
    -> [("start", episode)] ... later [("end", episode)]
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

from agentchemist.params import param

from .errors import DetectorConfigError
from .events import DetectedEvent, OngoingSound

__all__ = ["NoiseConfig", "NoiseEpisode", "NoiseMonitor"]


@dataclass(frozen=True)
class NoiseConfig:
    """min_duration_s: an open sound this long is no drop, s. min_flatness: broadband, 0..1 (white noise
    about 0.9, a motor whine about 0). short_min_s: a closed broadband noise event at least this long
    starts an episode too, s. recover_db: the episode ends when the floor is back within this of the floor
    before it, dB ... clear_s: ... and nothing loud is open, for this long, s."""

    min_duration_s: float = param(0.3, unit="s", low=0.05, high=10.0, description=(
        "A broadband sound lasting this long deafens the microphone (drops ring for tens of ms)"))
    min_flatness: float = param(0.3, low=0.0, high=1.0, description=(
        "Spectral flatness from which a sound is broadband noise (0 tonal .. 1 white; the gripper's motor "
        "whine is about 0)"))
    short_min_s: float = 0.04
    recover_db: float = param(6.0, unit="dB", low=0.5, high=40.0, description=(
        "The microphone hears again once its noise floor is back within this of the floor before the noise"))
    clear_s: float = 0.25

    def __post_init__(self) -> None:
        for name in ("min_duration_s", "short_min_s", "recover_db", "clear_s"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise DetectorConfigError(f"NoiseConfig.{name} must be a finite number >= 0, got {v!r}")
        if not 0.0 <= self.min_flatness <= 1.0:
            raise DetectorConfigError(f"NoiseConfig.min_flatness must be in [0, 1], got {self.min_flatness!r}")


@dataclass(frozen=True)
class NoiseEpisode:
    """start / end: s (stream time; end None while it lasts). flatness, level_db: of the sound that
    started it (dB over the floor). floor_before_db: the detector's floor before it, dB."""

    start: float
    end: float | None
    flatness: float
    level_db: float
    floor_before_db: float

    @property
    def duration_s(self) -> float | None:
        return None if self.end is None else self.end - self.start

    def covers(self, t: float) -> bool:
        return self.start <= t and (self.end is None or t <= self.end)


class NoiseMonitor:
    """Watches one microphone's detector for noise that deafens it (see the module docstring)."""

    def __init__(self, config: NoiseConfig = NoiseConfig()) -> None:
        self.config = config
        self.episode: NoiseEpisode | None = None    #: the current one, or the last one after it ended
        self._quiet_floor: float | None = None
        self._clear_since: float | None = None

    @property
    def noisy(self) -> bool:
        return self.episode is not None and self.episode.end is None

    def covers(self, t: float) -> bool:
        """Whether time `t` falls in the current or last episode (events are judged at their onset)."""
        return self.episode is not None and self.episode.covers(t)

    def _broadband(self, kind: str, flatness: float, *, lasting: bool = False) -> bool:
        """A broadband noise: kind noise, or for a sound that has lasted min_duration_s any kind but a pour
        (a drop that lands just before a burst opens the same sound, and the classifier, seeing an impulse
        at its onset, calls the whole a contact; no drop or contact rings that long)."""
        known = kind != "pour" if lasting else kind == "noise"
        return known and flatness >= self.config.min_flatness

    def _start(self, start: float, flatness: float, level_db: float, floor_db: float) -> list[tuple[str, NoiseEpisode]]:
        before = self._quiet_floor if self._quiet_floor is not None else floor_db
        self.episode = NoiseEpisode(start, None, flatness, level_db, before)
        self._clear_since = None
        return [("start", self.episode)]

    def on_event(self, event: DetectedEvent) -> list[tuple[str, NoiseEpisode]]:
        """A closed event: a short broadband burst starts an episode (update() ends it)."""
        f = event.features
        if (self.noisy or f is None or "continued" in event.flags
                or event.end - event.onset < self.config.short_min_s or not self._broadband(event.kind, f.flatness)):
            return []
        return self._start(event.onset, f.flatness, f.snr_db, self._quiet_floor if self._quiet_floor is not None
                           else -math.inf)

    def update(self, now: float, ongoing: OngoingSound | None, floor_db: float) -> list[tuple[str, NoiseEpisode]]:
        """After each chunk: `ongoing` = detector.ongoing(config.min_duration_s), `floor_db` = its floor."""
        if not self.noisy:
            if ongoing is None and math.isfinite(floor_db):
                self._quiet_floor = floor_db  # the floor is frozen inside events: this is the room's
            if ongoing is not None and not ongoing.continued and self._broadband(ongoing.kind, ongoing.flatness,
                                                                                  lasting=True):
                return self._start(ongoing.start, ongoing.flatness, ongoing.level_db, floor_db)
            return []
        episode = self.episode
        before = episode.floor_before_db
        loud = ongoing is not None or (math.isfinite(floor_db) and math.isfinite(before)
                                       and floor_db > before + self.config.recover_db)
        if loud:
            self._clear_since = None
            return []
        if self._clear_since is None:
            self._clear_since = now
        if now - self._clear_since < self.config.clear_s:
            return []
        self.episode = replace(episode, end=self._clear_since)
        self._clear_since = None
        return [("end", self.episode)]
