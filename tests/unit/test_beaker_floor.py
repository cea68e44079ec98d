"""Where a beaker's liquid and floor are in the image, from its tag's pose (perception/beaker_floor.py), on a
synthetic camera: seen from 57 deg above the bench the liquid shows through the mouth, behind the axis, and
of the floor only a thin back crescent; a camera level with the floor or below it, or a beaker outside the
image, gives none. No GL needed."""
import math

import cv2
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from agentchemist.workcell.grasp_points import beaker_size_m
from agentchemist.workcell.platforms import LABEL_STANDOFF_M
from agentchemist.perception.beaker_floor import FloorView, floor_masks
from agentchemist.perception.tag_pose import CameraModel, TagPose

W, H = 640, 480
F = (H / 2.0) / math.tan(math.radians(29.0))
CAMERA = CameraModel.from_camera_info([F, 0, W / 2, 0, F, H / 2, 0, 0, 1], [], W, H)


def beaker_tag(elevation_deg: float, range_m: float = 0.66, across_m: float = 0.0) -> tuple[TagPose, np.ndarray]:
    """The tag's pose of an upright 100 mL beaker whose floor centre is ``range_m`` along the optical axis
    (shifted ``across_m`` right) from a camera looking down at ``elevation_deg``; and that floor centre."""
    th = math.radians(elevation_deg)
    up = np.array([0.0, -math.cos(th), -math.sin(th)])    # the world's up in the optical frame
    toward = np.array([0.0, math.sin(th), -math.cos(th)])  # horizontal, toward the camera: the tag's z
    x = np.cross(up, toward)                               # the tag's x: right, as the camera sees it
    d, h = beaker_size_m(100.0)
    floor = np.array([across_m, 0.0, range_m])
    tag = floor + toward * (d / 2.0 + LABEL_STANDOFF_M) + up * (h / 2.0 - FloorView().wall_m)
    quat = Rotation.from_matrix(np.stack([x, up, toward], axis=1)).as_quat()
    return TagPose(tuple(tag), tuple(quat), "depth"), floor


def test_from_above_the_liquid_shows_behind_the_axis_and_little_of_the_floor():
    pose, floor = beaker_tag(57.0)
    masks = floor_masks(pose, CAMERA)
    assert masks is not None
    assert 40 <= masks.liquid.sum() <= 400 and masks.floor.sum() <= masks.liquid.sum() // 3
    assert not np.any(masks.floor & ~masks.liquid)
    centre, _ = cv2.projectPoints(floor.reshape(1, 3), np.zeros(3), np.zeros(3), CAMERA.k, None)
    ys, xs = np.nonzero(masks.liquid)
    x0, y0 = masks.box[:2]
    assert np.all(ys + y0 < centre.ravel()[1])  # behind the axis: above the floor's centre in the image
    assert abs(np.mean(xs + x0) - centre.ravel()[0]) < 3.0  # and centred across it
    assert masks.scale == pytest.approx(F * 50.0 / 46.0 / 1000.0 / 0.66, rel=1e-6)


def test_from_higher_up_more_of_the_floor_shows():
    low, high = floor_masks(beaker_tag(50.0)[0], CAMERA), floor_masks(beaker_tag(80.0)[0], CAMERA)
    assert high.floor.sum() > 5 * max(low.floor.sum(), 1) and high.liquid.sum() > low.liquid.sum()


def test_no_floor_from_level_or_below_or_outside_the_image():
    level = floor_masks(beaker_tag(0.0)[0], CAMERA)
    assert level is None or level.liquid.sum() == 0
    assert floor_masks(beaker_tag(-20.0)[0], CAMERA) is None
    assert floor_masks(beaker_tag(57.0, across_m=0.5)[0], CAMERA) is None


def test_floor_view_refuses_values_no_beaker_has():
    with pytest.raises(ValueError, match="capacity_ml"):
        FloorView(capacity_ml=float("nan"))
    with pytest.raises(ValueError, match="cloud_level"):
        FloorView(clear_level=200.0, cloud_level=205.0)
    with pytest.raises(ValueError, match="wall_clear_m"):
        FloorView(wall_clear_m=-0.001)
