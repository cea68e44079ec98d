"""Synthetic camera images of the twin's bench: the front camera and the two wrist cameras.

The front view is drawn from :meth:`LabTwin.scene_state` (positions in front-image pixels) with OpenCV:
wall and bench, stirrer, balance, meter, stand and probe, beakers with the solution's colour and level,
the pipette (resting in the beaker, or held above it by the right gripper, with its pendant drop and
drops in flight), bottles and the arms' grippers. Every item carries its ArUco tag (DICT_4X4_50,
:mod:`agentchemist.workcell.tags`); missing items are not drawn, moved items are drawn where they are.

Wrist cameras have no arm kinematics to follow yet: each one shows a 2x close-up of the front scene
around what its gripper works on (right: the pipette tip over the beaker; left: the solid bottle when
weighing, else the meter and probe), with its own fingers in the foreground.

Each image gets Gaussian sensor noise (``cameras.noise_sd`` grey levels) from the camera's own seeded
generator, so images are reproducible for a given seed and call sequence.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import special

from agentchemist.sim import drawing as dr
from agentchemist.sim.indicators import WATER_RGB
from agentchemist.sim.scenario import CameraSpec
from agentchemist.sim.types import LabwareItem

__all__ = ["BenchRenderer", "CAMERA_NAMES"]

CAMERA_NAMES = ("front", "left_wrist", "right_wrist")
DESIGN_W = 320.0
_PARK = {"left": ((0.0, 40.0), (44.0, 78.0)), "right": ((320.0, 40.0), (288.0, 78.0))}


class BenchRenderer:
    """Draws camera images from a scene-state dict (see :meth:`LabTwin.scene_state`)."""

    def __init__(self, spec: CameraSpec, rng: np.random.Generator) -> None:
        self.spec = spec
        self._rng = rng
        self._backgrounds: dict[float, np.ndarray] = {}
        self._noise_table: np.ndarray | None = None  # floor(noise) per 16-bit word (see _noisy)

    # ------------------------------------------------------------------------------------------------
    def render(self, name: str, state: dict[str, Any]) -> np.ndarray:
        w, h = self.spec.width, self.spec.height
        base = w / DESIGN_W
        if name == "front":
            canvas = self._scene(w, h, base, state)
            img = canvas.img
        else:
            side = "left" if name == "left_wrist" else "right"
            zoom = 2.0
            canvas = self._scene(int(w * zoom), int(h * zoom), base * zoom, state)
            cu, cv_ = self._wrist_target(side, canvas)
            x0 = int(np.clip(cu - w / 2, 0, canvas.img.shape[1] - w))
            y0 = int(np.clip(cv_ - h / 2, 0, canvas.img.shape[0] - h))
            img = canvas.img[y0:y0 + h, x0:x0 + w].copy()
            self._own_fingers(img, state["gripper_opening_m"][side])
        if self.spec.noise_sd > 0:
            img = self._noisy(img)
        return img

    def _noisy(self, img: np.ndarray) -> np.ndarray:
        """img plus Gaussian noise of noise_sd grey levels, truncated to uint8 as a sensor's ADC does.

        The noise is drawn as 16-bit uniform words mapped through the normal quantile (65 536 levels,
        tails to 4.3 sd): three times faster than float normals, and a camera frame per tick is a large
        part of the twin's work. floor(pixel + n) = pixel + floor(n) for whole pixels, so the table holds
        floor(noise) and the sum stays in integers."""
        if self._noise_table is None:
            u = (np.arange(65536, dtype=np.float64) + 0.5) / 65536.0
            self._noise_table = np.floor(self.spec.noise_sd * special.ndtri(u)).astype(np.int16)
        words = np.frombuffer(self._rng.bytes(img.size * 2), dtype=np.uint16).reshape(img.shape)
        out = img.astype(np.int16)
        out += self._noise_table[words]
        return np.clip(out, 0, 255).astype(np.uint8)

    # ------------------------------------------------------------------------------------------------
    def _background(self, w: int, h: int, s: float) -> np.ndarray:
        key = (w, h, s)
        bg = self._backgrounds.get(key)  # type: ignore[arg-type]
        if bg is None:
            c = dr.Canvas(w, h, s)
            dr.draw_bench(c)
            bg = c.img
            self._backgrounds[key] = bg  # type: ignore[index]
        return bg

    def _scene(self, w: int, h: int, s: float, st: dict[str, Any]) -> dr.Canvas:
        c = dr.Canvas(w, h, s)
        c.img[:] = self._background(w, h, s)
        k = DESIGN_W / self.spec.width  # layout px -> design px
        items: dict[str, LabwareItem] = {i.id: i for i in st["items"] if i.present}

        def pos(item: LabwareItem) -> tuple[float, float]:
            return item.position[0] * k, item.position[1] * k

        tops: dict[str, float] = {}
        # platforms
        for it in items.values():
            u, v = pos(it)
            if it.kind == "stirrer":
                tops[it.id] = dr.draw_stirrer(c, u, v, st["stirrer_on"], it.marker_id)
            elif it.kind == "balance":
                tops[it.id] = dr.draw_balance(c, u, v, st["balance_text"], it.marker_id)

        def base_of(it: LabwareItem) -> tuple[float, float]:
            u, v = pos(it)
            if it.on in tops:
                v = tops[it.on]
            return u, v

        # free-standing items, back to front
        beaker_geo: dict[str, tuple[float, float, float, float]] = {}  # id -> (u, base v, top v, surface v)
        bottle_side = st.get("bottle_side")
        held_bottle = None
        order = sorted(items.values(), key=lambda i: base_of(i)[1])
        for it in order:
            u, v = base_of(it)
            if it.kind == "beaker":
                cap = it.capacity_ml or (st["beaker_capacity_ml"] if it.id == st["beaker_id"] else 100.0)
                if it.id == st["beaker_id"]:
                    surface = dr.draw_beaker(c, u, v, cap, st["beaker_volume_ml"], st["solution_rgb"], it.marker_id,
                                             st["stirrer_on"] and it.on == st["stirrer_id"], st["solid_in_vessel_g"])
                else:
                    surface = dr.draw_beaker(c, u, v, cap, 0.0, WATER_RGB, it.marker_id, False)
                beaker_geo[it.id] = (u, v, v - dr.beaker_size(cap)[1], surface)
            elif it.kind == "ph_meter":
                dr.draw_meter(c, u, v, st["meter_text"], it.marker_id)
            elif it.kind == "reagent_bottle":
                dr.draw_bottle(c, u, v, it.label or it.id, (40, 80, 170), (225, 232, 236), it.marker_id)
            elif it.kind == "solid_bottle":
                if bottle_side is not None and it.id == st["bottle_id"] and st["bottle_tilt_deg"] > 0:
                    held_bottle = it
                else:
                    dr.draw_solid_bottle(c, u, v, it.label or it.id, it.marker_id)
            elif it.kind == "wash_bottle":
                dr.draw_wash_bottle(c, u, v, it.marker_id)
            elif it.kind == "weighing_boat":
                dr.draw_weighing_boat(c, u, v, it.marker_id)

        # stand + probe (the probe hangs in the beaker it is "on")
        probe = items.get(st["probe_id"])
        stand = next((i for i in items.values() if i.kind == "stand"), None)
        meter = next((i for i in items.values() if i.kind == "ph_meter"), None)
        probe_geo = None
        if probe is not None:
            if probe.on in beaker_geo:
                bu, bv, btop, _ = beaker_geo[probe.on]
                pu = bu - 11.0
                probe_geo = (pu, btop - 26.0, bv - 4.0)
            else:
                pu, pv = pos(probe)
                probe_geo = (pu, pv - 60.0, pv - 10.0)
        if stand is not None:
            su, sv = base_of(stand)
            clamp_v = probe_geo[1] + 6.0 if probe_geo else sv - 80.0
            dr.draw_stand(c, su, sv, min(clamp_v - 14.0, sv - 60.0), probe_geo[0] if probe_geo else su + 20.0,
                          clamp_v, stand.marker_id)
        if probe_geo is not None:
            cable = None
            if meter is not None:
                mu, mv = base_of(meter)
                cable = (mu + 22.0, mv - 30.0)
            dr.draw_probe(c, probe_geo[0], probe_geo[1], probe_geo[2], cable, probe.marker_id)

        # pipette, drops and the gripper holding it
        pip = items.get(st["pipette_id"])
        held_by = st["held_by"]
        bulb = None
        if pip is not None:
            pu, pv = pos(pip)
            liquid = (200, 214, 230)
            if pip.on in beaker_geo:
                bu, bv, btop, surface = beaker_geo[pip.on]
                if st["pipette_held"]:
                    tip_v = btop - 6.0
                    bulb = dr.draw_pipette(c, pu, tip_v, 0.0, st["pipette_fill"], liquid, st["pipette_pendant_ml"],
                                          pip.marker_id, flag_frac=0.35)
                    for frac_left in st["falling"]:
                        y = tip_v + (surface - tip_v) * (1.0 - min(max(frac_left, 0.0), 1.0))
                        dr.cv2.ellipse(c.img, c.p(pu, y), (c.n(1.3), c.n(2.0)), 0, 0, 360, liquid, -1, dr.AA)
                    beaker = items[pip.on]
                    if st["falling"] and beaker.marker_id is not None:
                        # Drops fall inside the beaker, behind the tag on its front wall (draw_beaker's
                        # placement): drawn over it they broke the tag's border and the scene watch lost it.
                        dr.draw_marker(c, beaker.marker_id, bu + 5, bv - (bv - btop) * 0.45)
                else:
                    dr.draw_pipette(c, bu + 19.0, bv - 4.0, 12.0, st["pipette_fill"], liquid, 0.0, pip.marker_id)
            elif st["pipette_held"]:
                over = items.get(pip.on) if pip.on else None
                tip_v = base_of(over)[1] - 76.0 if over is not None and over.kind == "reagent_bottle" else pv
                bulb = dr.draw_pipette(c, pu, tip_v, 0.0, st["pipette_fill"], liquid, st["pipette_pendant_ml"],
                                       pip.marker_id, flag_frac=0.35)
            else:  # lying on the bench
                dr.draw_pipette(c, pu, pv, 80.0, st["pipette_fill"], liquid, 0.0, pip.marker_id)
        anchors: dict[str, tuple[float, float]] = {}
        for side in ("left", "right"):
            corner, park = _PARK[side]
            opening = st["gripper_opening_m"][side]
            if side == held_by and bulb is not None and st["pipette_held"]:
                anchors[side] = (bulb[0], bulb[1] + 4.0)
            elif side == bottle_side and held_bottle is not None:
                target = beaker_geo.get(st["beaker_id"])
                mu, mv = (target[0] - 8.0, target[2] - 8.0) if target else base_of(held_bottle)
                body = dr.draw_pouring_bottle(c, mu, mv, st["bottle_tilt_deg"], (238, 238, 232),
                                              st["bottle_flowing"])
                anchors[side] = (body[0], body[1] - 12.0)
            else:
                anchors[side] = park
            dr.draw_gripper(c, anchors[side][0], anchors[side][1], opening, corner)
        c.anchors = anchors  # type: ignore[attr-defined]
        return c

    @staticmethod
    def _wrist_target(side: str, canvas: dr.Canvas) -> tuple[float, float]:
        """Image point (px of the zoomed canvas) the wrist camera of ``side`` looks at: just below its
        gripper, where the held object's working end is (pipette tip, bottle mouth)."""
        u, v = canvas.anchors[side]  # type: ignore[attr-defined]
        return u * canvas.s, (v + 58.0) * canvas.s

    @staticmethod
    def _own_fingers(img: np.ndarray, opening_m: float) -> None:
        """The camera's own gripper fingers, entering from the bottom edge."""
        h, w = img.shape[:2]
        half = int(w * (0.08 + opening_m / 0.07 * 0.22))
        fw, fh = int(w * 0.07), int(h * 0.28)
        for sgn in (-1, 1):
            cx = w // 2 + sgn * half
            dr.cv2.rectangle(img, (cx - fw // 2, h - fh), (cx + fw // 2, h), (38, 40, 44), -1, dr.AA)
            dr.cv2.rectangle(img, (cx - fw // 2, h - fh), (cx + fw // 2, h - fh + 4), (90, 92, 98), -1, dr.AA)
