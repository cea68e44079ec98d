"""OpenCV drawing of bench items for the twin's cameras (RGB uint8 canvases).

Geometry is written in "design pixels" of a 320 x 240 front view and multiplied by a scale ``s``;
every function takes the canvas, the item's base centre (u, v) in design pixels and ``s``.
Glass is drawn as thin bright outlines over a faint tint, liquids by alpha blending, labels carry the
item's ArUco tag on a white quiet zone (the bench's tags, :mod:`agentchemist.workcell.tags`).
"""

from __future__ import annotations

import math
from functools import lru_cache

import cv2
import numpy as np

from agentchemist.workcell.tags import TAG_CELLS, TAG_SIDE_DESIGN_PX
from agentchemist.sim.markers import marker_image

__all__ = [
    "Canvas",
    "beaker_size",
    "draw_balance",
    "draw_beaker",
    "draw_bench",
    "draw_bottle",
    "draw_gripper",
    "draw_marker",
    "draw_meter",
    "draw_pouring_bottle",
    "draw_pipette",
    "draw_probe",
    "draw_solid_bottle",
    "draw_stand",
    "draw_stirrer",
    "draw_undissolved",
    "solid_appearance",
    "draw_wash_bottle",
    "draw_weighing_boat",
]

AA = cv2.LINE_AA
GLASS = (232, 240, 246)
RUBBER = (150, 40, 30)
STEEL = (150, 155, 160)
DARK = (45, 48, 52)
MARKER_CELL = TAG_SIDE_DESIGN_PX / TAG_CELLS  # design pixels per tag cell: 3 (18 px tags at 320 x 240)
STIRRER_H, BALANCE_H = 24.0, 20.0


class Canvas:
    """An RGB image plus the scale from design pixels to image pixels."""

    def __init__(self, width: int, height: int, scale: float) -> None:
        self.img = np.zeros((height, width, 3), np.uint8)
        self.s = scale

    def p(self, u: float, v: float) -> tuple[int, int]:
        return int(round(u * self.s)), int(round(v * self.s))

    def n(self, length: float) -> int:
        return max(1, int(round(length * self.s)))

    def blend_poly(self, pts: list[tuple[float, float]], rgb: tuple[int, int, int], alpha: float) -> None:
        """Fill a polygon with ``alpha`` opacity (only the polygon's bounding box is touched)."""
        arr = np.array([self.p(u, v) for u, v in pts], np.int32)
        x0, y0 = np.maximum(arr.min(axis=0) - 1, 0)
        x1, y1 = arr.max(axis=0) + 2
        h, w = self.img.shape[:2]
        x1, y1 = min(x1, w), min(y1, h)
        if x1 <= x0 or y1 <= y0:
            return
        roi = self.img[y0:y1, x0:x1]
        layer = roi.copy()
        cv2.fillPoly(layer, [arr - [x0, y0]], rgb, AA)
        cv2.addWeighted(layer, alpha, roi, 1.0 - alpha, 0.0, dst=roi)


def draw_bench(c: Canvas, horizon_v: float = 118.0) -> None:
    """Wall with tiles and a shelf, dark epoxy bench top with a lit front edge."""
    h, w = c.img.shape[:2]
    hv = int(round(horizon_v * c.s))
    grad = np.linspace(0.0, 1.0, hv)[:, None]
    wall = (np.array([208, 212, 216]) * (1 - grad) + np.array([188, 193, 198]) * grad).astype(np.uint8)
    c.img[:hv] = wall[:, None, :]
    tile = c.n(20)
    for y in range(tile, hv, tile):
        c.img[y, :] = (c.img[y, :].astype(np.int16) - 14).clip(0, 255).astype(np.uint8)
    for x in range(0, w, tile):
        c.img[:hv, x] = (c.img[:hv, x].astype(np.int16) - 10).clip(0, 255).astype(np.uint8)
    cv2.rectangle(c.img, c.p(0, 34), c.p(320, 38), (150, 120, 90), -1)  # shelf
    for i, (u, col) in enumerate(((24, (120, 80, 40)), (40, (200, 200, 195)), (268, (60, 90, 140)), (290, (190, 150, 60)))):
        hgt = 16 + 4 * (i % 2)
        cv2.rectangle(c.img, c.p(u - 6, 34 - hgt), c.p(u + 6, 34), col, -1, AA)
    bench = np.linspace(0.0, 1.0, h - hv)[:, None]
    top = (np.array([96, 100, 106]) * (1 - bench) + np.array([70, 73, 78]) * bench).astype(np.uint8)
    c.img[hv:] = top[:, None, :]
    cv2.line(c.img, c.p(0, horizon_v), c.p(320, horizon_v), (130, 134, 140), c.n(1.5), AA)


