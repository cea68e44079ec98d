"""The lab as 3-D solid bodies: the one scene source that the MuJoCo scene and the Gazebo world are written from.

The bench description (:mod:`agentchemist.workcell`: labware kinds, the tag table) and a scenario's layout are
already laid out in 3-D by :mod:`agentchemist.sim.workcell_view` (the twin's rviz markers: sizes from the
drawing's own scale, positions in ``base_link``). This module turns those specs into bodies with solid
shapes, a table under the bench top, and each tagged item's ArUco tag as a textured label on the face the
robot looks at, so the twin's drawing, rviz, MuJoCo (:mod:`.mjcf_scene`) and Gazebo (:mod:`.sdf_world`) show
the same lab from one description. Text, lights and empty-liquid slots of the markers are display-only and
are left out.

Frames and units: ``base_link`` of the robot (x forward, y left, z up), metres, quaternions (x, y, z, w)
as the markers give them. The robot stands at the origin; the floor is z = -base_clearance (the URDF's
base_footprint).

Hollow beakers: a beaker is a bottom disc and a ring of wall slabs, so a pipette can stand in it and a
gripper can reach into it. The pipette is the one free body (it is grasped); everything else is fixed.

Stir bar: the beaker in which a scenario dissolves a solid (its ``weighing.target``) holds a white PTFE stir
bar on its floor, :data:`STIR_BAR_M` long, lying across the camera's view (along the body's y), as the 2-D
drawing draws one; the dissolution watch (perception/dissolution.py) reads the haze of a suspension
against it. The titration beakers have none in the 3-D scene (their colour readings were measured
without one).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import cv2
import numpy as np

from agentchemist.workcell.grasp_points import STIR_BAR_M
from agentchemist.workcell.platforms import LABEL_STANDOFF_M, PLATFORM_SIZES, card_tag_centre
from agentchemist.workcell.tags import LABEL_SIDE_M, TAG_QUIET, TAG_SIDE_M
from agentchemist.sim.workcell_view import ADD, BODY, CONTENT, CUBE, CYLINDER, PART, SPHERE, MarkerSpec, twin_markers
from agentchemist.sim.markers import marker_image

__all__ = ["FLOOR_Z", "SceneBody", "SceneGeom", "TagLabel", "scene_bodies", "twin_scene", "write_tag_textures"]

#: Floor height in base_link (m): the URDF's base_footprint is 0.05 m below base_link.
FLOOR_Z = -0.05
WALL_SLABS = 16    # slabs around a hollow beaker
WALL_M = 0.002     # glass wall thickness (m)
GLASS_RGBA = (0.85, 0.92, 0.97, 0.35)
BULB_KIND_MASS_KG = 0.012  # a rubber-bulb pipette, glass tube and bulb
FREE_KINDS = ("pipette",)
FLAG_KINDS = ("pipette", "ph_probe")  # thin items whose tag is a flag at their top
PROBE_FLAG_TILT_RAD = 0.6
#: The stir bar (workcell/grasp_points.py: 20 mm long, 6 mm thick) is drawn as a white PTFE capsule.
STIR_BAR_RGBA = (0.97, 0.97, 0.97, 1.0)


@dataclass(frozen=True)
class SceneGeom:
    """One solid: ``shape`` box | cylinder | sphere | capsule; ``size`` full extents (x, y, z) in m (a
    cylinder's diameter twice, then its height; an ellipsoid's three diameters; a capsule's diameter twice,
    then its length end to end, along its z); pose in the body's frame."""

    shape: str
    size: tuple[float, float, float]
    pos: tuple[float, float, float] = (0.0, 0.0, 0.0)
    quat: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 1.0)
    rgba: tuple[float, float, float, float] = (0.7, 0.7, 0.7, 1.0)
    name: str = ""


@dataclass(frozen=True)
class TagLabel:
    """An item's ArUco tag on a white label: a thin box at ``pos`` (body frame), facing -x (the robot)."""

    marker_id: int
    pos: tuple[float, float, float]
    side_m: float = TAG_SIDE_M
    tilt_rad: float = 0.0   #: turned about the body's y axis, face up toward a camera above (a flag)

    @property
    def texture(self) -> str:
        return f"tag_{self.marker_id}"


