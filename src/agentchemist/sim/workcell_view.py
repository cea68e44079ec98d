"""The twin's bench as 3-D marker specs for rviz (plain data; the ROS node turns them into MarkerArray).

The twin knows its bench only as a 2-D front-camera drawing: every labware item has the (u, v) pixel of
its base centre in the front image (:class:`~agentchemist.sim.types.LabwareItem`), and
:mod:`agentchemist.sim.drawing` gives each kind a size in "design pixels" of a 320 x 240 view. This
module lays that drawing onto a flat bench top with one linear mapping, so a person can watch the
experiment in rviz beside the robot model. It is a picture of the drawing, not a physics scene: nothing
here collides, and heights are the drawing's heights.

Bench frame ``bench``: x forward (away from the robot), y to the robot's left, z up, origin on the
bench top, on the row where the scenarios stand their items (design v = 212) straight in front of the
robot (design u = 160, the image centre). Its pose in ``base_link`` is fixed (:data:`BENCH_IN_BASE_LINK`,
identity rotation)::

    x = 0.55 m   the working row is 0.30 m ahead of the arm mounts (x = 0.25 on the deck) and 0.21 m
                 ahead of the deck's front edge (x = 0.3425): every item the shipped scenarios place
                 (|y| <= 0.16 m, up to 0.19 m behind the row) is 0.33-0.57 m from the nearer arm's
                 base, inside the Piper's 0.626 m reach, and the bench's front edge (0.47 m) clears
                 the deck (tests/unit/test_sim_workcell_view.py checks both against the URDF).
    y = 0        centred between the two arms (mounted at y = +-0.30).
    z = 0.615 m  the deck top, the plane the arm bases stand on (deck at 0.60 m, 0.03 m thick): the
                 Piper is a tabletop arm, made to work on the surface it stands on. (The front camera, 1.15 m up and pitched
                 0.60 rad down, then sees the row 22 deg below its axis, the lower part of the image,
                 where the drawing has it.)

Measure the real bench and change :data:`BENCH_IN_BASE_LINK` (no TF is published for ``bench``:
``tf2_msgs`` has no PyPI wheel, so the node sends markers in ``base_link`` with this offset applied).

Pixel mapping (design pixels: layout pixels x 320 / camera width)::

    x_bench = (212 - v) * 0.003            (m)   rows further up the image are further back
    y_bench = (160 - u) * 0.050 / 46       (m)   image right is the robot's right (-y)
    sizes and heights: design px * 0.050 / 46  (m)

0.050 / 46 is the drawing's own scale (a 100 mL low-form beaker is 46 design px and 50 mm wide:
``drawing.MM_PER_PX``), so sizes and side-by-side spacing agree with the picture. The drawing has no perspective depth, so depth gets its own scale:
3 mm per row keeps items the scenarios put one row behind the working row (clutter at v ~ 150) 0.19 m
behind it, clear of the deepest item there (the 0.1 m stirrer plate with a beaker on it). An item that
stands on another (a beaker on the stirrer) takes its depth from what it stands on (its own v in the
layout is the platform's top row, not a place on the bench) and its height from the platform's top.

Every item gets :data:`SLOTS` marker ids in namespace ``<item id>``; slots it does not use this time
(an empty beaker's liquid, a missing item's everything) are DELETE specs, so rviz clears markers of
items that went missing or emptied, and a late joiner gets a complete picture from one message.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from agentchemist.sim.drawing import BALANCE_H, MM_PER_PX, STIRRER_H, beaker_size

__all__ = [
    "BASE_FRAME",
    "BENCH_FRAME",
    "BENCH_IN_BASE_LINK",
    "MarkerSpec",
    "SLOTS",
    "bench_markers",
    "pixel_to_bench",
    "twin_markers",
]

BENCH_FRAME = "bench"
BASE_FRAME = "base_link"
#: Pose of the bench frame in base_link (m; identity rotation). See the module docstring for why.
BENCH_IN_BASE_LINK = (0.55, 0.0, 0.615)

DESIGN_W = 320.0        # design pixels across the front view (drawing.py's geometry)
U_CENTRE = 160.0        # design u straight ahead of the robot
V_ROW = 212.0           # design v of the working row (bench frame origin)
M_PER_PX = MM_PER_PX / 1000.0   # lateral and vertical scale, the drawing's own (m per design px)
DEPTH_M_PER_PX = 0.003  # depth per image row (m); the drawing has no true depth
BENCH_BACK_V, BENCH_FRONT_V = 118.0, 240.0  # the drawn bench top: wall line to the image's bottom edge

#: Marker ids per item: 0 body, 1 contents (liquid), 2 second part (cap, bulb, pan, rod), 3 name label,
#: 4 reading or state text, 5 indicator light.
SLOTS = 6
BODY, CONTENT, PART, LABEL, READOUT, LIGHT = range(SLOTS)

ADD, DELETE = "add", "delete"
CUBE, CYLINDER, SPHERE, TEXT = "cube", "cylinder", "sphere", "text"

# Colours (RGB 0-255, the drawing's where it has one).
GLASS = (232, 240, 246)
RUBBER = (150, 40, 30)
STEEL = (150, 155, 160)
DARK = (45, 48, 52)
#: The stirrer's top plate in 3-D: a dark grey (black ceramic / anodised) top, against which undissolved
#: white solid and a cloudy suspension show in the beaker standing on it. (The 2-D drawing's plate is light;
#: its dissolution evidence is the white stir bar seen from the side, which the 3-D front camera, looking
#: down into the beaker, cannot see behind the beaker's label: perception/beaker_floor.py.)
STIRRER_TOP = (78, 80, 84)
BENCH_TOP = (96, 100, 106)
PIPETTE_LIQUID = (200, 214, 230)
LED_ON, LED_OFF = (60, 220, 90), (70, 70, 70)
TEXT_RGB = (245, 245, 245)
TEXT_H = 0.012  # m, label height in rviz

# Drawn sizes in design px: (width, height); footprints are square unless stated.
SIZES = {
    "stirrer": (92.0, STIRRER_H),
    "balance": (84.0, BALANCE_H),
    "ph_meter": (62.0, 44.0),
    "reagent_bottle": (34.0, 60.0),
    "solid_bottle": (34.0, 60.0),
    "wash_bottle": (24.0, 44.0),
    "weighing_boat": (28.0, 6.0),
    "stand": (32.0, 4.0),
}
PLATFORMS = {"stirrer": STIRRER_H, "balance": BALANCE_H}  # items that others stand on: top height (px)
METER_DEPTH_PX = 40.0
BOTTLE_CAP_PX = (14.0, 8.0)
STAND_ROD_PX = (8.0, 100.0)  # the drawing's 2.2 px line would be a 2 mm wire; a retort rod is ~10 mm
PROBE_PX = 4.0
PIPETTE_TUBE_PX = (3.0, 58.0)
PIPETTE_BULB_PX = (11.0, 18.0)


@dataclass(frozen=True)
class MarkerSpec:
    """One rviz marker as plain data.

    ``ns``/``id`` name it (rviz replaces a marker with the same pair); ``action`` is "add" or "delete";
    ``shape`` cube | cylinder | sphere | text; ``position`` (m) and ``orientation`` (quaternion x, y, z,
    w) in ``frame``; ``scale`` (m): a cube's sides, a cylinder's diameters and height, a sphere's
    diameters, a text's height in z; ``rgba`` 0..1; ``text`` for text markers.
    """

    ns: str
    id: int
    shape: str
    action: str = ADD
    position: tuple[float, float, float] = (0.0, 0.0, 0.0)
    orientation: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 1.0)
    scale: tuple[float, float, float] = (1.0, 1.0, 1.0)
    rgba: tuple[float, float, float, float] = (1.0, 1.0, 1.0, 1.0)
    text: str = ""
    frame: str = BASE_FRAME


def pixel_to_bench(u: float, v: float, image_width: float) -> tuple[float, float]:
    """Bench-frame (x, y) in metres of the front-image pixel (u, v) of a camera ``image_width`` wide."""
    k = DESIGN_W / float(image_width)
    return (V_ROW - v * k) * DEPTH_M_PER_PX, (U_CENTRE - u * k) * M_PER_PX


def twin_markers(twin: Any, frame: str = BASE_FRAME) -> list[MarkerSpec]:
    """Markers of a :class:`~agentchemist.sim.lab.LabTwin` as it is now (see :func:`bench_markers`)."""
    return bench_markers(twin.scene_state(), twin.scenario.cameras.width, frame)


def bench_markers(state: Mapping[str, Any], image_width: float, frame: str = BASE_FRAME) -> list[MarkerSpec]:
    """Marker specs of a twin's scene state (:meth:`LabTwin.scene_state`), in ``frame`` (``bench`` or
    ``base_link``): the bench top, then :data:`SLOTS` specs per layout item (ADD or DELETE)."""
    if frame not in (BENCH_FRAME, BASE_FRAME):
        raise ValueError(f"frame must be {BENCH_FRAME!r} or {BASE_FRAME!r}, got {frame!r}")
    scene = _Scene(state, float(image_width))
    out = [scene.bench_top()]
    for item in state["items"]:
        parts = scene.item(item) if item.present else {}
        for slot in range(SLOTS):
            spec = parts.get(slot)
            out.append(spec if spec is not None else MarkerSpec(item.id, slot, CUBE, DELETE))
    if frame == BASE_FRAME:
        ox, oy, oz = BENCH_IN_BASE_LINK
        out = [_moved(s, ox, oy, oz) for s in out]
    else:
        out = [_with_frame(s, BENCH_FRAME) for s in out]
    return out


# ------------------------------------------------------------------------------------------- internals
def _moved(s: MarkerSpec, dx: float, dy: float, dz: float) -> MarkerSpec:
    x, y, z = s.position
    return MarkerSpec(s.ns, s.id, s.shape, s.action, (x + dx, y + dy, z + dz), s.orientation, s.scale, s.rgba,
                      s.text, BASE_FRAME)


def _with_frame(s: MarkerSpec, frame: str) -> MarkerSpec:
    return MarkerSpec(s.ns, s.id, s.shape, s.action, s.position, s.orientation, s.scale, s.rgba, s.text, frame)


def _rgba(rgb: Iterable[float], alpha: float = 1.0) -> tuple[float, float, float, float]:
    r, g, b = (min(max(float(c) / 255.0, 0.0), 1.0) for c in rgb)
    return (r, g, b, alpha)


def _about_x(angle_rad: float) -> tuple[float, float, float, float]:
    """Quaternion of a rotation about the bench x axis (tips a cylinder's top toward -y for angle > 0)."""
    return (math.sin(angle_rad / 2.0), 0.0, 0.0, math.cos(angle_rad / 2.0))


def _px(length: float) -> float:
    return length * M_PER_PX


class _Scene:
    """One scene state being turned into markers (lookups shared by the items)."""

    def __init__(self, state: Mapping[str, Any], image_width: float) -> None:
        self.st = state
        self.width = image_width
        self.all = {i.id: i for i in state["items"]}
        self.present = {i.id: i for i in state["items"] if i.present}

    # ----------------------------------------------------------------- geometry
    def ground(self, item: Any) -> tuple[float, float]:
        """Bench (x, y) under the item: y from its own u, x from the row of what it (finally) stands on."""
        root, seen = item, {item.id}
        while root.on is not None and root.on in self.all and root.on not in seen:
            seen.add(root.on)
            root = self.all[root.on]
        x, _ = pixel_to_bench(root.position[0], root.position[1], self.width)
        _, y = pixel_to_bench(item.position[0], item.position[1], self.width)
        return x, y

    def base_z(self, item: Any) -> float:
        """Height (m) the item stands at: a present platform's top, else the bench top."""
        support = self.present.get(item.on) if item.on else None
        if support is not None and support.kind in PLATFORMS:
            return _px(PLATFORMS[support.kind])
        return 0.0

    def top_z(self, item: Any) -> float:
        """Height (m) of the item's top, for labels."""
        if item.kind == "beaker":
            return self.base_z(item) + _px(beaker_size(self._capacity(item))[1])
        w_h = SIZES.get(item.kind)
        return self.base_z(item) + _px(w_h[1] if w_h else 20.0)

    def _capacity(self, item: Any) -> float:
        if item.capacity_ml:
            return float(item.capacity_ml)
        return float(self.st["beaker_capacity_ml"]) if item.id == self.st["beaker_id"] else 100.0

    # ----------------------------------------------------------------- markers
    def bench_top(self) -> MarkerSpec:
        x_back, _ = pixel_to_bench(0.0, BENCH_BACK_V, DESIGN_W)
        x_front, _ = pixel_to_bench(0.0, BENCH_FRONT_V, DESIGN_W)
        depth, width, thick = x_back - x_front, DESIGN_W * M_PER_PX, 0.02
        return MarkerSpec("bench", 0, CUBE, ADD, ((x_back + x_front) / 2.0, 0.0, -thick / 2.0),
                          scale=(depth, width, thick), rgba=_rgba(BENCH_TOP))

    def item(self, it: Any) -> dict[int, MarkerSpec]:
        """The item's markers by slot (slots left out become DELETE specs)."""
        make = getattr(self, f"_{it.kind}", self._generic)
        parts = make(it)
        if LABEL not in parts:
            x, y = self.ground(it)
            parts[LABEL] = self.text(it.id, LABEL, (x, y, self.top_z(it) + 0.015), it.label or it.id)
        return parts

    def text(self, ns: str, slot: int, pos: tuple[float, float, float], words: str,
             rgb: tuple[int, int, int] = TEXT_RGB, height: float = TEXT_H) -> MarkerSpec:
        return MarkerSpec(ns, slot, TEXT, ADD, pos, scale=(height, height, height), rgba=_rgba(rgb), text=words)

    def box(self, it: Any, slot: int, w_px: float, d_m: float, h_px: float, rgb, alpha: float = 1.0,
            z0: float | None = None) -> MarkerSpec:
        x, y = self.ground(it)
        z = self.base_z(it) if z0 is None else z0
        return MarkerSpec(it.id, slot, CUBE, ADD, (x, y, z + _px(h_px) / 2.0),
                          scale=(d_m, _px(w_px), _px(h_px)), rgba=_rgba(rgb, alpha))

    def cylinder(self, it: Any, slot: int, xy: tuple[float, float], z0: float, d_px: float, h_m: float, rgb,
                 alpha: float = 1.0) -> MarkerSpec:
        return MarkerSpec(it.id, slot, CYLINDER, ADD, (xy[0], xy[1], z0 + h_m / 2.0),
                          scale=(_px(d_px), _px(d_px), h_m), rgba=_rgba(rgb, alpha))

    # kinds ---------------------------------------------------------------------------------------
    def _beaker(self, it: Any) -> dict[int, MarkerSpec]:
        cap = self._capacity(it)
        bw, bh = beaker_size(cap)
        xy, z0 = self.ground(it), self.base_z(it)
        parts = {BODY: self.cylinder(it, BODY, xy, z0, bw, _px(bh), GLASS, 0.25)}
        if it.id == self.st["beaker_id"]:
            volume = float(self.st["beaker_volume_ml"])
            # drawing.draw_beaker: the liquid column fills (bh - 4) * 0.9 of the height at capacity
            frac = min(max(volume / cap, 0.0), 1.0) * 0.9
            height = _px((bh - 4.0) * frac)
            if volume > 0.0 and height > 0.0:
                parts[CONTENT] = self.cylinder(it, CONTENT, xy, z0 + _px(1.5), bw - 3.0, height,
                                               self.st["solution_rgb"], 0.8)
        return parts

    def _front(self, it: Any, depth_m: float, z: float) -> tuple[float, float, float]:
        """A point just in front of the item's face toward the robot, at height ``z`` (for its texts:
        above a platform they would sit inside the beaker standing on it)."""
        x, y = self.ground(it)
        return (x - depth_m / 2.0 - 0.01, y, z)

    def _stirrer(self, it: Any) -> dict[int, MarkerSpec]:
        w, h = SIZES["stirrer"]
        on = bool(self.st["stirrer_on"])
        x, y = self.ground(it)
        z0 = self.base_z(it)
        return {
            BODY: self.box(it, BODY, w, _px(w), h, DARK),
            PART: MarkerSpec(it.id, PART, CYLINDER, ADD, (x, y, z0 + _px(h) + 0.001),
                             scale=(_px(w - 8), _px(w - 8), 0.002), rgba=_rgba(STIRRER_TOP)),
            # the drawing's LED, on the front face to the right of centre
            LIGHT: MarkerSpec(it.id, LIGHT, SPHERE, ADD, (x - _px(w) / 2.0, y - _px(16.0), z0 + _px(h) / 2.0),
                              scale=(0.01, 0.01, 0.01), rgba=_rgba(LED_ON if on else LED_OFF)),
            LABEL: self.text(it.id, LABEL, self._front(it, _px(w), z0 + _px(h) / 2.0), it.label or it.id),
            READOUT: self.text(it.id, READOUT, self._front(it, _px(w), z0 + _px(h) / 2.0 + 0.015),
                               "stirring" if on else "stirrer off", LED_ON if on else (200, 200, 200)),
        }

    def _balance(self, it: Any) -> dict[int, MarkerSpec]:
        w, h = SIZES["balance"]
        x, y = self.ground(it)
        z0 = self.base_z(it)
        return {
            BODY: self.box(it, BODY, w, _px(w), h, (222, 222, 216)),
            PART: MarkerSpec(it.id, PART, CYLINDER, ADD, (x, y, z0 + _px(h) + 0.001),
                             scale=(_px(60.0), _px(60.0), 0.002), rgba=_rgba(STEEL)),
            LABEL: self.text(it.id, LABEL, self._front(it, _px(w), z0 + _px(h) / 2.0), it.label or it.id),
            READOUT: self.text(it.id, READOUT, self._front(it, _px(w), z0 + _px(h) / 2.0 + 0.015),
                               str(self.st["balance_text"]).strip(), (140, 255, 160)),
        }

    def _ph_meter(self, it: Any) -> dict[int, MarkerSpec]:
        w, h = SIZES["ph_meter"]
        z0 = self.base_z(it)
        reading = str(self.st["meter_text"]).strip()
        return {
            BODY: self.box(it, BODY, w, _px(METER_DEPTH_PX), h, (205, 208, 212)),
            READOUT: self.text(it.id, READOUT, self._front(it, _px(METER_DEPTH_PX), z0 + _px(h) * 0.7),
                               f"pH {reading}", (150, 235, 140), TEXT_H * 1.5),
        }

    def _bottle(self, it: Any, body_rgb, cap_rgb, alpha: float) -> dict[int, MarkerSpec]:
        w, h = SIZES[it.kind]
        xy, z0 = self.ground(it), self.base_z(it)
        return {
            BODY: self.cylinder(it, BODY, xy, z0, w, _px(h), body_rgb, alpha),
            PART: self.cylinder(it, PART, xy, z0 + _px(h), BOTTLE_CAP_PX[0], _px(BOTTLE_CAP_PX[1]), cap_rgb),
        }

    def _reagent_bottle(self, it: Any) -> dict[int, MarkerSpec]:
        return self._bottle(it, (225, 232, 236), (40, 80, 170), 0.85)

    def _solid_bottle(self, it: Any) -> dict[int, MarkerSpec]:
        tilt = float(self.st.get("bottle_tilt_deg") or 0.0)
        target = self.present.get(self.st["beaker_id"])
        if not (it.id == self.st.get("bottle_id") and tilt > 0.0 and target is not None):
            return self._bottle(it, (238, 238, 232), (40, 90, 170), 1.0)
        # Held and tilted over the working beaker (camera.py draws it with its mouth 8 px left of the
        # beaker's centre and 8 px above its rim); the body swings toward +y (image left) as it tilts.
        w, h = SIZES["solid_bottle"]
        bx, by = self.ground(target)
        mouth = (bx, by + _px(8.0), self.top_z(target) + _px(8.0))
        a = math.radians(min(tilt, 180.0))
        half = _px(h) / 2.0
        centre = (mouth[0], mouth[1] + half * math.sin(a), mouth[2] - half * math.cos(a))
        return {
            BODY: MarkerSpec(it.id, BODY, CYLINDER, ADD, centre, _about_x(a), (_px(w), _px(w), _px(h)),
                             _rgba((238, 238, 232))),
            LABEL: self.text(it.id, LABEL, (mouth[0], mouth[1], mouth[2] + _px(h) + 0.015),
                             f"{it.label or it.id} (pouring)"),
        }

    def _wash_bottle(self, it: Any) -> dict[int, MarkerSpec]:
        w, h = SIZES["wash_bottle"]
        return {BODY: self.cylinder(it, BODY, self.ground(it), self.base_z(it), w, _px(h), (240, 240, 236))}

    def _weighing_boat(self, it: Any) -> dict[int, MarkerSpec]:
        w, h = SIZES["weighing_boat"]
        return {BODY: self.box(it, BODY, w, _px(w) * 0.7, h, (250, 250, 250))}

    def _stand(self, it: Any) -> dict[int, MarkerSpec]:
        w, h = SIZES["stand"]
        xy, z0 = self.ground(it), self.base_z(it)
        rod_d, rod_h = STAND_ROD_PX
        return {
            BODY: self.box(it, BODY, w, _px(w), h, (60, 62, 66)),
            PART: self.cylinder(it, PART, xy, z0 + _px(h), rod_d, _px(rod_h), STEEL),
        }

    def _ph_probe(self, it: Any) -> dict[int, MarkerSpec]:
        beaker = self.present.get(it.on) if it.on else None
        if beaker is not None and beaker.kind == "beaker":
            # camera.py: 11 px left of the beaker's centre, from 4 px above its floor to 26 px above its rim
            bx, by = self.ground(beaker)
            xy = (bx, by + _px(11.0))
            bottom, top = self.base_z(beaker) + _px(4.0), self.top_z(beaker) + _px(26.0)
        else:  # hanging from its stand over the bench
            xy = self.ground(it)
            bottom, top = _px(10.0), _px(60.0)
        return {
            BODY: self.cylinder(it, BODY, xy, bottom, PROBE_PX, top - bottom, (25, 25, 28)),
            # higher than other labels: the pipette's stands beside it
            LABEL: self.text(it.id, LABEL, (xy[0], xy[1], top + 0.03), it.label or "pH probe"),
        }

    def _pipette(self, it: Any) -> dict[int, MarkerSpec]:
        held = bool(self.st["pipette_held"])
        over = self.present.get(it.on) if it.on else None
        tube_d, length_px = PIPETTE_TUBE_PX
        length = _px(length_px)
        _, y_own = self.ground(it)
        if over is not None and over.kind == "beaker":
            bx, by = self.ground(over)
            if held:  # camera.py: upright at its own u, tip 6 px above the rim
                tip, tilt = (bx, y_own, self.top_z(over) + _px(6.0)), 0.0
            else:  # resting in the beaker, tip on the floor 19 px right of centre, leaning 12 deg
                tip, tilt = (bx, by - _px(19.0), self.base_z(over) + _px(4.0)), math.radians(12.0)
        elif held and over is not None and over.kind == "reagent_bottle":
            bx, _ = self.ground(over)
            tip, tilt = (bx, y_own, self.top_z(over) + _px(16.0)), 0.0
        elif held:  # in the gripper somewhere over the bench
            x, _ = self.ground(it)
            tip, tilt = (x, y_own, _px(76.0)), 0.0
        else:  # lying on the bench
            x, _ = self.ground(it)
            tip, tilt = (x, y_own + length / 2.0, _px(tube_d) / 2.0), math.radians(90.0)
        axis = (0.0, -math.sin(tilt), math.cos(tilt))  # tip -> bulb

        def along(d: float) -> tuple[float, float, float]:
            return (tip[0] + axis[0] * d, tip[1] + axis[1] * d, tip[2] + axis[2] * d)

        q = _about_x(tilt)
        bulb_d, bulb_h = PIPETTE_BULB_PX
        parts = {
            BODY: MarkerSpec(it.id, BODY, CYLINDER, ADD, along(length / 2.0), q, (_px(tube_d), _px(tube_d), length),
                             _rgba(GLASS, 0.6)),
            PART: MarkerSpec(it.id, PART, SPHERE, ADD, along(length + _px(bulb_h) / 2.0), q,
                             (_px(bulb_d), _px(bulb_d), _px(bulb_h)), _rgba(RUBBER)),
            LABEL: self.text(it.id, LABEL, (tip[0], tip[1], along(length + _px(bulb_h))[2] + 0.015),
                             f"{it.label or it.id} (held)" if held else (it.label or it.id)),
        }
        fill = min(max(float(self.st.get("pipette_fill") or 0.0), 0.0), 1.0)
        if fill > 0.0:  # drawing.draw_pipette: the liquid reaches 0.6 * fill of the tube
            column = length * 0.6 * fill
            parts[CONTENT] = MarkerSpec(it.id, CONTENT, CYLINDER, ADD, along(column / 2.0), q,
                                        (_px(tube_d) * 0.7, _px(tube_d) * 0.7, column), _rgba(PIPETTE_LIQUID, 0.9))
        return parts

    def _generic(self, it: Any) -> dict[int, MarkerSpec]:
        """A kind this module does not know yet: a small grey box, so it is still seen."""
        return {BODY: self.box(it, BODY, 20.0, _px(20.0), 20.0, (160, 160, 160))}
