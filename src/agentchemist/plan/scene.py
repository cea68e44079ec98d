"""What is on the bench (from ``DescribeScene``) and whether it is enough for a plan.

``SceneInfo`` is the planner's view of the scene: objects with ids and kinds (optionally what they
contain, their capacity, where they are in the front image and what they stand on) and the
precondition checks the vision supervisor reported. When something is missing, the user gets exactly
the sentence of SPEC.md (:func:`missing_equipment_message`).

Which object stands on which (:meth:`SceneInfo.standing_on`) lets the planner resolve "the beaker on
the magnetic stirrer" on a cluttered bench. It is taken from the describer's ``on`` when given, else
from image positions: with boxes (``width``/``height``), an item stands on a platform when its base
lies on the platform's top and within its width; with points only (a tag's centre, as DescribeScene
gives), when it is above the platform, aligned with it as the vision supervisor's own scene check
requires (within 12 % of the image width), and not so far above that it must stand behind it.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

import yaml

from agentchemist.limits import load_json, load_yaml, read_text
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
    "solid_bottle": "solid reagent bottle",
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

# Points-only "stands on" (see the module docstring), as fractions of the image width. ALIGN is the
# vision supervisor's scene-check tolerance (perception/scene.py describe_scene, horizontal_tolerance),
# so the planner and the check before the first action agree on what stands on the stirrer. MAX_RISE:
# in the twin's front image a beaker's tag sits 0.10-0.15 of the width above the tag of the platform it
# stands on (50-250 mL beakers), and beakers on the bench behind a platform 0.23 or more.
ALIGN_FRACTION = 0.12
MAX_RISE_FRACTION = 0.2
# DescribeScene's front image when the scene does not say (the twin's camera default, 320 x 240 px).
DEFAULT_IMAGE_SIZE = (320, 240)


class SceneError(ValueError):
    """A scene description that cannot be used (wrong types, duplicate ids, bad capacity)."""


@dataclass(frozen=True)
class SceneObject:
    """One object: ``id`` unique in the scene, ``kind`` (e.g. 'beaker_100ml', 'ph_meter',
    'reagent_bottle'), ``contains`` a reagent name or alias, ``capacity_ml`` for vessels, ``label`` the
    text read on it (e.g. 'NaOH 0.1 M'; used for contents when ``contains`` is not given). Optional,
    from the camera: ``u``, ``v`` its position in the front image (px; DescribeScene gives the tag's
    centre), ``width``, ``height`` its image box (px), ``on`` the id of what it stands or hangs in/on
    (when the describer reports it), ``confidence`` of the detection. From the bench's own record (the
    lab inventory its tag links to, :mod:`agentchemist.workcell.inventory`): ``reagent`` the canonical
    reagent it holds and ``concentration_m`` (mol/L), compared with the plan by
    :func:`agentchemist.plan.contents.contents_mismatches`."""

    id: str
    kind: str
    contains: str | None = None
    capacity_ml: float | None = None
    label: str | None = None
    u: float | None = None
    v: float | None = None
    width: float | None = None
    height: float | None = None
    on: str | None = None
    confidence: float | None = None
    reagent: str | None = None
    concentration_m: float | None = None

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
        if (self.u is None) != (self.v is None):
            raise SceneError(f"scene object {self.id!r}: give both u and v (image position, px) or neither")
        for name in ("u", "v", "width", "height", "confidence"):
            value = getattr(self, name)
            if value is not None and not (
                isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
            ):
                raise SceneError(f"scene object {self.id!r}: {name} must be a finite number, got {value!r}")
        for name in ("width", "height"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise SceneError(f"scene object {self.id!r}: {name} must not be negative, got {value!r}")
        if self.reagent is not None and (not isinstance(self.reagent, str) or not self.reagent.strip()):
            raise SceneError(f"scene object {self.id!r}: reagent must be a reagent name, got {self.reagent!r}")
        c = self.concentration_m
        if c is not None and not (isinstance(c, (int, float)) and not isinstance(c, bool) and math.isfinite(c)
                                  and 0 < c <= 20.0):
            raise SceneError(f"scene object {self.id!r}: concentration_m must be in (0, 20] mol/L, got {c!r}")
        if self.on is not None and (not isinstance(self.on, str) or not self.on.strip() or self.on == self.id):
            raise SceneError(f"scene object {self.id!r}: on must name another object's id, got {self.on!r}")

    @property
    def located(self) -> bool:
        """True when the scene gives where the object is in the image."""
        return self.u is not None

    @property
    def boxed(self) -> bool:
        """True when the scene gives the object's image box (a size, not only its centre)."""
        return self.located and bool(self.width) and bool(self.height)


# SceneObject's fields in order: the keys a scene object may have in SceneInfo.from_dict.
_OBJECT_KEYS = ("id", "kind", "contains", "capacity_ml", "label", "u", "v", "width", "height", "on", "confidence",
                "reagent", "concentration_m")