def draw_marker(c: Canvas, marker_id: int, cu: float, cv_: float) -> None:
    """Tag centred at (cu, cv_) design px, with a one-cell white quiet zone, axis-aligned."""
    cell = max(1, int(round(MARKER_CELL * c.s)))
    tag = marker_image(marker_id, cell)
    size = tag.shape[0]
    x0 = int(round(cu * c.s)) - size // 2
    y0 = int(round(cv_ * c.s)) - size // 2
    h, w = c.img.shape[:2]
    if x0 - cell < 0 or y0 - cell < 0 or x0 + size + cell > w or y0 + size + cell > h:
        return  # partly outside the frame: a cut tag would not decode anyway
    c.img[y0 - cell:y0 + size + cell, x0 - cell:x0 + size + cell] = 255
    c.img[y0:y0 + size, x0:x0 + size] = tag[:, :, None]


def beaker_size(capacity_ml: float) -> tuple[float, float]:
    """Design-pixel (width, height) of a low-form beaker of this capacity (100 mL -> 46 x 56)."""
    k = (capacity_ml / 100.0) ** (1.0 / 3.0)
    return 46.0 * k, 56.0 * k


def draw_beaker(c: Canvas, u: float, v: float, capacity_ml: float, volume_ml: float,
                rgb: tuple[int, int, int], marker_id: int | None, stirring: bool, solid_g: float = 0.0) -> float:
    """Glass beaker with liquid; returns the design v of the liquid surface."""
    bw, bh = beaker_size(capacity_ml)
    left, right, top = u - bw / 2, u + bw / 2, v - bh
    c.blend_poly([(left, top), (right, top), (right, v), (left, v)], GLASS, 0.18)
    frac = min(max(volume_ml / capacity_ml, 0.0), 1.0) * 0.9  # the rim is above the nominal mark
    surface = v - 2 - (bh - 4) * frac
    if volume_ml > 0:
        c.blend_poly([(left + 1.5, surface), (right - 1.5, surface), (right - 1.5, v - 1.5), (left + 1.5, v - 1.5)], rgb, 0.78)
        dip = 3.0 if stirring else 0.0  # vortex of a running stir bar
        pts = [(left + 1.5, surface), (u - 6, surface + 0.5), (u, surface + dip), (u + 6, surface + 0.5), (right - 1.5, surface)]
        hi = tuple(int(min(255, x + 30)) for x in rgb)
        cv2.polylines(c.img, [np.array([c.p(a, b) for a, b in pts], np.int32)], False, hi, c.n(1), AA)
    # stir bar
    cv2.ellipse(c.img, c.p(u, v - 2.5), (c.n(6), c.n(1.5)), 0, 0, 360, (250, 250, 250), -1, AA)
    if solid_g > 0.0:  # undissolved crystals; without solid nothing changes (titration images stay as they were)
        draw_undissolved(c, u, v, bw, surface, solid_g, volume_ml, stirring)
    # glass walls, rim, spout and graduations
    for x in (left, right):
        cv2.line(c.img, c.p(x, top), c.p(x, v), GLASS, c.n(1.2), AA)
    cv2.line(c.img, c.p(left, v), c.p(right, v), GLASS, c.n(1.2), AA)
    cv2.ellipse(c.img, c.p(u, top), (c.n(bw / 2), c.n(2.5)), 0, 0, 360, GLASS, c.n(1), AA)
    cv2.line(c.img, c.p(left - 2, top - 1.5), c.p(left, top + 1), GLASS, c.n(1), AA)
    for i in range(1, 5):
        y = v - 2 - (bh - 4) * 0.9 * i / 5
        cv2.line(c.img, c.p(right - 9, y), c.p(right - 4, y), (245, 248, 250), c.n(0.8), AA)
    cv2.line(c.img, c.p(left + 3, top + 4), c.p(left + 3, v - 6), (250, 252, 255), c.n(1), AA)  # highlight
    if marker_id is not None:
        draw_marker(c, marker_id, u + 5, v - bh * 0.45)
    return surface


