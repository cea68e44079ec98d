"""Liquid colour in the beaker from the front camera (OpenCV, HSV).

The beaker is found by its ArUco tag (:data:`agentchemist.workcell.tags.MARKER_TABLE`, id 1 for
``beaker_main``). The tag's side length gives the image scale, so the search region below the tag is
written in tag sides and works at any camera resolution. The tag's shape says where the camera looks from:
a tag seen about straight on (the twin's drawing, a camera level with the bench) is square and the liquid
shows through the glass below the label; a tag much flatter than wide is seen from well above (the robot's
front camera, 1.2 m up, sees the labels 50-60 deg off their normal), and such a camera looks down into the
beaker and sees the liquid's surface above the label, so the region is mirrored above the tag. Inside
that region the liquid is the largest connected blob of coloured pixels: grey bench, white glass
highlights, the black probe and the white tag quiet zone all have low saturation or extreme brightness and
drop out of the mask.

The hue of the blob is the circular mean of the per-pixel hue weighted by saturation: hue is an angle
(350 deg and 10 deg average to 0 deg, not 180 deg), and weakly coloured pixels (glass edges, blends
with the background) say little about the liquid's hue. The resultant length R of the weighted hue
vectors (1: one hue everywhere, 0: hues spread round the circle) is the measurement's concentration.

Example::

    >>> tracker = BeakerColourTracker()
    >>> m = tracker.measure(front_rgb, now=12.0)       # doctest: +SKIP
    >>> round(m.hue_deg), m.confidence > 0.8           # doctest: +SKIP
    (329, True)
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np

from agentchemist.workcell.tags import MARKER_TABLE
from agentchemist.perception.tags import TagFinder, tag_aspect

__all__ = [
    "BeakerColourTracker",
    "ColourError",
    "ColourMeasurement",
    "HueStatistics",
    "LiquidRegionConfig",
    "MarkerNotFoundError",
    "NoLiquidColourError",
    "hue_statistics",
]


class ColourError(ValueError):
    """An image from which no liquid colour can be read."""


class MarkerNotFoundError(ColourError):
    """The beaker's tag is not in the image (and no recent location is remembered)."""


class NoLiquidColourError(ColourError):
    """The region below the tag holds too few coloured pixels (empty beaker, colourless liquid, glare)."""


@dataclass(frozen=True)
class HueStatistics:
    """Saturation-weighted hue statistics of a set of pixels.

    ``hue_deg`` circular mean in [0, 360); ``concentration`` resultant length R in [0, 1];
    ``saturation`` and ``value`` weighted means in [0, 1]; ``pixels`` pixels that passed the mask.
    """

    hue_deg: float
    concentration: float
    saturation: float
    value: float
    pixels: int


def hue_statistics(rgb: np.ndarray, *, min_saturation: float = 0.25, min_value: float = 0.12,
                   max_value: float = 0.98, mask: np.ndarray | None = None) -> HueStatistics:
    """Circular mean hue of the pixels of ``rgb`` (uint8, ... x 3) weighted by saturation.

    Pixels below ``min_saturation`` (grey, white glass) or outside [``min_value``, ``max_value``]
    (shadows, specular highlights) are ignored, as are pixels where ``mask`` is False.
    Raises NoLiquidColourError when no pixel is left.
    """
    if rgb.dtype != np.uint8 or rgb.ndim < 2 or rgb.shape[-1] != 3:
        raise ColourError(f"hue statistics need RGB uint8 pixels, got shape {rgb.shape} {rgb.dtype}")
    for name, v in (("min_saturation", min_saturation), ("min_value", min_value), ("max_value", max_value)):
        if not (math.isfinite(v) and 0.0 <= v <= 1.0):
            raise ValueError(f"{name} must be within [0, 1], got {v!r}")
    pixels = rgb.reshape(-1, 3)
    keep = np.ones(len(pixels), bool) if mask is None else np.asarray(mask, bool).reshape(-1)
    if keep.shape[0] != pixels.shape[0]:
        raise ValueError(f"mask has {keep.shape[0]} entries for {pixels.shape[0]} pixels")
    # Float input makes OpenCV return hue in degrees [0, 360) instead of the 8-bit 0..179 scale.
    hsv = cv2.cvtColor(pixels.reshape(-1, 1, 3).astype(np.float32) / 255.0, cv2.COLOR_RGB2HSV).reshape(-1, 3)
    h, s, v = hsv[:, 0], hsv[:, 1], hsv[:, 2]
    keep &= (s >= min_saturation) & (v >= min_value) & (v <= max_value)
    n = int(keep.sum())
    if n == 0:
        raise NoLiquidColourError("no coloured pixel (all grey, too dark or highlights)")
    w = s[keep].astype(np.float64)
    rad = np.deg2rad(h[keep].astype(np.float64))
    c, sn = float(np.dot(w, np.cos(rad))), float(np.dot(w, np.sin(rad)))
    total = float(w.sum())
    mean = math.degrees(math.atan2(sn, c)) % 360.0
    return HueStatistics(hue_deg=mean, concentration=math.hypot(c, sn) / total,
                         saturation=total / n, value=float(np.dot(w, v[keep]) / total), pixels=n)


