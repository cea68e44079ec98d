"""Finding the labware's ArUco tags in camera frames (the tag table itself is the bench description's,
:mod:`agentchemist.workcell.tags`).

:func:`detect_markers` finds every tag of the bench's dictionary in an image (the scene check, the
bench watch). :class:`TagFinder` follows one labware's tag frame after frame: the colour tracker and the
dissolution watch both need where the beaker's tag is (its centre and side in pixels) in every frame.
The tag moves little between frames, so the search starts in a crop round where it was last (a few tag
sides wide, much cheaper than the whole image) and falls back to the whole image when the crop does not
show it.
"""
from __future__ import annotations

from functools import lru_cache

import cv2
import numpy as np

from agentchemist.workcell.tags import ARUCO_DICTIONARY

__all__ = ["Tag", "TagFinder", "aruco_dictionary", "detect_marker_corners", "detect_markers", "tag_aspect"]

#: (u, v, side): the tag's centre and mean side length, in image pixels
Tag = tuple[float, float, float]


@lru_cache(maxsize=1)
def aruco_dictionary() -> "cv2.aruco.Dictionary":
    """OpenCV's dictionary of the bench's tags (:data:`agentchemist.workcell.tags.ARUCO_DICTIONARY`)."""
    return cv2.aruco.getPredefinedDictionary(getattr(cv2.aruco, ARUCO_DICTIONARY))


def detect_markers(image_rgb: np.ndarray) -> dict[int, tuple[float, float]]:
    """Tag id -> centre (u, v) in pixels of every tag of the bench's dictionary found in an RGB image."""
    found: dict[int, tuple[float, float]] = {}
    for i, c in detect_marker_corners(image_rgb).items():
        centre = c.mean(axis=0)
        found[i] = (float(centre[0]), float(centre[1]))
    return found


def detect_marker_corners(image_rgb: np.ndarray) -> dict[int, np.ndarray]:
    """Tag id -> its four corners (4 x 2 px, OpenCV's order: top-left, top-right, bottom-right,
    bottom-left of the printed tag) of every tag of the bench's dictionary found in an RGB image."""
    grey = cv2.cvtColor(image_rgb, cv2.COLOR_RGB2GRAY)
    detector = cv2.aruco.ArucoDetector(aruco_dictionary(), cv2.aruco.DetectorParameters())
    corners, ids, _ = detector.detectMarkers(grey)
    if ids is None:
        return {}
    return {int(i): c.reshape(4, 2) for c, i in zip(corners, ids.ravel())}


class TagFinder:
    def __init__(self, marker_id: int, search_pad_sides: float):
        self.marker_id = int(marker_id)
        self.search_pad_sides = float(search_pad_sides)
        self._detector = cv2.aruco.ArucoDetector(aruco_dictionary(), cv2.aruco.DetectorParameters())
        #: the last found tag's four corners (image px, OpenCV's order: top-left, top-right, bottom-right,
        #: bottom-left of the printed tag), for what its shape says about the view (see :func:`tag_aspect`)
        self.corners: np.ndarray | None = None

    def find(self, grey: np.ndarray, near: Tag | None = None) -> Tag | None:
        """The tag in a grey image, or None; ``near`` is where it was last seen (searched first)."""
        if near is not None:
            u, v, side = near
            pad = self.search_pad_sides * side
            h, w = grey.shape
            x0, y0 = int(max(0, u - pad)), int(max(0, v - pad))
            x1, y1 = int(min(w, u + pad)), int(min(h, v + pad))
            found = self._detect(grey[y0:y1, x0:x1], x0, y0)
            if found is not None:
                return found
        return self._detect(grey, 0, 0)

    def _detect(self, grey: np.ndarray, ox: int, oy: int) -> Tag | None:
        if grey.shape[0] < 8 or grey.shape[1] < 8:  # a crop at the image edge can be a sliver
            return None
        corners, ids, _ = self._detector.detectMarkers(grey)
        if ids is None:
            return None
        for quad, marker_id in zip(corners, ids.ravel()):
            if int(marker_id) == self.marker_id:
                pts = quad.reshape(-1, 2).astype(np.float64)
                side = float(np.mean(np.linalg.norm(pts - np.roll(pts, 1, axis=0), axis=1)))
                centre = pts.mean(axis=0)
                self.corners = pts + (ox, oy)
                return float(centre[0]) + ox, float(centre[1]) + oy, side
        return None


def tag_aspect(corners: np.ndarray) -> float:
    """Height over width of a tag's image: the mean length of its two edges that run nearer the image's
    vertical over that of the other two (whatever the tag's own rotation: its corners come in the printed
    tag's order). A square tag on an upright face seen straight on is 1; seen from above at an angle a off
    its normal its height shrinks to about cos(a) of its width (55 deg above the label: about 0.57)."""
    pts = np.asarray(corners, dtype=np.float64).reshape(4, 2)
    edges = np.roll(pts, -1, axis=0) - pts          # 0->1, 1->2, 2->3, 3->0
    lengths = np.linalg.norm(edges, axis=1)
    pair_a, pair_b = (lengths[0] + lengths[2]) / 2.0, (lengths[1] + lengths[3]) / 2.0
    a_upright = abs(edges[0, 1]) + abs(edges[2, 1]) > abs(edges[0, 0]) + abs(edges[2, 0])
    height, width = (pair_a, pair_b) if a_upright else (pair_b, pair_a)
    return float(height / width) if width > 0 else 1.0
