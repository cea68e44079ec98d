"""Playback options and timing: when each recorded message is due, and what /clock says meanwhile.

Times in a bag are receive times in ns. Playback at `rate` publishes a message recorded `d` seconds
after the first played one at `d / rate` wall seconds after playback starts. In "as fast as possible"
mode there is no waiting; the player then publishes /clock at every recorded time it passes (and every
`clock_step_s` across longer gaps, so that timers on the simulated clock fire as they did live).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from agentchemist.bag.errors import BagOptionError

NS = 1_000_000_000


@dataclass(frozen=True)
class PlaybackOptions:
    """rate: playback speed factor (> 0). fast: ignore timing, publish back to back.
    start_offset_s: skip this much of the bag's beginning (latched topics still get their last earlier
    message first, as a late joiner would). until_s: stop this far into the bag (None: the end).
    loop: start again at the end. clock_hz: /clock rate in timed mode (0: no /clock).
    clock_step_s: in fast mode, the largest /clock step across a gap without messages (0: only at messages).
    clock_resolution_s: in fast mode, /clock is not published for an advance smaller than this (a recorder
    that breaks timestamp ties adds 1 ns per message; nobody needs a clock message for each).
    topics: topics to play (empty: all). remap: (from, to) topic pairs. delay_s: wait before starting."""

    rate: float = 1.0
    fast: bool = False
    start_offset_s: float = 0.0
    until_s: float | None = None
    loop: bool = False
    clock_hz: float = 0.0
    clock_step_s: float = 0.05
    clock_resolution_s: float = 0.001
    topics: tuple[str, ...] = ()
    remap: tuple[tuple[str, str], ...] = field(default=())
    delay_s: float = 0.0

    def __post_init__(self):
        def finite(name, low, value, strict=False):
            bad = not isinstance(value, (int, float)) or not math.isfinite(value)
            if bad or value < low or (strict and value <= low):
                relation = ">" if strict else ">="
                raise BagOptionError(f"{name} must be a finite number {relation} {low}, got {value!r}")

        finite("rate", 0.0, self.rate, strict=True)
        finite("start_offset_s", 0.0, self.start_offset_s)
        finite("clock_hz", 0.0, self.clock_hz)
        finite("clock_step_s", 0.0, self.clock_step_s)
        finite("clock_resolution_s", 0.0, self.clock_resolution_s)
        finite("delay_s", 0.0, self.delay_s)
        if self.until_s is not None:
            finite("until_s", 0.0, self.until_s)
            if self.until_s <= self.start_offset_s:
                raise BagOptionError(f"until_s ({self.until_s}) must be after start_offset_s ({self.start_offset_s})")
        for src, dst in self.remap:
            for name in (src, dst):
                if not name.startswith("/"):
                    raise BagOptionError(f"remapped topic {name!r} must be absolute")
        sources = [src for src, _ in self.remap]
        if len(set(sources)) != len(sources):
            raise BagOptionError("a topic is remapped twice")

    def target(self, topic: str) -> str:
        """The topic a recorded topic is published on."""
        return dict(self.remap).get(topic, topic)


def parse_remaps(items) -> tuple[tuple[str, str], ...]:
    """`from:=to` words (ros2 bag play --remap syntax) into pairs."""
    pairs = []
    for item in items or ():
        if ":=" not in item:
            raise BagOptionError(f"remap {item!r} is not of the form /from:=/to")
        src, dst = (part.strip() for part in item.split(":=", 1))
        if not src or not dst:
            raise BagOptionError(f"remap {item!r} has an empty side")
        pairs.append((src, dst))
    return tuple(pairs)


@dataclass(frozen=True)
class Schedule:
    """Wall timing of one pass over a bag: `first_ns` is the bag time played at wall offset 0."""

    first_ns: int
    rate: float = 1.0

    def __post_init__(self):
        if not self.rate > 0 or not math.isfinite(self.rate):
            raise BagOptionError(f"rate must be > 0, got {self.rate!r}")

    def due(self, timestamp: int) -> float:
        """Wall seconds after playback start at which the message recorded at `timestamp` is due."""
        return max(0.0, (timestamp - self.first_ns) / NS / self.rate)

    def bag_time(self, wall_elapsed: float) -> int:
        """The bag time (ns) that corresponds to `wall_elapsed` seconds of playback."""
        if wall_elapsed < 0 or not math.isfinite(wall_elapsed):
            raise BagOptionError(f"wall_elapsed must be finite and >= 0, got {wall_elapsed!r}")
        return self.first_ns + int(round(wall_elapsed * self.rate * NS))


def window(start_ns: int, options: PlaybackOptions) -> tuple[int, int | None]:
    """(first, stop) bag times played by `options` for a bag starting at `start_ns`; stop None: the end."""
    first = start_ns + int(round(options.start_offset_s * NS))
    stop = start_ns + int(round(options.until_s * NS)) + 1 if options.until_s is not None else None
    return first, stop


def clock_steps(last_ns: int | None, next_ns: int, step_s: float, resolution_s: float = 0.0) -> list[int]:
    """/clock values to publish before a message at `next_ns` when the clock last said `last_ns`.

    Intermediate values every `step_s` across a gap (so timers fire at their live times), then next_ns.
    Nothing when the clock is already there, or less than `resolution_s` behind.
    """
    if last_ns is not None and next_ns - last_ns < max(1, int(round(resolution_s * NS))):
        return []
    steps = []
    if last_ns is not None and step_s > 0:
        step = int(round(step_s * NS))
        t = last_ns + step
        while t < next_ns:
            steps.append(t)
            t += step
    steps.append(next_ns)
    return steps


def timing_errors(recorded_ns: list[int], played_wall_s: list[float], rate: float = 1.0) -> list[float]:
    """Per message, seconds between where it was played and where it was due relative to the first one."""
    if len(recorded_ns) != len(played_wall_s):
        raise BagOptionError(f"{len(recorded_ns)} recorded times but {len(played_wall_s)} played times")
    if not recorded_ns:
        return []
    return [(w - played_wall_s[0]) - (t - recorded_ns[0]) / NS / rate for t, w in zip(recorded_ns, played_wall_s)]
