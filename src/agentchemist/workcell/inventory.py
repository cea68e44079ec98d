"""The lab inventory: what the lab believes each tagged container holds.

Every bottle (and, when the lab records it, the working beaker) carries the ArUco tag of the bench's tag
table (:mod:`agentchemist.workcell.tags`). The camera pipeline finds the tag; this file says what the
container with that tag holds: a reagent of ``config/reagents.yaml``, its concentration and unit, the lot
and when it was prepared. So a bottle's identity and concentration come from the bench, never from the
instruction, and the planner can refuse an instruction that asks for something else.

Why a tag linked to a file and not a QR code with the contents: the bench's 4 x 4 ArUco tags are found
at the twin's 320 x 240 front view (about 18 px a side), where a QR code of "NaOH 0.1 M lot ..." (version
2, 25 x 25 modules) would have under one pixel per module and could not be read; the inventory also
carries what a printed code could not be updated with (a standardised concentration, a new lot) without
relabelling the bottle. Keys are labware ids of the tag table (``titrant_bottle``) or tag ids (``6``;
ids 20-49 for scenario-specific items); both name the same container.

    inventory = load_inventory()                  # config/inventory.yaml
    inventory.for_tag(6)                          # InventoryEntry(reagent='naoh', concentration=0.1, unit='M', ...)
"""
from __future__ import annotations

import datetime as _dt
import math
from pathlib import Path
from typing import Any, Literal, Mapping

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from agentchemist.workcell.tags import FREE_IDS, MARKER_TABLE, default_marker_id
from agentchemist.chemistry.reagents import UnknownReagentError, default_library
from agentchemist.limits import Limits, load_yaml, read_text
from agentchemist.paths import config_dir

__all__ = ["Inventory", "InventoryEntry", "InventoryError", "default_inventory_file", "load_inventory"]

#: An inventory is a short list; a file far larger than any bench's is refused before it is parsed.
LIMITS = Limits(max_bytes=200_000, max_depth=8, max_aliases=0, max_nodes=20_000)
MAX_ITEMS = 100
#: Factor from the file's unit to mol/L.
UNITS = {"M": 1.0, "mol/L": 1.0, "mM": 1e-3, "mmol/L": 1e-3}


class InventoryError(ValueError):
    """An inventory file that cannot be used; the message names the file and the entry."""


class InventoryEntry(BaseModel):
    """One container's contents as the lab recorded them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    reagent: str = Field(min_length=1, max_length=64, description="name or alias in config/reagents.yaml")
    concentration: float | None = Field(default=None, gt=0, description="in `unit`; none for a solid or pure liquid")
    unit: Literal["M", "mol/L", "mM", "mmol/L"] = "M"
    lot: str = Field(default="", max_length=64)
    prepared: _dt.date | None = None
    note: str = Field(default="", max_length=200)

    @field_validator("reagent")
    @classmethod
    def _known(cls, value: str) -> str:
        try:
            return default_library().get(value).name
        except UnknownReagentError:
            raise ValueError(f"reagent {value!r} is not in config/reagents.yaml") from None

    @model_validator(mode="after")
    def _range(self) -> "InventoryEntry":
        c = self.concentration_m
        if c is not None and not (math.isfinite(c) and c <= 20.0):
            raise ValueError(f"concentration {self.concentration} {self.unit} is not an aqueous solution (<= 20 M)")
        return self

    @property
    def concentration_m(self) -> float | None:
        return None if self.concentration is None else self.concentration * UNITS[self.unit]

    def describe(self) -> str:
        """'0.5 M potassium hydroxide' (the reagent library's display name)."""
        name = default_library().get(self.reagent).display_name
        return name if self.concentration_m is None else f"{self.concentration_m:g} M {name}"

    def as_scene(self) -> dict[str, Any]:
        """What the scene carries for this container (DescribeScene's contents, the planner's SceneObject)."""
        return {"reagent": self.reagent, "concentration_m": self.concentration_m, "lot": self.lot,
                "prepared": self.prepared.isoformat() if self.prepared else ""}


class Inventory(BaseModel):
    """Tagged containers -> contents. ``items`` keys: labware id of the tag table, or a tag id."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal[1] = 1
    items: dict[str, InventoryEntry] = Field(default_factory=dict)

    @field_validator("items", mode="before")
    @classmethod
    def _keys(cls, value: Any) -> Any:
        if not isinstance(value, Mapping):
            return value
        if len(value) > MAX_ITEMS:
            raise ValueError(f"{len(value)} items; an inventory holds at most {MAX_ITEMS}")
        out: dict[str, Any] = {}
        for key, entry in value.items():
            labware = cls._labware_id(key)
            if labware in out:
                raise ValueError(f"container {labware!r} is listed twice (by its labware id and its tag id)")
            out[labware] = entry
        return out

    @staticmethod
    def _labware_id(key: Any) -> str:
        if isinstance(key, bool):
            raise ValueError(f"item key {key!r} is neither a labware id nor a tag id")
        if isinstance(key, int) or (isinstance(key, str) and key.isdigit()):
            tag = int(key)
            if tag in MARKER_TABLE:
                return MARKER_TABLE[tag].labware_id
            if tag in FREE_IDS:
                return f"tag_{tag}"
            raise ValueError(f"tag id {tag} is not in the tag table nor among the free ids "
                             f"{FREE_IDS.start}-{FREE_IDS.stop - 1}")
        if isinstance(key, str) and key and len(key) <= 64 and key.replace("_", "").isalnum():
            return key
        raise ValueError(f"item key {key!r} is neither a labware id nor a tag id")

    def for_labware(self, labware_id: str) -> InventoryEntry | None:
        return self.items.get(labware_id)

    def for_tag(self, marker_id: int, labware_id: str | None = None) -> InventoryEntry | None:
        """The entry of the container carrying tag ``marker_id`` (``labware_id``: the scenario's name for
        an item with its own tag id)."""
        info = MARKER_TABLE.get(marker_id)
        for key in (info.labware_id if info else None, labware_id, f"tag_{marker_id}"):
            if key and key in self.items:
                return self.items[key]
        return None

    def merged(self, other: "Inventory") -> "Inventory":
        """This inventory with ``other``'s entries replacing (or adding) theirs."""
        return Inventory(items={**self.items, **other.items})

    def as_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_defaults=False)


def default_inventory_file() -> Path:
    return config_dir() / "inventory.yaml"


def inventory_from_dict(data: Any, source: str = "<inventory>") -> Inventory:
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise InventoryError(f"{source}: expected a mapping with 'items', got {type(data).__name__}")
    try:
        return Inventory.model_validate(dict(data))
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '(top)'}: "
                             f"{str(e['msg']).removeprefix('Value error, ')}" for e in exc.errors())
        raise InventoryError(f"{source}: {problems}") from None


def load_inventory(path: str | Path | None = None) -> Inventory:
    """The inventory file (default ``config/inventory.yaml``), within the size/depth limits;
    InventoryError (naming the file) for anything unreadable or invalid."""
    file = Path(path) if path else default_inventory_file()
    try:
        data = load_yaml(read_text(file, LIMITS), str(file), LIMITS)
    except (OSError, ValueError, yaml.YAMLError) as exc:
        raise InventoryError(f"cannot read inventory {file}: {exc}") from None
    return inventory_from_dict(data, str(file))