# ---------------------------------------------------------------------------------------- undissolved solid
# What a chemist sees of undissolved crystals, drawn from a few physical numbers instead of a fixed icon.
#
# Crystals: table-salt grains of about CRYSTAL_MM (0.4 mm) edge, NaCl density 2.165 g/cm3, so a 2.5 g portion
# is about 18,000 grains whose cross-sections add up to REF_AREA_MM2 (about 29 cm2). The twin's Dissolver
# shrinks a fixed population of grains (m^(1/3) falls linearly), so their total cross-section goes as
# m^(2/3): A(m) = REF_AREA_MM2 * (m / REF_MASS_G)^(2/3). (The drawing does not know how much was added; it
# takes the population of a 2.5 g portion, the weighing experiment's amount.)
#
# Stirred: a running stir bar lifts most of the grains into suspension (SUSPENDED_FRACTION of the
# cross-section); the rest, the coarse ones, swirl on the floor round the bar. The suspension makes the
# liquid cloudy: optical depth tau = (suspended cross-section / liquid volume) * path through the beaker
# (its width), opacity of a milky white layer MAX_TURBIDITY * (1 - exp(-tau)). 2.5 g in 50 mL: tau 2.4,
# the liquid is nearly white; 0.1 g: tau 0.29 (opacity 0.21); 0.02 g: tau 0.10 (opacity 0.08, a faint haze).
# The floor grains are drawn one design pixel each (a grain of 0.1-0.4 mm glints, brighter than its size:
# the camera sees a sparkle) in a fixed order of places, so as the solid dissolves the sparkles go out one
# by one: floor cross-section / (1 design px)^2 of them, at most as many as the floor has places for (24 in
# a 100 mL beaker, reached at about 0.04 g; more solid than that shows as turbidity). 0.02 g: 15 sparkles,
# 0.005 g: 6, 0.002 g: 3, 0.001 g: 2, 0.0005 g: 1, below about 0.00013 g none. The cloud is drawn over the
# bar and the grains (they are inside the liquid): a dense suspension veils them (the bar's contrast is what
# perception.dissolution reads as haze).
#
# Unstirred: the grains lie in a pile where the bottle poured them (POUR_DU left of the beaker's centre, the
# camera draws the pouring bottle's mouth there), partly over the stir bar: a loose cone (bulk density
# 1.2 g/cm3, angle of repose 32 deg) seen from the side as a dome of wet, translucent grey-white crystals with
# isolated glints (see _grain_texture).
# 2.5 g: 27 x 8 design px; 0.02 g: 5 x 2 px.
CRYSTAL_MM = 0.4
REF_MASS_G = 2.5
REF_AREA_MM2 = REF_MASS_G / (2.165e-3 * CRYSTAL_MM**3) * CRYSTAL_MM**2  # about 2890 mm2
SUSPENDED_FRACTION = 0.85
MAX_TURBIDITY = 0.85
MM_PER_PX = 50.0 / 46.0  # a 100 mL low-form beaker is about 50 mm wide and 46 design px
BULK_DENSITY_G_CM3 = 1.2
REPOSE_DEG = 32.0
POUR_DU = -8.0
MILKY = (236, 238, 240)
_FLOOR_DV = 4.0  # grain rows: v - 6 .. v - 2, the lowest liquid rows (the liquid ends at v - 1.5)
_BAR_U, _BAR_V = 6.0, 1.5  # stir bar half-axes (drawn at v - 2.5)


