"""Where a beaker's liquid and floor are in the image, from its tag's 3-D pose (a calibrated camera).

The 2-D rule of :mod:`agentchemist.perception.dissolution` places its regions in design px from the tag's
centre, for the kinematic twin's side view. A camera on the robot (and the MuJoCo twin's front camera,
1.2 m up) looks *down* into the beaker at 50-60 deg: it sees the floor through the liquid's surface, over
the front wall, and the tag's label hides the lower front of the beaker. Where the camera's intrinsics are
known (CameraInfo), this module finds the liquid and the floor in 3-D instead:

* the tag's pose in the optical frame (:func:`agentchemist.perception.tag_pose.tag_pose`: PnP on its corners,
  the position from the aligned depth where there is one);
* the beaker from the bench description: a low-form beaker of ``capacity_ml``
  (:func:`agentchemist.workcell.grasp_points.beaker_size_m`) with its tag at mid height on the face toward the
  robot, the label's face :data:`~agentchemist.workcell.platforms.LABEL_STANDOFF_M` proud of the glass
  (as :data:`agentchemist.workcell.grasp_points.GRASP_POINTS` places the beaker's mouth); the tag's y axis is
  the beaker's up;
* every pixel of a crop round the beaker is traced as a ray: it is *liquid* when it passes the rim's plane
  inside the mouth (seen from above, not through the label or the front wall) and is still inside the
  beaker :attr:`FloorView.liquid_probe_m` above the floor (it crosses the liquid down to at least there,
  at any fill the watch is used at); *floor* when, further, it meets the floor's plane inside the wall and
  off the stir bar.

What that leaves. The MuJoCo front camera is 57 deg above the bench and sees a 100 mL beaker's floor only
in a crescent 15-23 mm behind the axis: 12 px at 640 x 480 with the true pose, and the crescent moves with
a few degrees of the tag's orientation (PnP's, 2.4 deg off on the render: 39 px), so the floor is too
little to judge turbidity by. The centre and the stir bar on it (:data:`BAR_M`, lying across the view) are
behind the tag's label. So the posed path does not look for the bar: the evidence is the brightness of the
liquid seen through the mouth (77 px with the true pose, 117 with PnP's), which a cloudy suspension raises toward white over the
stirrer's dark top, and the grains in the floor's crescent. Lengths are metres; the masks are over the crop.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np

from agentchemist.workcell.grasp_points import MM_PER_DESIGN_PX, STIR_BAR_M, beaker_size_m
from agentchemist.workcell.platforms import LABEL_STANDOFF_M
from agentchemist.perception.tag_pose import CameraModel, TagPose

__all__ = ["BAR_M", "FloorMasks", "FloorView", "floor_masks"]

BAR_M = STIR_BAR_M  #: the stir bar (length, thickness), m, from the bench description


@dataclass(frozen=True)
class FloorView:
    """The beaker and what counts as its liquid, floor and bar (m), and the thresholds of the posed path (same
    meanings as :class:`agentchemist.perception.dissolution.DissolutionConfig`'s, calibrated on MuJoCo
    renders of the front camera at 640 x 480; see the dissolution module's docstring)."""

    capacity_ml: float = 100.0
    wall_m: float = 0.002            #: glass thickness (the floor's top is this above the bottom edge)
    wall_clear_m: float = 0.002      #: the liquid and floor regions keep this far inside the wall
    mouth_clear_m: float = 0.002     #: ... and its line of sight this far inside the rim
    bar_clear_m: float = 0.002       #: ... and this far off the stir bar
    liquid_probe_m: float = 0.010    #: liquid pixels' rays are inside the beaker this high (20 mL in 100 mL: 12 mm)
    clear_level: float = 192.0       #: the liquid seen through the mouth, its luminance in clear water (render, calibrated)
    cloud_level: float = 235.0       #: ... in a suspension of 2.5 g NaCl in 50 mL, stirred (render, calibrated)
    min_grain_contrast: float = 20.0
    noise_sigmas: float = 6.0
    min_grain_area_px: float = 3.0   #: design px^2 (a 2.5 mm grain is 2-4 of them)
    min_haze: float = 0.10

    def __post_init__(self):
        if not (math.isfinite(self.clear_level) and math.isfinite(self.cloud_level)
                and self.cloud_level - self.clear_level >= 10.0):
            raise ValueError("FloorView.cloud_level must be finite and at least 10 grey levels above clear_level")
        for name in ("capacity_ml", "wall_m", "min_grain_contrast", "noise_sigmas",
                     "min_grain_area_px", "min_haze"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v > 0):
                raise ValueError(f"FloorView.{name} must be a finite number > 0, got {v!r}")
        for name in ("wall_clear_m", "mouth_clear_m", "bar_clear_m", "liquid_probe_m"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v >= 0):
                raise ValueError(f"FloorView.{name} must be a finite number >= 0, got {v!r}")


@dataclass(frozen=True)
class FloorMasks:
    """The crop (x0, y0, x1, y1) px and the masks over it: ``liquid`` (seen through the mouth, down into
    the liquid) and ``floor`` (of those, the ones that reach the floor; may be empty); ``scale``: image px
    per design px at the floor."""

    box: tuple[int, int, int, int]
    liquid: np.ndarray
    floor: np.ndarray
    scale: float


def floor_masks(pose: TagPose, camera: CameraModel, view: FloorView = FloorView()) -> FloorMasks | None:
    """The liquid's and the floor's masks of the beaker whose tag is at ``pose``; None when the floor is not in the
    image or none of it can be seen from the camera (the beaker tipped, or the camera level with it)."""
    d, h = beaker_size_m(view.capacity_ml)
    r_in = d / 2.0 - view.wall_m
    rot = pose.rotation
    across, up, out = rot[:, 0], rot[:, 1], rot[:, 2]  # the tag's x, y (the beaker's up), z (toward the camera)
    back = -out
    floor_c = np.asarray(pose.position) - out * (d / 2.0 + LABEL_STANDOFF_M) - up * (h / 2.0 - view.wall_m)
    if floor_c[2] <= 0.0 or floor_c @ up >= 0.0:  # behind the camera, or the camera below the floor
        return None
    rim = h - view.wall_m  # the rim's plane above the floor's top
    ring = np.array([floor_c + r_in * (math.cos(a) * across + math.sin(a) * back) + z * up
                     for a in np.linspace(0.0, 2.0 * math.pi, 24, endpoint=False) for z in (0.0, rim)])
    px, _ = cv2.projectPoints(ring, np.zeros(3), np.zeros(3), camera.k, camera.d if camera.d.size else None)
    px = px.reshape(-1, 2)
    x0, y0 = (int(math.floor(v)) - 1 for v in px.min(axis=0))
    x1, y1 = (int(math.ceil(v)) + 2 for v in px.max(axis=0))
    if x0 < 0 or y0 < 0 or x1 > camera.width or y1 > camera.height:
        return None
    yy, xx = np.mgrid[y0:y1, x0:x1]
    pts = np.stack([xx.ravel(), yy.ravel()], axis=1).astype(np.float64).reshape(-1, 1, 2)
    rays = cv2.undistortPoints(pts, camera.k, camera.d if camera.d.size else None).reshape(-1, 2)
    rays = np.concatenate([rays, np.ones((len(rays), 1))], axis=1)

    def on_plane(height: float) -> tuple[np.ndarray, np.ndarray]:
        """(across, back) coordinates (m from the axis) where each pixel's ray meets the plane ``height``
        above the floor's top."""
        down = rays @ up
        s = np.where(down < 0.0, (floor_c @ up + height) / np.where(down < 0.0, down, -1.0), 1e6)
        rel = rays * s[:, None] - floor_c  # a ray that does not go down meets no plane below the camera: far away
        return rel @ across, rel @ back

    def on_bar(a: np.ndarray, b: np.ndarray, pad: float) -> np.ndarray:
        return (np.abs(a) <= BAR_M[0] / 2.0 + pad) & (np.abs(b) <= BAR_M[1] / 2.0 + pad)

    fa, fb = on_plane(0.0)
    ta, tb = on_plane(BAR_M[1])
    ra, rb = on_plane(rim)
    la, lb = on_plane(view.liquid_probe_m)
    seen = ra**2 + rb**2 <= (r_in - view.mouth_clear_m) ** 2
    liquid = seen & (la**2 + lb**2 <= (r_in - view.wall_clear_m) ** 2)
    inside = fa**2 + fb**2 <= (r_in - view.wall_clear_m) ** 2
    floor = liquid & inside & ~on_bar(fa, fb, view.bar_clear_m) & ~on_bar(ta, tb, view.bar_clear_m)
    shape = yy.shape
    f_px = float(camera.k[0, 0])
    scale = f_px * MM_PER_DESIGN_PX / 1000.0 / float(floor_c[2])
    return FloorMasks((x0, y0, x1, y1), liquid.reshape(shape), floor.reshape(shape), scale)