@dataclass(frozen=True)
class LiquidRegionConfig:
    """Where the liquid is relative to the beaker's tag, and which pixels count as coloured.

    Offsets are in tag sides (the black square of the tag, without its white quiet zone) from the tag
    centre, image axes (u right, v down). The defaults cover the lower body of the twin's 50-250 mL
    beakers, whose tag sits at 45 % of the beaker's height: the liquid of a quarter-filled beaker
    starts just below the tag.
    """

    marker_id: int = 1                          #: beaker_main in the marker table
    search_du: tuple[float, float] = (-2.2, 1.6)
    search_dv: tuple[float, float] = (0.55, 2.2)
    min_saturation: float = 0.25                #: grey bench and white glass are below this
    min_value: float = 0.12                     #: black probe and shadows are below this
    max_value: float = 0.98                     #: specular highlights are above this
    min_pixels: int = 30                        #: a blob smaller than this is not the liquid
    marker_memory_s: float = 5.0                #: reuse the last tag location this long while it is hidden
    search_pad_sides: float = 3.0               #: look for the tag near its last location first
    from_above_aspect: float = 0.8              #: a tag flatter than this (height / width) is seen from above

    def __post_init__(self):
        if self.marker_id not in MARKER_TABLE or MARKER_TABLE[self.marker_id].kind != "beaker":
            raise ValueError(f"marker {self.marker_id} is not a beaker tag in the marker table")
        for name in ("search_du", "search_dv"):
            lo, hi = getattr(self, name)
            if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
                raise ValueError(f"{name} must be (low, high) with low < high, got {(lo, hi)}")
        if not 0.0 <= self.min_saturation < 1.0 or not 0.0 <= self.min_value < self.max_value <= 1.0:
            raise ValueError("need 0 <= min_saturation < 1 and 0 <= min_value < max_value <= 1")
        if self.min_pixels < 1:
            raise ValueError(f"min_pixels must be >= 1, got {self.min_pixels}")
        if not 0.0 < self.from_above_aspect <= 1.0:
            raise ValueError(f"from_above_aspect must be in (0, 1], got {self.from_above_aspect}")
        if not (self.marker_memory_s >= 0 and self.search_pad_sides > 0):
            raise ValueError("marker_memory_s must be >= 0 and search_pad_sides > 0")


@dataclass(frozen=True)
class ColourMeasurement:
    """One frame's liquid colour. ``stamp`` s; hue in degrees [0, 360); ``bbox`` (x, y, w, h) px of the
    liquid blob; ``marker_seen`` False when the tag was hidden and its last location was used."""

    stamp: float
    hue_deg: float
    saturation: float
    value: float
    concentration: float
    pixels: int
    confidence: float
    bbox: tuple[int, int, int, int]
    marker_seen: bool


@dataclass(frozen=True)
class _TagLocation:
    u: float
    v: float
    side_px: float
    stamp: float
    from_above: bool = False


