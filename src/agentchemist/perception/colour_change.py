"""Colour endpoints from a stream of liquid hues: named colours, a debounced change detector, and a
hue-settled test for mixing after each drop.

Progress along the change. A change from colour A to colour B runs along the shorter arc of the hue
circle from hue(A) to hue(B) (magenta 325 deg -> sapphire blue 225 deg passes through violet, not
through green). A hue's *progress* is its signed angle from hue(A) projected on that arc, divided by the
arc length: 0 at A, 1 at B, negative beyond A, above 1 past B.

The detector (:class:`ColourChangeDetector`) is debounced three ways:

* **arming**: it counts a change only after it has seen the start colour (``arm_frames`` frames with
  progress <= ``arm_fraction``): a solution that is blue from the start is not an endpoint;
* **hysteresis**: progress >= ``enter_fraction`` makes a *candidate*; only progress < ``exit_fraction``
  (< enter) takes it back, so noise around one threshold cannot flicker;
* **confirmation**: the candidate is *confirmed* once it has held for ``confirm_s`` seconds and at least
  ``confirm_frames`` frames, with no gap between usable frames longer than ``max_gap_s`` (a gap restarts
  the confirmation: a stale camera is no evidence that the colour held).

Measurements below ``min_confidence`` are ignored (they neither confirm nor revert). Times are
arguments (s); nothing reads a clock.
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, replace
from typing import Literal

from agentchemist.names import did_you_mean, name_key

__all__ = [
    "NAMED_HUES_DEG",
    "ColourChangeConfig",
    "ColourChangeDetector",
    "ColourEvent",
    "HueReadingError",
    "HueStabilityConfig",
    "HueStabilityDetector",
    "UnknownColourError",
    "hue_difference",
    "hue_of",
]

#: Hue (deg, HSV) of colour names used for indicator changes, as they look in solution under bench
#: light: the Ca-calconcarboxylic complex ("magenta / fuchsin red") is about 330 deg, the free
#: indicator ("sapphire blue") about 228 deg.
NAMED_HUES_DEG: dict[str, float] = {
    "red": 0.0,
    "orange": 30.0,
    "yellow": 55.0,
    "green": 120.0,
    "cyan": 185.0,
    "blue": 228.0,
    "sapphire_blue": 228.0,
    "violet": 275.0,
    "purple": 285.0,
    "magenta": 328.0,
    "fuchsin": 328.0,
    "fuchsin_red": 332.0,
    "pink": 335.0,
    "wine_red": 345.0,
}


class UnknownColourError(ValueError):
    """A colour name that is not in :data:`NAMED_HUES_DEG`."""


class HueReadingError(ValueError):
    """A hue measurement the detectors refuse (not finite, out of range, time going backwards)."""


def hue_of(name: str) -> float:
    """Hue in degrees of a colour name ('magenta', 'sapphire blue', 'fuchsin red' ...)."""
    key = name_key(name)
    if key in NAMED_HUES_DEG:
        return NAMED_HUES_DEG[key]
    hint = did_you_mean(key, NAMED_HUES_DEG)
    raise UnknownColourError(f"unknown colour {name!r}{hint} (known: {', '.join(sorted(NAMED_HUES_DEG))})")


def hue_difference(from_deg: float, to_deg: float) -> float:
    """Signed shortest angle from ``from_deg`` to ``to_deg``, in (-180, 180]."""
    d = (to_deg - from_deg) % 360.0
    return d - 360.0 if d > 180.0 else d


def _check(stamp: float, hue_deg: float, confidence: float = 1.0) -> None:
    if not (math.isfinite(stamp) and math.isfinite(hue_deg) and math.isfinite(confidence)):
        raise HueReadingError(f"hue reading {hue_deg!r} deg at {stamp!r} s (confidence {confidence!r}) is not finite")
    if not 0.0 <= hue_deg < 360.0:
        raise HueReadingError(f"hue {hue_deg} deg outside [0, 360)")
    if not 0.0 <= confidence <= 1.0:
        raise HueReadingError(f"confidence {confidence} outside [0, 1]")


@dataclass(frozen=True)
class ColourChangeConfig:
    """Thresholds of the change detector (progress fractions; seconds; frames)."""

    from_hue_deg: float
    to_hue_deg: float
    enter_fraction: float = 0.75
    exit_fraction: float = 0.5
    arm_fraction: float = 0.3
    arm_frames: int = 2
    confirm_s: float = 5.0
    confirm_frames: int = 3
    max_gap_s: float = 2.0
    min_confidence: float = 0.5

    def __post_init__(self):
        for name in ("from_hue_deg", "to_hue_deg"):
            v = getattr(self, name)
            if not (math.isfinite(v) and 0.0 <= v < 360.0):
                raise ValueError(f"ColourChangeConfig.{name} must be a hue in [0, 360), got {v!r}")
        if abs(hue_difference(self.from_hue_deg, self.to_hue_deg)) < 30.0:
            raise ValueError(f"hues {self.from_hue_deg} and {self.to_hue_deg} deg are less than 30 deg apart: "
                             "the camera cannot tell that change reliably")
        if not 0.0 < self.arm_fraction < self.exit_fraction < self.enter_fraction <= 1.0:
            raise ValueError("need 0 < arm_fraction < exit_fraction < enter_fraction <= 1, got "
                             f"{self.arm_fraction}, {self.exit_fraction}, {self.enter_fraction}")
        if not (self.confirm_s >= 0 and self.max_gap_s > 0 and 0.0 <= self.min_confidence <= 1.0):
            raise ValueError("need confirm_s >= 0, max_gap_s > 0, 0 <= min_confidence <= 1")
        if self.arm_frames < 1 or self.confirm_frames < 1:
            raise ValueError("arm_frames and confirm_frames must be >= 1")

    @classmethod
    def from_names(cls, from_colour: str, to_colour: str, **kwargs) -> "ColourChangeConfig":
        return cls(from_hue_deg=hue_of(from_colour), to_hue_deg=hue_of(to_colour), **kwargs)


@dataclass(frozen=True)
class ColourEvent:
    """``armed``: the start colour was seen; ``crossed``: a candidate change (hold dispensing);
    ``reverted``: the candidate went back; ``confirmed``: the change held (the endpoint)."""

    kind: Literal["armed", "crossed", "reverted", "confirmed"]
    stamp: float
    hue_deg: float
    progress: float


class ColourChangeDetector:
    """State machine unarmed -> before -> candidate -> confirmed (see the module docstring)."""

    def __init__(self, config: ColourChangeConfig):
        self.config = config
        self._arc = hue_difference(config.from_hue_deg, config.to_hue_deg)
        self.reset()

    def reset(self) -> None:
        self.state: Literal["unarmed", "before", "candidate", "confirmed"] = "unarmed"
        self.crossed_at: float | None = None
        self.confirmed_at: float | None = None
        self.last_usable: float | None = None
        self.last_progress: float | None = None
        self._arm_count = 0
        self._candidate_frames = 0
        self._last_stamp: float | None = None

    def progress(self, hue_deg: float) -> float:
        """Fraction of the way from the start colour's hue to the end colour's (see module docstring)."""
        return hue_difference(self.config.from_hue_deg, hue_deg) / self._arc

    def update(self, stamp: float, hue_deg: float, confidence: float = 1.0) -> ColourEvent | None:
        """Feed one measurement; returns the event it causes, if any."""
        _check(stamp, hue_deg, confidence)
        if self._last_stamp is not None and stamp < self._last_stamp:
            raise HueReadingError(f"hue reading stamped {stamp:.3f} s is older than the previous one "
                                  f"({self._last_stamp:.3f} s)")
        self._last_stamp = stamp
        c = self.config
        if confidence < c.min_confidence:
            return None
        p = self.progress(hue_deg)
        gap = None if self.last_usable is None else stamp - self.last_usable
        self.last_usable, self.last_progress = stamp, p
        if self.state == "unarmed":
            self._arm_count = self._arm_count + 1 if p <= c.arm_fraction else 0
            if self._arm_count >= c.arm_frames:
                self.state = "before"
                return ColourEvent("armed", stamp, hue_deg, p)
            return None
        if self.state == "before":
            if p >= c.enter_fraction:
                self.state, self.crossed_at, self._candidate_frames = "candidate", stamp, 1
                return ColourEvent("crossed", stamp, hue_deg, p)
            return None
        if self.state == "candidate":
            if p < c.exit_fraction:
                self.state, self.crossed_at = "before", None
                return ColourEvent("reverted", stamp, hue_deg, p)
            if gap is not None and gap > c.max_gap_s:
                # No evidence for the time in between: confirmation starts again from this frame.
                self.crossed_at, self._candidate_frames = stamp, 1
                return None
            self._candidate_frames += 1
            assert self.crossed_at is not None
            if stamp - self.crossed_at >= c.confirm_s and self._candidate_frames >= c.confirm_frames:
                self.state, self.confirmed_at = "confirmed", stamp
                return ColourEvent("confirmed", stamp, hue_deg, p)
        return None

    @property
    def armed(self) -> bool:
        return self.state != "unarmed"

    def at_end_colour(self, hue_deg: float) -> bool:
        """True when ``hue_deg`` is on the end colour's side of the hysteresis band."""
        return self.progress(hue_deg) >= self.config.exit_fraction


