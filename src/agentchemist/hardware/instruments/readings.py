"""What a dialect makes of one frame: readings with their own quality, or the reason there are none."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace


@dataclass(frozen=True)
class Reading:
    """One value the instrument sent.

    ``stable`` is the instrument's own stability flag (MT-SICS ``S S`` vs ``S D``, a Sartorius unit shown
    only when stable), or None when the dialect carries none (then the driver judges it from the drift).
    ``self_check_ok`` is false, with ``problem`` saying why, for an over/under-range flag from the
    instrument, an unexpected unit or a value outside the plausible range; such a reading is still
    published (flagged) so consumers see it, and the recorder excludes it."""
    quantity: str          # "pH", "temperature", "mV", "mass"
    value: float
    unit: str              # "pH", "degC", "mV", "g"
    stable: bool | None = None
    self_check_ok: bool = True
    problem: str = ""

    def flagged(self, problem: str) -> "Reading":
        """The same reading with its self-check failed for `problem` (the first problem is kept first)."""
        text = f"{self.problem}; {problem}" if self.problem else problem
        return replace(self, self_check_ok=False, problem=text)


@dataclass(frozen=True)
class Parsed:
    """A parsed frame. ``readings`` empty and ``problem`` set: a malformed or refused frame.
    ``reply``: a command acknowledgement without a value (MT-SICS ``Z A``, ``T I``), for the link."""
    readings: tuple[Reading, ...] = ()
    problem: str = ""
    reply: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problem


_NUMBER = re.compile(r"^\s*([+-]?)\s*(\d+(?:\.\d*)?|\.\d+)\s*$")


def parse_number(text: str) -> float | None:
    """A decimal number as instruments print it ('+ 12.30', '-0.5', ' 7.00': a sign may stand apart from
    the digits); None when it is not one. Digits split by a space (' 7 00') are not a number."""
    match = _NUMBER.match(text)
    if match is None:
        return None
    value = float(match.group(1) + match.group(2))
    return value if math.isfinite(value) else None


def check_range(reading: Reading, low: float, high: float) -> Reading:
    """Flag a value outside [low, high] (a pH of 17, a negative mass beyond the tolerance)."""
    if not low <= reading.value <= high:
        return reading.flagged(f"{reading.quantity} {reading.value:g} {reading.unit} outside "
                               f"[{low:g}, {high:g}]")
    return reading
