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
give its own ``marker_id`` there. Kinds are the bench names of :mod:`agentchemist.workcell.labware`.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ARUCO_DICTIONARY", "FREE_IDS", "LABEL_SIDE_M", "MARKER_TABLE", "TAG_CELLS",
           "TAG_QUIET", "TAG_SIDE_DESIGN_PX", "TAG_SIDE_M", "MarkerInfo", "default_marker_id"]

#: OpenCV's name of the tag dictionary (``cv2.aruco.DICT_4X4_50``): ids 0..49.
ARUCO_DICTIONARY = "DICT_4X4_50"
FREE_IDS = range(20, 50)
#: Cells across a printed tag: 4 x 4 bits and a one-cell black border (plus a white quiet zone around).
TAG_CELLS = 6
#: A tag's printed side in design px of the 320 x 240 front view, the length unit in which the twin lays
#: out its drawing and perception places its regions from a tag (3 design px per cell).
TAG_SIDE_DESIGN_PX = 18.0
#: Printed tag side (m) on the real items (and the 3-D scene): the black square, border to border. Sized
#: for the camera that reads it, not taken from the 2-D drawing's scale (18 design px, about 20 mm): the
#: front camera (640 x 480, 58 deg vertical field, 1.2 m up) sees the labels 0.6-0.7 m away and 50-60 deg
#: off their normal, where a 20 mm tag is about 13 x 7 px, under 1.5 px per cell vertically, and OpenCV's
#: ArUco detector decodes only the nearest three of seven (measured on the MuJoCo render). 30 mm tags are
#: about 20 x 11 px there. The scene check's 3-D positions (perception/tag_pose.py) take the tag's size
#: from here: print them at this size.
TAG_SIDE_M = 0.030
#: White margin around the tag on its label, as a fraction of its side (the label is 45 mm square).
TAG_QUIET = 0.25
LABEL_SIDE_M = TAG_SIDE_M * (1.0 + 2.0 * TAG_QUIET)
#: An item whose front face is lower than its label (the stirrer plate, 26 mm, and the balance, 22 mm,
#: under a 45 mm label) carries the label as a card standing on the bench against that face, rising above
#: the item's top: flat on the face at mid height, half of the tag was below the bench top and the rest at
#: the image's bottom edge, where the balance's tag did not decode. The card stands on the bench, so its
#: tag's centre is half a label above the bench (:func:`agentchemist.workcell.platforms.card_tag_centre`).


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