@dataclass(frozen=True)
class SceneBody:
    """One item (or the table): a body at ``pos`` in base_link with its geoms; ``free`` bodies move."""

    name: str
    kind: str
    pos: tuple[float, float, float]
    geoms: tuple[SceneGeom, ...]
    free: bool = False
    mass_kg: float = 0.0
    tag: TagLabel | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def twin_scene(twin: Any) -> list[SceneBody]:
    """The solid bodies of a :class:`~agentchemist.sim.lab.LabTwin`'s bench as it is now."""
    state = twin.scene_state()
    kinds = {item.id: (item.kind, item.marker_id) for item in state["items"] if item.present}
    weighing = getattr(twin.scenario, "weighing", None)
    return scene_bodies(twin_markers(twin), kinds, stir_bar_in=weighing.target if weighing is not None else None)


def scene_bodies(markers: Iterable[MarkerSpec], kinds: dict[str, tuple[str, int]],
                 stir_bar_in: str | None = None) -> list[SceneBody]:
    """Bodies from bench marker specs (base_link) and each present item's (kind, tag id); the beaker
    ``stir_bar_in`` holds a stir bar."""
    by_item: dict[str, list[MarkerSpec]] = {}
    table: MarkerSpec | None = None
    for m in markers:
        if m.action != ADD or m.shape not in (CUBE, CYLINDER, SPHERE):
            continue
        if m.ns == "bench":
            table = m
        elif m.id in (BODY, CONTENT, PART) and m.ns in kinds:
            by_item.setdefault(m.ns, []).append(m)
    if table is None:
        raise ValueError("the bench markers have no bench top")
    bodies = [_table(table)]
    for item_id, specs in by_item.items():
        kind, marker_id = kinds[item_id]
        bodies.append(_item(item_id, kind, marker_id, specs, stir_bar=item_id == stir_bar_in))
    return bodies


def write_tag_textures(bodies: Iterable[SceneBody], folder: Path, px_per_cell: int = 16) -> dict[int, Path]:
    """PNG of every body's tag (black ArUco on a white quiet zone), named tag_<id>.png; id -> path."""
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for body in bodies:
        if body.tag is None:
            continue
        tag = marker_image(body.tag.marker_id, px_per_cell)
        pad = int(round(tag.shape[0] * TAG_QUIET))
        label = cv2.copyMakeBorder(tag, pad, pad, pad, pad, cv2.BORDER_CONSTANT, value=255)
        path = folder / f"{body.tag.texture}.png"
        cv2.imwrite(str(path), cv2.cvtColor(label, cv2.COLOR_GRAY2BGR))
        out[body.tag.marker_id] = path
    return out


# ------------------------------------------------------------------------------------------- internals
def _table(top: MarkerSpec) -> SceneBody:
    """The bench: its top as the markers give it, on a cabinet down to the floor."""
    depth, width, thick = top.scale
    x, y, z = top.position
    height = z + thick / 2.0 - FLOOR_Z
    cabinet = SceneGeom("box", (depth, width, height - thick), (0.0, 0.0, -thick / 2.0 - (height - thick) / 2.0),
                        rgba=(0.55, 0.50, 0.44, 1.0), name="cabinet")
    worktop = SceneGeom("box", (depth, width, thick), rgba=top.rgba, name="worktop")
    return SceneBody("bench", "bench", (x, y, z), (worktop, cabinet))


def _geom(m: MarkerSpec, origin: tuple[float, float, float], name: str) -> SceneGeom:
    pos = tuple(p - o for p, o in zip(m.position, origin))
    shape = {CUBE: "box", CYLINDER: "cylinder", SPHERE: "sphere"}[m.shape]
    return SceneGeom(shape, tuple(m.scale), pos, tuple(m.orientation), tuple(m.rgba), name)


