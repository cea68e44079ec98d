"""Undissolved solid in the MuJoCo scene: the twin's undissolved mass drawn as grains, a pile and a cloud.

The twin's chemistry (:class:`agentchemist.sim.weighing.Dissolver`) keeps how much solid is left in the
beaker; this module shows it in the render the way :mod:`agentchemist.sim.drawing` shows it in the 2-D
drawing, from the same numbers (:func:`agentchemist.sim.drawing.solid_appearance`: floor sparkles and a
turbidity when stirred, a pile when not), so the camera pipeline sees on the MuJoCo render what it sees on
the drawing. Nothing is recompiled: the geoms are in the scene from the start (:func:`solid_geoms`, in the
beaker that holds the stir bar) and each render sets their alpha, size and place through ``model``:

* **grains**: :data:`GRAINS` small white crystals in a ring round the floor's edge (a running bar flings the
  coarse grains outward), shown one per floor sparkle of the drawing in a fixed order, so they go out one
  by one as the solid dissolves. A crystal cluster glints (a bright, slightly emissive material): one grain is
  :data:`GRAIN_D_M` across, about a pixel of the 640 x 480 front camera at 0.6-0.7 m. Stirred, they
  swirl round the beaker's axis (:data:`SWIRL_RAD_S`);
* **pile**: unstirred, the poured solid lies in a dome where the bottle poured it (the drawing's
  ``POUR_DU``), of the radius and height of a loose cone of that mass;
* **cloud**: stirred, the suspended part whitens the liquid toward the drawing's milky white with the
  drawing's opacity, over the liquid's own colour.

The liquid of this beaker is drawn at :data:`CLEAR_LIQUID_ALPHA` (clear water, through which the camera
sees the floor from above); the titration beakers keep the backend's 0.85, at which their colour
readings were measured. What the front camera sees of the floor: at 57 deg above the bench, looking into
a 100 mL beaker over its rim, only the back crescent (15-23 mm behind the axis); the centre, with the
stir bar, is behind the tag's label on the front wall. The grains that swirl through that crescent and the
cloud over the dark stirrer plate are what shows.
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from typing import Any

import numpy as np

from agentchemist.workcell.grasp_points import STIR_BAR_M
from agentchemist.sim.drawing import MILKY, MM_PER_PX, POUR_DU, solid_appearance
from agentchemist.sim.scene_model import WALL_M, SceneBody

__all__ = ["CLEAR_LIQUID_ALPHA", "GRAINS", "GRAIN_D_M", "SolidDisplay", "solid_geoms"]

GRAINS = 24                 #: the drawing's cap on floor sparkles in a 100 mL beaker
GRAIN_D_M = 0.0025          #: one crystal cluster (m): about 1.5 px of the 640 x 480 front camera at 0.65 m
GRAIN_RGBA = (1.0, 1.0, 1.0)
PILE_RGBA = (0.84, 0.85, 0.87)  #: wet, translucent salt: a diffuse grey-white (the drawing's 205-225)
PILE_MAX_G = 5.0            #: the pile geom is compiled at this mass's size and shrunk (its bounding sphere stays)
SWIRL_RAD_S = 2.0 * math.pi / 4.0  #: grains swirl round the floor once in 4 s on a running stirrer
BAR_RAD_S = 400.0 * 2.0 * math.pi / 60.0  #: the bar turns at the stirrer's 400 rpm (the plan's speed)
CLEAR_LIQUID_ALPHA = 0.3
RING_M = (0.003, 0.008)     #: the grains' ring: this far in from the wall (m)


def _floor(body: SceneBody) -> tuple[float, float]:
    """(z of the floor's top in the body frame, inner radius) of a hollow beaker body."""
    bottom = next(g for g in body.geoms if g.name == "bottom")
    return bottom.pos[2] + WALL_M / 2.0, bottom.size[0] / 2.0 - WALL_M


def grain_places(inner_radius_m: float, n: int = GRAINS, seed: int = 20261126) -> np.ndarray:
    """``n`` fixed (x, y) places on the floor (m from the axis), in the order they are shown: a ring
    :data:`RING_M` in from the wall, where the running bar flings the coarse grains and they swirl round
    (evenly spread round it, with a little scatter in radius, so a few are always in view)."""
    rng = np.random.default_rng(seed)
    lo, hi = inner_radius_m - RING_M[1], inner_radius_m - RING_M[0]
    if lo <= STIR_BAR_M[0] / 2.0:
        raise ValueError(f"a floor of radius {inner_radius_m} m has no ring clear of the stir bar")
    angles = (np.arange(n) * (2.0 * math.pi * 0.381966)) % (2.0 * math.pi)  # golden-angle steps: even at any n
    radii = rng.uniform(lo, hi, n)
    return np.stack([radii * np.cos(angles), radii * np.sin(angles)], axis=1)


def _pile_size_m(solid_g: float) -> tuple[float, float]:
    look = solid_appearance(solid_g, 0.0, False, 46.0)
    return look["pile_r"] * MM_PER_PX / 1000.0, look["pile_h"] * MM_PER_PX / 1000.0


def solid_geoms(body: SceneBody) -> list[ET.Element]:
    """MJCF geoms of the solid in a beaker body (all hidden: alpha 0): the grains and the pile. They
    do not collide (display only)."""
    z, radius = _floor(body)
    common = {"contype": "0", "conaffinity": "0", "mass": "0", "group": "0"}
    out = []
    for i, (x, y) in enumerate(grain_places(radius)):
        out.append(ET.Element("geom", {"name": f"{body.name}_grain_{i}", "type": "sphere",
                                       "size": f"{GRAIN_D_M / 2.0:.6g}", "pos": f"{x:.6g} {y:.6g} {z:.6g}",
                                       "rgba": "1 1 1 0", "material": "crystal", **common}))
    r, h = _pile_size_m(PILE_MAX_G)
    pour_y = -POUR_DU * MM_PER_PX / 1000.0  # the drawing's pour point, left of centre: +y, the robot's left
    out.append(ET.Element("geom", {"name": f"{body.name}_pile", "type": "ellipsoid",
                                   "size": f"{r:.6g} {r:.6g} {h:.6g}", "pos": f"0 {pour_y:.6g} {z:.6g}",
                                   "rgba": f"{PILE_RGBA[0]} {PILE_RGBA[1]} {PILE_RGBA[2]} 0", **common}))
    return out


def crystal_material(asset: ET.Element) -> None:
    """The grains' material: bright and a little emissive, so a crystal glints whichever way it faces."""
    ET.SubElement(asset, "material", name="crystal", specular="0.9", shininess="0.9", emission="0.6")


class SolidDisplay:
    """Sets the solid's geoms and the liquid's colour of one beaker from the twin's state before a render."""

    def __init__(self, model: Any, beaker_id: str) -> None:
        self.model = model
        self.grains = [model.geom(f"{beaker_id}_grain_{i}").id for i in range(GRAINS)]
        self.pile = model.geom(f"{beaker_id}_pile").id
        self.places = np.array([model.geom_pos[g][:2] for g in self.grains])
        self.floor_z = float(model.geom_pos[self.pile][2])
        self.pile_max = model.geom_size[self.pile].copy()
        self.bar = model.geom(f"{beaker_id}_stir_bar").id
        self.bar_quat = model.geom_quat[self.bar].copy()  # lying along the body's y
        # the beaker's width in the drawing's design px: solid_appearance's light path through the cloud
        self.width_px = 2.0 * float(model.geom_size[model.geom(f"{beaker_id}_bottom").id][0]) * 1000.0 / MM_PER_PX

    @staticmethod
    def present(model: Any, beaker_id: str) -> bool:
        try:
            model.geom(f"{beaker_id}_pile")
        except KeyError:
            return False
        return True

    def update(self, solid_g: float, volume_ml: float, stirring: bool, t: float,
               liquid_rgb: tuple[float, float, float]) -> tuple[float, float, float, float]:
        """Show ``solid_g`` of undissolved solid at sim time ``t`` (s); returns the liquid's rgba (0-1)
        over ``liquid_rgb`` (0-255, the solution's colour)."""
        m = self.model
        look = solid_appearance(solid_g, volume_ml, stirring, self.width_px)
        shown = min(GRAINS, int(math.floor(look["sparkles"] + 0.5)))
        angle = SWIRL_RAD_S * t if stirring else 0.0
        c, s = math.cos(angle), math.sin(angle)
        for i, g in enumerate(self.grains):
            m.geom_rgba[g][3] = 1.0 if i < shown else 0.0
            x, y = self.places[i]
            m.geom_pos[g][:2] = (c * x - s * y, s * x + c * y)
        turn = BAR_RAD_S * t / 2.0 if stirring else 0.0  # half the angle: a quaternion about the body's z
        w0, x0, y0, z0 = self.bar_quat
        cz, sz = math.cos(turn), math.sin(turn)
        m.geom_quat[self.bar] = (cz * w0 - sz * z0, cz * x0 - sz * y0, cz * y0 + sz * x0, cz * z0 + sz * w0)
        r, h = _pile_size_m(solid_g) if look["pile_r"] > 0.0 else (0.0, 0.0)
        if r > 0.0:
            m.geom_size[self.pile] = np.minimum((r, r, h), self.pile_max)
        m.geom_rgba[self.pile][3] = 1.0 if r > 0.0 else 0.0
        t_cloud = float(look["turbidity"])
        rgb = [((1.0 - t_cloud) * v + t_cloud * w) / 255.0 for v, w in zip(liquid_rgb, MILKY)]
        return (*rgb, CLEAR_LIQUID_ALPHA + (1.0 - CLEAR_LIQUID_ALPHA) * t_cloud)