def solid_appearance(solid_g: float, volume_ml: float, stirring: bool, width_px: float) -> dict[str, float]:
    """What undissolved solid looks like (see the block comment above): ``turbidity`` (opacity of the milky
    layer), ``sparkles`` (floor grains to draw, before the cap on places), ``pile_r`` / ``pile_h`` (design px
    half-width and height of the unstirred pile). ``width_px``: the beaker's design width."""
    m = max(float(solid_g), 0.0)
    area_mm2 = REF_AREA_MM2 * (m / REF_MASS_G) ** (2.0 / 3.0)
    out = {"turbidity": 0.0, "sparkles": 0.0, "pile_r": 0.0, "pile_h": 0.0}
    if m <= 0.0:
        return out
    if stirring:
        if volume_ml > 0.0:
            path_cm = width_px * MM_PER_PX / 10.0
            tau = SUSPENDED_FRACTION * area_mm2 / 100.0 / volume_ml * path_cm
            out["turbidity"] = MAX_TURBIDITY * (1.0 - math.exp(-tau))
            out["sparkles"] = (1.0 - SUSPENDED_FRACTION) * area_mm2 / MM_PER_PX**2
        else:  # nothing to suspend the grains in: they all stay on the floor
            out["sparkles"] = area_mm2 / MM_PER_PX**2
    else:
        vol_mm3 = m / BULK_DENSITY_G_CM3 * 1000.0
        tan = math.tan(math.radians(REPOSE_DEG))
        r_mm = (3.0 * vol_mm3 / (math.pi * tan)) ** (1.0 / 3.0)
        out["pile_r"], out["pile_h"] = r_mm / MM_PER_PX, r_mm * tan / MM_PER_PX
    return out


@lru_cache(maxsize=16)
def _floor_places(width_px: float) -> np.ndarray:
    """Fixed, well-spaced places (du, dv) in design px for floor grains of a beaker ``width_px`` wide, as
    offsets of a grain's top-left corner from (u, v - 4): the five pixel rows v - 6 .. v - 2 of the inner
    floor, 5 px clear of the walls, off the stir bar and 1.5 px round it (a white grain on the white bar
    could not be seen), at least 1.6 px apart so each grain stays a separate sparkle; integer offsets so a
    grain fills whole pixels."""
    rng = np.random.default_rng(20240611)
    rx = math.floor(width_px / 2.0 - 5.0)
    places: list[tuple[float, float]] = []
    for _ in range(4000):
        du = float(rng.integers(-rx, rx + 1))
        dv = float(rng.integers(-2, 3))
        if (du / (rx + 0.5)) ** 2 + (dv / 2.5) ** 2 > 1.0:  # the floor ellipse, seen from about 6 deg above
            continue
        # the bar is centred 1.5 px below the floor's centre row; grain centres are +0.5 from the corner
        if ((du + 0.5) / (_BAR_U + 1.5)) ** 2 + ((dv + 0.5 - 1.5) / (_BAR_V + 1.5)) ** 2 <= 1.0:
            continue
        if any((du - a) ** 2 + (dv - b) ** 2 < 1.6**2 for a, b in places):
            continue
        places.append((du, dv))
    arr = np.array(places, np.float64).reshape(-1, 2)
    arr.setflags(write=False)
    return arr


@lru_cache(maxsize=1)
def _grain_texture() -> np.ndarray:
    """64 x 64 grey levels of a submerged pile of crystals: wet salt is translucent, a diffuse grey-white
    (205-225) with glints (244-253) where a crystal face catches the light. At 1 mm per pixel a glint is one
    pixel; glints never touch (a pixel's eight neighbours hold no other glint), one on about every sixth pixel."""
    rng = np.random.default_rng(77)
    tex = rng.integers(205, 226, (64, 64))
    glint = np.zeros((64, 64), bool)
    for i, j in zip(*np.nonzero(rng.random((64, 64)) < 0.3)):
        if not glint[max(i - 1, 0):i + 2, max(j - 1, 0):j + 2].any():
            glint[i, j] = True
    tex[glint] = rng.integers(244, 254, int(glint.sum()))
    tex = tex.astype(np.uint8)
    tex.setflags(write=False)
    return tex