def _item(item_id: str, kind: str, marker_id: int, specs: list[MarkerSpec], stir_bar: bool = False) -> SceneBody:
    body = next((m for m in specs if m.id == BODY), specs[0])
    origin = body.position
    geoms: list[SceneGeom] = []
    for m in specs:
        if kind == "beaker" and m.id == BODY:
            geoms.extend(_hollow_beaker(m.scale[0] / 2.0, m.scale[2]))
            if stir_bar:
                length, thick = STIR_BAR_M
                floor = -m.scale[2] / 2.0 + WALL_M
                # along the body's y (across the robot's view): the capsule's own axis is its z
                geoms.append(SceneGeom("capsule", (thick, thick, length), (0.0, 0.0, floor + thick / 2.0),
                                       (math.sqrt(0.5), 0.0, 0.0, math.sqrt(0.5)), STIR_BAR_RGBA, "stir_bar"))
        elif kind == "beaker" and m.id == CONTENT:
            geoms.append(_geom(m, origin, "liquid"))
        else:
            geoms.append(_geom(m, origin, {BODY: "body", CONTENT: "content", PART: "part"}[m.id]))
    half_x = max(g.size[0] / 2.0 - g.pos[0] for g in geoms if g.name in ("body", "wall_0", "part"))
    tag = None
    if marker_id >= 0:
        tag = _tag_label(kind, marker_id, half_x, body.scale[2])
    free = kind in FREE_KINDS
    return SceneBody(item_id, kind, origin, tuple(geoms), free=free, mass_kg=BULB_KIND_MASS_KG if free else 0.0,
                     tag=tag)


def _tag_label(kind: str, marker_id: int, half_x: float, height: float) -> TagLabel:
    """Where an item's tag is (body frame: origin at the body's centre, -x toward the robot)."""
    card = LABEL_STANDOFF_M - 0.0005  # the label box's centre: its printed face LABEL_STANDOFF_M proud
    if kind in PLATFORM_SIZES and height < LABEL_SIDE_M:
        # A face lower than the label (stirrer plate, balance): a card standing on the bench against it
        # (workcell/tags.py, workcell/platforms.py card_tag_centre), so no part of the tag is below the bench top.
        x, z = card_tag_centre()
        return TagLabel(marker_id, (-half_x + x + 0.0005, 0.0, -height / 2.0 + z))
    # On the front face (-x, toward the robot), at mid height of the body, just proud of the surface;
    # on the pipette and the pH probe a flag near the top: their lower part stands in the liquid and
    # behind the beaker's glass, where no camera reads a tag.
    z = 0.0 if kind not in FLAG_KINDS else height / 2.0 - TAG_SIDE_M * (0.5 + TAG_QUIET)
    tilt = PROBE_FLAG_TILT_RAD if kind == "ph_probe" else 0.0
    # A tilted label turns about its centre: stand it off by its half height's run so it clears the rod.
    out = TAG_SIDE_M * (0.5 + TAG_QUIET) * math.sin(tilt)
    # The probe's flag stands beside the rod, toward the robot's left (+y, away from the beaker's centre,
    # which the probe stands right of), so it does not hide the beaker's mouth and the liquid in it.
    side = TAG_SIDE_M * (0.5 + TAG_QUIET) if kind == "ph_probe" else 0.0
    return TagLabel(marker_id, (-half_x - card - out, side, z), tilt_rad=tilt)


def _hollow_beaker(radius: float, height: float) -> list[SceneGeom]:
    """A bottom disc and WALL_SLABS glass slabs around it (the body frame is the beaker's centre)."""
    out = [SceneGeom("cylinder", (2 * radius, 2 * radius, WALL_M), (0.0, 0.0, -height / 2.0 + WALL_M / 2.0),
                     rgba=GLASS_RGBA, name="bottom")]
    chord = 2.0 * radius * math.tan(math.pi / WALL_SLABS) + 0.001
    for i in range(WALL_SLABS):
        a = 2.0 * math.pi * i / WALL_SLABS + math.pi  # slab 0 faces -x, the robot
        quat = (0.0, 0.0, math.sin(a / 2.0), math.cos(a / 2.0))
        pos = ((radius - WALL_M / 2.0) * math.cos(a), (radius - WALL_M / 2.0) * math.sin(a), 0.0)
        out.append(SceneGeom("box", (WALL_M, chord, height), pos, quat, GLASS_RGBA, f"wall_{i}"))
    return out


def quat_wxyz(q: tuple[float, float, float, float]) -> tuple[float, float, float, float]:
    """(x, y, z, w) -> (w, x, y, z), MuJoCo's order."""
    return (q[3], q[0], q[1], q[2])


def rpy_of(q: tuple[float, float, float, float]) -> tuple[float, float, float]:
    """Roll, pitch, yaw (SDF's fixed-axis x-y-z) of an (x, y, z, w) quaternion."""
    x, y, z, w = q
    m = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                  [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                  [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])
    pitch = math.asin(max(-1.0, min(1.0, -m[2, 0])))
    return math.atan2(m[2, 1], m[2, 2]), pitch, math.atan2(m[1, 0], m[0, 0])
