"""Whether an item stands on a platform (a beaker on the stirrer), from the 3-D poses of their tags.

The front image's rule (perception/scene.py ``aligned``: the tags within 12 % of the image width, one
above the other) was written for the kinematic twin's 2-D front view. Seen in perspective from 1.2 m up,
a beaker beside the stirrer or one row behind it lines up with it too. Where both tags have a pose
(perception/tag_pose.py) this rule decides instead, in the platform's own frame
(:mod:`agentchemist.workcell.platforms`: origin at its front edge on the bench, x back, y left, z up), taken
from the platform tag's pose and where that tag sits on the platform. The item stands on it when its tag:

- lies over the footprint: across, within half the platform's width of its middle (an item's tag is on
  its front at its centre's width, and an item stands only with its centre over the plate); front to
  back, behind the platform's front edge and in front of its back edge;
- is above the top, by at least half a tag side (a tag on the item's face starts at or above its base).

Each bound has :data:`TOLERANCE_M` of slack: the depth at a tag is 1-2 mm off on the MuJoCo render and a
few mm on a real camera; a tag's orientation from PnP 3-5 deg, about 5 mm over the 60 mm between the tags.
"""
from __future__ import annotations

import numpy as np

from agentchemist.workcell.platforms import PLATFORM_SIZES, PlatformSize, card_tag_centre
from agentchemist.workcell.tags import TAG_SIDE_M
from agentchemist.perception.tag_pose import TagPose

__all__ = ["MAX_TAG_ABOVE_TOP_M", "TOLERANCE_M", "in_platform_frame", "stands_on"]

TOLERANCE_M = 0.008
#: An item's tag higher above the platform's top than this hangs over it (a probe's flag), not on it.
MAX_TAG_ABOVE_TOP_M = 0.25

# A platform's tag axes (OpenCV's: x right along its top edge, y up, z out of its face toward the robot)
# in the platform frame, for the card upright on its front face: right is the robot's right (-y).
_TAG_AXES_IN_PLATFORM = np.array([[0.0, 0.0, -1.0],
                                  [-1.0, 0.0, 0.0],
                                  [0.0, 1.0, 0.0]])


def in_platform_frame(point_cam: np.ndarray, platform_tag: TagPose) -> np.ndarray:
    """A camera-frame point (m) in the platform frame (see the module docstring), from the platform tag's
    pose and where the bench description puts that tag (:func:`agentchemist.workcell.platforms.card_tag_centre`)."""
    r_cam_platform = platform_tag.rotation @ _TAG_AXES_IN_PLATFORM.T
    x, z = card_tag_centre()
    offset = np.asarray(point_cam, dtype=np.float64) - np.asarray(platform_tag.position)
    return np.array([x, 0.0, z]) + r_cam_platform.T @ offset


def stands_on(item_tag: TagPose, platform_tag: TagPose, platform_kind: str,
              size: PlatformSize | None = None) -> tuple[bool, str]:
    """(whether the item whose tag is ``item_tag`` stands on the platform, why not / where it is).
    ``size``: the platform's, else the bench description's for ``platform_kind``."""
    size = size or PLATFORM_SIZES.get(platform_kind)
    if size is None:
        return False, f"the bench description has no size for a {platform_kind}"
    x, y, z = in_platform_frame(np.asarray(item_tag.position), platform_tag)
    tol = TOLERANCE_M
    where = f"{x * 1000:.0f} mm back, {y * 1000:+.0f} mm left, {z * 1000:.0f} mm up from its front edge"
    if abs(y) > size.width_m / 2.0 + tol:
        return False, f"beside the {platform_kind}: {where}"
    if not -tol <= x <= size.depth_m + tol:
        return False, f"{'behind' if x > 0 else 'in front of'} the {platform_kind}: {where}"
    if z < size.top_m + TAG_SIDE_M / 2.0 - tol:
        return False, f"below the {platform_kind}'s top: {where}"
    if z > size.top_m + MAX_TAG_ABOVE_TOP_M:
        return False, f"high above the {platform_kind}: {where}"
    return True, where
