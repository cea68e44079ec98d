"""Undissolved solid in the working beaker, from the front camera: is anything left to dissolve?

Where to look. The beaker is found by its ArUco tag (:data:`agentchemist.workcell.tags.MARKER_TABLE`, id 1
for ``beaker_main``), as :class:`agentchemist.perception.colour.BeakerColourTracker` does. The tag's side
is the image scale: lengths below are in *design px*, 1/18 of the tag's printed side (the twin prints its
tags 18 px wide in its 320 x 240 layout, so these are pixels of the default front image), and regions are
placed from the tag's centre, so they work at any (integer multiple of the) resolution. The defaults fit a
100 mL low-form beaker with its tag at 45 % of its height (the twin's working beaker): the centre of its
bottom edge is 5 px left of and 25 px below the tag's centre, the stir bar lies on the floor in the middle.

Two kinds of evidence of undissolved solid:

* **Grains on the floor** (``grain_area_px``). Undissolved crystals lie, or swirl, on the floor beside the
  stir bar and glint: small bright points on the liquid. In the floor band (minus the stir bar) the
  detector takes a top-hat of the luminance against the largest opening by straight lines one design px
  longer than a grain (horizontal, vertical, both diagonals). A point fits along none of them and stands
  out; a line (liquid surface, glass bottom, graduation mark) fits along its own direction and cancels; a
  blob (pH probe bulb, pipette tip, the bar) fits along all of them. Pixels above
  ``max(min_grain_contrast, noise_sigmas * sigma)`` count (sigma: the frame's own luminance noise, from
  neighbour differences in the liquid); their area is reported in design px^2.
* **Haze over the stir bar** (``haze``): the turbidity of a stirred suspension, measured against the
  white bar on the floor, which fades into the cloud. With B the bar's luminance, L the liquid's just
  above the floor and W the bar's luminance in clear liquid, haze = 1 - (B - L) / (W - L): 0 in clear
  liquid of any colour, toward 1 as the cloud hides the bar (a pile lying over the bar reads as haze too).
  W is ``bar_white`` unless :meth:`DissolutionWatch.reference` measured it on a frame of the beaker with
  clear liquid (e.g. on the balance before the solid goes in; this calibrates the camera's exposure).
  Turbidity could also be read as the liquid's whitening against such a reference, but that moves with
  anything else that changes the liquid (fill level, colour, drops crossing it): in titration frames with
  camera noise it moved as much as 0.02 g of NaCl does, while the bar's contrast is a ratio within one
  frame.

``score`` = max(grain_area_px / ``min_grain_area_px``, haze / ``min_haze``): 1 is the detection threshold.
A frame *shows solid* at score >= 1 and is *clear* at score < ``clear_below``; in between it is neither
(faint evidence breaks a clear run, it does not arm the watch).

Thresholds, measured on the twin's front images (NaCl 2.5 g in 50 mL, stirred; titration frames of every
scenario with the pipette resting, held and dripping; see tests/unit/test_perception_dissolution.py):

* ``min_grain_contrast`` 20 grey levels: a grain glints 45-50 levels above clear water (250 on 199);
  titration frames (pH probe bulb, pipette, surface and vortex of 5-25 mL, bar rim) give at most 11.
  A cloud dims the grains with the rest of the floor: from about 0.6 g stirred they drop below 20 and
  the haze takes over.
* ``noise_sigmas`` 6: the largest top-hat of sensor noise over the 170 px floor band was 5.0 sigma in
  300 frames (99 % below 3.9 sigma); at camera noise sd 8 (luminance sigma 5.3) the threshold is 32, still
  below a grain's 45.
* ``min_grain_area_px`` 2: two grains (one pixel could be a noise outlier). The twin draws 15 grains at
  0.02 g stirred, 6 at 0.005 g, 3 at 0.002 g, 2 at 0.001 g.
* ``min_haze`` 0.15: haze is 0.46 at 2.5 g stirred in 50 mL, 0.30 at 1 g, 0.19 at 0.5 g, 0.07 at 0.1 g;
  clear liquid reads 0 +- 0.03 at camera noise sd 8 (channel medians over the bar's 28 px; 0.095 the
  largest in the titration frames), 0 +- 0.01 at the default sd 2.

Measured with these defaults at 1 Hz on the twin's NaCl run (tests above, 320 x 240): every frame with
more than 0.002 g left shows solid at camera noise sd 2 and 6 (down to 0.001 g at sd 2); ``dissolved``
comes 2.4-2.5 s after the twin's last crystal is gone. At sd 8 (beyond the design point) the 0.15-0.6 g
stretch, where the fading cloud and the emerging grains are both near threshold, gives single frames that
read faint or even clear (5 runs: 1-2 such frames each, never two in a row, so never 3 s of clear), and
``dissolved`` comes 1.4-2.5 s after the truth. An unstirred pile lies partly over the bar and shows from
about 0.2 g (3 grains; 0.5 g at sd 8).

Dissolved. :meth:`DissolutionWatch.update` declares ``dissolved`` once solid was seen (``arm_frames``
frames) and after that every frame was clear for ``clear_hold_s`` seconds and at least ``min_clear_frames``
frames, with no gap between frames longer than ``max_gap_s`` (a stale camera is no evidence). Solid seen
again (more was added) takes ``dissolved`` back. Times are arguments (s); nothing reads a clock.

Seen from above (a calibrated camera). Where the frame comes with the camera's intrinsics (CameraInfo, and
the aligned depth where there is one), the regions are not placed in design px but traced in 3-D from the
tag's pose (:mod:`agentchemist.perception.beaker_floor`): the liquid the camera sees through the beaker's
mouth and, of the floor, the thin crescent behind the axis that shows over the label (from 57 deg above
the bench the centre and the stir bar are hidden behind the label). Two kinds of evidence, with the
thresholds of :class:`~agentchemist.perception.beaker_floor.FloorView`: grains as the top-hat of the
floor's crescent (the same detector; scale: design px at the floor's distance), and haze as the liquid's
brightening by a cloudy suspension over the stirrer's dark top, haze = (F - C) / (K - C) with F the
liquid's luminance (the mean between its 10th and 90th percentiles: flat-shaded patches of the glass in
front of it all count, the few bright grains do not), C its level in clear water (``clear_level``, or
:meth:`DissolutionWatch.reference`'s measurement) and K its level in a dense suspension (``cloud_level``).
Unlike the bar's contrast this is not a ratio within the frame: it moves with the exposure and the plate's
colour, hence the reference. A frame whose tag gives no pose (a degenerate quad) is measured by the 2-D
rule.

Thresholds of that path, measured on MuJoCo renders of the front camera (640 x 480, nacl_weighing's
beaker on the stirrer, 50 mL water, no sensor noise; tests/unit/test_dissolution_render.py): C 192 and K
235 grey levels; haze 1.00 at 2.4 g stirred, 0.54 at 0.18 g, 0.17 at 0.017 g, 0.09 at 0.008 g, 0.02 at
0.0006 g, 0.01 clear. ``min_haze`` 0.10 sees solid down to about 0.01 g (also at camera noise sd 2-4) and
clear below about 0.003 g; ``dissolved`` comes 0.8 s before to 0.5 s after the twin's last crystal. The
grains rarely cross the crescent (at most 5 design px^2 in these renders): the cloud carries the decision.
More in docs/simulation.md.

Example::

    >>> watch = DissolutionWatch()
    >>> watch.reference(clear_frame)                          # doctest: +SKIP
    >>> state = watch.update(12.0, frame)                     # doctest: +SKIP
    >>> state.solid_visible, state.dissolved                  # doctest: +SKIP
    (True, False)
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import cv2
import numpy as np

from agentchemist.workcell.tags import MARKER_TABLE, TAG_SIDE_DESIGN_PX
from agentchemist.perception.beaker_floor import FloorView, floor_masks
from agentchemist.perception.tag_pose import CameraModel, tag_pose
from agentchemist.perception.tags import TagFinder

__all__ = [
    "BeakerNotFoundError",
    "DissolutionConfig",
    "DissolutionError",
    "DissolutionState",
    "DissolutionWatch",
    "FrameError",
    "SolidMeasurement",
]

_LUMA = np.array([0.299, 0.587, 0.114], np.float32)


class DissolutionError(ValueError):
    """A frame or call the dissolution watch cannot use."""


class FrameError(DissolutionError):
    """Not an RGB uint8 image (H x W x 3)."""


class BeakerNotFoundError(DissolutionError):
    """The beaker's tag is not in the frame, or the beaker's floor lies outside it."""


@dataclass(frozen=True)
class DissolutionConfig:
    """Geometry (design px, see the module docstring; u right, heights up from the beaker's bottom edge)
    and thresholds."""

    marker_id: int = 1                                  #: beaker_main in the marker table
    tag_to_base: tuple[float, float] = (-5.0, 25.0)     #: tag centre -> centre of the bottom edge (u, v down)
    floor_v: tuple[float, float] = (7.0, 1.0)           #: floor band, from this high above the bottom edge to this
    floor_u: tuple[float, float] = (-18.0, 18.0)        #: ... across the axis (the walls and their highlight outside)
    bar_mask: tuple[float, float, float] = (2.0, 7.2, 2.7)  #: stir bar: centre height, half-axes with its rim
    bar_core: tuple[float, float, float] = (2.5, 6.0, 1.5)  #: the bar itself: ellipse centre height, half-axes
    liquid_v: tuple[float, float] = (13.0, 8.0)         #: liquid band above the floor (level, noise)
    liquid_u: tuple[float, float] = (-18.0, 12.0)       #: ... (graduation marks are further right)
    bar_white: float = 250.0                            #: the bar's luminance in clear liquid (white PTFE)
    min_grain_contrast: float = 20.0                    #: grey levels of top-hat
    noise_sigmas: float = 6.0
    min_grain_area_px: float = 2.0                      #: design px^2
    min_haze: float = 0.15
    clear_below: float = 0.5                            #: score below this: a clear frame
    arm_frames: int = 2                                 #: frames with solid before a clear run can mean dissolved
    clear_hold_s: float = 3.0
    min_clear_frames: int = 3
    max_gap_s: float = 2.0
    search_pad_sides: float = 3.0                       #: look for the tag near its last place first (tag sides)

    def __post_init__(self):
        if self.marker_id not in MARKER_TABLE or MARKER_TABLE[self.marker_id].kind != "beaker":
            raise ValueError(f"marker {self.marker_id} is not a beaker tag in the marker table")
        for name in ("tag_to_base", "floor_v", "floor_u", "bar_mask", "bar_core", "liquid_v", "liquid_u"):
            if not all(math.isfinite(x) for x in getattr(self, name)):
                raise ValueError(f"DissolutionConfig.{name} must be finite, got {getattr(self, name)!r}")
        for name in ("floor_v", "liquid_v"):
            far, near = getattr(self, name)
            if not far > near >= 0.0:
                raise ValueError(f"DissolutionConfig.{name} must be (far, near) above the bottom, far > near >= 0")
        for name in ("floor_u", "liquid_u"):
            lo, hi = getattr(self, name)
            if not lo < hi:
                raise ValueError(f"DissolutionConfig.{name} must be (low, high) with low < high")
        if min(self.bar_mask[1:]) <= 0 or min(self.bar_core[1:]) <= 0:
            raise ValueError("the stir bar's mask and core must have positive sizes")
        for name in ("bar_white", "min_grain_contrast", "noise_sigmas", "min_grain_area_px", "min_haze"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v > 0):
                raise ValueError(f"DissolutionConfig.{name} must be a finite number > 0, got {v!r}")
        if not 0.0 < self.clear_below <= 1.0:
            raise ValueError(f"clear_below must be in (0, 1], got {self.clear_below}")
        if self.arm_frames < 1 or self.min_clear_frames < 1:
            raise ValueError("arm_frames and min_clear_frames must be >= 1")
        if not (self.clear_hold_s >= 0 and self.max_gap_s > 0 and self.search_pad_sides > 0):
            raise ValueError("need clear_hold_s >= 0, max_gap_s > 0 and search_pad_sides > 0")


@dataclass(frozen=True)
class SolidMeasurement:
    """One frame's evidence (see the module docstring). ``bar_white``: the clear-liquid bar luminance used
    (the reference's or the configured one); ``noise_sigma``: the luminance noise measured in the liquid;
    ``grain_threshold``: the top-hat a grain needed (grey levels); ``liquid_level`` (clipped mean) and
    ``bar_level`` (of channel medians): luminances; ``tag``: the tag's centre (u, v) and measured side, px.
    A frame measured from the tag's pose (``posed``): ``liquid_level`` and ``bar_level`` are both the
    floor's luminance through the liquid, ``bar_white`` the clear level it is compared with."""

    score: float
    grain_area_px: float
    haze: float
    bar_white: float
    noise_sigma: float
    grain_threshold: float
    liquid_level: float
    bar_level: float
    tag: tuple[float, float, float]
    posed: bool = False


@dataclass(frozen=True)
class DissolutionState:
    """``solid_visible``: this frame shows solid (score >= 1); ``dissolved``: solid was seen, and none since
    for the hold time; ``armed``: solid has been seen; ``clear_for_s``: length of the current clear run."""

    solid_visible: bool
    score: float
    dissolved: bool
    stamp: float
    armed: bool
    clear_for_s: float
    measurement: SolidMeasurement


@dataclass(frozen=True)
class _Regions:
    rgb: np.ndarray        # the crop round the beaker's floor (uint8)
    y: np.ndarray          # its luminance (float32)
    floor: np.ndarray      # masks over the crop
    liquid: np.ndarray
    bar: np.ndarray
    scale: float           # image px per design px
    tag: tuple[float, float, float]
    posed: bool = False    # traced from the tag's 3-D pose (FloorView's thresholds)


class DissolutionWatch:
    """Frame by frame: how much undissolved solid shows, and whether it has all dissolved."""

    def __init__(self, config: DissolutionConfig = DissolutionConfig(), view: FloorView = FloorView()):
        self.config = config
        self.view = view
        self._finder = TagFinder(config.marker_id, config.search_pad_sides)
        self._last_tag: tuple[float, float, float] | None = None
        self._bar_white: float | None = None  # the bar's luminance in the clear reference frame
        self.reset()

    # ------------------------------------------------------------------ public
    def reset(self) -> None:
        """Forget the history (not the reference): the next frame starts a new watch."""
        self._stamp: float | None = None
        self._solid_frames = 0
        self._clear_start: float | None = None
        self._clear_frames = 0
        self._dissolved = False

    @property
    def has_reference(self) -> bool:
        return self._bar_white is not None

    def reference(self, frame: np.ndarray, camera: CameraModel | None = None,
                  depth_m: np.ndarray | None = None) -> SolidMeasurement:
        """Measure the stir bar's luminance in clear liquid on ``frame`` (this beaker, no solid) and use it as
        W from now on. Raises DissolutionError if the frame is not clear by the configured ``bar_white``
        (grains, or a bar dimmer than ``min_haze`` allows), FrameError / BeakerNotFoundError as :meth:`measure`."""
        m = self._measure(self._regions(frame, camera, depth_m), None)
        if m.score >= self.config.clear_below:
            raise DissolutionError(f"the reference frame is not clear liquid (score {m.score:.2f}: grains "
                                   f"{m.grain_area_px:.1f} px, haze {m.haze:.2f})")
        self._bar_white = m.bar_level
        return m

    def measure(self, frame: np.ndarray, camera: CameraModel | None = None,
                depth_m: np.ndarray | None = None) -> SolidMeasurement:
        """The evidence of undissolved solid in one frame (no history). Raises FrameError (not RGB uint8)
        or BeakerNotFoundError (no tag, or the beaker's floor outside the frame). ``camera`` (and the
        aligned ``depth_m``, metres): the frame's calibration; the regions are then traced in 3-D."""
        return self._measure(self._regions(frame, camera, depth_m), self._bar_white)

    def update(self, stamp: float, frame: np.ndarray, camera: CameraModel | None = None,
               depth_m: np.ndarray | None = None) -> DissolutionState:
        """Measure ``frame`` taken at ``stamp`` (s) (with its calibration, as :meth:`measure`) and advance
        the dissolved decision.

        A frame that raises (FrameError, BeakerNotFoundError) changes nothing; a stamp earlier than the
        last frame's raises DissolutionError."""
        c = self.config
        if isinstance(stamp, bool) or not isinstance(stamp, numbers.Real) or not math.isfinite(stamp):
            raise DissolutionError(f"stamp must be a finite number of seconds, got {stamp!r}")
        if self._stamp is not None and stamp < self._stamp:
            raise DissolutionError(f"stamp {stamp} s is earlier than the last frame's {self._stamp} s")
        m = self.measure(frame, camera, depth_m)
        stamp = float(stamp)
        gap = self._stamp is not None and stamp - self._stamp > c.max_gap_s
        self._stamp = stamp
        if m.score >= 1.0:
            self._solid_frames += 1
            self._clear_start, self._clear_frames = None, 0
            self._dissolved = False
        elif m.score < c.clear_below:
            if self._clear_start is None or gap:  # a gap restarts the run: nobody watched in between
                self._clear_start, self._clear_frames = stamp, 0
            self._clear_frames += 1
        else:  # faint evidence: not clear, and not enough to call solid
            self._clear_start, self._clear_frames = None, 0
        armed = self._solid_frames >= c.arm_frames
        clear_for = 0.0 if self._clear_start is None else stamp - self._clear_start
        if armed and self._clear_start is not None and clear_for >= c.clear_hold_s \
                and self._clear_frames >= c.min_clear_frames:
            self._dissolved = True
        return DissolutionState(solid_visible=m.score >= 1.0, score=m.score, dissolved=self._dissolved,
                                stamp=stamp, armed=armed, clear_for_s=clear_for, measurement=m)

    # ------------------------------------------------------------------ internals
    def _measure(self, r: _Regions, bar_white: float | None) -> SolidMeasurement:
        if r.posed:
            return self._measure_posed(r, bar_white)
        c = self.config
        sigma = _noise_sigma(r.y, r.liquid)
        liquid = _clipped_mean(r.y[r.liquid], sigma)
        # Per-channel medians: the white bar sits near the sensor's top, where the noise of each channel is
        # clipped at 255, so a mean, or the median of a luminance mixing clipped channels, reads low (by
        # 1.5-2.5 grey levels at noise sd 8: a haze of 0.03-0.05 in clear liquid). A channel's median is
        # not moved while less than half of its values clip.
        bar = float(np.median(r.rgb[r.bar], axis=0) @ _LUMA)
        area, threshold = self._grains(r, sigma)
        white = c.bar_white if bar_white is None else bar_white
        # A liquid about as bright as the white bar leaves nothing to compare: treat as fully hazy (not clear).
        haze = 1.0 if white - liquid < 10.0 else 1.0 - (bar - liquid) / (white - liquid)
        score = max(area / c.min_grain_area_px, haze / c.min_haze, 0.0)
        return SolidMeasurement(score=float(score), grain_area_px=area, haze=float(haze), bar_white=float(white),
                                noise_sigma=sigma, grain_threshold=threshold, liquid_level=liquid, bar_level=bar,
                                tag=r.tag)

    def _measure_posed(self, r: _Regions, clear: float | None) -> SolidMeasurement:
        v = self.view
        # The sensor's noise from the whole crop: the floor's few dozen px straddle the glass's edges.
        sigma = _noise_sigma(r.y, np.ones_like(r.floor))
        # The floor's few dozen px are flat-shaded patches of different levels (the glass slabs in front of the
        # floor): a window round the median picks some of them, moved by the noise; the mean between the 10th
        # and 90th percentiles keeps them all and leaves out the few bright grains.
        values = r.y[r.liquid]
        lo, hi = np.percentile(values, (10.0, 90.0))
        level = float(values[(values >= lo) & (values <= hi)].mean())
        area, threshold = self._grains(r, sigma)
        c = v.clear_level if clear is None else clear
        haze = (level - c) / max(v.cloud_level - c, 10.0)
        score = max(area / v.min_grain_area_px, haze / v.min_haze, 0.0)
        return SolidMeasurement(score=float(score), grain_area_px=area, haze=float(haze), bar_white=float(c),
                                noise_sigma=sigma, grain_threshold=threshold, liquid_level=level, bar_level=level,
                                tag=r.tag, posed=True)

    def _regions(self, frame: np.ndarray, camera: CameraModel | None = None,
                 depth_m: np.ndarray | None = None) -> _Regions:
        if not isinstance(frame, np.ndarray) or frame.ndim != 3 or frame.shape[2] != 3 or frame.dtype != np.uint8:
            shape, dtype = getattr(frame, "shape", None), getattr(frame, "dtype", type(frame).__name__)
            raise FrameError(f"the dissolution watch needs an RGB uint8 image (H x W x 3), got {shape} {dtype}")
        c = self.config
        tag = self._locate(cv2.cvtColor(frame, cv2.COLOR_RGB2GRAY))
        if camera is not None:
            if camera.size_mismatch(frame):
                raise FrameError(f"the camera model does not fit the frame: {camera.size_mismatch(frame)}")
            if depth_m is not None and np.shape(depth_m) != frame.shape[:2]:
                depth_m = None  # not aligned to this frame: PnP alone
            pose = tag_pose(self._finder.corners, camera, depth_m)
            if pose is not None:
                return self._posed(frame, tag, floor_masks(pose, camera, self.view))
        cu, cv_, side = tag
        # ArUco's corners (no sub-pixel refinement) sit on the centres of the tag's outermost pixels: the
        # measured side is one pixel short of the printed one (17 px for the twin's 18 px tags at 320 x 240,
        # 35 for 36 at 640 x 480). Positions are pixel indices; a pixel's centre is at index + 0.5.
        s = (side + 1.0) / TAG_SIDE_DESIGN_PX
        bu, bv = (cu + 0.5) / s + c.tag_to_base[0], (cv_ + 0.5) / s + c.tag_to_base[1]
        x0 = int(math.floor((bu + min(c.floor_u[0], c.liquid_u[0])) * s)) - 1
        x1 = int(math.ceil((bu + max(c.floor_u[1], c.liquid_u[1])) * s)) + 1
        y0 = int(math.floor((bv - max(c.floor_v[0], c.liquid_v[0])) * s)) - 1
        y1 = int(math.ceil((bv - min(c.floor_v[1], c.liquid_v[1], c.bar_core[0] - c.bar_core[2])) * s)) + 1
        h, w = frame.shape[:2]
        if x0 < 0 or y0 < 0 or x1 > w or y1 > h:
            raise BeakerNotFoundError(f"the floor of the beaker under tag {c.marker_id} lies outside the image")
        rgb = frame[y0:y1, x0:x1]
        y = rgb.astype(np.float32) @ _LUMA  # grains are judged by brightness, whatever the liquid's colour
        yy, xx = np.mgrid[y0:y1, x0:x1].astype(np.float64)
        du, dv = (xx + 0.5) / s - bu, bv - (yy + 0.5) / s  # design px from the bottom edge's centre, up
        bar_c, bar_a, bar_b = c.bar_mask
        off_bar = (du / bar_a) ** 2 + ((dv - bar_c) / bar_b) ** 2 > 1.0
        floor = (dv <= c.floor_v[0]) & (dv >= c.floor_v[1]) & (du >= c.floor_u[0]) & (du <= c.floor_u[1]) & off_bar
        liquid = (dv <= c.liquid_v[0]) & (dv >= c.liquid_v[1]) & (du >= c.liquid_u[0]) & (du <= c.liquid_u[1])
        bar = (du / c.bar_core[1]) ** 2 + ((dv - c.bar_core[0]) / c.bar_core[2]) ** 2 <= 1.0
        if floor.sum() < 10 or liquid.sum() < 10 or bar.sum() < 3:
            raise BeakerNotFoundError(f"tag {c.marker_id} is too small ({side:.1f} px) to see the beaker's floor")
        return _Regions(rgb=rgb, y=y, floor=floor, liquid=liquid, bar=bar, scale=s, tag=tag)

    def _posed(self, frame: np.ndarray, tag: tuple[float, float, float], masks) -> _Regions:
        """Regions traced from the tag's pose (beaker_floor): the liquid seen through the mouth, its floor."""
        c = self.config
        if masks is None:
            raise BeakerNotFoundError(f"the floor of the beaker under tag {c.marker_id} is outside the image or "
                                      "cannot be seen from the camera")
        if masks.liquid.sum() < 10:
            raise BeakerNotFoundError(f"too little of the liquid in the beaker under tag {c.marker_id} shows "
                                      f"({int(masks.liquid.sum())} px)")
        x0, y0, x1, y1 = masks.box
        rgb = frame[y0:y1, x0:x1]
        y = rgb.astype(np.float32) @ _LUMA
        return _Regions(rgb=rgb, y=y, floor=masks.floor, liquid=masks.liquid, bar=masks.liquid, scale=masks.scale,
                        tag=tag, posed=True)

    def _locate(self, grey: np.ndarray) -> tuple[float, float, float]:
        c = self.config
        found = self._finder.find(grey, self._last_tag)
        if found is None:
            raise BeakerNotFoundError(f"beaker tag {c.marker_id} ({MARKER_TABLE[c.marker_id].labware_id}) "
                                      "not found in the front image")
        self._last_tag = found
        return found

    def _grains(self, r: _Regions, sigma: float) -> tuple[float, float]:
        c = self.view if r.posed else self.config
        k = 2 * max(1, int(math.ceil(r.scale))) + 1  # one design px longer than a grain, in image px
        background = None
        for kernel in _line_kernels(k):
            opened = cv2.morphologyEx(r.y, cv2.MORPH_OPEN, kernel)
            background = opened if background is None else np.maximum(background, opened)
        threshold = max(c.min_grain_contrast, c.noise_sigmas * sigma)
        grains = ((r.y - background) > threshold) & r.floor
        return float(grains.sum()) / (r.scale * r.scale), threshold


def _noise_sigma(y: np.ndarray, mask: np.ndarray) -> float:
    """Luminance noise sd from horizontal neighbour differences inside ``mask``, by the median absolute
    deviation (an edge or the vortex line in the band does not inflate it)."""
    pair = mask[:, 1:] & mask[:, :-1]
    d = (y[:, 1:] - y[:, :-1])[pair]
    if d.size < 10:
        return 0.0
    mad = float(np.median(np.abs(d - np.median(d))))
    return 1.4826 * mad / math.sqrt(2.0)


def _clipped_mean(values: np.ndarray, sigma: float) -> float:
    """Mean of the values within max(4 sigma, 6) grey levels of their median: the liquid's level without
    what else crosses the band (a low liquid's surface line and vortex, a probe, a drop), and with the lower
    noise of a mean (the median's distribution shifts with the noise when such outliers sit on one side)."""
    med = float(np.median(values))
    kept = values[np.abs(values - med) <= max(4.0 * sigma, 6.0)]
    return float(kept.mean()) if kept.size else med


def _line_kernels(k: int) -> tuple[np.ndarray, ...]:
    """Structuring elements: straight lines of ``k`` pixels, horizontal, vertical and both diagonals."""
    h = np.zeros((k, k), np.uint8)
    h[k // 2, :] = 1
    d = np.eye(k, dtype=np.uint8)
    return h, np.ascontiguousarray(h.T), d, np.ascontiguousarray(np.fliplr(d))