@dataclass(frozen=True)
class SceneInfo:
    """Objects on the bench and precondition results (name -> True/False; absent = not checked)."""

    objects: tuple[SceneObject, ...] = ()
    preconditions: Mapping[str, bool] = field(default_factory=dict)
    image_size: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        ids = [o.id for o in self.objects]
        dup = sorted({i for i in ids if ids.count(i) > 1})
        if dup:
            raise SceneError(f"scene object ids must be unique; repeated: {dup}")
        for name, value in self.preconditions.items():
            if not isinstance(value, bool):
                raise SceneError(f"precondition {name!r} must be true or false, got {value!r}")
        if self.image_size is not None:
            size = self.image_size
            if not (
                isinstance(size, tuple)
                and len(size) == 2
                and all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > 0
                        for x in size)
            ):
                raise SceneError(f"image_size must be [width, height] in px, got {size!r}")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "SceneInfo":
        """From ``{"objects": [{"id", "kind", "contains"?, "capacity_ml"?, "label"?, "u"?, "v"?, "width"?,
        "height"?, "on"?, "confidence"?, "reagent"?, "concentration_m"?}], "preconditions": {...}, "image_size"?: [w, h]}``; positions and
        sizes in px of the front image (``image_size``, default 320 x 240)."""
        if not isinstance(data, Mapping):
            raise SceneError(f"scene must be a mapping, got {type(data).__name__}")
        unknown = sorted(set(data) - {"objects", "preconditions", "image_size"})
        if unknown:
            raise SceneError(f"unknown scene key(s) {unknown}")
        objects = []
        for i, raw in enumerate(data.get("objects") or []):
            if not isinstance(raw, Mapping):
                raise SceneError(f"scene object #{i} must be a mapping")
            extra = sorted(set(raw) - set(_OBJECT_KEYS))
            if extra:
                raise SceneError(f"scene object #{i}: unknown key(s) {extra}")
            objects.append(SceneObject(*(raw.get(k) for k in _OBJECT_KEYS)))
        size = data.get("image_size")
        if size is not None:
            if not isinstance(size, (list, tuple)):
                raise SceneError(f"image_size must be [width, height] in px, got {size!r}")
            size = tuple(size)
        return cls(tuple(objects), dict(data.get("preconditions") or {}), size)

    @classmethod
    def from_file(cls, path: str | Path) -> "SceneInfo":
        """Load a scene from a JSON or YAML file."""
        file = Path(path)
        try:
            text = read_text(file)
            data = load_json(text, str(file)) if file.suffix == ".json" else load_yaml(text, str(file))
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

    def get(self, object_id: str) -> SceneObject | None:
        return next((o for o in self.objects if o.id == object_id), None)

    def knows_support(self, item: SceneObject) -> bool:
        """Whether the scene can say what ``item`` stands on: a reported relation or an image position."""
        return item.on is not None or item.located

    def standing_on(self, item: SceneObject, platforms: Iterable[SceneObject]) -> SceneObject | None:
        """The one of ``platforms`` that ``item`` stands on, or None (on none of them, or not known: see
        :meth:`knows_support`). A reported ``on`` wins over positions; from positions, the nearest
        platform that passes the test of the module docstring."""
        candidates = [p for p in platforms if p.id != item.id]
        if item.on is not None:
            return next((p for p in candidates if p.id == item.on), None)
        if not item.located:
            return None
        width = (self.image_size or DEFAULT_IMAGE_SIZE)[0]
        fits = []
        for p in candidates:
            if not p.located:
                continue
            du, rise = abs(item.u - p.u), p.v - item.v
            if item.boxed and p.boxed:
                # the item's base (bottom edge) on the platform's top band, its centre over the platform
                base, top = item.v + item.height / 2, p.v - p.height / 2
                ok = abs(base - top) <= p.height / 2 and du <= p.width / 2
            else:
                ok = rise > 0 and du <= ALIGN_FRACTION * width and rise <= MAX_RISE_FRACTION * width
            if ok:
                fits.append((math.hypot(du, rise), p.id, p))
        return min(fits)[2] if fits else None

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
    alternatives_missing: Iterable[str] = (),
) -> tuple[list[str], list[str]]:
    """(missing, notes). ``reagents`` are (canonical name, display text); ``instrument_kinds`` maps an
    instrument to the scene kinds that count as it; ``alternatives_missing`` are the protocol's groups
    of interchangeable means the bench lacks (checked by the planner), listed after the instruments. A
    precondition the scene did not report is a note (the vision supervisor checks it before the first
    action), one reported false is missing. Reagents are checked only when the scene reports contents
    at all (water is assumed on tap)."""
    missing: list[str] = []
    notes: list[str] = []
    for inst in instruments:
        kinds = instrument_kinds.get(inst, [inst])
        if not scene.of_kinds(kinds):
            missing.append(INSTRUMENT_DISPLAY.get(inst, inst.replace("_", " ")))
    missing += list(alternatives_missing)
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
