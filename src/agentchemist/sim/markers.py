"""ArUco fiducials on the twin's labware, so that scene checks can find each item by id.

Dictionary: OpenCV ``DICT_4X4_50``. Each labware id carries one tag, printed on a label on the item
(beaker body, bottle label, instrument front, a tape flag on the pipette). The same table is meant
for the real bench: print these tags and stick them on the matching items.

=====  ===============  ================  =====================================================
 id     labware id       kind              item
=====  ===============  ================  =====================================================
  1     beaker_main      beaker            titration / dissolution beaker (on the stirrer)
  2     pipette          pipette           rubber-bulb dropping pipette (in the beaker)
  3     stirrer          stirrer           magnetic stirrer plate
  4     ph_probe         ph_probe          pH electrode with temperature sensor
  5     ph_meter         ph_meter          pH meter display unit
  6     titrant_bottle   reagent_bottle    titrant reservoir (NaOH / EDTA)
  7     balance          balance           analytical balance, 0.01 g
  8     solid_bottle     solid_bottle      solid reagent bottle (NaCl)
  9     wash_bottle      wash_bottle       deionised-water wash bottle
 10     beaker_small     beaker            50 mL beaker (clutter / alternative vessel)
 11     beaker_medium    beaker            100 mL beaker
 12     beaker_large     beaker            250 mL beaker
 13     weighing_boat    weighing_boat     weighing boat
 14     stand            stand             retort stand holding the probe
 15     indicator_bottle reagent_bottle    indicator dropper bottle
=====  ===============  ================  =====================================================

Ids 20-49 are free for scenario-specific items; a layout item not in this table must give its own
``marker_id`` there.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import cv2
import numpy as np

__all__ = [
    "ARUCO_DICTIONARY",
    "MARKER_TABLE",
    "MarkerInfo",
    "default_marker_id",
    "detect_markers",
    "marker_image",
]

ARUCO_DICTIONARY = cv2.aruco.DICT_4X4_50
FREE_IDS = range(20, 50)


@dataclass(frozen=True)
class MarkerInfo:
    """One row of the marker table: tag id, the labware id it marks and that item's kind."""

    marker_id: int
    labware_id: str
    kind: str
    description: str


MARKER_TABLE: dict[int, MarkerInfo] = {
    m.marker_id: m
    for m in (
        MarkerInfo(1, "beaker_main", "beaker", "titration / dissolution beaker"),
        MarkerInfo(2, "pipette", "pipette", "rubber-bulb dropping pipette"),
        MarkerInfo(3, "stirrer", "stirrer", "magnetic stirrer plate"),
        MarkerInfo(4, "ph_probe", "ph_probe", "pH electrode with temperature sensor"),
        MarkerInfo(5, "ph_meter", "ph_meter", "pH meter display unit"),
        MarkerInfo(6, "titrant_bottle", "reagent_bottle", "titrant reservoir"),
        MarkerInfo(7, "balance", "balance", "analytical balance"),
        MarkerInfo(8, "solid_bottle", "solid_bottle", "solid reagent bottle"),
        MarkerInfo(9, "wash_bottle", "wash_bottle", "deionised-water wash bottle"),
        MarkerInfo(10, "beaker_small", "beaker", "50 mL beaker"),
        MarkerInfo(11, "beaker_medium", "beaker", "100 mL beaker"),
        MarkerInfo(12, "beaker_large", "beaker", "250 mL beaker"),
        MarkerInfo(13, "weighing_boat", "weighing_boat", "weighing boat"),
        MarkerInfo(14, "stand", "stand", "retort stand holding the probe"),
        MarkerInfo(15, "indicator_bottle", "reagent_bottle", "indicator dropper bottle"),
    )
}
_BY_LABWARE = {m.labware_id: m.marker_id for m in MARKER_TABLE.values()}


def default_marker_id(labware_id: str) -> int | None:
    """The table's tag id for ``labware_id``, or None when the table has no row for it."""
    return _BY_LABWARE.get(labware_id)


@lru_cache(maxsize=1)
def _dictionary() -> "cv2.aruco.Dictionary":
    return cv2.aruco.getPredefinedDictionary(ARUCO_DICTIONARY)


@lru_cache(maxsize=256)
def marker_image(marker_id: int, cell_px: int) -> np.ndarray:
    """The tag as a grey uint8 square of 6 * ``cell_px`` pixels (4x4 bits + 1-cell black border).

    A white quiet zone is not included; callers draw the tag on a white label.
    """
    if not 0 <= marker_id < 50:
        raise ValueError(f"marker id {marker_id} outside DICT_4X4_50 (0..49)")
    if cell_px < 1:
        raise ValueError(f"cell_px must be >= 1, got {cell_px}")
    img = cv2.aruco.generateImageMarker(_dictionary(), marker_id, 6)  # one pixel per cell
    big = cv2.resize(img, (6 * cell_px, 6 * cell_px), interpolation=cv2.INTER_NEAREST)
    big.setflags(write=False)
    return big


def detect_markers(image_rgb: np.ndarray) -> dict[int, tuple[float, float]]:
    """Tag id -> centre (u, v) in pixels of every DICT_4X4_50 tag found in an RGB image."""
    grey = cv2.cvtColor(image_rgb, cv2.COLOR_RGB2GRAY)
    detector = cv2.aruco.ArucoDetector(_dictionary(), cv2.aruco.DetectorParameters())
    corners, ids, _ = detector.detectMarkers(grey)
    found: dict[int, tuple[float, float]] = {}
    if ids is None:
        return found
    for c, i in zip(corners, ids.ravel()):
        centre = c.reshape(-1, 2).mean(axis=0)
        found[int(i)] = (float(centre[0]), float(centre[1]))
    return found
