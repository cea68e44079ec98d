"""Arm targets from where the camera sees the labware: tag pose (camera optical frame) -> robot base ->
grasp point -> IK within the joint and velocity limits; bad poses refused; no pose: the named poses."""
import math

import numpy as np
import pytest

pytest.importorskip("pinocchio")
from scipy.spatial.transform import Rotation  # noqa: E402

from agentchemist.workcell.grasp_points import (GRASP_POINTS, PIPETTE, TAG_LABEL_M, TAG_STANDOFF_M,  # noqa: E402
                                                beaker_size_m)
from agentchemist.policy.primitives import PrimitiveError, load_poses, plan_primitive  # noqa: E402
from agentchemist.policy.seen_targets import (SeenObject, SeenTargetConfig, SeenTargets,  # noqa: E402
                                              seen_kind)

CAMERA = "front_color_optical_frame"
#: A tag facing the robot (-x), upright: OpenCV's marker axes x (right as read) = -y, y (up) = +z, z = -x.
FACING_ROBOT = np.column_stack([[0.0, -1.0, 0.0], [0.0, 0.0, 1.0], [-1.0, 0.0, 0.0]])


@pytest.fixture(scope="module")
def poses():
    return load_poses()


ALL_KINDS = SeenTargetConfig(camera_kinds=("pipette", "beaker", "solid_bottle"))


@pytest.fixture
def seen(poses):
    return SeenTargets(poses, ALL_KINDS)


def in_camera(seen, item_id, kind, grasp_base, rotation=FACING_ROBOT):
    """The SeenObject the vision supervisor would report for an item whose grasp point is at ``grasp_base``
    (robot base frame): its tag's pose in the front camera's optical frame."""
    tag_base = grasp_base - rotation @ np.asarray(GRASP_POINTS[kind].offset)
    r_cam, p_cam = seen.frames.placement(CAMERA)
    p = r_cam.T @ (tag_base - p_cam)
    q = Rotation.from_matrix(r_cam.T @ rotation).as_quat()
    return SeenObject(item_id, kind, tuple(p), tuple(q))


#: Where the shipped layouts put them (base frame, m; hcl_naoh's pipette bulb and beaker mouth, nacl_weighing's
#: bottle neck, as the twin's 3-D scene has them).
BULB, MOUTH, NECK = np.array([0.55, -0.088, 0.686]), np.array([0.55, 0.0, 0.702]), np.array([0.55, -0.137, 0.67])


def bulb_near_the_taught_pose(seen, poses, shift=(0.02, 0.01, 0.0)):
    return BULB + np.array(shift)


def plan(seen, primitive, parameters, objects, now=10.0, stamp=10.0, side=None, arm_now=None, frame=CAMERA):
    arm_now = arm_now or {"right": (0.0,) * 6, "left": (0.0,) * 6}
    return seen.plan(primitive, side, parameters, frame, stamp, objects, now, arm_now)


def test_a_seen_pipette_gives_ik_joints_that_put_the_tool_centre_on_its_bulb(seen, poses):
    bulb = bulb_near_the_taught_pose(seen, poses)
    obj = in_camera(seen, "pipette", "pipette", bulb)
    assert obj.position[2] > 0.3                           # in front of the camera, in its optical frame
    np.testing.assert_allclose(seen.point_on(CAMERA, obj, 10.0, 10.0), bulb, atol=1e-9)
    result = plan(seen, "grasp", {"object": "pipette", "location": "beaker_main"}, [obj])
    assert result.note.startswith("IK to pipette seen at (")
    kinds = [s.kind for s in result.steps]
    assert kinds == ["gripper", "arm", "arm", "gripper"]
    open_, approach, reach, close = result.steps
    ik = seen.ik("right")
    assert np.linalg.norm(ik.fk(reach.target) - bulb) <= 0.005
    above = ik.fk(approach.target) - bulb                        # from above, as high as the wrist allows
    assert np.linalg.norm(above[:2]) < 0.005 and 0.02 - 0.005 <= above[2] <= 0.08 + 0.005, above
    assert open_.target[0] > close.target[0]
    for step in (approach, reach):
        q = np.array(step.target)
        assert np.all(q >= ik.lower) and np.all(q <= ik.upper)
        ik.pin.framesForwardKinematics(ik.model, ik.data, q)
        tool_axis = ik.data.oMf[ik.frame].rotation[:, 2]
        assert math.degrees(math.acos(-tool_axis[2])) < 3.0      # tool straight down onto the bulb
    # Timed within the URDF's velocity limits (at half of each), from the measured joints (home).
    vmax = ik.vmax * SeenTargetConfig().speed_fraction
    for q_from, step in (((0.0,) * 6, approach), (approach.target, reach)):
        speed = np.abs(np.subtract(step.target, q_from)) / step.duration_s
        assert np.all(speed <= vmax + 1e-9)
    assert seen.taken["right"] == reach.target


