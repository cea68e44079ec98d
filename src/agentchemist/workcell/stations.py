"""Named stations: the places the working beaker is carried between, and the devices with a button.

A station is a platform kind of :mod:`agentchemist.workcell.labware` (the beaker stands on it). The arm
that carries the beaker has a taught pose ``beaker_at_<station>`` for each (config/poses.yaml: the open
jaws around the beaker standing there); a device the press primitive switches on has ``<device>_button``.
The scripted primitives (policy/primitives.py) plan with these names and the twin (sim/workcell_effects.py)
reads the same names off the measured joints. A new station is a row here and its pose in poses.yaml.
"""
from __future__ import annotations

from dataclasses import dataclass

from agentchemist.workcell.labware import canonical_kind, labware_kind

__all__ = ["BUTTON_SUFFIX", "STATIONS", "STATION_PREFIX", "Station", "button_pose", "station_name", "station_pose"]

#: Pose name prefix of the carry stations: ``beaker_at_balance``, ``beaker_at_stirrer``.
STATION_PREFIX = "beaker_at_"
#: Pose name suffix of a device's start button: ``stirrer_button``.
BUTTON_SUFFIX = "_button"


@dataclass(frozen=True)
class Station:
    """name: the platform's bench kind; button: the device has a start button the arm presses."""

    name: str
    description: str = ""
    button: bool = False

    def __post_init__(self) -> None:
        kind = labware_kind(self.name)
        if kind is None or kind.name != self.name or not kind.platform:
            raise ValueError(f"station {self.name!r} must be the bench name of a platform kind")

    @property
    def pose(self) -> str:
        return station_pose(self.name)

    @property
    def button_pose(self) -> str | None:
        return button_pose(self.name) if self.button else None


STATIONS: tuple[Station, ...] = (
    Station("balance", "the beaker on the balance pan (weighing)"),
    Station("stirrer", "the beaker on the stirrer plate (dissolving, titrating)", button=True),
)


def station_name(name: str) -> str:
    """The bench name of a station or device as a plan names it (``"magnetic_stirrer"`` -> ``"stirrer"``)."""
    return canonical_kind(name)


def station_pose(name: str) -> str:
    """The carrying arm's pose at station ``name`` (any alias): ``beaker_at_<station>``."""
    return STATION_PREFIX + station_name(name)


def button_pose(name: str) -> str:
    """The pressing arm's pose on device ``name``'s button (any alias): ``<device>_button``."""
    return station_name(name) + BUTTON_SUFFIX
