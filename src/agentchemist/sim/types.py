"""Small value types returned by the lab twin (readings, command results, labware items)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["CommandResult", "LabwareItem", "Reading"]


@dataclass(frozen=True)
class CommandResult:
    """What the twin did with a command.

    ``accepted_value`` is the value actually applied (after clamping), in the command's units;
    ``clamped`` says it differs from the request; ``accepted`` is False when nothing was done
    (e.g. drawing with no pipette in the gripper); ``reason`` says why in words ("" when nothing to say).
    """

    accepted_value: Any
    clamped: bool = False
    accepted: bool = True
    reason: str = ""


@dataclass(frozen=True)
class Reading:
    """One instrument reading.

    ``value`` in ``unit`` (pH: "pH"; temperature: "degC"; balance: "g"); ``temperature_c`` is the
    sample temperature reported alongside (degC); ``self_check_ok`` is the instrument's own health flag
    (probe immersed and connected, balance not overloaded); ``noise_sd`` is the nominal standard
    deviation of the reading noise in ``unit``; ``stamp`` is the sim time of the reading (s).
    """

    value: float
    unit: str
    temperature_c: float
    self_check_ok: bool
    noise_sd: float
    stamp: float


@dataclass
class LabwareItem:
    """A piece of labware on the bench as the twin currently sees it.

    ``position`` is the (u, v) pixel of the item's base centre in the front camera image;
    ``on`` is the id of the item it stands on (or hangs above, for the pipette), None for the bench.
    ``marker_id`` is its ArUco tag id (DICT_4X4_50, see :mod:`agentchemist.workcell.tags`).
    """

    id: str
    kind: str
    present: bool
    position: tuple[float, float]
    on: str | None
    marker_id: int
    label: str = ""
    capacity_ml: float | None = None
    mass_g: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)