def _bluish_white(levels: np.ndarray) -> np.ndarray:
    """RGB (N x 3, uint8) of crystal greys, a touch bluer (salt under bench light through water)."""
    g = np.asarray(levels, np.int16)
    return np.stack([g, g, np.minimum(g + 2, 255)], axis=1).astype(np.uint8)


def _fill_design_px(c: Canvas, du: np.ndarray, dv: np.ndarray, u: float, v: float, grey: np.ndarray) -> None:
    """Paint design pixels at (u + du, v + dv) (top-left corners) with RGB levels ``grey`` (N x 3)."""
    k = max(1, int(round(c.s)))
    h, w = c.img.shape[:2]
    xs = np.floor((u + du) * c.s + 0.5).astype(int)  # round half up: rows do not depend on v's parity
    ys = np.floor((v + dv) * c.s + 0.5).astype(int)
    for ox in range(k):
        for oy in range(k):
            x, y = xs + ox, ys + oy
            ok = (x >= 0) & (x < w) & (y >= 0) & (y < h)
            c.img[y[ok], x[ok]] = grey[ok]


def draw_undissolved(c: Canvas, u: float, v: float, width_px: float, surface: float, solid_g: float,
                     volume_ml: float, stirring: bool) -> None:
    """Undissolved crystals in a beaker of design width ``width_px`` standing at (u, v) whose liquid surface
    is at design v ``surface``: floor sparkles and a cloudy suspension when stirred, a grainy pile when not."""
    look = solid_appearance(solid_g, volume_ml, stirring, width_px)
    if look["pile_r"] > 0.0:
        r, hgt = look["pile_r"], look["pile_h"]
        left, right = max(u + POUR_DU - r, u - width_px / 2 + 2.0), min(u + POUR_DU + r, u + width_px / 2 - 2.0)
        dus = np.arange(math.floor(left - u), math.ceil(right - u), dtype=np.float64)
        cols, rows = [], []
        for du in dus:  # a dome, height h (1 - x^2) over the pile's half-width, on the lowest liquid row v - 2
            x = (du + 0.5 - POUR_DU) / r
            top = hgt * (1.0 - x * x)
            if top < 0.5 and abs(x) > 0.35:
                continue
            n = max(1, int(round(top)))
            cols.extend([du] * n)
            rows.extend(-2.0 - np.arange(n))
        if cols:
            du_a, dv_a = np.array(cols), np.array(rows, np.float64)
            tex = _grain_texture()[dv_a.astype(int) % 64, du_a.astype(int) % 64]
            _fill_design_px(c, du_a, dv_a, u, v, _bluish_white(tex))
    n = int(math.floor(look["sparkles"] + 0.5))
    if n > 0:
        places = _floor_places(float(width_px))[:n]
        du_a = places[:, 0]
        dv_a = places[:, 1] - _FLOOR_DV
        # glints differ from grain to grain (faces catch the light at different angles)
        levels = 240 + (np.arange(len(places)) * 7) % 13
        _fill_design_px(c, du_a, dv_a, u, v, _bluish_white(levels))
    if look["turbidity"] > 0.0:
        bw = width_px
        c.blend_poly([(u - bw / 2 + 1.5, surface), (u + bw / 2 - 1.5, surface), (u + bw / 2 - 1.5, v - 1.5),
                      (u - bw / 2 + 1.5, v - 1.5)], MILKY, look["turbidity"])


def draw_stirrer(c: Canvas, u: float, v: float, on: bool, marker_id: int | None) -> float:
    """Magnetic stirrer plate; returns the design v of its top plate."""
    w = 92.0
    top = v - STIRRER_H
    cv2.rectangle(c.img, c.p(u - w / 2, top + 5), c.p(u + w / 2, v), DARK, -1, AA)
    cv2.rectangle(c.img, c.p(u - w / 2 + 2, top), c.p(u + w / 2 - 2, top + 5), (226, 226, 222), -1, AA)
    for du in (26.0, 37.0):
        cv2.circle(c.img, c.p(u + du, top + 14), c.n(4), (200, 200, 200), -1, AA)
        cv2.line(c.img, c.p(u + du, top + 14), c.p(u + du + 2, top + 11), DARK, c.n(1), AA)
    cv2.circle(c.img, c.p(u + 16, top + 14), c.n(1.6), (60, 220, 90) if on else (70, 70, 70), -1, AA)
    if marker_id is not None:
        draw_marker(c, marker_id, u - 30, top + 14)
    return top


