"""Confidence-gated weighted fusion of one chemical quantity measured by several channels.

This is the paper's "high-confidence chemical quantity recorder" (SPEC.md, Recorder). For one quantity
(say the cumulative titrant volume in mL) each channel (statistical displacement model, audio drop
counter, a sensor such as a balance, vision) reports a value and a confidence in [0, 1]. The confidence
then passes three gates, in the paper's order:

1. **FSM gate.** If the experiment FSM says the operation has not happened (waiting for the pH to settle,
   dispenser idle) but a channel reports a non-zero change, that channel's confidence becomes 0.
2. **Failure gate.** A failure (failed drop, sensor timeout ...) stamped within ``failure_window_s`` of a
   channel's estimate multiplies that channel's confidence by a severity factor (halt -> 0). A failure
   with a measured window (``end``: a deafened microphone from its onset to its end) covers exactly
   the estimates stamped inside it.
3. **Normalisation.** Channels with c_i < tau are dropped; the rest get w_i = c_i / sum_j c_j; the fused
   value is V = sum_i w_i V_i and the fused confidence is the mean of the surviving c_i.

Data problems (NaN/inf values, confidences outside [0, 1], unknown channels) never raise: the estimate is
excluded with a reason and the result carries a quality flag, so the raw observation can still be stored.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from agentchemist.record.errors import RecordConfigError

KNOWN_CHANNELS: tuple[str, ...] = ("statistical", "audio", "sensor", "vision")
SEVERITIES: tuple[str, ...] = ("info", "warn", "halt")

# Quality flags (some carry a ":<channel>" suffix).
FLAG_ALL_BELOW_TAU = "all_below_tau"
FLAG_DIVERGENCE = "divergence"
FLAG_ANOMALOUS_SENSOR = "anomalous_sensor"
FLAG_INVALID_INPUT = "invalid_input"
FLAG_IDLE_CHANGE = "idle_change"
FLAG_FAILURE_GATED = "failure_gated"
FLAG_DUPLICATE = "duplicate_channel"
FLAG_STALE = "stale"
FLAG_INVALID_FAILURE = "invalid_failure"


@dataclass(frozen=True)
class ChannelEstimate:
    """One channel's estimate of a quantity.

    Attributes:
        channel: "statistical" | "audio" | "sensor" | "vision" (or any name in ``known_channels``).
        value: the estimate in the quantity's unit (cumulative volume in mL, mass in g ...).
        confidence: the channel's own confidence in [0, 1].
        stamp: time of the estimate, seconds (ROS clock).
        delta: change reported since the channel's previous estimate, same unit as ``value``.
    """

    channel: str
    value: float
    confidence: float
    stamp: float
    delta: float = 0.0


@dataclass(frozen=True)
class Failure:
    """An operational failure marked by a supervisor (failed drop, sensor timeout ...).

    Attributes:
        stamp: when it happened, seconds.
        kind: short name, e.g. "failed_drop", "sensor_timeout".
        severity: "info" | "warn" | "halt".
        channel: the channel it affects, or None for every channel.
        end: when it ended (inf while it lasts) for a failure that spans a window; None for a moment.
    """

    stamp: float
    kind: str
    severity: str
    channel: str | None = None
    end: float | None = None


def _default_severity() -> Mapping[str, float]:
    return MappingProxyType({"info": 1.0, "warn": 0.5, "halt": 0.0})


@dataclass(frozen=True)
class FusionConfig:
    """Parameters of :func:`fuse`.

    Attributes:
        tau: confidence threshold in (0, 1]; channels with c < tau are dropped.
        divergence_tolerance: relative tolerance between surviving channels (0.1 = 10 %).
        divergence_abs: absolute tolerance in the quantity's unit (mL for volume). Two channels diverge
            when |V_i - V_j| > max(divergence_abs, divergence_tolerance * max(|V_i|, |V_j|)); the
            absolute term keeps small quantities near zero from flagging on noise.
        failure_window_s: a failure within this many seconds of an estimate's stamp gates it.
        severity_factor: multiplier per failure severity, each in [0, 1].
        known_channels: channel names accepted as input.
        idle_delta_tolerance: |delta| above this counts as "non-zero" for the FSM gate (quantity unit).
        max_age_s: estimates older than ``now - max_age_s`` are excluded as stale; None disables.
    """

    tau: float = 0.3
    divergence_tolerance: float = 0.1
    divergence_abs: float = 0.05
    failure_window_s: float = 2.0
    severity_factor: Mapping[str, float] = field(default_factory=_default_severity)
    known_channels: tuple[str, ...] = KNOWN_CHANNELS
    idle_delta_tolerance: float = 0.0
    max_age_s: float | None = None

    def __post_init__(self) -> None:
        if not (_finite(self.tau) and 0.0 < self.tau <= 1.0):
            raise RecordConfigError(f"FusionConfig.tau must be in (0, 1], got {self.tau!r}")
        for name in ("divergence_tolerance", "divergence_abs", "failure_window_s", "idle_delta_tolerance"):
            value = getattr(self, name)
            if not (_finite(value) and value >= 0.0):
                raise RecordConfigError(f"FusionConfig.{name} must be a finite number >= 0, got {value!r}")
        if self.max_age_s is not None and not (_finite(self.max_age_s) and self.max_age_s > 0.0):
            raise RecordConfigError(f"FusionConfig.max_age_s must be None or > 0, got {self.max_age_s!r}")
        missing = [s for s in SEVERITIES if s not in self.severity_factor]
        if missing:
            raise RecordConfigError(f"FusionConfig.severity_factor lacks severities {missing}")
        for severity, factor in self.severity_factor.items():
            if not (_finite(factor) and 0.0 <= factor <= 1.0):
                raise RecordConfigError(
                    f"FusionConfig.severity_factor[{severity!r}] must be in [0, 1], got {factor!r}"
                )
        if isinstance(self.known_channels, str) or not self.known_channels:
            raise RecordConfigError("FusionConfig.known_channels must be a non-empty tuple of names")
        if len(set(self.known_channels)) != len(self.known_channels):
            raise RecordConfigError(f"FusionConfig.known_channels has duplicates: {self.known_channels}")
        # Freeze the mapping so the frozen dataclass really is immutable.
        object.__setattr__(self, "severity_factor", MappingProxyType(dict(self.severity_factor)))
        object.__setattr__(self, "known_channels", tuple(self.known_channels))


@dataclass(frozen=True)
class FusionResult:
    """Result of :func:`fuse`.

    ``channels``, ``channel_values``, ``channel_confidences`` and ``weights`` are aligned and list every
    valid input channel (in ``known_channels`` order); confidences are after the gates and weights are 0
    for dropped channels. ``value`` is NaN and ``confidence`` 0 when no channel survives.
    """

    value: float
    confidence: float
    channels: tuple[str, ...]
    channel_values: tuple[float, ...]
    channel_confidences: tuple[float, ...]
    weights: tuple[float, ...]
    quality_flags: tuple[str, ...]
    excluded: dict[str, str]

    @property
    def surviving(self) -> tuple[str, ...]:
        """Channels that contributed to the fused value (weight > 0)."""
        return tuple(ch for ch, w in zip(self.channels, self.weights) if w > 0.0)


def _finite(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _diverges(a: float, b: float, config: FusionConfig) -> bool:
    tolerance = max(config.divergence_abs, config.divergence_tolerance * max(abs(a), abs(b)))
    return abs(a - b) > tolerance


def _validate(estimate: object, config: FusionConfig, now: float) -> str | None:
    """Return a reason to exclude the estimate, or None when it is usable."""
    if not isinstance(estimate, ChannelEstimate):
        return "not_a_channel_estimate"
    if estimate.channel not in config.known_channels:
        return "unknown_channel"
    if not _finite(estimate.value):
        return "invalid_value"
    if not _finite(estimate.confidence) or not 0.0 <= estimate.confidence <= 1.0:
        return "invalid_confidence"
    if not _finite(estimate.stamp):
        return "invalid_stamp"
    if not _finite(estimate.delta):
        return "invalid_delta"
    if config.max_age_s is not None and now - estimate.stamp > config.max_age_s:
        return "stale"
    return None


def _failure_factor(
    estimate: ChannelEstimate, failures: Sequence[Failure], config: FusionConfig
) -> tuple[float, list[str]]:
    """Product of severity factors of the failures that touch this estimate, and their kinds."""
    factor = 1.0
    kinds: list[str] = []
    for failure in failures:
        if failure.channel is not None and failure.channel != estimate.channel:
            continue
        if failure.end is not None:
            if not failure.stamp <= estimate.stamp <= failure.end:
                continue
        elif abs(failure.stamp - estimate.stamp) > config.failure_window_s:
            continue
        # Validated in fuse(): severity is known here.
        factor *= config.severity_factor[failure.severity]
        kinds.append(failure.kind)
    return factor, kinds


def _split_failures(
    failures: Sequence[Failure], config: FusionConfig, flags: list[str]
) -> list[Failure]:
    """Keep well-formed failures; a malformed one is flagged and, to stay on the safe side, treated as
    a halt on the channel(s) it names (an unknown severity must not leave confidence untouched)."""
    usable: list[Failure] = []
    for failure in failures:
        if not isinstance(failure, Failure) or not _finite(failure.stamp) or (
                failure.end is not None and not (isinstance(failure.end, (int, float)) and failure.end >= failure.stamp)):
            flags.append(f"{FLAG_INVALID_FAILURE}:{getattr(failure, 'kind', '?')}")
            continue
        if failure.channel is not None and failure.channel not in config.known_channels:
            flags.append(f"{FLAG_INVALID_FAILURE}:{failure.kind}")
            continue
        if failure.severity not in config.severity_factor:
            flags.append(f"{FLAG_INVALID_FAILURE}:{failure.kind}")
            usable.append(Failure(failure.stamp, failure.kind, "halt", failure.channel, failure.end))
            continue
        usable.append(failure)
    return usable


def fuse(
    estimates: Sequence[ChannelEstimate],
    *,
    operation_active: bool,
    failures: Sequence[Failure] = (),
    now: float,
    config: FusionConfig = FusionConfig(),
) -> FusionResult:
    """Fuse channel estimates of one quantity (see the module docstring for the gates).

    Args:
        estimates: at most one per channel is used; for duplicates the newest stamp wins (later in the
            sequence on ties) and a ``duplicate_channel:<ch>`` flag is set.
        operation_active: False when the FSM says the operation has not happened (gate 1).
        failures: failures marked by supervisors (gate 2).
        now: current time, seconds; used only for the optional staleness check.
        config: thresholds and factors.

    Example:
        >>> r = fuse([ChannelEstimate("statistical", 1.0, 0.9, 10.0),
        ...           ChannelEstimate("audio", 1.1, 0.6, 10.0)], operation_active=True, now=10.0)
        >>> round(r.value, 4), round(r.confidence, 2)
        (1.04, 0.75)
    """
    flags: list[str] = []
    excluded: dict[str, str] = {}
    usable_failures = _split_failures(failures, config, flags)

    chosen: dict[str, ChannelEstimate] = {}
    for index, estimate in enumerate(estimates):
        reason = _validate(estimate, config, now)
        channel = getattr(estimate, "channel", None)
        name = channel if isinstance(channel, str) else f"<input {index}>"
        if reason is not None:
            excluded[name] = reason
            if reason == "stale":
                flags.append(f"{FLAG_STALE}:{name}")
            else:
                flags.append(f"{FLAG_INVALID_INPUT}:{name}")
            continue
        previous = chosen.get(estimate.channel)
        if previous is not None:
            flags.append(f"{FLAG_DUPLICATE}:{estimate.channel}")
            if previous.stamp > estimate.stamp:
                continue
        chosen[estimate.channel] = estimate
    # A channel that has a valid estimate is not "excluded" because of a bad duplicate.
    for channel in chosen:
        excluded.pop(channel, None)

    channels: list[str] = [ch for ch in config.known_channels if ch in chosen]
    values: list[float] = []
    gated: list[float] = []
    for channel in channels:
        estimate = chosen[channel]
        confidence = float(estimate.confidence)
        # Gate 1: the FSM says nothing happened, yet this channel saw a change.
        if not operation_active and abs(estimate.delta) > config.idle_delta_tolerance:
            confidence = 0.0
            flags.append(f"{FLAG_IDLE_CHANGE}:{channel}")
            excluded[channel] = "idle_nonzero_delta"
        # Gate 2: failures near this estimate reduce (or zero) its confidence by severity.
        factor, kinds = _failure_factor(estimate, usable_failures, config)
        if kinds:
            confidence *= factor
            flags.append(f"{FLAG_FAILURE_GATED}:{channel}")
            if factor == 0.0 and channel not in excluded:
                excluded[channel] = "failure:" + ",".join(kinds)
        values.append(float(estimate.value))
        gated.append(confidence)

    # Gate 3: threshold and normalise.
    surviving = [i for i, c in enumerate(gated) if c >= config.tau]
    for i, channel in enumerate(channels):
        if i not in surviving and channel not in excluded:
            excluded[channel] = "below_tau"
    weights = [0.0] * len(channels)
    if surviving:
        total = math.fsum(gated[i] for i in surviving)
        for i in surviving:
            weights[i] = gated[i] / total
        value = math.fsum(weights[i] * values[i] for i in surviving)
        # Guard the convex combination against rounding just outside [min, max].
        low = min(values[i] for i in surviving)
        high = max(values[i] for i in surviving)
        value = min(max(value, low), high)
        confidence_out = math.fsum(gated[i] for i in surviving) / len(surviving)
    else:
        value = math.nan
        confidence_out = 0.0
        flags.append(FLAG_ALL_BELOW_TAU)

    if any(
        _diverges(values[i], values[j], config) for n, i in enumerate(surviving) for j in surviving[n + 1 :]
    ):
        flags.append(FLAG_DIVERGENCE)

    # A sensor that was merely less confident than tau is not anomalous; one that was invalid, stale,
    # changed while idle or was hit by a failure is.
    if excluded.get("sensor", "below_tau") != "below_tau" or f"{FLAG_FAILURE_GATED}:sensor" in flags:
        flags.append(FLAG_ANOMALOUS_SENSOR)

    return FusionResult(
        value=value,
        confidence=confidence_out,
        channels=tuple(channels),
        channel_values=tuple(values),
        channel_confidences=tuple(gated),
        weights=tuple(weights),
        quality_flags=tuple(dict.fromkeys(flags)),
        excluded=excluded,
    )
