"""ArUco tags on the labware, so that the scene check can find each item by its id.

Dictionary: OpenCV ``DICT_4X4_50`` (named here, resolved by perception/tags.py; this module does not
import OpenCV). Each labware id carries one tag, printed on a label on the item (beaker body, bottle
label, instrument front, a tape flag on the pipette). The twin draws these tags; on the real bench,
print them and stick them on the matching items.

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

Ids 20-49 (:data:`FREE_IDS`) are free for scenario-specific items; a layout item not in this table must
give its own ``marker_id`` there. Kinds are the bench names of :mod:`agentchemist.bench.labware`.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ARUCO_DICTIONARY", "FREE_IDS", "MARKER_TABLE", "TAG_CELLS", "TAG_SIDE_DESIGN_PX", "MarkerInfo",
           "default_marker_id"]

#: OpenCV's name of the tag dictionary (``cv2.aruco.DICT_4X4_50``): ids 0..49.
ARUCO_DICTIONARY = "DICT_4X4_50"
FREE_IDS = range(20, 50)
#: Cells across a printed tag: 4 x 4 bits and a one-cell black border (plus a white quiet zone around).
TAG_CELLS = 6
#: A tag's printed side in design px of the 320 x 240 front view, the length unit in which the twin lays
#: out its drawing and perception places its regions from a tag (3 design px per cell).
TAG_SIDE_DESIGN_PX = 18.0


@dataclass(frozen=True)
class MarkerInfo:
    """One row of the tag table: tag id, the labware id it marks and that item's kind."""

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
