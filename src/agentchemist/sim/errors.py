"""Typed errors of the lab digital twin.

Every error is a ``ValueError`` subclass so that callers that only know "bad input" can catch it; the
message names what is wrong (the file and key path for a scenario, the argument for a command).
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["ScenarioError", "SimCommandError", "SimError", "finite_number"]


class SimError(ValueError):
    """Base class of the twin's input errors."""


class ScenarioError(SimError):
    """A scenario that cannot be loaded: the message names the file, the key path and the problem."""

    def __init__(self, source: str, problems: list[tuple[str, str]]) -> None:
        self.source = source
        self.problems = list(problems)
        lines = [f"{source}: {path or '<top level>'}: {msg}" for path, msg in self.problems]
        super().__init__("invalid scenario\n  " + "\n  ".join(lines) if len(lines) > 1 else lines[0])


class SimCommandError(SimError):
    """A command the twin cannot interpret at all (unknown side, NaN target, wrong joint count).

    Values that are merely out of range are not errors: they are clamped and reported in the
    :class:`~agentchemist.sim.types.CommandResult`, as a real arm controller does.
    """


def finite_number(value: Any, what: str) -> float:
    """``value`` as a finite float, or SimCommandError naming ``what`` (every command argument of the twin)."""
    if type(value) is float and value - value == 0.0:  # fast path (the twin's tick): a finite float
        return value
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise SimCommandError(f"{what} must be a number, got {value!r}") from None
    if not math.isfinite(v):
        raise SimCommandError(f"{what} must be finite, got {value!r}")
    return v
