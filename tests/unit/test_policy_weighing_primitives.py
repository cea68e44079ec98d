"""The weighing's motion primitives: what each plan primitive (name + parameters) makes the arms do, the
bottle tilt convention, and where the scene says the beaker stands. The titration's primitives must keep
their steps."""
import math

import pytest

from agentchemist.workcell.robot import ARM_JOINT_LIMITS_RAD
from agentchemist.perception.scene import describe_scene
from agentchemist.policy.primitives import (JOINT6_MAX_RAD, PrimitiveError, beaker_station, bottle_tilt_deg,
                                            bottle_tilt_joints, load_poses, needs_beaker_station, plan_primitive,
                                            stations)
from agentchemist.sim.lab import LabTwin
from agentchemist.sim.scenario import load_scenario
from tests.conftest import REPO

SCENARIOS = REPO / "config" / "scenarios"


@pytest.fixture(scope="module")
def poses():
    return load_poses()


def labels(steps):
    return [s.label for s in steps]


def test_weighing_poses_exist_within_the_piper_limits_and_leave_room_to_tilt(poses):
    for side, names in {"right": ("beaker_at_balance", "beaker_at_stirrer", "stirrer_button"),
                        "left": ("solid_bottle", "pour_over_beaker")}.items():
        for name in names:
            pose = poses.pose(side, name)
            assert all(lo <= v <= hi for v, (lo, hi) in zip(pose, ARM_JOINT_LIMITS_RAD)), (side, name)
    assert JOINT6_MAX_RAD == ARM_JOINT_LIMITS_RAD[5][1]
    assert math.degrees(JOINT6_MAX_RAD - poses.pose("left", "pour_over_beaker")[5]) >= 130.0
    # Poses the twin tells apart by tolerance must be further apart than it.
    right = poses.arms["right"]
    for a in right:
        for b in right:
            if a < b:
                assert max(abs(x - y) for x, y in zip(right[a], right[b])) > 2 * poses.tolerance_rad, (a, b)
    assert {"beaker_grasp_mm", "bottle_grasp_mm"} <= set(poses.gripper_mm)
    assert poses.gripper_mm["bottle_grasp_mm"] < poses.gripper_mm["beaker_grasp_mm"] < poses.gripper_mm["open_mm"]


def test_place_where_the_beaker_already_stands_has_nothing_to_do(poses):
    params = {"object": "beaker_main", "target": "balance"}
    assert needs_beaker_station("place", params)
    assert plan_primitive("place", poses, parameters=params, beaker_at="balance") == []


def test_place_carries_the_beaker_from_its_station_to_the_target(poses):
    steps = plan_primitive("place", poses, parameters={"object": "beaker_main", "target": "balance"},
                           beaker_at="stirrer")
    g = poses.gripper_mm
    assert labels(steps) == ["open", "move to beaker_at_stirrer", "close on the beaker", "move to beaker_at_balance",
                             "release the beaker", "move to home"]
    assert all(s.side == "right" for s in steps)
    assert steps[1].target == poses.pose("right", "beaker_at_stirrer")
    assert steps[2].target == pytest.approx((g["beaker_grasp_mm"] / 1000.0,))
    assert steps[3].target == poses.pose("right", "beaker_at_balance")
    assert steps[4].target == pytest.approx((g["open_mm"] / 1000.0,))


def test_move_to_a_station_carries_the_beaker_and_accepts_the_planners_stirrer_name(poses):
    steps = plan_primitive("move_to", poses, parameters={"object": "beaker_main", "target": "magnetic_stirrer"},
                           beaker_at="balance")
    assert [s.target for s in steps if s.kind == "arm"] == [poses.pose("right", "beaker_at_balance"),
                                                            poses.pose("right", "beaker_at_stirrer"),
                                                            poses.pose("right", "home")]


def test_grasp_the_solid_bottle_with_the_left_arm_and_lift_it_upright_over_the_beaker(poses):
    steps = plan_primitive("grasp", poses, parameters={"object": "solid_bottle", "side": "left"})
    assert all(s.side == "left" for s in steps)
    assert labels(steps) == ["open", "move to solid_bottle", "close on the bottle", "move to pour_over_beaker"]
    assert steps[2].target == pytest.approx((poses.gripper_mm["bottle_grasp_mm"] / 1000.0,))
    assert bottle_tilt_deg(poses, steps[-1].target) == 0.0  # lifted upright
    # the bottle arm is the default for the bottle; the right arm has no pose for it
    assert labels(plan_primitive("grasp", poses, parameters={"object": "solid_bottle"})) == labels(steps)
    with pytest.raises(PrimitiveError, match="solid_bottle"):
        plan_primitive("grasp", poses, parameters={"object": "solid_bottle", "side": "right"})


def test_press_the_stirrer_button_and_come_back(poses):
    steps = plan_primitive("press", poses, parameters={"device": "stirrer", "speed_rpm": 400})
    assert [s.target for s in steps] == [poses.pose("right", "stirrer_button"), poses.pose("right", "home")]


def test_the_titrations_primitives_and_aliases_are_unchanged(poses):
    g = poses.gripper_mm
    grasp = plan_primitive("grasp", poses, "right", {"object": "pipette", "location": "beaker_main"})
    assert labels(grasp) == ["open", "move to pipette", "close on the bulb"]
    assert grasp[2].target == pytest.approx((g["grasp_mm"] / 1000.0,))
    assert labels(plan_primitive("grasp", poses, parameters={"object": "pipette_1"})) == labels(grasp)
    assert labels(plan_primitive("grasp", poses)) == labels(grasp)
    assert labels(plan_primitive("grasp_pipette", poses, "right")) == labels(grasp)
    move = plan_primitive("move_to", poses, parameters={"target": "beaker_main"})
    assert [s.target for s in move] == [poses.pose("right", "over_beaker")]
    assert not needs_beaker_station("move_to", {"target": "beaker_main"})
    assert labels(plan_primitive("draw", poses)) == ["move to titrant_bottle", "squeeze the bulb", "release: draw",
                                                     "let the liquid rise"]
    assert labels(plan_primitive("release", poses)) == ["move to pipette", "release the pipette", "move to home"]
    assert labels(plan_primitive("home", poses, "left")) == ["move to home"]