def draw_balance(c: Canvas, u: float, v: float, text: str, marker_id: int | None) -> float:
    """Top-loading balance with display; returns the design v of its pan."""
    w = 84.0
    top = v - BALANCE_H
    cv2.rectangle(c.img, c.p(u - w / 2, top + 4), c.p(u + w / 2, v), (222, 222, 216), -1, AA)
    cv2.rectangle(c.img, c.p(u - w / 2 + 24, top + 8), c.p(u + w / 2 - 4, top + 17), (40, 60, 45), -1, AA)
    cv2.putText(c.img, text.strip(), c.p(u - w / 2 + 26, top + 15.5), cv2.FONT_HERSHEY_PLAIN, 0.55 * c.s,
                (140, 255, 160), 1, AA)
    cv2.ellipse(c.img, c.p(u, top + 2), (c.n(30), c.n(3)), 0, 0, 360, STEEL, -1, AA)
    if marker_id is not None:
        draw_marker(c, marker_id, u - w / 2 + 11, top + 12)
    return top


def draw_meter(c: Canvas, u: float, v: float, text: str, marker_id: int | None) -> None:
    """Bench pH meter with its LCD showing ``text``."""
    w, h = 62.0, 44.0
    cv2.rectangle(c.img, c.p(u - w / 2, v - h), c.p(u + w / 2, v), (205, 208, 212), -1, AA)
    cv2.rectangle(c.img, c.p(u - w / 2 + 4, v - h + 5), c.p(u + w / 2 - 4, v - h + 19), (150, 175, 140), -1, AA)
    cv2.putText(c.img, text, c.p(u - w / 2 + 7, v - h + 16.5), cv2.FONT_HERSHEY_SIMPLEX, 0.33 * c.s,
                (20, 30, 20), max(1, int(c.s)), AA)
    cv2.putText(c.img, "pH", c.p(u + w / 2 - 14, v - h + 28), cv2.FONT_HERSHEY_PLAIN, 0.5 * c.s, (60, 60, 60), 1, AA)
    for i in range(3):
        cv2.rectangle(c.img, c.p(u + 2 + 8 * i, v - 12), c.p(u + 7 + 8 * i, v - 8), (90, 95, 100), -1, AA)
    if marker_id is not None:
        draw_marker(c, marker_id, u - w / 2 + 14, v - 13)


def draw_stand(c: Canvas, u: float, v: float, rod_top: float, clamp_to_u: float, clamp_v: float,
               marker_id: int | None) -> None:
    """Retort stand: base plate, rod and a clamp arm reaching to the probe."""
    cv2.rectangle(c.img, c.p(u - 16, v - 4), c.p(u + 16, v), (60, 62, 66), -1, AA)
    cv2.line(c.img, c.p(u, v - 4), c.p(u, rod_top), STEEL, c.n(2.2), AA)
    cv2.line(c.img, c.p(u, clamp_v), c.p(clamp_to_u, clamp_v), (110, 112, 116), c.n(2.0), AA)
    cv2.circle(c.img, c.p(u, clamp_v), c.n(2.6), (40, 40, 40), -1, AA)
    if marker_id is not None:
        draw_marker(c, marker_id, u, v - 18)