def test_the_pipette_goes_back_where_it_was_taken_and_a_named_grasp_back_to_the_named_pose(seen, poses):
    obj = in_camera(seen, "pipette", "pipette", bulb_near_the_taught_pose(seen, poses))
    taken = plan(seen, "grasp", {"object": "pipette"}, [obj]).steps[2].target
    back = plan(seen, "release", {}, [])
    assert back.steps[0].target == taken and back.steps[1].kind == "gripper"
    assert back.steps[2].target == poses.pose("right", "home")
    assert plan(seen, "release", {}, []) is None          # once put back, the next return is the named one
    assert plan(seen, "grasp", {"object": "pipette"}, [SeenObject("pipette", "pipette", (0, 0, 0), (0, 0, 0, 0))]) \
        is None
    assert plan(seen, "release", {}, []) is None


def test_over_the_beaker_the_held_pipettes_tip_clears_the_rim(seen, poses):
    ik = seen.ik("right")
    mouth = MOUTH + np.array([-0.01, 0.02, 0.0])
    beaker = in_camera(seen, "beaker_main", "beaker", mouth)
    result = plan(seen, "move_to", {"target": "beaker_main"}, [beaker])
    (step,) = result.steps
    tip_above = SeenTargetConfig().tip_clearance_m + PIPETTE.tip_below_bulb()
    assert np.linalg.norm(ik.fk(step.target) - (mouth + [0, 0, tip_above])) <= 0.005
    assert result.note.startswith("IK over beaker_main seen at")
    # the beaker's mouth from its tag: half its height up, its radius plus the label's standoff behind
    d, h = beaker_size_m(100.0)
    assert GRASP_POINTS["beaker"].offset == pytest.approx((0.0, h / 2, -(d / 2 + 0.002)))


def test_the_bottle_is_taken_at_its_neck_and_lifted_to_the_named_pour_pose(seen, poses):
    ik = seen.ik("left")
    neck = NECK
    bottle = in_camera(seen, "solid_bottle", "solid_bottle", neck)
    result = plan(seen, "grasp", {"object": "solid_bottle", "side": "left"}, [bottle])
    by_default = SeenTargets(poses)           # the bottle is opt-in: the twin's weighing reads the taught pose
    assert not by_default.needs_scene("grasp", {"object": "solid_bottle"})
    assert not by_default.needs_scene("move_to", {"target": "beaker_main"})  # the beaker too (the bench watch)
    assert by_default.needs_scene("grasp", {"object": "pipette"})
    assert plan(by_default, "grasp", {"object": "solid_bottle", "side": "left"}, [bottle]) is None
    assert [s.label for s in result.steps][-1] == "move to pour_over_beaker"
    assert result.steps[-1].target == poses.pose("left", "pour_over_beaker")   # the tilt convention's pose
    reach = result.steps[2]
    assert np.linalg.norm(ik.fk(reach.target) - neck) <= 0.005
    assert reach.target[5] == pytest.approx(poses.pose("left", "solid_bottle")[5], abs=1e-6)  # joint6 kept


def test_no_pose_known_or_target_source_named_keeps_the_named_poses(seen, poses):
    unknown = SeenObject("pipette", "pipette", (0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 0.0))   # the kinematic twin's
    assert plan(seen, "grasp", {"object": "pipette"}, [unknown]) is None
    never_set = SeenObject("pipette", "pipette", (0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0))  # geometry_msgs' default
    assert plan(seen, "grasp", {"object": "pipette"}, [never_set]) is None
    assert plan(seen, "grasp", {"object": "pipette"}, []) is None                      # not seen
    obj = in_camera(seen, "pipette", "pipette", bulb_near_the_taught_pose(seen, poses))
    named = SeenTargets(poses, SeenTargetConfig(target_source="named"))
    assert plan(named, "grasp", {"object": "pipette"}, [obj]) is None
    assert not named.needs_scene("grasp", {"object": "pipette"})
    # fixed stations and primitives that touch no item never look
    for primitive, params in (("draw", {}), ("home", {}), ("press", {"device": "stirrer"}),
                              ("move_to", {"object": "beaker_main", "target": "stirrer"})):
        assert seen_kind(primitive, params) is None and plan(seen, primitive, params, [obj]) is None
    assert seen.needs_scene("grasp", {"object": "pipette_1"}) and not seen.needs_scene("release", {})
    # two beakers and none named: which one is not known, so the named pose
    two = [in_camera(seen, f"beaker_{n}", "beaker", np.array([0.5, y, 0.7])) for n, y in (("a", 0.0), ("b", 0.1))]
    assert plan(seen, "position_over_beaker", {}, two) is None


