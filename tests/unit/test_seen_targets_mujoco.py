"""The chain from a seen tag to the hand, checked in MuJoCo: the pipette's tag pose is taken from the
simulated scene and expressed in the front camera's optical frame as the vision supervisor reports it,
the scripted backend's IK targets (policy/seen_targets.py) are driven on the simulated arm, and the tool
centre ends on the true bulb, where the fingers close and hold the pipette. The taught pose misses it."""
import numpy as np
import pytest

pytest.importorskip("pinocchio")
from scipy.spatial.transform import Rotation  # noqa: E402

from agentchemist.workcell.grasp_points import PIPETTE, beaker_size_m  # noqa: E402
from agentchemist.policy.primitives import load_poses  # noqa: E402
from agentchemist.policy.seen_targets import SeenObject, SeenTargetConfig, SeenTargets  # noqa: E402
from agentchemist.sim.lab import LabTwin  # noqa: E402
from agentchemist.sim.mujoco_arms import MujocoArms, Trajectory  # noqa: E402
from agentchemist.sim.scenario import load_scenario  # noqa: E402
from agentchemist.sim.scene_model import twin_scene  # noqa: E402
from tests.conftest import REPO  # noqa: E402

RIGHT = tuple(f"right_joint{i}" for i in range(1, 7))


@pytest.fixture
def arms(tmp_path):
    bodies = twin_scene(LabTwin(load_scenario(REPO / "config" / "scenarios" / "hcl_naoh.yaml")))
    sim = MujocoArms(bodies, (REPO / "urdf" / "agentchemist_aloha.urdf").read_text(), tmp_path)
    sim.settle(1.0)   # the pipette, the one free body, comes to rest leaning on the beaker's rim
    yield sim
    sim.close()


def seen_by_the_front_camera(arms: MujocoArms, item: str, kind: str) -> SeenObject:
    """The item's tag pose in the front camera's optical frame (x right, y down, z forward), in OpenCV's
    marker axes (x right as read, y up, z out of the face), from the simulated scene's truth."""
    m, d = arms.model, arms.data
    cam = m.camera("front").id
    # MuJoCo's camera looks along -z with y up; the optical frame along +z with y down.
    r_cam, p_cam = d.cam_xmat[cam].reshape(3, 3) @ np.diag([1.0, -1.0, -1.0]), d.cam_xpos[cam]
    tag = m.geom(f"{item}_tag").id
    g = d.geom_xmat[tag].reshape(3, 3)   # the label box shows its texture upright on its -x face
    r_tag = np.column_stack([-g[:, 1], g[:, 2], -g[:, 0]])
    face = d.geom_xpos[tag] + r_tag[:, 2] * m.geom_size[tag][0]   # the printed face: the box's outer side
    p = r_cam.T @ (face - p_cam)
    return SeenObject(item, kind, tuple(p), tuple(Rotation.from_matrix(r_cam.T @ r_tag).as_quat()))


def drive(arms: MujocoArms, steps) -> None:
    for step in steps:
        if step.kind == "arm":
            arms.follow(Trajectory(RIGHT, ((step.duration_s, step.target),), arms.t))
            arms.step_to(arms.t + step.duration_s + 0.5)
        elif step.kind == "gripper":
            arms.set_gripper(step.side, step.target[0])
            arms.settle(1.0)


def test_ik_to_the_seen_pipette_puts_the_simulated_hand_on_its_bulb_and_grasps_it(arms):
    poses = load_poses()
    bulb = arms.data.geom_xpos[arms.model.geom("pipette_part").id].copy()
    seen = SeenTargets(poses)
    # what the camera sees: the pipette at rest, leaning well past the drawing's 12 deg
    obj = seen_by_the_front_camera(arms, "pipette", "pipette")
    assert np.linalg.norm(seen.point_on("front_color_optical_frame", obj, 5.0, 5.0) - bulb) < 0.002
    plan = seen.plan("grasp", "right", {"object": "pipette"}, "front_color_optical_frame", 5.0, [obj], 5.0,
                     {"right": arms.arm_positions("right")})
    assert plan is not None and plan.note.startswith("IK to pipette seen at")
    drive(arms, plan.steps[:3])                        # open, approach from above, down to the bulb
    tcp = arms.body_position("right_tcp")
    miss = float(np.linalg.norm(tcp - bulb))
    assert miss < 0.01, miss                            # measured 0.8 mm
    assert plan.steps[3].label == "close on the bulb"
    # Closed fully, not to the plan's 60 mm: config/poses.yaml's grasp opening is the twin's pipette model's
    # bulb (contact at 60 mm), while the MuJoCo scene's bulb is the drawing's, 12 mm across.
    arms.set_gripper("right", 0.0)
    arms.settle(1.0)
    assert arms.held_by() == "right"                   # both fingers press on the pipette
    # the taught pose, what the scripted backend used, is far from it
    taught = seen.ik("right").fk(poses.pose("right", "pipette"))
    assert np.linalg.norm(taught - bulb) > 0.15


def test_ik_over_the_seen_beaker_puts_the_hand_above_its_mouth(arms):
    seen = SeenTargets(load_poses(), SeenTargetConfig(camera_kinds=("pipette", "beaker")))  # opt-in
    beaker = seen_by_the_front_camera(arms, "beaker_main", "beaker")
    plan = seen.plan("move_to", "right", {"target": "beaker_main"}, "front_color_optical_frame", 5.0, [beaker], 5.0,
                     {"right": arms.arm_positions("right")})
    drive(arms, plan.steps)
    centre = arms.body_position("beaker_main")
    # the mouth is half the beaker's height above its centre; the held pipette's tip clears the rim
    above = beaker_size_m(100.0)[1] / 2.0 + SeenTargetConfig().tip_clearance_m + PIPETTE.tip_below_bulb()
    miss = float(np.linalg.norm(arms.body_position("right_tcp") - (centre + np.array([0.0, 0.0, above]))))
    assert miss < 0.01, miss