def draw_probe(c: Canvas, u: float, top: float, bottom: float, cable_to: tuple[float, float] | None,
               marker_id: int | None) -> None:
    """pH electrode: black body, glass bulb at the bottom, white cable from the top."""
    if cable_to is not None:
        p0, p2 = (u, top - 2), cable_to
        p1 = (0.5 * (p0[0] + p2[0]), min(p0[1], p2[1]) - 30)
        pts = [(p0[0] * (1 - t) ** 2 + 2 * p1[0] * t * (1 - t) + p2[0] * t * t,
                p0[1] * (1 - t) ** 2 + 2 * p1[1] * t * (1 - t) + p2[1] * t * t) for t in np.linspace(0, 1, 24)]
        cv2.polylines(c.img, [np.array([c.p(a, b) for a, b in pts], np.int32)], False, (235, 235, 235), c.n(1.2), AA)
    cv2.line(c.img, c.p(u, top), c.p(u, bottom - 4), (25, 25, 28), c.n(4), AA)
    cv2.ellipse(c.img, c.p(u, bottom - 3), (c.n(2), c.n(3)), 0, 0, 360, (215, 225, 232), -1, AA)
    if marker_id is not None:
        draw_marker(c, marker_id, u - 12, top + 7)


def draw_pipette(c: Canvas, u: float, tip_v: float, tilt_deg: float, fill: float, liquid_rgb: tuple[int, int, int],
                 pendant_ml: float, marker_id: int | None, flag_frac: float = 0.8) -> tuple[float, float]:
    """Dropping pipette from its tip upward; returns the design (u, v) of the bulb centre."""
    length = 58.0
    a = math.radians(tilt_deg)
    top = (u + length * math.sin(a), tip_v - length * math.cos(a))
    cv2.line(c.img, c.p(u, tip_v), c.p(*top), GLASS, c.n(3), AA)
    if fill > 0:
        f = min(max(fill, 0.0), 1.0)
        mid = (u + (top[0] - u) * 0.6 * f, tip_v - (tip_v - top[1]) * 0.6 * f)
        cv2.line(c.img, c.p(u, tip_v - 1), c.p(*mid), liquid_rgb, c.n(1.6), AA)
    bulb = (top[0] + 5 * math.sin(a), top[1] - 5 * math.cos(a))
    cv2.ellipse(c.img, c.p(*bulb), (c.n(5.5), c.n(9)), tilt_deg, 0, 360, RUBBER, -1, AA)
    cv2.ellipse(c.img, c.p(bulb[0] - 1.8, bulb[1] - 2), (c.n(1.2), c.n(4)), tilt_deg, 0, 360, (190, 90, 80), -1, AA)
    if pendant_ml > 0.002:
        r = 1.2 + 2.0 * (pendant_ml / 0.05) ** (1 / 3)
        cv2.circle(c.img, c.p(u, tip_v + r * 0.6), c.n(r), tuple(int(x * 0.9) for x in liquid_rgb), -1, AA)
    if marker_id is not None:  # a tape flag on the tube
        fu, fv = u + (top[0] - u) * flag_frac + 13, tip_v - (tip_v - top[1]) * flag_frac
        cv2.line(c.img, c.p(fu - 13, fv), c.p(fu - 5, fv), (240, 240, 240), c.n(1), AA)
        draw_marker(c, marker_id, fu, fv)
    return bulb


def draw_gripper(c: Canvas, cu: float, cv_: float, opening_m: float, from_corner: tuple[float, float]) -> None:
    """A Piper gripper (two fingers either side of (cu, cv_)) with its forearm from an image corner."""
    half = 3.0 + opening_m * 1000.0 * 0.12  # 70 mm -> about 11 px between finger centres
    wrist = (cu, cv_ - 16)
    cv2.line(c.img, c.p(*from_corner), c.p(*wrist), (70, 74, 80), c.n(9), AA)
    cv2.line(c.img, c.p(*from_corner), c.p(*wrist), (110, 115, 122), c.n(5), AA)
    cv2.rectangle(c.img, c.p(cu - half - 5, cv_ - 20), c.p(cu + half + 5, cv_ - 12), (55, 58, 62), -1, AA)
    for sgn in (-1, 1):
        x = cu + sgn * half
        cv2.rectangle(c.img, c.p(x - 2, cv_ - 13), c.p(x + 2, cv_ + 6), (35, 36, 40), -1, AA)


