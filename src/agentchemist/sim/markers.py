"""The twin's drawing of the bench's ArUco tags.

The tag table (tag id -> labware id and kind), the dictionary and the free ids are the bench
description's (:mod:`agentchemist.workcell.tags`); finding tags in an image is perception's
(:func:`agentchemist.perception.tags.detect_markers`). This module only renders a tag for the twin's
cameras. ``MARKER_TABLE``, ``detect_markers`` and the other names below are re-exported from there for
code that still imports them from here; import them from their home instead.
"""

from __future__ import annotations

from functools import lru_cache

import cv2
import numpy as np

from agentchemist.workcell.tags import ARUCO_DICTIONARY, FREE_IDS, MARKER_TABLE, TAG_CELLS, MarkerInfo, default_marker_id
from agentchemist.perception.tags import aruco_dictionary, detect_markers

__all__ = [
    "ARUCO_DICTIONARY",
    "FREE_IDS",
    "MARKER_TABLE",
    "MarkerInfo",
    "default_marker_id",
    "detect_markers",
    "marker_image",
]


@lru_cache(maxsize=256)
def marker_image(marker_id: int, cell_px: int) -> np.ndarray:
    """The tag as a grey uint8 square of 6 * ``cell_px`` pixels (4x4 bits + 1-cell black border).

    A white quiet zone is not included; callers draw the tag on a white label.
    """
    if not 0 <= marker_id < 50:
        raise ValueError(f"marker id {marker_id} outside DICT_4X4_50 (0..49)")
    if cell_px < 1:
        raise ValueError(f"cell_px must be >= 1, got {cell_px}")
    img = cv2.aruco.generateImageMarker(aruco_dictionary(), marker_id, TAG_CELLS)  # one pixel per cell
    big = cv2.resize(img, (TAG_CELLS * cell_px, TAG_CELLS * cell_px), interpolation=cv2.INTER_NEAREST)
    big.setflags(write=False)
    return big
