"""Outlier rejection, smoothing and confidence for quantities measured by one sensor (pH, temperature).

The paper gives single-source quantities "anomaly detection and smoothing filtering" and a confidence
from the sensor's self-check. We use a Hampel test (median and MAD over a short window of accepted
readings) so one spike cannot drag the estimate, with one refinement that matters in titration: at the
equivalence point the pH jumps by several units in one drop. A lone jump is held back as an outlier, but
when ``shift_confirm`` consecutive rejected readings agree with each other the filter accepts them as a
real level shift and restarts its window there, instead of rejecting the whole jump.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from agentchemist.record.errors import RecordConfigError

MAD_TO_SIGMA = 1.4826  # MAD of a normal distribution times this is its standard deviation.

FLAG_OUTLIER = "outlier"
FLAG_LEVEL_SHIFT = "level_shift"
FLAG_OUT_OF_ORDER = "out_of_order"
FLAG_INVALID_VALUE = "invalid_value"
FLAG_INVALID_NOISE = "invalid_noise"
FLAG_INVALID_STAMP = "invalid_stamp"
FLAG_OUT_OF_RANGE = "out_of_range"
FLAG_SELF_CHECK_FAILED = "self_check_failed"
FLAG_ANOMALOUS_SENSOR = "anomalous_sensor"
FLAG_WARMING_UP = "warming_up"


@dataclass(frozen=True)
class SingleSourceConfig:
    """Parameters of :class:`SingleSourceFilter` (values in the quantity's unit unless stated).

    Attributes:
        window: number of accepted readings the median/MAD is taken over.
        min_samples: readings needed before the outlier test runs (before that: flag ``warming_up``).
        n_sigmas: Hampel threshold in robust standard deviations.
        min_sigma: floor on the robust sigma, so a perfectly steady sensor does not turn its
            quantisation step into an "outlier" (pH meter: 0.01).
        shift_confirm: consecutive agreeing outliers accepted as a real level shift (>= 2).
        smoothing: "median" (median of the last ``smooth_window`` accepted readings) or "ema".
        smooth_window: length of the smoothing median.
        ema_alpha: weight of the newest reading for "ema", in (0, 1].
        valid_range: (low, high) physically plausible values; None disables the check.
        noise_ref: reported noise at which the noise factor of the confidence halves.
    """

    window: int = 7
    min_samples: int = 3
    n_sigmas: float = 3.0
    min_sigma: float = 0.01
    shift_confirm: int = 2
    smoothing: str = "median"
    smooth_window: int = 3
    ema_alpha: float = 0.5
    valid_range: tuple[float, float] | None = None
    noise_ref: float = 0.05

    def __post_init__(self) -> None:
        if self.window < 3:
            raise RecordConfigError(f"SingleSourceConfig.window must be >= 3, got {self.window}")
        if not 2 <= self.min_samples <= self.window:
            raise RecordConfigError(
                f"SingleSourceConfig.min_samples must be in [2, window={self.window}], got {self.min_samples}"
            )
        if not (math.isfinite(self.n_sigmas) and self.n_sigmas > 0):
            raise RecordConfigError(f"SingleSourceConfig.n_sigmas must be > 0, got {self.n_sigmas}")
        if not (math.isfinite(self.min_sigma) and self.min_sigma > 0):
            raise RecordConfigError(f"SingleSourceConfig.min_sigma must be > 0, got {self.min_sigma}")
        if not 2 <= self.shift_confirm <= self.window:
            raise RecordConfigError(
                f"SingleSourceConfig.shift_confirm must be in [2, window], got {self.shift_confirm}"
            )
        if self.smoothing not in ("median", "ema"):
            raise RecordConfigError(
                f"SingleSourceConfig.smoothing must be 'median' or 'ema', got {self.smoothing!r}"
            )
        if self.smooth_window < 1:
            raise RecordConfigError(f"SingleSourceConfig.smooth_window must be >= 1, got {self.smooth_window}")
        if not (0.0 < self.ema_alpha <= 1.0):
            raise RecordConfigError(f"SingleSourceConfig.ema_alpha must be in (0, 1], got {self.ema_alpha}")
        if self.valid_range is not None:
            low, high = self.valid_range
            if not (math.isfinite(low) and math.isfinite(high) and low < high):
                raise RecordConfigError(
                    f"SingleSourceConfig.valid_range must be finite (low, high) with low < high, got {self.valid_range}"
                )
        if not (math.isfinite(self.noise_ref) and self.noise_ref > 0):
            raise RecordConfigError(f"SingleSourceConfig.noise_ref must be > 0, got {self.noise_ref}")


PH_FILTER = SingleSourceConfig(valid_range=(-2.0, 16.0), min_sigma=0.01, noise_ref=0.05)
TEMPERATURE_FILTER = SingleSourceConfig(valid_range=(-30.0, 150.0), min_sigma=0.05, noise_ref=0.2)


@dataclass(frozen=True)
class FilteredReading:
    """Output of :meth:`SingleSourceFilter.update`.

    Attributes:
        value: the filter's smoothed estimate after this reading (the previous estimate when the reading
            was excluded; NaN before any reading was accepted).
        confidence: confidence of this reading in [0, 1]; 0 when it was excluded.
        outlier: True when the reading was rejected as an outlier or is physically implausible.
        flags: quality flags (see the FLAG_* constants).
        raw: the reading as given.
        stamp: its stamp, seconds.
        excluded: True when the reading did not enter the estimate (outlier, bad input, out of order).
    """

    value: float
    confidence: float
    outlier: bool
    flags: tuple[str, ...]
    raw: float = math.nan
    stamp: float = math.nan
    excluded: bool = False


class SingleSourceFilter:
    """Stateful Hampel filter + smoother for one sensor stream; time comes in with each reading.

    Example:
        >>> f = SingleSourceFilter(PH_FILTER)
        >>> for i, x in enumerate([7.00, 7.01, 6.99, 7.00, 9.5, 7.01]):
        ...     r = f.update(x, float(i), True, 0.01)
        >>> r.outlier, round(r.value, 2)
        (False, 7.0)
    """

    def __init__(self, config: SingleSourceConfig = SingleSourceConfig()) -> None:
        self.config = config
        self._window: deque[float] = deque(maxlen=config.window)
        self._pending: list[float] = []  # consecutive rejected readings, candidates for a level shift
        self._estimate = math.nan
        self._last_stamp = -math.inf

    @property
    def estimate(self) -> float:
        """Current smoothed value (NaN before the first accepted reading)."""
        return self._estimate

    def reset(self) -> None:
        """Forget history (e.g. after the probe was moved to another beaker)."""
        self._window.clear()
        self._pending.clear()
        self._estimate = math.nan
        self._last_stamp = -math.inf

    def update(self, value: float, stamp: float, self_check_ok: bool = True, noise: float = 0.0) -> FilteredReading:
        """Feed one reading (value in the quantity's unit, stamp in s, noise = reported std, >= 0)."""
        cfg = self.config
        flags: list[str] = []

        def reject(*extra: str, outlier: bool = False) -> FilteredReading:
            return FilteredReading(
                value=self._estimate,
                confidence=0.0,
                outlier=outlier,
                flags=tuple(dict.fromkeys([*flags, *extra, FLAG_ANOMALOUS_SENSOR])),
                raw=value,
                stamp=stamp,
                excluded=True,
            )

        if not _is_number(stamp) or not math.isfinite(stamp):
            return reject(FLAG_INVALID_STAMP)
        if stamp <= self._last_stamp:
            return reject(FLAG_OUT_OF_ORDER)
        if not _is_number(value) or not math.isfinite(value):
            return reject(FLAG_INVALID_VALUE)
        if not _is_number(noise) or not math.isfinite(noise) or noise < 0:
            flags.append(FLAG_INVALID_NOISE)
            noise = math.inf  # unknown noise: the noise factor below becomes 0
        # An accepted-or-rejected valid reading advances time: a later, older stamp is out of order.
        self._last_stamp = float(stamp)
        if cfg.valid_range is not None and not cfg.valid_range[0] <= value <= cfg.valid_range[1]:
            return reject(FLAG_OUT_OF_RANGE, outlier=True)
        if not self_check_ok:
            # The instrument itself says the value is bad (an unexpected unit, its range flag, pH 17, a
            # negative mass): kept raw with the flag, never smoothed into the channel.
            return reject(FLAG_SELF_CHECK_FAILED)

        residual, sigma = self._residual(value)
        if residual is None:
            flags.append(FLAG_WARMING_UP)
        elif residual > cfg.n_sigmas * sigma:
            self._pending.append(float(value))
            del self._pending[: -cfg.shift_confirm]
            if not self._is_confirmed_shift(sigma):
                return reject(FLAG_OUTLIER, outlier=True)
            # The rejected run agrees with itself: the level really moved (e.g. equivalence jump).
            flags.append(FLAG_LEVEL_SHIFT)
            self._window.clear()
            self._window.extend(self._pending)
            self._pending.clear()
            self._estimate = math.nan
            residual = 0.0
        else:
            self._pending.clear()

        if FLAG_LEVEL_SHIFT not in flags:
            self._window.append(float(value))
        self._smooth(float(value), restarted=FLAG_LEVEL_SHIFT in flags)

        confidence = 1.0
        confidence *= 1.0 / (1.0 + (noise / cfg.noise_ref) ** 2) if math.isfinite(noise) else 0.0
        if residual:
            confidence *= 1.0 / (1.0 + (residual / (cfg.n_sigmas * sigma)) ** 2)
        return FilteredReading(
            value=self._estimate,
            confidence=float(min(max(confidence, 0.0), 1.0)),
            outlier=False,
            flags=tuple(dict.fromkeys(flags)),
            raw=value,
            stamp=stamp,
            excluded=False,
        )

    def _residual(self, value: float) -> tuple[float | None, float]:
        """|value - median| and the robust sigma of the window (None before ``min_samples``)."""
        if len(self._window) < self.config.min_samples:
            return None, self.config.min_sigma
        data = np.fromiter(self._window, dtype=float)
        median = float(np.median(data))
        sigma = max(MAD_TO_SIGMA * float(np.median(np.abs(data - median))), self.config.min_sigma)
        return abs(value - median), sigma

    def _is_confirmed_shift(self, sigma: float) -> bool:
        run = self._pending[-self.config.shift_confirm :]
        if len(run) < self.config.shift_confirm:
            return False
        # The run must be tight (spread within the outlier threshold) to count as a new level.
        return max(run) - min(run) <= self.config.n_sigmas * sigma

    def _smooth(self, value: float, restarted: bool) -> None:
        cfg = self.config
        if cfg.smoothing == "median":
            recent = list(self._window)[-cfg.smooth_window :]
            self._estimate = float(np.median(recent))
        elif restarted or math.isnan(self._estimate):
            self._estimate = float(np.mean(list(self._window)))
        else:
            self._estimate = cfg.ema_alpha * value + (1.0 - cfg.ema_alpha) * self._estimate


def _is_number(x: object) -> bool:
    return isinstance(x, (int, float, np.floating, np.integer)) and not isinstance(x, bool)
