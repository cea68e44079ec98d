"""Where each labware tag is in 3-D: its pose in the front camera's optical frame, from the calibrated camera.

Where the camera's intrinsics are known (sensor_msgs/CameraInfo: the MuJoCo twin, a real RGB-D camera on
the robot) every decoded tag gets a pose: ``cv2.solvePnP`` (IPPE_SQUARE, the planar-square solver) on its
four corners with the printed side from the bench description
(:data:`agentchemist.workcell.tags.TAG_SIDE_M`), cross-checked against the depth image aligned to colour.

Which one wins, and why: **depth wins for the position**, PnP gives the orientation. A 30 mm tag is 16-20
px in the front image, so PnP's range comes from a side measured to about half a pixel: 3 % of 0.6 m,
measured 1-47 mm off on the MuJoCo render; the depth at the tag (median over its inner half) is 1-2 mm off
there, and a real RGB-D camera's is a few mm at 0.6 m. The position is the ray through the tag's centre
(the diagonals' crossing, the true centre under perspective) scaled to that depth. PnP's two mirror
solutions of a small, obliquely seen square are told apart by the plane the depth pixels inside it lie
on (the solution whose normal is nearer that plane's wins; without depth, the lower reprojection error).
When depth has no return inside the tag, or disagrees with PnP by more than PnP's own uncertainty
(:data:`DEPTH_AGREEMENT`: the depth pixels then see something else, an edge or an occluder), PnP's
position stands and ``source`` says so.

Frames: the pose is the tag's, not the item's centre: position (m) of the printed tag's centre in the
camera's optical frame (x right, y down, z forward, REP 103's ``*_optical`` convention) and the tag's
orientation there as a unit quaternion (x, y, z, w): the tag's x axis along its top edge to the right, y
up along the tag, z out of its printed face toward the camera (OpenCV's ArUco convention). Where each
tag sits on its item is the bench description's (workcell/tags.py, workcell/platforms.py). No intrinsics (the
kinematic twin's 2-D drawing): no pose (``None``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import cv2
import numpy as np
from scipy.spatial.transform import Rotation

from agentchemist.workcell.tags import TAG_SIDE_M

__all__ = ["CameraModel", "CameraModelError", "DEPTH_AGREEMENT", "TagPose", "depth_metres", "quaternion_xyzw",
           "tag_pose"]

#: Depth and PnP agree when their ranges differ by less than this fraction of the range (PnP's own
#: uncertainty on a 16-20 px tag, with margin) plus 2 cm.
DEPTH_AGREEMENT = 0.15
_DEPTH_SLACK_M = 0.02
#: Depths outside this (m) are no return (0 in 16UC1) or not the bench.
_DEPTH_RANGE_M = (0.05, 10.0)


class CameraModelError(ValueError):
    """Camera intrinsics that cannot be used (non-finite, non-positive focal length, wrong sizes)."""


@dataclass(frozen=True)
class CameraModel:
    """A calibrated camera: 3x3 intrinsics ``k`` (px), distortion ``d`` (OpenCV's order, plumb_bob's 5 or
    rational_polynomial's 8; empty = none) and the image size it was calibrated at."""

    k: np.ndarray = field(compare=False)
    d: np.ndarray = field(compare=False)
    width: int
    height: int

    @classmethod
    def from_camera_info(cls, k: Sequence[float], d: Sequence[float], width: int, height: int,
                         distortion_model: str = "plumb_bob") -> "CameraModel":
        """From CameraInfo's fields; raises CameraModelError on values no camera has."""
        try:
            kk = np.asarray(k, dtype=np.float64).reshape(3, 3)
            dd = np.asarray(d, dtype=np.float64).ravel()
        except (TypeError, ValueError) as exc:
            raise CameraModelError(f"camera intrinsics K must be 9 numbers: {exc}") from None
        if not (np.all(np.isfinite(kk)) and np.all(np.isfinite(dd))):
            raise CameraModelError("camera intrinsics or distortion are not finite")
        if int(width) <= 0 or int(height) <= 0:
            raise CameraModelError(f"camera image size must be positive, got {width} x {height}")
        fx, fy, cx, cy = kk[0, 0], kk[1, 1], kk[0, 2], kk[1, 2]
        if not (fx > 0 and fy > 0 and 0 <= cx <= width and 0 <= cy <= height and kk[2, 2] == 1.0):
            raise CameraModelError(f"camera intrinsics are not a camera's: fx {fx}, fy {fy}, centre ({cx}, {cy}) "
                                   f"in a {width} x {height} image")
        if dd.size and distortion_model not in ("plumb_bob", "rational_polynomial"):
            raise CameraModelError(f"distortion model {distortion_model!r} is not OpenCV's (plumb_bob, "
                                   "rational_polynomial)")
        if dd.size not in (0, 4, 5, 8, 12, 14):
            raise CameraModelError(f"distortion must have 0, 4, 5, 8, 12 or 14 coefficients, got {dd.size}")
        return cls(kk, dd, int(width), int(height))

    def size_mismatch(self, image: np.ndarray) -> str:
        """Why this model does not fit ``image`` (its intrinsics are for another size), or '' when it does."""
        h, w = np.shape(image)[:2]
        if (self.width, self.height) == (w, h):
            return ""
        return f"the camera's intrinsics are for {self.width} x {self.height} px, the image is {w} x {h}"

    def ray(self, u: float, v: float) -> np.ndarray:
        """The undistorted ray (x, y, 1) through pixel (u, v)."""
        pt = cv2.undistortPoints(np.array([[[u, v]]], dtype=np.float64), self.k, self.d if self.d.size else None)
        x, y = pt.reshape(2)
        return np.array([x, y, 1.0])


@dataclass(frozen=True)
class TagPose:
    """A tag's pose in the camera's optical frame (see the module docstring).

    position: (x, y, z) m of the tag's centre. quaternion: (x, y, z, w) of the tag's axes.
    source: ``depth`` (position along the centre's ray from the aligned depth) or ``pnp`` (PnP alone:
    no depth, no return at the tag, or depth that disagreed). pnp_gap_m: PnP's range minus depth's at
    the tag, when both were there."""

    position: tuple[float, float, float]
    quaternion: tuple[float, float, float, float]
    source: str
    pnp_gap_m: float | None = None

    @property
    def rotation(self) -> np.ndarray:
        """The tag's axes as columns, in the camera frame (3x3)."""
        return Rotation.from_quat(self.quaternion).as_matrix()


def depth_metres(depth: np.ndarray) -> np.ndarray:
    """An aligned depth image in metres: 16UC1 millimetres (the RealSense / Orbbec drivers', 0 = no return)
    or float metres (32FC1); no return becomes NaN."""
    arr = np.asarray(depth)
    if arr.ndim != 2:
        raise ValueError(f"a depth image has one channel, got shape {arr.shape}")
    out = arr.astype(np.float64) / 1000.0 if arr.dtype == np.uint16 else arr.astype(np.float64)
    out[~np.isfinite(out) | (out <= 0.0)] = np.nan
    return out


def quaternion_xyzw(rotation: np.ndarray) -> tuple[float, float, float, float]:
    """Unit quaternion (x, y, z, w) of a rotation matrix, w >= 0 (a tag facing the camera is a half turn
    from the camera's axes, where w is near 0: scipy's conversion is stable there)."""
    q = Rotation.from_matrix(np.asarray(rotation, dtype=np.float64)).as_quat()
    q = -q if q[3] < 0 else q
    return tuple(float(v) for v in q)


def tag_pose(corners: np.ndarray, camera: CameraModel, depth_m: np.ndarray | None = None,
             side_m: float = TAG_SIDE_M) -> TagPose | None:
    """The pose of one tag from its four image corners (px, ArUco's order: top-left, top-right,
    bottom-right, bottom-left of the printed tag) and, when given, the aligned depth image in metres
    (:func:`depth_metres`, same size as the colour image). None when PnP finds no pose in front of the
    camera (a degenerate quad)."""
    quad = np.asarray(corners, dtype=np.float64).reshape(4, 2)
    if not np.all(np.isfinite(quad)):
        return None
    h = side_m / 2.0
    square = np.array([[-h, h, 0.0], [h, h, 0.0], [h, -h, 0.0], [-h, -h, 0.0]])
    dist = camera.d if camera.d.size else None
    try:
        n, rvecs, tvecs, errors = cv2.solvePnPGeneric(square, quad, camera.k, dist, flags=cv2.SOLVEPNP_IPPE_SQUARE)
    except cv2.error:
        return None
    solutions = [(float(np.ravel(errors)[i]), cv2.Rodrigues(rvecs[i])[0], np.ravel(tvecs[i]))
                 for i in range(int(n)) if float(np.ravel(tvecs[i])[2]) > 0.0]
    if not solutions:
        return None
    centre = _diagonals_crossing(quad)
    ray = camera.ray(*centre)
    points = _inner_points(quad, camera, depth_m) if depth_m is not None else None
    if points is not None and len(points) >= 6:
        normal = _plane_normal(points)
        normal = -normal if normal @ points.mean(axis=0) > 0 else normal  # toward the camera, as the tag's z
        rotation, t = max(solutions, key=lambda s: float(s[1][:, 2] @ normal))[1:]
    else:
        rotation, t = min(solutions, key=lambda s: s[0])[1:]
    quat = quaternion_xyzw(rotation)
    if points is None or len(points) < 3:
        return TagPose(tuple(float(v) for v in t), quat, "pnp")
    z_depth = float(np.median(points[:, 2]))
    position = ray * z_depth
    gap = float(np.linalg.norm(t) - np.linalg.norm(position))
    if abs(gap) > DEPTH_AGREEMENT * float(np.linalg.norm(t)) + _DEPTH_SLACK_M:
        return TagPose(tuple(float(v) for v in t), quat, "pnp", gap)
    return TagPose(tuple(float(v) for v in position), quat, "depth", gap)


def _diagonals_crossing(quad: np.ndarray) -> tuple[float, float]:
    """Where the quad's diagonals cross: the image of the square's centre under perspective."""
    p0, p1, p2, p3 = quad
    a, b = p2 - p0, p3 - p1
    denom = a[0] * b[1] - a[1] * b[0]
    if abs(denom) < 1e-9:
        c = quad.mean(axis=0)
        return float(c[0]), float(c[1])
    s = ((p1[0] - p0[0]) * b[1] - (p1[1] - p0[1]) * b[0]) / denom
    c = p0 + s * a
    return float(c[0]), float(c[1])


def _inner_points(quad: np.ndarray, camera: CameraModel, depth_m: np.ndarray) -> np.ndarray | None:
    """3-D points (camera frame, m) of the depth pixels inside the tag's inner half (the quad shrunk to
    half about its centre: away from its edges, where a depth pixel can see what is behind)."""
    if depth_m.shape != (camera.height, camera.width):
        return None
    centre = quad.mean(axis=0)
    inner = centre + 0.5 * (quad - centre)
    x0, y0 = np.floor(inner.min(axis=0)).astype(int)
    x1, y1 = np.ceil(inner.max(axis=0)).astype(int)
    x0, y0 = max(x0, 0), max(y0, 0)
    x1, y1 = min(x1, camera.width - 1), min(y1, camera.height - 1)
    if x1 < x0 or y1 < y0:
        return None
    us, vs = np.meshgrid(np.arange(x0, x1 + 1), np.arange(y0, y1 + 1))
    us, vs = us.ravel(), vs.ravel()
    inside = np.array([cv2.pointPolygonTest(inner.astype(np.float32), (float(u), float(v)), False) >= 0
                       for u, v in zip(us, vs)], dtype=bool)
    if not inside.any():  # a tag a few px across: its centre pixel
        c = np.round(centre).astype(int)
        us, vs, inside = np.array([c[0]]), np.array([c[1]]), np.array([True])
    us, vs = us[inside], vs[inside]
    z = depth_m[vs, us]
    ok = np.isfinite(z) & (z > _DEPTH_RANGE_M[0]) & (z < _DEPTH_RANGE_M[1])
    if not ok.any():
        return None
    pix = np.stack([us[ok], vs[ok]], axis=1).astype(np.float64).reshape(-1, 1, 2)
    norm = cv2.undistortPoints(pix, camera.k, camera.d if camera.d.size else None).reshape(-1, 2)
    return np.column_stack([norm * z[ok, None], z[ok]])


def _plane_normal(points: np.ndarray) -> np.ndarray:
    """Unit normal of the plane fitted to ``points`` (least squares)."""
    centred = points - points.mean(axis=0)
    return np.linalg.svd(centred, full_matrices=False)[2][-1]