class BeakerColourTracker:
    """Measures the liquid colour frame by frame; remembers where the beaker's tag was."""

    def __init__(self, config: LiquidRegionConfig = LiquidRegionConfig()):
        self.config = config
        self._finder = TagFinder(config.marker_id, config.search_pad_sides)
        self._tag: _TagLocation | None = None

    def reset(self) -> None:
        self._tag = None

    def measure(self, image_rgb: np.ndarray, now: float) -> ColourMeasurement:
        """The liquid colour in ``image_rgb`` (H x W x 3 uint8) at time ``now`` (s).

        Raises MarkerNotFoundError or NoLiquidColourError (both ColourError) when the frame says
        nothing about the liquid; ColourError for an image that is not RGB uint8.
        """
        if not isinstance(image_rgb, np.ndarray) or image_rgb.ndim != 3 or image_rgb.shape[2] != 3 \
                or image_rgb.dtype != np.uint8:
            shape, dtype = getattr(image_rgb, "shape", None), getattr(image_rgb, "dtype", "")
            raise ColourError(f"colour tracking needs an RGB uint8 image, got {shape} {dtype}")
        if not math.isfinite(now):
            raise ValueError(f"now must be finite, got {now!r}")
        tag, seen = self._locate(image_rgb, now)
        c = self.config
        h, w = image_rgb.shape[:2]
        x0 = int(np.clip(math.floor(tag.u + c.search_du[0] * tag.side_px), 0, w))
        x1 = int(np.clip(math.ceil(tag.u + c.search_du[1] * tag.side_px), 0, w))
        dv0, dv1 = (-c.search_dv[1], -c.search_dv[0]) if tag.from_above else c.search_dv
        y0 = int(np.clip(math.floor(tag.v + dv0 * tag.side_px), 0, h))
        y1 = int(np.clip(math.ceil(tag.v + dv1 * tag.side_px), 0, h))
        if x1 - x0 < 2 or y1 - y0 < 2:
            raise NoLiquidColourError(f"the region below tag {c.marker_id} lies outside the image")
        roi = image_rgb[y0:y1, x0:x1]
        blob = self._liquid_blob(roi)
        if blob is None:
            raise NoLiquidColourError(
                f"fewer than {c.min_pixels} coloured pixels {'above' if tag.from_above else 'below'} tag {c.marker_id} "
                f"(region {x0}..{x1} x {y0}..{y1} px): empty beaker, colourless liquid or glare")
        mask, (bx, by, bw, bh) = blob
        stats = hue_statistics(roi, min_saturation=c.min_saturation, min_value=c.min_value,
                               max_value=c.max_value, mask=mask)
        # Confidence: hue agreement within the blob, discounted when the blob is barely big enough or
        # the tag was not seen in this frame.
        size = min(1.0, stats.pixels / (3.0 * c.min_pixels))
        confidence = stats.concentration * (0.5 + 0.5 * size) * (1.0 if seen else 0.7)
        return ColourMeasurement(stamp=float(now), hue_deg=stats.hue_deg, saturation=stats.saturation,
                                 value=stats.value, concentration=stats.concentration, pixels=stats.pixels,
                                 confidence=float(min(1.0, max(0.0, confidence))),
                                 bbox=(x0 + bx, y0 + by, bw, bh), marker_seen=seen)

    # ------------------------------------------------------------------ internals
    def _locate(self, image_rgb: np.ndarray, now: float) -> tuple[_TagLocation, bool]:
        c = self.config
        grey = cv2.cvtColor(image_rgb, cv2.COLOR_RGB2GRAY)
        last = self._tag
        found = self._finder.find(grey, (last.u, last.v, last.side_px) if last is not None else None)
        if found is not None:
            above = tag_aspect(self._finder.corners) < c.from_above_aspect
            self._tag = _TagLocation(*found, now, above)
            return self._tag, True
        if self._tag is not None and 0.0 <= now - self._tag.stamp <= c.marker_memory_s:
            return self._tag, False
        raise MarkerNotFoundError(f"beaker tag {c.marker_id} ({MARKER_TABLE[c.marker_id].labware_id}) "
                                  "not found in the front image")

    def _liquid_blob(self, roi: np.ndarray) -> tuple[np.ndarray, tuple[int, int, int, int]] | None:
        c = self.config
        hsv = cv2.cvtColor(roi, cv2.COLOR_RGB2HSV_FULL)  # 8-bit S and V are enough for the mask
        s, v = hsv[:, :, 1], hsv[:, :, 2]
        mask = ((s >= c.min_saturation * 255) & (v >= c.min_value * 255) & (v <= c.max_value * 255)).astype(np.uint8)
        n, labels, stats, _ = cv2.connectedComponentsWithStats(mask, connectivity=8)
        if n <= 1:
            return None
        best = 1 + int(np.argmax(stats[1:, cv2.CC_STAT_AREA]))
        if stats[best, cv2.CC_STAT_AREA] < c.min_pixels:
            return None
        x, y, w, h = (int(stats[best, k]) for k in (cv2.CC_STAT_LEFT, cv2.CC_STAT_TOP,
                                                     cv2.CC_STAT_WIDTH, cv2.CC_STAT_HEIGHT))
        return labels == best, (x, y, w, h)
