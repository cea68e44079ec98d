"""What the executor decides, as typed commands (frozen dataclasses), free of ROS.

The supervision core (`agentchemist.fsm.supervision`, `agentchemist.fsm.executor`) takes typed events
plus `now` and returns these; the vision supervisor node carries each one out (a goal, a cancel, a
message, a publish) and decides nothing itself. One class per kind of effect, so a node maps them with
`match` / `isinstance` and a typo is an error, not a silently ignored string.

Two ways of stopping the dispenser for a while, because the two endpoints need different things:

* `PauseDispensing` / `UnpauseDispensing` (reason): the dispenser holds its running goal (position,
  volume, high-water mark) and goes on after the last reason is released. Used while the endpoint is
  being confirmed, while labware is missing or moved, while the microphone is deaf.
* `HoldDispensing` / `ResumeDispensing` (reason): the goal is cancelled and a new goal for the rest of
  the volume cap is sent on resume. Used by the colour endpoint, whose hold may last long.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping


@dataclass(frozen=True)
class Apply:
    """Apply `symbol` to the experiment machine (the supervisor's own evidence: ph_stable, endpoint ...);
    `detail` is the evidence the recorder is told with it (the settled pH, the mass, the hue)."""
    symbol: str
    detail: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class StopDispensing:
    """The endpoint is reached: end the dispensing goal (cancel it, and one still on its way on arrival)."""


@dataclass(frozen=True)
class PauseDispensing:
    """The dispenser holds its goal for `reason` (it keeps it and goes on after UnpauseDispensing)."""
    reason: str
    detail: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class UnpauseDispensing:
    """`reason` no longer holds the dispenser; it goes on with its goal once no reason is left."""
    reason: str


@dataclass(frozen=True)
class HoldDispensing:
    """Cancel the dispensing goal for `reason`; ResumeDispensing sends a new one for the rest."""
    reason: str


@dataclass(frozen=True)
class ResumeDispensing:
    reason: str  # the hold that is over: a new goal for the rest of the volume cap goes out


@dataclass(frozen=True)
class Report:
    """An anomaly to publish. severity info with resolved=True closes the earlier one of its kind."""
    kind: str
    severity: str                    #: info | warn | halt
    description: str
    response: str = ""               #: hold | abort | resume | adjustment | ""
    resolved: bool = False
    fsm_state: str | None = None     #: the machine's state when it was decided (None: whatever it is now)

    def __post_init__(self):
        if self.severity not in ("info", "warn", "halt"):
            raise ValueError(f"Report.severity must be info, warn or halt, got {self.severity!r}")


@dataclass(frozen=True)
class Abort:
    """End the experiment: an anomaly of `kind` (severity halt) and the machine to `aborted`."""
    kind: str
    reason: str


def name(command) -> str:
    """The command's kind in snake case (``StopDispensing`` -> ``stop_dispensing``), for logs and tests."""
    return "".join("_" + ch.lower() if ch.isupper() else ch for ch in type(command).__name__).lstrip("_")


Command = Apply | StopDispensing | PauseDispensing | UnpauseDispensing | HoldDispensing | ResumeDispensing \
    | Report | Abort

__all__ = ["Abort", "Apply", "Command", "HoldDispensing", "PauseDispensing", "Report", "ResumeDispensing",
           "StopDispensing", "UnpauseDispensing", "name"]
