"""Hardware registry (config/hardware_registry.yaml): what the bench and the robot can physically do.

Loaded into a typed, self-validating :class:`HardwareRegistry`. The rule engine that checks plans
against it is :mod:`agentchemist.plan.checks` (``verify_plan``, ``rectify_plan``, also exported by
:mod:`agentchemist.plan`): it imports the registry, never the reverse. Units are in the names: mL, g,
mm, mm/s, degrees, rpm.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import yaml

from agentchemist.limits import load_yaml_file
from agentchemist.workcell.labware import kind_names
from agentchemist.paths import config_dir

__all__ = ["HardwareRegistry", "RegistryError", "default_registry_path"]

Range = tuple[float, float]


class RegistryError(ValueError):
    """A malformed registry file or value; the message names the key."""


def default_registry_path() -> Path:
    """``<config>/hardware_registry.yaml`` (config folder from :func:`agentchemist.paths.config_dir`)."""
    return config_dir() / "hardware_registry.yaml"


def _range(value: Any, where: str) -> Range:
    if not (isinstance(value, (list, tuple)) and len(value) == 2):
        raise RegistryError(f"{where}: expected [low, high], got {value!r}")
    lo, hi = float(value[0]), float(value[1])
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise RegistryError(f"{where}: need finite low < high, got {value!r}")
    return lo, hi


def _positive(value: Any, where: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise RegistryError(f"{where}: expected a number, got {value!r}") from None
    if not (math.isfinite(v) and v > 0):
        raise RegistryError(f"{where}: must be a positive number, got {value!r}")
    return v


def _flag(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise RegistryError(f"{where}: expected true or false, got {value!r}")
    return value


def _at(doc: Mapping[str, Any], path: str) -> Any:
    """``doc["a"]["b"]`` for path "a.b" (a KeyError names the missing key)."""
    for key in path.split("."):
        doc = doc[key]
    return doc


# Required fields of the file that are one positive number or one [low, high] range: field -> key path
# (the path also names the value in error messages).
_POSITIVE_KEYS = {
    "pipette_capacity_ml": "pipette.capacity_ml",
    "drop_volume_ml": "pipette.drop_volume_ml",
    "min_draw_ml": "pipette.min_draw_ml",
    "cylinder_capacity_ml": "graduated_cylinder.capacity_ml",
    "ph_resolution": "ph_meter.resolution_ph",
    "balance_resolution_g": "balance.resolution_g",
    "gripper_resolution_mm": "gripper.resolution_mm",
    "arm_reach_mm": "arm.reach_mm",
    "arm_payload_kg": "arm.payload_kg",
    "max_titrant_ml": "dispense.max_titrant_ml",
}
_RANGE_KEYS = {
    "ph_range": "ph_meter.range_ph",
    "stirrer_rpm": "magnetic_stirrer.speed_rpm",
    "balance_range_g": "balance.range_g",
    "gripper_travel_mm": "gripper.travel_mm",
    "recorder_tau": "recorder.tau",
}


@dataclass(frozen=True)
class HardwareRegistry:
    """Capacities and limits. ``beakers`` maps a registry kind to its capacity (mL)."""

    beakers: Mapping[str, float]
    default_beaker: str
    max_fill_fraction: float
    pipette_capacity_ml: float
    drop_volume_ml: float
    min_draw_ml: float
    cylinder_capacity_ml: float
    ph_range: Range
    ph_resolution: float
    stirrer_rpm: Range
    balance_range_g: Range
    balance_resolution_g: float
    gripper_travel_mm: Range
    gripper_resolution_mm: float
    arm_reach_mm: float
    arm_payload_kg: float
    joint_limits_deg: Mapping[str, Range]
    dispense_ranges: Mapping[str, Range]
    max_titrant_ml: float
    recorder_tau: Range
    instrument_kinds: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # True: the pH meter reads -log10 a(H+) (a glass electrode), so titrant needs are computed with
    # activity coefficients. Optional in the file (false: the ideal-solution pH, the older behaviour).
    ph_reads_activity: bool = False
    solid_pour_tilt_rate_deg_s: Range = (0.5, 90.0)

    def __post_init__(self) -> None:
        # A scene may name an item by any of its bench names (agentchemist.workcell.labware): the stirrer's tag
        # says "stirrer" where the registry says "magnetic_stirrer"; each listed kind counts with its aliases.
        object.__setattr__(self, "instrument_kinds", {k: kind_names(v) for k, v in self.instrument_kinds.items()})
        if not self.beakers:
            raise RegistryError("beakers: at least one beaker is needed")
        if self.default_beaker not in self.beakers:
            raise RegistryError(f"default_beaker {self.default_beaker!r} is not in beakers {sorted(self.beakers)}")
        if not 0 < self.max_fill_fraction <= 1:
            raise RegistryError(f"max_fill_fraction must be in (0, 1], got {self.max_fill_fraction}")
        if self.drop_volume_ml >= self.pipette_capacity_ml:
            raise RegistryError("pipette: drop_volume_ml must be smaller than capacity_ml")
        for key in (
            "rate_mm_s",
            "settle_window_s",
            "endpoint_stable_s",
            "wait_on_change_threshold",
            "mass_tolerance_g",
        ):
            if key not in self.dispense_ranges:
                raise RegistryError(f"dispense: missing range {key!r}")
        if not (0.0 <= self.recorder_tau[0] and self.recorder_tau[1] <= 1.0):
            raise RegistryError(f"recorder.tau must lie within [0, 1], got {self.recorder_tau}")

    @classmethod
    def load(cls, path: str | Path | None = None) -> "HardwareRegistry":
        file = Path(path) if path is not None else default_registry_path()
        try:
            doc = load_yaml_file(file)
        except (OSError, ValueError, yaml.YAMLError) as exc:
            raise RegistryError(f"cannot read hardware registry {file}: {exc}") from None
        if not isinstance(doc, Mapping):
            raise RegistryError(f"{file}: expected a mapping at the top level")
        try:
            return cls.from_dict(doc)
        except RegistryError as exc:
            raise RegistryError(f"{file}: {exc}") from None

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> "HardwareRegistry":
        try:
            disp = doc["dispense"]
            return cls(
                beakers={k: _positive(v["capacity_ml"], f"beakers.{k}") for k, v in doc["beakers"].items()},
                default_beaker=str(doc["default_beaker"]),
                max_fill_fraction=float(doc["max_fill_fraction"]),
                joint_limits_deg={
                    j: _range(v, f"arm.joint_limits_deg.{j}") for j, v in doc["arm"]["joint_limits_deg"].items()
                },
                dispense_ranges={k: _range(v, f"dispense.{k}") for k, v in disp.items() if k != "max_titrant_ml"},
                instrument_kinds={k: tuple(v) for k, v in (doc.get("instrument_kinds") or {}).items()},
                ph_reads_activity=_flag(doc["ph_meter"].get("reads_activity", False), "ph_meter.reads_activity"),
                solid_pour_tilt_rate_deg_s=_range(
                    (doc.get("solid_pour") or {}).get("tilt_rate_deg_s", (0.5, 90.0)), "solid_pour.tilt_rate_deg_s"
                ),
                **{name: _positive(_at(doc, path), path) for name, path in _POSITIVE_KEYS.items()},
                **{name: _range(_at(doc, path), path) for name, path in _RANGE_KEYS.items()},
            )
        except KeyError as exc:
            raise RegistryError(f"missing key {exc}") from None
        except (TypeError, AttributeError) as exc:
            raise RegistryError(f"malformed entry ({exc})") from None

    def beaker_room_ml(self, kind: str) -> float:
        """Usable volume of a beaker kind (capacity x max fill fraction)."""
        if kind not in self.beakers:
            raise RegistryError(f"unknown beaker {kind!r}; known: {sorted(self.beakers)}")
        return self.beakers[kind] * self.max_fill_fraction

    def beaker_for_capacity(self, capacity_ml: float) -> str | None:
        """The registry beaker kind with exactly this capacity (to 0.5 mL), or None."""
        for kind, cap in self.beakers.items():
            if abs(cap - capacity_ml) <= 0.5:
                return kind
        return None

    def kinds_for(self, instrument: str) -> tuple[str, ...]:
        """Scene kinds that count as ``instrument`` (the instrument name itself when not listed), each with
        every other bench name of the same item."""
        listed = self.instrument_kinds.get(instrument)
        return listed if listed is not None else kind_names(instrument)

    def clamp_gripper_mm(self, opening_mm: float) -> tuple[float, bool]:
        """(opening within the gripper's travel, whether it was clamped). ValueError on NaN."""
        if not math.isfinite(opening_mm):
            raise RegistryError(f"gripper opening must be finite, got {opening_mm!r}")
        lo, hi = self.gripper_travel_mm
        value = min(max(opening_mm, lo), hi)
        return value, value != opening_mm

    def check_joint_deg(self, joint: str, angle_deg: float) -> bool:
        """True when ``angle_deg`` is inside ``joint``'s limits; RegistryError for an unknown joint."""
        if joint not in self.joint_limits_deg:
            raise RegistryError(f"unknown joint {joint!r}; known: {sorted(self.joint_limits_deg)}")
        lo, hi = self.joint_limits_deg[joint]
        return math.isfinite(angle_deg) and lo <= angle_deg <= hi
