"""pH settled and endpoint detection from a stream of meter readings.

Settled ("trend" criterion, the default). Over a window of the latest readings a least-squares line gives
the slope b and, from its residuals, the reading's noise sd s (never taken below `noise_floor`, the
meter's resolution): the slope's standard error is s / sqrt(sum (t - tbar)^2) and the mean's s / sqrt(n).
The reading is settled when the slope's upper confidence bound |b| + z se_b is below `max_slope` and the
mean's standard error below `max_mean_se`. `max_slope` is a tolerance over a horizon: after a drop a glass
electrode approaches its new value first-order with tau about 2 s, so the change still to come is
slope * tau, and 0.015 pH/s means at most 0.03 pH left to come. A noisy probe needs a longer window for
the same confidence: the window starts at `window_s` and is lengthened (1.5x, 2x, 3x, 4x ... up to
`max_window_s`) while the readings cover it; any of these windows may show the reading settled. A moving
reading fails on every window (the short ones are not sure enough of the slope, the long ones include the
movement), and a probe noisier than `max_noise_sd` never counts as settled. With the library's 0.005 pH
noise at 5 readings/s a reading settles on a 1-1.4 s window; with 0.03 pH noise on a 3-4 s window.

The "spread" criterion (max - min below `max_spread` over `window_s`, slope below `max_slope`) is kept for
instruments whose display steps in digits (the balance: agentchemist.experiments.weighing.mass). Either way the window
must be covered by readings (first reading at least `window_s` old), so a single reading never counts.
The endpoint is the target reached and settled for longer than `endpoint_hold_s` (the paper: > 5 s).
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

#: window lengths tried, as multiples of window_s (capped at max_window_s)
WINDOW_STEPS = (1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0)


class ReadingError(ValueError):
    """A reading the detector refuses (NaN, out of the instrument's range, time going backwards)."""


@dataclass(frozen=True)
class StabilityConfig:
    window_s: float = 1.0        #: how long the reading must stay put, at the least (s)
    max_slope: float = 0.015     #: trend: upper bound of |dpH/dt| allowed (pH/s); spread: the slope itself
    max_spread: float = 0.03     #: spread criterion: max - min allowed over the window (pH); trend: the
                                 #: band a settled level is known to (used to bound secants)
    min_samples: int = 4         #: readings needed inside the window
    ph_range: tuple[float, float] = (-1.0, 15.0)
    criterion: str = "trend"     #: "trend" (noise-aware, see the module docstring) or "spread"
    max_window_s: float = 0.0    #: trend: longest window tried (s); 0 = 4 x window_s
    confidence_z: float = 1.645  #: trend: one-sided 95 % bound on the slope
    noise_floor: float = 0.002   #: trend: the noise sd is never taken below this (meter resolution)
    max_mean_se: float = 0.01    #: trend: the window mean's standard error must be below this (pH)
    max_noise_sd: float = 0.05   #: trend: a reading noisier than this is never settled (a failing probe)

    def __post_init__(self):
        if not (self.window_s > 0 and self.max_slope > 0 and self.max_spread > 0):
            raise ValueError("StabilityConfig: window_s, max_slope and max_spread must be > 0")
        if self.min_samples < 2:
            raise ValueError("StabilityConfig: min_samples must be >= 2")
        if self.criterion not in ("trend", "spread"):
            raise ValueError(f"StabilityConfig: criterion must be 'trend' or 'spread', got {self.criterion!r}")
        if not (self.max_window_s == 0 or self.max_window_s >= self.window_s):
            raise ValueError("StabilityConfig: max_window_s must be 0 (4 x window_s) or >= window_s")
        if not (self.confidence_z >= 0 and self.noise_floor > 0 and self.max_mean_se > 0 and self.max_noise_sd > 0):
            raise ValueError("StabilityConfig: confidence_z >= 0; noise_floor, max_mean_se, max_noise_sd > 0")

    @property
    def longest_window_s(self) -> float:
        if self.criterion == "spread":
            return self.window_s
        return self.max_window_s or 4.0 * self.window_s


def settle_config(window_s: float, criterion: str = "trend") -> StabilityConfig:
    """The supervisor's pH settle test: the noise-aware trend (default), or the fixed spread used before it
    (max - min <= 0.03 pH and |slope| <= 0.01 pH/s over the window), which replays of older recordings need."""
    if criterion == "spread":
        return StabilityConfig(window_s=window_s, max_slope=0.01, max_spread=0.03, criterion="spread")
    return StabilityConfig(window_s=window_s)


@dataclass(frozen=True)
class Trend:
    """A least-squares line through one window of readings."""
    window_s: float
    n: int
    slope: float        #: pH/s
    slope_se: float     #: standard error of the slope (pH/s)
    mean: float
    mean_se: float
    noise_sd: float     #: residual sd (not floored)


def fit_trend(t: np.ndarray, y: np.ndarray, window_s: float, noise_floor: float) -> Trend | None:
    """Slope, mean and their standard errors from the residuals; None with fewer than three readings."""
    n = len(t)
    if n < 3:
        return None
    tc = t - t.mean()
    stt = float(np.dot(tc, tc))
    if stt <= 0:
        return None
    mean = float(y.mean())
    slope = float(np.dot(tc, y - mean) / stt)
    resid = y - mean - slope * tc
    noise = math.sqrt(float(np.dot(resid, resid)) / (n - 2))
    sigma = max(noise, noise_floor)
    return Trend(window_s, n, slope, sigma / math.sqrt(stt), mean, sigma / math.sqrt(n), noise)


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
        # Keep one reading older than the longest window so that coverage can be checked.
        horizon = stamp - self.config.longest_window_s
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
        if self.config.criterion == "trend":
            return self.settled_trend() is not None
        pts = self._window()
        if len(pts) < self.config.min_samples:
            return False
        values = [p[1] for p in pts]
        if max(values) - min(values) > self.config.max_spread:
            return False
        return abs(self.slope()) <= self.config.max_slope

    def trends(self) -> list[Trend]:
        """The line through each covered window, shortest first (see WINDOW_STEPS)."""
        c = self.config
        if not self._buf:
            return []
        t = np.array([p[0] for p in self._buf])
        y = np.array([p[1] for p in self._buf])
        newest, oldest = t[-1], t[0]
        out = []
        for step in WINDOW_STEPS:
            w = min(step * c.window_s, c.longest_window_s)
            if newest - oldest < w - 1e-9:
                break   # not covered: longer windows are not either
            keep = t >= newest - w - 1e-9
            if int(keep.sum()) >= c.min_samples:
                trend = fit_trend(t[keep], y[keep], w, c.noise_floor)
                if trend is not None:
                    out.append(trend)
            if w >= c.longest_window_s:
                break
        return out

    def passes(self, trend: Trend) -> bool:
        c = self.config
        return (abs(trend.slope) + c.confidence_z * trend.slope_se <= c.max_slope
                and trend.mean_se <= c.max_mean_se and trend.noise_sd <= c.max_noise_sd)

    def settled_trend(self) -> Trend | None:
        """The shortest window on which the reading is settled (trend criterion), else None."""
        for trend in self.trends():
            if self.passes(trend):
                return trend
        return None

    def level(self) -> float:
        """The settled level: the mean over the window that shows it settled, else over `window_s`."""
        trend = self.settled_trend() if self.config.criterion == "trend" else None
        return trend.mean if trend is not None else self.mean()

    def noise_sd(self) -> float:
        """The reading's noise sd from successive differences over the kept readings (median absolute
        difference, so that a step or a trend barely counts); NaN with fewer than four readings."""
        if len(self._buf) < 4:
            return float("nan")
        d = np.diff([p[1] for p in self._buf])
        return float(1.4826 * np.median(np.abs(d - np.median(d))) / math.sqrt(2.0))

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
                                   #: level's noise (sd about 0.002 for a 0.005 sd meter; the window
                                   #: lengthens with a noisier one), not a short
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
        level = self._stability.level()
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
