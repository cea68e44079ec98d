"""Where the hand goes on the labware it touches, measured from the item's tag: the bench geometry the
scripted backend's inverse kinematics needs to turn a seen tag into a tool-centre target.

The vision supervisor reports each item by its ArUco tag's pose (the tag's centre, OpenCV's marker frame:
x to the right of the printed tag as read, y up it, z out of its face toward the reader). An offset here is
a point in that frame, so it follows the item however it stands or leans (the pipette rests leaning on
the beaker's rim). Sizes are the bench's labware as the twin's scene has them (the front drawing's scale,
50 mm per 46 design px, :mod:`agentchemist.sim.drawing`; laid out in 3-D by ``sim/workcell_view.py`` and
``sim/scene_model.py``, which tests/unit/test_policy_seen_targets.py checks these numbers against):

- the tag: a printed side of 30 mm with a 25 % quiet zone (a 45 mm label) on the face toward the robot,
  its printed face 2 mm proud of the item's widest part (the pose is the printed tag's centre); at mid
  height of a beaker or bottle body, as a flag at the top of a pipette's tube (its label's top edge level
  with the top of the tube stood upright).
- a rubber-bulb pipette: a 63 mm glass tube (58 px), a 12 x 20 mm bulb (11 x 18 px) on top; its flag
  reads upright when the pipette rests in a beaker leaning 12 deg (the drawing's resting pipette), so the
  tube leans 12 deg toward the flag's +x.
- a low-form beaker of 100 mL: 50 mm across, 61 mm tall (46 x 56 px; the working beaker of the shipped
  titrations; other sizes scale by the cube root of the capacity, ``beaker_size``).
- a solid-reagent bottle: 37 mm across, 65 mm tall (34 x 60 px), a 15 x 9 mm cap.

Measure the real items (and where their tags are stuck) and change these numbers for a real bench.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from agentchemist.workcell.platforms import LABEL_STANDOFF_M
from agentchemist.workcell.tags import LABEL_SIDE_M

__all__ = ["GRASP_POINTS", "GraspPoint", "MM_PER_DESIGN_PX", "PIPETTE", "STIR_BAR_M", "TAG_LABEL_M",
           "TAG_STANDOFF_M", "beaker_size_m", "grasp_point"]

MM_PER_DESIGN_PX = 50.0 / 46.0   #: the drawing's scale: a 100 mL low-form beaker, 50 mm, is 46 design px
TAG_LABEL_M = LABEL_SIDE_M         #: the printed tag with its quiet zone (workcell/tags.py)
TAG_STANDOFF_M = LABEL_STANDOFF_M  #: the label's printed face in front of the item's widest part (workcell/platforms.py)


def _px(n: float) -> float:
    return n * MM_PER_DESIGN_PX / 1000.0


@dataclass(frozen=True)
class PipetteGeometry:
    tube_length_m: float = _px(58.0)
    bulb_diameter_m: float = _px(11.0)
    bulb_height_m: float = _px(18.0)
    rest_lean_rad: float = math.radians(12.0)

    def bulb_from_tag(self) -> np.ndarray:
        """The bulb's centre in the flag's frame. The flag hangs upright (it reads upright at the resting
        lean) with its centre half a label below the level of the upright tube's top, i.e. (tube/2 - label/2)
        above the tube's middle; the bulb's centre is (tube/2 + bulb/2) up the leaning tube from that middle,
        so toward the flag's +x by the lean; it is behind the flag's face by the bulb's radius and the
        label's standoff."""
        up = self.tube_length_m / 2.0 + self.bulb_height_m / 2.0
        flag = self.tube_length_m / 2.0 - TAG_LABEL_M / 2.0
        return np.array([up * math.sin(self.rest_lean_rad), up * math.cos(self.rest_lean_rad) - flag,
                         -(self.bulb_diameter_m / 2.0 + TAG_STANDOFF_M)])

    def tip_below_bulb(self) -> float:
        """Tube tip below the bulb's centre (m) when the pipette hangs straight from a hand at its bulb."""
        return self.tube_length_m + self.bulb_height_m / 2.0


PIPETTE = PipetteGeometry()


def beaker_size_m(capacity_ml: float = 100.0) -> tuple[float, float]:
    """(diameter, height) of a low-form beaker (the drawing's: 46 x 56 px at 100 mL, scaling as the cube root)."""
    k = (float(capacity_ml) / 100.0) ** (1.0 / 3.0)
    return _px(46.0) * k, _px(56.0) * k


#: The stir bar in the beaker a solid dissolves in (length, thickness), m: a 20 x 6 mm PTFE bar for a 100 mL
#: beaker, lying on its floor across the camera's view. The 3-D scene draws it (sim/scene_model.py) and the
#: dissolution watch keeps its regions off it (perception/beaker_floor.py).
STIR_BAR_M = (0.020, 0.006)


@dataclass(frozen=True)
class GraspPoint:
    """A point on an item in its tag's frame (m) and what the hand does there."""

    kind: str
    offset: tuple[float, float, float]
    why: str


def _beaker_mouth(capacity_ml: float = 100.0) -> np.ndarray:
    d, h = beaker_size_m(capacity_ml)
    return np.array([0.0, h / 2.0, -(d / 2.0 + TAG_STANDOFF_M)])  # the tag is at mid height on the front


#: Bottle body (34 x 60 px) and where its neck is held: the body's top, where the jaws close below the cap.
BOTTLE_DIAMETER_M, BOTTLE_HEIGHT_M = _px(34.0), _px(60.0)
BOTTLE_NECK_BELOW_TOP_M = 0.010

def _point(kind: str, offset, why: str) -> GraspPoint:
    return GraspPoint(kind, tuple(float(v) for v in offset), why)


GRASP_POINTS: dict[str, GraspPoint] = {
    "pipette": _point("pipette", PIPETTE.bulb_from_tag(), "the bulb's centre: the jaws close on it"),
    "beaker": _point("beaker", _beaker_mouth(), "the centre of a 100 mL beaker's mouth"),
    "solid_bottle": _point("solid_bottle", (0.0, BOTTLE_HEIGHT_M / 2.0 - BOTTLE_NECK_BELOW_TOP_M,
                                            -(BOTTLE_DIAMETER_M / 2.0 + TAG_STANDOFF_M)),
                           "the bottle's neck, 10 mm below the body's top, on its axis"),
}


def grasp_point(kind: str) -> GraspPoint:
    try:
        return GRASP_POINTS[kind]
    except KeyError:
        raise KeyError(f"no grasp point for labware kind {kind!r} (known: {', '.join(sorted(GRASP_POINTS))})") \
            from None