@dataclass(frozen=True)
class HueStabilityConfig:
    """Hue settled: over the last ``window_s`` s (covered by readings), at least ``min_samples``
    readings all within ``max_spread_deg`` (max - min of their angles about the circular mean)."""

    window_s: float = 2.0
    max_spread_deg: float = 6.0
    min_samples: int = 3

    def __post_init__(self):
        if not (math.isfinite(self.window_s) and self.window_s > 0):
            raise ValueError(f"HueStabilityConfig.window_s must be > 0, got {self.window_s!r}")
        if not (math.isfinite(self.max_spread_deg) and 0 < self.max_spread_deg < 180):
            raise ValueError(f"HueStabilityConfig.max_spread_deg must be in (0, 180), got {self.max_spread_deg!r}")
        if self.min_samples < 2:
            raise ValueError("HueStabilityConfig.min_samples must be >= 2")

    def with_window(self, window_s: float) -> "HueStabilityConfig":
        return replace(self, window_s=window_s)


class HueStabilityDetector:
    """Sliding-window spread test over (stamp, hue) readings; a single reading is never stable."""

    def __init__(self, config: HueStabilityConfig = HueStabilityConfig()):
        self.config = config
        self._buf: deque[tuple[float, float]] = deque()

    def reset(self) -> None:
        self._buf.clear()

    def add(self, stamp: float, hue_deg: float) -> None:
        _check(stamp, hue_deg)
        if self._buf and stamp < self._buf[-1][0]:
            raise HueReadingError(f"hue reading stamped {stamp:.3f} s is older than the previous one "
                                  f"({self._buf[-1][0]:.3f} s)")
        self._buf.append((stamp, hue_deg))
        horizon = stamp - self.config.window_s
        while len(self._buf) > 2 and self._buf[1][0] <= horizon:
            self._buf.popleft()

    def spread_deg(self) -> float:
        """max - min of the window's hues about their circular mean (deg); NaN when empty."""
        pts = self._window()
        if not pts:
            return float("nan")
        rad = [math.radians(h) for _, h in pts]
        mean = math.degrees(math.atan2(sum(map(math.sin, rad)), sum(map(math.cos, rad)))) % 360.0
        offsets = [hue_difference(mean, h) for _, h in pts]
        return max(offsets) - min(offsets)

    def is_stable(self) -> bool:
        if not self._buf or self._buf[-1][0] - self._buf[0][0] < self.config.window_s:
            return False  # the window is not covered yet
        pts = self._window()
        return len(pts) >= self.config.min_samples and self.spread_deg() <= self.config.max_spread_deg

    def _window(self) -> list[tuple[float, float]]:
        if not self._buf:
            return []
        horizon = self._buf[-1][0] - self.config.window_s
        return [p for p in self._buf if p[0] >= horizon]
