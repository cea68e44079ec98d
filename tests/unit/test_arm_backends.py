"""arm_backend kinematic | mujoco: the twin's commands, joint states and cameras through either backend."""
import cv2
import numpy as np
import pytest

from agentchemist.paths import urdf_file
from agentchemist.sim.arm_backends import KinematicArms, make_arm_backend
from agentchemist.sim.lab import LabTwin
from agentchemist.sim.lab_sim_config import LabSimConfig
from agentchemist.sim.scenario import load_scenario
from agentchemist.sim.mujoco_gl import NO_GL_REASON, select_gl
from agentchemist.sim.mjcf_scene import CAMERA_SIZE
from tests.conftest import REPO

REQUIRES_GL = pytest.mark.skipif(not select_gl(), reason=NO_GL_REASON)

SCENARIO = REPO / "config" / "scenarios" / "hcl_naoh.yaml"
GOAL = [0.2, 0.8, -0.9, 0.1, 0.4, 0.2]
NAMES = [f"right_joint{i}" for i in (3, 1, 2, 4, 6, 5)]  # any order: the message names them


def _shuffled(values):
    return [values[int(n[-1]) - 1] for n in NAMES]


def test_kinematic_is_the_default_and_the_scenario_key_is_read():
    assert LabSimConfig().arm_backend == ""
    assert load_scenario(SCENARIO).arm_backend == "kinematic"
    twin = LabTwin(load_scenario(SCENARIO))
    assert isinstance(make_arm_backend("kinematic", twin), KinematicArms)
    with pytest.raises(ValueError, match="arm_backend"):
        make_arm_backend("gazebo", twin)


def test_kinematic_backend_reorders_named_joints():
    twin = LabTwin(load_scenario(SCENARIO))
    arms = make_arm_backend("kinematic", twin)
    result = arms.command_arm("right", NAMES, [(2.0, _shuffled(GOAL))], 0.0)
    assert result.accepted and result.accepted_value == GOAL
    arms.step(5.0)
    names, positions = arms.joint_states()
    assert np.allclose(positions[names.index("right_joint1"):names.index("right_joint1") + 6], GOAL, atol=1e-3)


@REQUIRES_GL
def test_mujoco_backend_moves_the_arm_in_physics_and_the_twin_reads_it(tmp_path):
    twin = LabTwin(load_scenario(SCENARIO))
    twin.step(1.0)
    arms = make_arm_backend("mujoco", twin, urdf_file(), tmp_path)
    clamped = arms.command_arm("right", NAMES, [(1.0, _shuffled([*GOAL[:5], 9.0]))], 1.0)
    assert clamped.clamped and "joint6" in clamped.reason  # the twin still validates and clamps
    arms.command_arm("right", NAMES, [(1.0, _shuffled(GOAL[:3] + [0.0, 0.0, 0.0])), (2.0, _shuffled(GOAL))], 1.0)
    arms.command_gripper("right", 0.03, 1.0)
    arms.step(2.0)  # half way: the physics is between the points, and the twin's arm is where the physics is
    names, positions = arms.joint_states()
    right = slice(names.index("right_joint1"), names.index("right_joint1") + 6)
    assert 0.3 < positions[right][1] < 0.8
    assert np.allclose(twin.arms["right"].position, positions[right])
    arms.step(4.0)
    names, positions = arms.joint_states()
    assert np.allclose(positions[right], GOAL, atol=5e-3)
    assert positions[names.index("right_gripper")] == pytest.approx(0.03, abs=2e-3)
    assert twin.gripper_opening_m("right") == pytest.approx(0.03, abs=2e-3)  # the twin's gripper follows
    rgb, depth, k = arms.render("front", 4.0)
    w, h = CAMERA_SIZE  # the robot's cameras' size, not the scenario drawing's 320 x 240
    assert rgb.shape == (h, w, 3) and depth.shape == (h, w) and k.shape == (3, 3) and k[0, 2] == w / 2
    assert twin.read_ph(4.0) is not None  # the chemistry runs on


@pytest.mark.parametrize("backend", ["kinematic", "mujoco"])
def test_non_finite_or_malformed_commands_are_refused_and_nothing_moves(backend, tmp_path):
    twin = LabTwin(load_scenario(SCENARIO))
    twin.step(1.0)
    arms = make_arm_backend(backend, twin, urdf_file(), tmp_path)
    before = arms.joint_states()[1]
    for points in ([(1.0, [float("nan")] * 6)], [(1.0, [0.1, 0.2])]):
        result = arms.command_arm("right", [], points, 1.0)
        assert not result.accepted and "refused" in result.reason
    result = arms.command_gripper("right", float("inf"), 1.0)
    assert not result.accepted and "refused" in result.reason
    arms.step(3.0)
    assert np.allclose(arms.joint_states()[1], before, atol=2e-3)


@REQUIRES_GL
def test_mujoco_scene_follows_the_twins_bench_and_the_scene_check_reads_it(tmp_path):
    """The front render is what the vision supervisor checks: at the start every precondition is seen met;
    a labware_missing fault on the twin's bench takes the meter out of the MuJoCo scene (its tag is gone
    from the next render) and it is back, where it was, when the fault ends."""
    from agentchemist.perception.scene import describe_scene
    from agentchemist.perception.tags import detect_markers

    twin = LabTwin(load_scenario(SCENARIO))
    twin.step(1.0)
    arms = make_arm_backend("mujoco", twin, urdf_file(), tmp_path)
    rgb, _, _ = arms.render("front", 1.0)
    assert all(describe_scene(rgb).checks.values()), describe_scene(rgb).reasons
    before = detect_markers(rgb)
    assert 5 in before  # the pH meter
    twin.inject_fault("labware_missing", 1.5, duration_s=1.0, id="ph_meter")
    rgb, _, _ = arms.render("front", 2.0)
    assert 5 not in detect_markers(rgb) and 1 in detect_markers(rgb)
    rgb, _, _ = arms.render("front", 3.0)
    after = detect_markers(rgb)
    assert 5 in after and np.hypot(*np.subtract(after[5], before[5])) < 2.0


@REQUIRES_GL
def test_the_colour_tracker_reads_the_liquid_in_the_mujoco_render(tmp_path):
    """The front camera looks down into the beaker: the beaker's tag is seen flattened (about half as high
    as wide), so the colour tracker looks for the liquid above the label, where its surface shows, and
    reads an indicator's pink there; a colourless solution is no colour reading, not a wrong one."""
    from agentchemist.perception.colour import BeakerColourTracker, NoLiquidColourError
    from agentchemist.perception.tags import TagFinder, tag_aspect

    twin = LabTwin(load_scenario(SCENARIO))
    twin.step(1.0)
    arms = make_arm_backend("mujoco", twin, urdf_file(), tmp_path)
    rgb, _, _ = arms.render("front", 1.0)  # 0.1 M HCl: colourless
    finder = TagFinder(1, 3.0)
    assert finder.find(cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)) is not None and tag_aspect(finder.corners) < 0.7
    tracker = BeakerColourTracker()
    with pytest.raises(NoLiquidColourError, match="above tag 1"):
        tracker.measure(rgb, 1.0)
    arms.physics.model.geom_rgba[arms._liquid] = (0.95, 0.30, 0.70, 0.85)  # phenolphthalein's pink
    m = tracker.measure(arms.physics.render("front").rgb, 2.0)
    assert 290.0 < m.hue_deg < 340.0 and m.confidence > 0.8 and m.marker_seen