@pytest.mark.parametrize("change, message", [
    (dict(position=(math.nan, 0.1, 0.5)), "not finite"),
    (dict(orientation=(0.0, 0.0, 0.0, 2.0)), "not a unit quaternion"),
    (dict(position=(0.0, 0.1, -0.5)), "not in front of the camera"),
    (dict(position=(0.0, 0.1, 9.0)), "not in front of the camera"),
])
def test_a_bad_seen_pose_is_refused(seen, poses, change, message):
    obj = in_camera(seen, "pipette", "pipette", bulb_near_the_taught_pose(seen, poses))
    bad = SeenObject(obj.id, obj.kind, change.get("position", obj.position), change.get("orientation", obj.orientation))
    with pytest.raises(PrimitiveError, match=message):
        plan(seen, "grasp", {"object": "pipette"}, [bad])
    assert "right" not in seen.taken


def test_a_stale_flipped_wrong_frame_or_unreachable_pose_is_refused(seen, poses):
    obj = in_camera(seen, "pipette", "pipette", bulb_near_the_taught_pose(seen, poses))
    with pytest.raises(PrimitiveError, match="stale"):
        plan(seen, "grasp", {"object": "pipette"}, [obj], now=20.0, stamp=10.0)
    with pytest.raises(PrimitiveError, match="not a frame of the robot's URDF"):
        plan(seen, "grasp", {"object": "pipette"}, [obj], frame="camera_color_optical_frame")
    with pytest.raises(PrimitiveError, match="faces away"):
        turned = Rotation.from_quat(obj.orientation) * Rotation.from_euler("y", math.pi)
        plan(seen, "grasp", {"object": "pipette"}, [SeenObject("pipette", "pipette", obj.position,
                                                               tuple(turned.as_quat()))])
    far = in_camera(seen, "pipette", "pipette", np.array([1.4, -0.3, 0.7]))   # beyond the 0.63 m reach
    with pytest.raises(PrimitiveError, match="pipette: right arm: no pose within the joint limits"):
        plan(seen, "grasp", {"object": "pipette"}, [far])
    with pytest.raises(PrimitiveError, match="joints are not known"):
        plan(seen, "grasp", {"object": "pipette"}, [obj], arm_now={"right": None})
    assert seen.taken == {}


def test_a_wrist_camera_is_placed_at_the_measured_joints(seen, poses):
    with pytest.raises(PrimitiveError, match="whose position is not known"):
        seen.frames.placement("right_wrist_color_optical_frame")
    q = dict(zip([f"right_joint{i}" for i in range(1, 7)], poses.pose("right", "pipette")))
    r_home, p_home = seen.frames.placement("right_wrist_color_optical_frame", {k: 0.0 for k in q})
    r, p = seen.frames.placement("right_wrist_color_optical_frame", q)
    assert np.linalg.norm(p - p_home) > 0.05
    r_front, p_front = seen.frames.placement(CAMERA, q)     # the front camera does not move with the arm
    np.testing.assert_allclose(p_front, seen.frames.placement(CAMERA)[1])


def test_the_grasp_geometry_is_the_twins_scene(seen):
    """The bench numbers the targets use are the ones the twin's 3-D scene is built from."""
    from agentchemist.sim import workcell_view, drawing, scene_model
    assert drawing.MM_PER_PX == pytest.approx(50.0 / 46.0)
    assert PIPETTE.tube_length_m == pytest.approx(workcell_view.PIPETTE_TUBE_PX[1] * workcell_view.M_PER_PX)
    assert PIPETTE.bulb_height_m == pytest.approx(workcell_view.PIPETTE_BULB_PX[1] * workcell_view.M_PER_PX)
    assert PIPETTE.bulb_diameter_m == pytest.approx(workcell_view.PIPETTE_BULB_PX[0] * workcell_view.M_PER_PX)
    assert TAG_LABEL_M == pytest.approx(scene_model.TAG_SIDE_M * (1 + 2 * scene_model.TAG_QUIET))
    assert beaker_size_m(250.0)[0] == pytest.approx(drawing.beaker_size(250.0)[0] * workcell_view.M_PER_PX)
    # the label box (1 mm thick) is centred 1.5 mm in front of the item: its printed face 2 mm proud
    assert TAG_STANDOFF_M == pytest.approx(0.0015 + 0.0005)
