"""What is on the bench (from ``DescribeScene``) and whether it is enough for a plan.

``SceneInfo`` is the planner's view of the scene: objects with ids and kinds (optionally what they
contain and their capacity) and the precondition checks the vision supervisor reported. When
something is missing, the user gets exactly the sentence of SPEC.md (:func:`missing_equipment_message`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

import yaml

from agentchemist.chemistry.reagents import ReagentLibrary

__all__ = [
    "INSTRUMENT_DISPLAY",
    "PRECONDITION_PHRASES",
    "SceneError",
    "SceneInfo",
    "SceneObject",
    "check_environment",
    "missing_equipment_message",
]

INSTRUMENT_DISPLAY: dict[str, str] = {
    "pipette": "pipette",
    "beaker": "beaker",
    "magnetic_stirrer": "magnetic stirrer",
    "ph_meter": "pH meter",
    "balance": "balance",
    "spatula": "spatula",
    "graduated_cylinder": "graduated cylinder",
    "thermometer": "thermometer",
    "burette": "burette",
}
PRECONDITION_PHRASES: dict[str, str] = {
    "beaker_on_stirrer": "the beaker placed on the magnetic stirrer",
    "probe_immersed": "the pH meter probe immersed in the solution",
    "pipette_in_beaker": "the rubber-headed pipette inside the beaker",
    "balance_clear": "an empty, zeroed balance",
    "beaker_empty": "an empty beaker for the solid",
}


class SceneError(ValueError):
    """A scene description that cannot be used (wrong types, duplicate ids, bad capacity)."""


@dataclass(frozen=True)
class SceneObject:
    """One object: ``id`` unique in the scene, ``kind`` (e.g. 'beaker_100ml', 'ph_meter',
    'reagent_bottle'), ``contains`` a reagent name or alias, ``capacity_ml`` for vessels, ``label`` the
    text read on it (e.g. 'NaOH 0.1 M'; used for contents when ``contains`` is not given)."""

    id: str
    kind: str
    contains: str | None = None
    capacity_ml: float | None = None
    label: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id.strip():
            raise SceneError(f"scene object needs a non-empty string id, got {self.id!r}")
        if not isinstance(self.kind, str) or not self.kind.strip():
            raise SceneError(f"scene object {self.id!r} needs a non-empty kind")
        if self.capacity_ml is not None and not (
            isinstance(self.capacity_ml, (int, float)) and math.isfinite(self.capacity_ml) and self.capacity_ml > 0
        ):
            raise SceneError(
                f"scene object {self.id!r}: capacity_ml must be a positive number, got {self.capacity_ml!r}"
            )


@dataclass(frozen=True)
class SceneInfo:
    """Objects on the bench and precondition results (name -> True/False; absent = not checked)."""

    objects: tuple[SceneObject, ...] = ()
    preconditions: Mapping[str, bool] = field(default_factory=dict)

    def __post_init__(self) -> None:
        ids = [o.id for o in self.objects]
        dup = sorted({i for i in ids if ids.count(i) > 1})
        if dup:
            raise SceneError(f"scene object ids must be unique; repeated: {dup}")
        for name, value in self.preconditions.items():
            if not isinstance(value, bool):
                raise SceneError(f"precondition {name!r} must be true or false, got {value!r}")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "SceneInfo":
        """From ``{"objects": [{"id", "kind", "contains"?, "capacity_ml"?}], "preconditions": {...}}``."""
        if not isinstance(data, Mapping):
            raise SceneError(f"scene must be a mapping, got {type(data).__name__}")
        unknown = sorted(set(data) - {"objects", "preconditions"})
        if unknown:
            raise SceneError(f"unknown scene key(s) {unknown}")
        objects = []
        for i, raw in enumerate(data.get("objects") or []):
            if not isinstance(raw, Mapping):
                raise SceneError(f"scene object #{i} must be a mapping")
            extra = sorted(set(raw) - {"id", "kind", "contains", "capacity_ml", "label"})
            if extra:
                raise SceneError(f"scene object #{i}: unknown key(s) {extra}")
            objects.append(
                SceneObject(
                    raw.get("id"), raw.get("kind"), raw.get("contains"), raw.get("capacity_ml"), raw.get("label")
                )
            )
        return cls(tuple(objects), dict(data.get("preconditions") or {}))

    @classmethod
    def from_file(cls, path: str | Path) -> "SceneInfo":
        """Load a scene from a JSON or YAML file."""
        file = Path(path)
        try:
            text = file.read_text(encoding="utf-8")
            data = json.loads(text) if file.suffix == ".json" else yaml.safe_load(text)
        except (OSError, ValueError, yaml.YAMLError) as exc:
            raise SceneError(f"cannot read scene {file}: {exc}") from None
        return cls.from_dict(data)

    def of_kinds(self, kinds: Iterable[str]) -> list[SceneObject]:
        wanted = {k.lower() for k in kinds}
        return [o for o in self.objects if o.kind.lower() in wanted]

    @property
    def reports_contents(self) -> bool:
        """True when any object says what it contains (else reagent presence cannot be checked)."""
        return any(o.contains or o.label for o in self.objects)

    def holding(self, reagent_name: str, library: ReagentLibrary) -> list[SceneObject]:
        """Objects whose ``contains`` (or, failing that, ``label``) names this reagent."""
        out = []
        for o in self.objects:
            if o.contains:
                if o.contains in library and library.get(o.contains).name == reagent_name:
                    out.append(o)
            elif o.label and any(r.name == reagent_name for r, _, _ in library.find_in_text(o.label)):
                out.append(o)
        return out


def missing_equipment_message(name: str, instruments: list[str], reagents: list[str], missing: list[str]) -> str:
    """SPEC.md's sentence, brackets filled: lists are comma-separated."""
    return (
        f"The experiment you wish to complete is {name}. "
        f"The required instruments and reagents are {', '.join(instruments)}, {', '.join(reagents)}. "
        f"The current experimental scene lacks {', '.join(missing)}."
    )


def check_environment(
    scene: SceneInfo,
    instruments: list[str],
    reagents: list[tuple[str, str]],
    preconditions: list[str],
    instrument_kinds: Mapping[str, list[str]],
    library: ReagentLibrary,
) -> tuple[list[str], list[str]]:
    """(missing, notes). ``reagents`` are (canonical name, display text); ``instrument_kinds`` maps an
    instrument to the scene kinds that count as it. A precondition the scene did not report is a note
    (the vision supervisor checks it before the first action), one reported false is missing. Reagents
    are checked only when the scene reports contents at all (water is assumed on tap)."""
    missing: list[str] = []
    notes: list[str] = []
    for inst in instruments:
        kinds = instrument_kinds.get(inst, [inst])
        if not scene.of_kinds(kinds):
            missing.append(INSTRUMENT_DISPLAY.get(inst, inst.replace("_", " ")))
    if scene.reports_contents:
        for name, display in reagents:
            if name != "water" and not scene.holding(name, library):
                missing.append(display)
    elif reagents:
        notes.append("the scene does not report what the containers hold; reagents not verified")
    for pre in preconditions:
        if pre not in scene.preconditions:
            notes.append(f"precondition {pre!r} not reported by the scene; checked before the first action")
        elif not scene.preconditions[pre]:
            missing.append(PRECONDITION_PHRASES.get(pre, pre.replace("_", " ")))
    return missing, notes