def draw_bottle(c: Canvas, u: float, v: float, label: str, cap_rgb: tuple[int, int, int], glass_rgb: tuple[int, int, int],
                marker_id: int | None, tilt_deg: float = 0.0) -> None:
    """Reagent bottle standing with its base centre at (u, v) (upright; label with tag and text)."""
    w, h = 34.0, 60.0
    outline = [(-w / 2, 0), (w / 2, 0), (w / 2, -h + 14), (6, -h + 4), (6, -h), (-6, -h), (-6, -h + 4), (-w / 2, -h + 14)]
    c.blend_poly([(u + x, v + y) for x, y in outline], glass_rgb, 0.85)
    cv2.rectangle(c.img, c.p(u - 7, v - h - 8), c.p(u + 7, v - h), cap_rgb, -1, AA)
    cv2.rectangle(c.img, c.p(u - w / 2 + 2, v - 38), c.p(u + w / 2 - 2, v - 8), (246, 246, 240), -1, AA)
    if marker_id is not None:
        draw_marker(c, marker_id, u - 6, v - 23)
    cv2.putText(c.img, (label.split() or [''])[0][:6], c.p(u - w / 2 + 3, v - 4), cv2.FONT_HERSHEY_PLAIN, 0.5 * c.s, (30, 30, 30), 1, AA)


def draw_pouring_bottle(c: Canvas, mouth_u: float, mouth_v: float, tilt_deg: float,
                        body_rgb: tuple[int, int, int], grains: bool) -> tuple[float, float]:
    """A bottle held at its mouth and tilted (0 = upright, 90 = horizontal, body toward -u);
    uncapped, with a stream of grains while pouring. Returns the design position of the body centre."""
    w, h = 34.0, 60.0
    a = math.radians(tilt_deg)
    ca, sa = math.cos(a), math.sin(a)

    def world(x: float, y: float) -> tuple[float, float]:  # local: y down from the mouth
        return mouth_u + x * ca - y * sa, mouth_v + x * sa + y * ca

    outline = [(-6, 0), (6, 0), (6, 4), (w / 2, 14), (w / 2, h), (-w / 2, h), (-w / 2, 14), (-6, 4)]
    c.blend_poly([world(x, y) for x, y in outline], body_rgb, 0.92)
    band = [world(x, y) for x, y in ((-w / 2 + 2, 22), (w / 2 - 2, 22), (w / 2 - 2, 52), (-w / 2 + 2, 52))]
    cv2.fillPoly(c.img, [np.array([c.p(*q) for q in band], np.int32)], (246, 246, 240), AA)
    if grains:
        for k in range(7):
            cv2.circle(c.img, c.p(mouth_u + 1.5 * (k % 2), mouth_v + 3 + 3.2 * k), c.n(0.9), (250, 250, 246), -1, AA)
    return world(0, h / 2)


def draw_solid_bottle(c: Canvas, u: float, v: float, label: str, marker_id: int | None) -> None:
    """Plastic bottle of a solid reagent, upright on the bench."""
    draw_bottle(c, u, v, label, (40, 90, 170), (238, 238, 232), marker_id)


def draw_wash_bottle(c: Canvas, u: float, v: float, marker_id: int | None) -> None:
    cv2.rectangle(c.img, c.p(u - 12, v - 44), c.p(u + 12, v), (240, 240, 236), -1, AA)
    cv2.line(c.img, c.p(u, v - 44), c.p(u + 4, v - 56), (230, 230, 225), c.n(2), AA)
    cv2.line(c.img, c.p(u + 4, v - 56), c.p(u + 16, v - 52), (230, 230, 225), c.n(1.2), AA)
    if marker_id is not None:
        draw_marker(c, marker_id, u, v - 22)


def draw_weighing_boat(c: Canvas, u: float, v: float, marker_id: int | None) -> None:
    pts = [(u - 14, v - 6), (u + 14, v - 6), (u + 10, v), (u - 10, v)]
    cv2.fillPoly(c.img, [np.array([c.p(*p) for p in pts], np.int32)], (250, 250, 250), AA)
    if marker_id is not None:
        draw_marker(c, marker_id, u + 26, v - 10)