@pytest.mark.parametrize("name, params, at, match", [
    ("place", {"object": "beaker_main", "target": "hot_plate"}, "balance",
     r"unknown target 'hot_plate'.*balance, stirrer"),
    ("move_to", {"object": "flask_1", "target": "stirrer"}, "balance", r"unknown object 'flask_1'.*beaker_\*"),
    ("place", {"object": "beaker_main", "target": "stirrer"}, None, "where the beaker stands is not known"),
    ("place", {"object": "beaker_main", "target": "stirrer"}, "wash_bottle", "no pose to pick it up"),
    ("place", {}, None, "needs the object"),
    ("grasp", {"object": "spatula"}, None, r"unknown object 'spatula'.*pipette, solid_bottle"),
    ("press", {"device": "centrifuge"}, None, r"unknown device 'centrifuge'.*stirrer"),
    ("levitate", {}, None, "unknown primitive"),
])
def test_unknown_objects_targets_and_devices_are_refused_naming_the_known_ones(poses, name, params, at, match):
    with pytest.raises(PrimitiveError, match=match):
        plan_primitive(name, poses, parameters=params, beaker_at=at)


def test_stations_come_from_the_poses(poses):
    assert stations(poses) == ["balance", "stirrer"]
    assert stations(poses, "left") == []


def test_bottle_tilt_convention(poses):
    base = poses.pose("left", "pour_over_beaker")
    for tilt in (0.0, 12.5, 35.0, 130.0):
        joints = bottle_tilt_joints(poses, tilt)
        assert joints[:5] == base[:5]
        assert joints[5] == pytest.approx(base[5] + math.radians(tilt))
        assert bottle_tilt_deg(poses, joints) == pytest.approx(tilt)
    assert bottle_tilt_joints(poses, -5.0) == base          # negative tilts are upright
    below = (*base[:5], base[5] - 0.2)
    assert bottle_tilt_deg(poses, below) == 0.0              # wrist turned back past upright: clamped at 0
    away = (base[0] + 0.1, *base[1:])                        # joint1 off the pour pose: upright, not pouring
    assert bottle_tilt_deg(poses, (*away[:5], base[5] + 1.0)) is None
    assert bottle_tilt_deg(poses, None) is None and bottle_tilt_deg(poses, base[:4]) is None
    with pytest.raises(PrimitiveError, match="limit"):
        bottle_tilt_joints(poses, 170.0)
    with pytest.raises(PrimitiveError, match="finite"):
        bottle_tilt_joints(poses, float("nan"))


def _scene(twin, t):
    desc = describe_scene(twin.render_camera("front", t))
    return [(o.id, o.kind, o.u, o.v) for o in desc.objects], desc.image_size[0]


@pytest.mark.parametrize("scenario", ["nacl_weighing.yaml", "nacl_weighing_cluttered.yaml"])
def test_where_the_front_camera_shows_the_beaker(scenario):
    twin = LabTwin(load_scenario(SCENARIOS / scenario))
    objects, width = _scene(twin, 1.0)
    assert beaker_station("beaker_main", objects, width, ["balance", "stirrer"]) == "balance"
    twin.move_labware("beaker_main", 2.0, on="stirrer")
    objects, width = _scene(twin, 2.5)
    assert beaker_station("beaker_main", objects, width, ["balance", "magnetic_stirrer"]) == "stirrer"
    with pytest.raises(PrimitiveError, match="beaker_xl is not seen"):
        beaker_station("beaker_xl", objects, width, ["balance", "stirrer"])


def test_what_the_3d_scene_check_says_the_beaker_stands_on_decides():
    """DescribeScene's ``on`` (from the tags' 3-D poses) wins over the image rule where it has the beaker."""
    objects = [("beaker_main", "beaker", 160.0, 180.0), ("stirrer", "stirrer", 160.0, 210.0),
               ("balance", "balance", 60.0, 210.0)]
    assert beaker_station("beaker_main", objects, 320, ["balance", "stirrer"]) == "stirrer"  # image: aligned
    assert beaker_station("beaker_main", objects, 320, ["balance", "stirrer"], supports={"beaker_main": "bench"}) is None
    assert beaker_station("beaker_main", objects, 320, ["balance", "stirrer"],
                          supports={"beaker_main": "balance"}) == "balance"
    assert beaker_station("beaker_main", objects, 320, ["balance", "stirrer"],
                          supports={"beaker_small": "bench"}) == "stirrer"  # not about this beaker: the image rule


def test_a_beaker_beside_a_station_or_under_it_does_not_stand_on_it():
    objects = [("balance", "balance", 100.0, 212.0), ("beaker_main", "beaker", 150.0, 190.0)]
    assert beaker_station("beaker_main", objects, 320, ["balance"]) is None    # 50 px > 0.12 * 320
    assert beaker_station("beaker_main", objects, 320, ["balance"], horizontal_tolerance=0.2) == "balance"
    above = [("balance", "balance", 150.0, 150.0), ("beaker_main", "beaker", 150.0, 190.0)]
    assert beaker_station("beaker_main", above, 320, ["balance"]) is None
