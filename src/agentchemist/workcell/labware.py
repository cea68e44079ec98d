"""Labware kinds: the names of the items on the bench, and the other names the same item goes by.

A kind's ``name`` is the bench's own (the tag table's, the twin's layout, the stations' poses); its
``aliases`` are what a planner, a protocol, a person or another describer may call the same item (the
hardware registry and the protocols say ``magnetic_stirrer``, the tag on the plate says ``stirrer``).
:func:`canonical_kind` turns any of them into the bench name, so nothing downstream patches names.

Aliases are names of the *same* item only. That a pH probe counts as a pH meter for a plan, or which
beaker sizes there are, is the hardware registry's (config/hardware_registry.yaml) to say.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["LABWARE_KINDS", "LabwareKind", "canonical_kind", "kind_names", "labware_kind", "platform_kinds"]


@dataclass(frozen=True)
class LabwareKind:
    """One kind of item on the bench.

    name: the bench's name of the kind (lower case, as tags and the twin's layout give it).
    aliases: other names of the same item (lower case), accepted wherever a kind is read.
    description: what the item is, for people.
    platform: other items stand on it (a beaker on the stirrer or the balance): a station.
    """

    name: str
    aliases: tuple[str, ...] = ()
    description: str = ""
    platform: bool = False

    @property
    def names(self) -> tuple[str, ...]:
        """The bench name first, then the aliases."""
        return (self.name, *self.aliases)


#: Every kind the bench knows, in the order the twin's scenarios list them.
LABWARE_KINDS: tuple[LabwareKind, ...] = (
    LabwareKind("beaker", (), "glass beaker (low-form; size from its capacity)"),
    LabwareKind("pipette", ("rubber_bulb_pipette", "rubber_headed_pipette"), "rubber-bulb dropping pipette"),
    LabwareKind("stirrer", ("magnetic_stirrer", "stir_plate", "hotplate_stirrer"), "magnetic stirrer plate",
                platform=True),
    LabwareKind("ph_probe", ("ph_electrode",), "pH electrode with temperature sensor"),
    LabwareKind("ph_meter", (), "pH meter display unit"),
    LabwareKind("reagent_bottle", (), "liquid reagent bottle (titrant reservoir, indicator dropper bottle)"),
    LabwareKind("solid_bottle", ("powder_bottle",), "solid reagent bottle, poured from directly"),
    LabwareKind("balance", ("analytical_balance", "scale"), "analytical balance, 0.01 g", platform=True),
    LabwareKind("wash_bottle", (), "deionised-water wash bottle"),
    LabwareKind("weighing_boat", (), "weighing boat"),
    LabwareKind("stand", ("retort_stand",), "retort stand holding the probe"),
)

_BY_NAME: dict[str, LabwareKind] = {}
for _kind in LABWARE_KINDS:
    for _n in _kind.names:
        if _n in _BY_NAME:
            raise ValueError(f"labware name {_n!r} given to both {_BY_NAME[_n].name} and {_kind.name}")
        _BY_NAME[_n] = _kind
del _kind, _n


def labware_kind(name: str) -> LabwareKind | None:
    """The kind that ``name`` (its bench name or an alias, any case) names, or None."""
    return _BY_NAME.get(str(name).strip().lower())


def canonical_kind(name: str) -> str:
    """The bench name of the kind ``name`` names (``"magnetic_stirrer"`` -> ``"stirrer"``); a name the
    bench does not know comes back unchanged (``"beaker_100ml"``, ``"thermometer"``)."""
    kind = labware_kind(name)
    return kind.name if kind is not None else name


def kind_names(names) -> tuple[str, ...]:
    """``names`` (one or many), each followed by every other name of the same bench kind, without
    repeats, in order: the scene kinds that mean the same items."""
    out: list[str] = []
    for n in (names,) if isinstance(names, str) else names:
        kind = labware_kind(n)
        for m in (n, *(kind.names if kind is not None else ())):
            if m not in out:
                out.append(m)
    return tuple(out)


def platform_kinds() -> tuple[str, ...]:
    """Bench names of the kinds other items stand on (the stirrer, the balance)."""
    return tuple(k.name for k in LABWARE_KINDS if k.platform)
