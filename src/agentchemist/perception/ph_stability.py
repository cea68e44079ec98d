"""pH settled and endpoint detection from a stream of meter readings.

A reading is "settled" when, over the last `window_s` seconds, the least-squares slope is below
`max_slope` (pH/s) and the spread (max - min) is below `max_spread`. The window must be covered by
readings (first reading at least `window_s` old), so a single reading never counts as stable.
The endpoint is the target reached and settled for longer than `endpoint_hold_s` (the paper: > 5 s).
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np


class ReadingError(ValueError):
    """A reading the detector refuses (NaN, out of the instrument's range, time going backwards)."""


@dataclass(frozen=True)
class StabilityConfig:
    window_s: float = 1.0        #: how long the reading must stay put (s)
    max_slope: float = 0.01      #: |dpH/dt| allowed over the window (pH/s)
    max_spread: float = 0.03     #: max - min allowed over the window (pH)
    min_samples: int = 4         #: readings needed inside the window
    ph_range: tuple[float, float] = (-1.0, 15.0)

    def __post_init__(self):
        if not (self.window_s > 0 and self.max_slope > 0 and self.max_spread > 0):
            raise ValueError("StabilityConfig: window_s, max_slope and max_spread must be > 0")
        if self.min_samples < 2:
            raise ValueError("StabilityConfig: min_samples must be >= 2")


class PhStabilityDetector:
    """Sliding-window slope/spread test over (stamp, pH) readings."""

    def __init__(self, config: StabilityConfig = StabilityConfig()):
        self.config = config
        self._buf: deque[tuple[float, float]] = deque()

    def reset(self) -> None:
        self._buf.clear()

    def add(self, stamp: float, ph: float) -> None:
        if not math.isfinite(ph) or not math.isfinite(stamp):
            raise ReadingError(f"non-finite pH reading {ph!r} at {stamp!r}")
        lo, hi = self.config.ph_range
        if not lo <= ph <= hi:
            raise ReadingError(f"pH {ph:.3f} outside the meter range [{lo}, {hi}]")
        if self._buf and stamp < self._buf[-1][0]:
            raise ReadingError(f"reading stamped {stamp:.3f} s is older than the previous one "
                               f"({self._buf[-1][0]:.3f} s)")
        self._buf.append((stamp, ph))
        # Keep one reading older than the window so that coverage can be checked.
        horizon = stamp - self.config.window_s
        while len(self._buf) > 2 and self._buf[1][0] <= horizon:
            self._buf.popleft()

    @property
    def latest(self) -> float | None:
        return self._buf[-1][1] if self._buf else None

    def slope(self) -> float:
        """Least-squares slope over the window (pH/s); NaN with fewer than two readings."""
        pts = self._window()
        if len(pts) < 2:
            return float("nan")
        t = np.array([p[0] for p in pts])
        y = np.array([p[1] for p in pts])
        t = t - t.mean()
        denom = float(np.dot(t, t))
        return float(np.dot(t, y - y.mean()) / denom) if denom > 0 else float("nan")

    def mean(self) -> float:
        """Mean pH over the window (NaN when empty): what a settled reading is compared with, so that
        one noisy reading does not decide."""
        pts = self._window()
        return float(np.mean([p[1] for p in pts])) if pts else float("nan")

    def is_stable(self) -> bool:
        if not self._buf:
            return False
        newest = self._buf[-1][0]
        if newest - self._buf[0][0] < self.config.window_s:
            return False  # the window is not covered yet
        pts = self._window()
        if len(pts) < self.config.min_samples:
            return False
        values = [p[1] for p in pts]
        if max(values) - min(values) > self.config.max_spread:
            return False
        return abs(self.slope()) <= self.config.max_slope

    def _window(self) -> list[tuple[float, float]]:
        if not self._buf:
            return []
        horizon = self._buf[-1][0] - self.config.window_s
        return [p for p in self._buf if p[0] >= horizon]


@dataclass(frozen=True)
class EndpointConfig:
    target_ph: float
    direction: int = +1            #: +1: pH rises towards the target (base titrant); -1: falls
    tolerance: float = 0.01        #: reached when within this of the target, or beyond it. "Reaches
                                   #: pH 12.5" means crossing it: the tolerance only absorbs the window
                                   #: mean's noise (sd about 0.002 for a 0.005 sd meter), not a short
                                   #: stop (0.05 stopped the worked example at 12.45 with drops of 0.005 pH)
    hold_s: float = 5.0            #: reached and stable for longer than this (the paper: > 5 s)
    stability: StabilityConfig = StabilityConfig(window_s=2.0, max_slope=0.01, max_spread=0.05)

    def __post_init__(self):
        if not math.isfinite(self.target_ph) or not -1.0 <= self.target_ph <= 15.0:
            raise ValueError(f"EndpointConfig: target pH {self.target_ph!r} is not a pH value")
        if self.direction not in (-1, 1):
            raise ValueError("EndpointConfig: direction must be +1 or -1")


class EndpointDetector:
    """Target reached and stable for more than `hold_s`."""

    def __init__(self, config: EndpointConfig):
        self.config = config
        self._stability = PhStabilityDetector(config.stability)
        self._since: float | None = None

    def reached(self, ph: float) -> bool:
        c = self.config
        return c.direction * (ph - c.target_ph) >= -c.tolerance

    def update(self, stamp: float, ph: float) -> bool:
        """Feed a reading; True once the endpoint holds. The target is judged on the window's mean, not
        on single readings, so probe noise around a settled value does not restart the hold."""
        self._stability.add(stamp, ph)
        level = self._stability.mean()
        if self.reached(level) and self._stability.is_stable():
            if self._since is None:
                self._since = stamp
            return stamp - self._since > self.config.hold_s
        if not self.reached(level):
            self._since = None
        return False

    @property
    def stable(self) -> bool:
        """The detector's own window has settled (whether at the target or not)."""
        return self._stability.is_stable()

    @property
    def confirming(self) -> bool:
        """The settled level has reached the target and the hold is running (not yet long enough)."""
        return self._since is not None

    @property
    def held_for(self) -> float:
        latest = self._stability._buf[-1][0] if self._stability._buf else None
        return 0.0 if self._since is None or latest is None else latest - self._since
