"""The platforms other items stand on (the stirrer plate, the balance): their size and where their tag is.

The scene check decides in 3-D whether a beaker stands on the stirrer (perception/standing.py): the
beaker's tag must lie over the platform's footprint and above its top, measured from the platform's own
tag. That needs the platform's size and where its tag sits on it, which are facts of the bench, here.

Sizes are the bench's items as the twin draws them (sim/drawing.py and sim/workcell_view.py: a 92 x 24 design
px stirrer and an 84 x 20 px balance at the drawing's 50/46 mm per px, square footprints), so the 3-D scene
(sim/scene_model.py) and this table agree (tests/unit/test_tag_pose.py checks it). Measure the lab's own
plates and change them here.

Frame of a platform (``platform frame``): origin on the bench at the middle of its front edge (the edge
toward the robot); x back, away from the robot; y to the robot's left; z up. Its tag is on a card standing on
the bench against the front face and rising above the top (a 45 mm label does not fit on a 22-26 mm high
face; see :mod:`agentchemist.workcell.tags`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from agentchemist.workcell.tags import LABEL_SIDE_M

__all__ = ["LABEL_STANDOFF_M", "PLATFORM_SIZES", "PlatformSize", "card_tag_centre"]

#: The label's printed face stands this far proud of what it is stuck on (a 2 mm card).
LABEL_STANDOFF_M = 0.002


@dataclass(frozen=True)
class PlatformSize:
    """``width_m`` across (as the robot faces it), ``depth_m`` front to back, ``top_m`` the height of the
    surface items stand on, above the bench."""

    width_m: float
    depth_m: float
    top_m: float

    def __post_init__(self) -> None:
        if not all(math.isfinite(v) and v > 0 for v in (self.width_m, self.depth_m, self.top_m)):
            raise ValueError(f"platform size must be positive metres, got {self}")


_MM_PER_DESIGN_PX = 50.0 / 46.0  # the drawing's scale (sim/drawing.py MM_PER_PX): a 100 mL beaker, 50 mm

PLATFORM_SIZES: dict[str, PlatformSize] = {
    "stirrer": PlatformSize(92 * _MM_PER_DESIGN_PX / 1000, 92 * _MM_PER_DESIGN_PX / 1000, 24 * _MM_PER_DESIGN_PX / 1000),
    "balance": PlatformSize(84 * _MM_PER_DESIGN_PX / 1000, 84 * _MM_PER_DESIGN_PX / 1000, 20 * _MM_PER_DESIGN_PX / 1000),
}


def card_tag_centre() -> tuple[float, float]:
    """(x, z) of the printed tag's centre on a platform's card in the platform frame (m): on the front
    face (x = 0), the card's lower edge on the bench, the tag in the middle of its label."""
    return -LABEL_STANDOFF_M, LABEL_SIDE_M / 2.0
