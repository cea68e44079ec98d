"""The MuJoCo arm backend: trajectories followed, a pipette grasped by contact, three RGB-D cameras."""
import math

import numpy as np
import pytest

from agentchemist.sim.lab import LabTwin
from agentchemist.sim.mjcf_scene import mujoco
from agentchemist.sim.mujoco_arms import MujocoArms, Trajectory
from agentchemist.sim.scenario import load_scenario
from agentchemist.sim.scene_model import twin_scene
from agentchemist.sim.mujoco_gl import NO_GL_REASON, select_gl
from tests.conftest import REPO

REQUIRES_GL = pytest.mark.skipif(not select_gl(), reason=NO_GL_REASON)

RIGHT = tuple(f"right_joint{i}" for i in range(1, 7))


@pytest.fixture(scope="module")
def scene_bodies():
    return twin_scene(LabTwin(load_scenario(REPO / "config" / "scenarios" / "hcl_naoh.yaml")))


@pytest.fixture
def arms(scene_bodies, tmp_path):
    sim = MujocoArms(scene_bodies, (REPO / "urdf" / "agentchemist_aloha.urdf").read_text(), tmp_path)
    yield sim
    sim.close()


def solve_ik(arms: MujocoArms, side: str, target: np.ndarray, down: bool = True) -> np.ndarray:
    """Joint angles putting <side>_tcp at ``target`` (tool axis pointing down): damped least squares on
    MuJoCo's Jacobians, on a scratch copy of the state."""
    model, data = arms.model, mujoco.MjData(arms.model)
    data.qpos[:] = arms.data.qpos
    tcp = model.body(f"{side}_tcp").id
    dofs = [int(model.joint(f"{side}_joint{i}").dofadr[0]) for i in range(1, 7)]
    qadr = [int(model.joint(f"{side}_joint{i}").qposadr[0]) for i in range(1, 7)]
    jacp, jacr = np.zeros((3, model.nv)), np.zeros((3, model.nv))
    for _ in range(300):
        mujoco.mj_kinematics(model, data)
        mujoco.mj_comPos(model, data)
        err_p = target - data.xpos[tcp]
        z = data.xmat[tcp].reshape(3, 3)[:, 2]
        err_r = np.cross(z, np.array([0.0, 0.0, -1.0])) if down else np.zeros(3)
        if np.linalg.norm(err_p) < 1e-4 and np.linalg.norm(err_r) < 1e-3:
            break
        mujoco.mj_jacBody(model, data, jacp, jacr, tcp)
        jac = np.vstack([jacp[:, dofs], 0.3 * jacr[:, dofs]])
        err = np.concatenate([err_p, 0.3 * err_r])
        dq = jac.T @ np.linalg.solve(jac @ jac.T + 1e-4 * np.eye(6), err)
        for a, d, (lo, hi) in zip(qadr, dq, model.jnt_range[[model.joint(f"{side}_joint{i}").id for i in range(1, 7)]]):
            data.qpos[a] = min(max(data.qpos[a] + 0.5 * d, lo), hi)
    return np.array([data.qpos[a] for a in qadr])


def move(arms: MujocoArms, side: str, q: np.ndarray, seconds: float) -> None:
    joints = tuple(f"{side}_joint{i}" for i in range(1, 7))
    arms.follow(Trajectory(joints, ((seconds, tuple(q)),), arms.t))
    arms.step_to(arms.t + seconds + 0.5)


def test_a_trajectory_is_followed_within_tolerance(arms):
    goal = np.array([0.3, 1.0, -1.0, 0.2, 0.5, 0.3])
    points = tuple((0.4 * k, tuple(goal * k / 5.0)) for k in range(1, 6))
    traj = Trajectory(RIGHT, points, arms.t)
    arms.follow(traj)
    worst = 0.0
    t0 = arms.t
    while arms.t < t0 + 2.0:
        arms.step_to(arms.t + 0.05)
        ref = traj.at(arms.t, np.zeros(6))
        worst = max(worst, float(np.max(np.abs(np.array(arms.arm_positions("right")) - ref))))
    arms.step_to(arms.t + 0.5)
    final = np.max(np.abs(np.array(arms.arm_positions("right")) - goal))
    assert worst < 0.03, worst      # rad, while moving at up to 0.25 rad/s
    assert final < 0.003, final     # rad, settled
    names, positions, _ = arms.joint_state()
    assert names[:7] == ["left_joint1", "left_joint2", "left_joint3", "left_joint4", "left_joint5", "left_joint6",
                         "left_gripper"]
    assert np.allclose(positions[7:13], arms.arm_positions("right"))


def test_bad_trajectories_are_refused(arms):
    with pytest.raises(ValueError, match="unknown joints"):
        arms.follow(Trajectory(("right_joint9",), ((1.0, (0.0,)),), arms.t))
    with pytest.raises(ValueError, match="finite"):
        arms.follow(Trajectory(RIGHT, ((1.0, (math.nan, 0, 0, 0, 0, 0)),), arms.t))


def close_on_the_bulb(arms: MujocoArms) -> tuple[np.ndarray, np.ndarray]:
    """Open hand down over the pipette's bulb, then close: (bulb position, pipette rest position)."""
    arms.settle(1.0)  # the pipette leans in its beaker
    bulb = arms.data.geom_xpos[arms.model.geom("pipette_part").id].copy()
    rest = arms.body_position("pipette")
    move(arms, "right", solve_ik(arms, "right", bulb + np.array([0.0, 0.0, 0.08])), 1.5)
    move(arms, "right", solve_ik(arms, "right", bulb), 1.0)
    assert arms.held_by() is None
    arms.set_gripper("right", 0.0)
    arms.settle(1.0)
    return bulb, rest


def test_a_grasp_holds_the_pipette_through_a_move_and_releases_it(arms):
    bulb, rest = close_on_the_bulb(arms)
    assert arms.held_by() == "right"
    lifted = bulb + np.array([0.0, -0.05, 0.15])
    move(arms, "right", solve_ik(arms, "right", lifted), 2.0)
    tcp = arms.body_position("right_tcp")
    assert arms.held_by() == "right"
    assert arms.body_position("pipette")[2] > rest[2] + 0.12  # carried up with the hand, not left behind
    assert np.linalg.norm(arms.data.geom_xpos[arms.model.geom("pipette_part").id] - tcp) < 0.02
    arms.set_gripper("right", 0.07)
    arms.settle(1.0)
    assert arms.held_by() is None
    assert arms.body_position("pipette")[2] < rest[2] + 0.05  # fell once released


def test_a_slippery_grip_lets_the_pipette_slip(arms):
    """The hold is friction: a wet bulb (friction 0.004 instead of 1: two fingers squeezing at most 10 N hold
    0.08 N, under the pipette's 0.12 N weight) is gripped but slides out when lifted. (With MuJoCo's no-slip
    pass friction holds what it can hold: 0.05 would carry 1 N.)"""
    held = {arms.model.body(n).id for n in ("pipette", "right_finger_a", "right_finger_b")}
    for geom in range(arms.model.ngeom):
        if arms.model.geom_bodyid[geom] in held:
            arms.model.geom_friction[geom][0] = 0.004
    bulb, rest = close_on_the_bulb(arms)
    assert arms.held_by() == "right"
    move(arms, "right", solve_ik(arms, "right", bulb + np.array([0.0, -0.05, 0.15])), 2.0)
    assert arms.held_by() is None
    assert arms.body_position("pipette")[2] < rest[2] + 0.05


def look_at_the_bench(arms: MujocoArms) -> None:
    """Both hands 0.2 m above the bench, tools down, so the wrist cameras see the labware."""
    for side, dy in (("left", 0.06), ("right", -0.06)):
        target = arms.body_position("beaker_main") + np.array([-0.05, dy, 0.2])
        q = solve_ik(arms, side, target)
        arms.follow(Trajectory(tuple(f"{side}_joint{i}" for i in range(1, 7)), ((1.0, tuple(q)),), arms.t))
    arms.step_to(arms.t + 1.5)


@REQUIRES_GL
def test_three_cameras_render_colour_and_aligned_plausible_depth(arms, tmp_path):
    look_at_the_bench(arms)
    for camera in ("front", "left_wrist", "right_wrist"):
        frame = arms.render(camera)
        assert frame.rgb.shape == (240, 320, 3) and frame.depth.shape == (240, 320)
        assert frame.rgb.std() > 10.0, camera                 # not a blank image
        valid = frame.depth[frame.depth > 0]
        assert valid.size > 0.5 * frame.depth.size, camera
        assert 0.01 < valid.min() and valid.max() < 30.0, camera
    # Alignment: the beaker's centre projects (through K) onto a pixel whose depth is the beaker's distance.
    frame = arms.render("front")
    cam = arms.model.camera("front").id
    pos, mat = arms.data.cam_xpos[cam], arms.data.cam_xmat[cam].reshape(3, 3)
    beaker = arms.body_position("beaker_main")
    rel = mat.T @ (beaker - pos)                   # MuJoCo camera frame: x right, y up, looking along -z
    z = -rel[2]
    u = frame.k[0, 0] * rel[0] / z + frame.k[0, 2]
    v = -frame.k[1, 1] * rel[1] / z + frame.k[1, 2]
    seen = frame.depth[int(v) - 2:int(v) + 3, int(u) - 2:int(u) + 3]
    assert abs(float(np.median(seen)) - z) < 0.04, (float(np.median(seen)), z)


def test_the_gripper_moves_at_its_speed_when_given_one(scene_bodies, tmp_path):
    """With the Piper's gripper speed the opening ramps to a command (the twin's gripper model, which
    squeezes the pipette's bulb, follows it at that speed) instead of jumping there in a few steps."""
    sim = MujocoArms(scene_bodies, (REPO / "urdf" / "agentchemist_aloha.urdf").read_text(), tmp_path,
                     gripper_speed_m_s=0.05)
    try:
        opening = lambda: float(sim.data.qpos[sim.model.joint("right_gripper").qposadr[0]])  # noqa: E731
        start = opening()
        sim.set_gripper("right", start - 0.05)
        sim.settle(0.5)
        assert abs(opening() - (start - 0.025)) < 0.003  # half way after half the time
        sim.settle(0.8)
        assert abs(opening() - (start - 0.05)) < 0.001
        with pytest.raises(ValueError):
            MujocoArms(scene_bodies, "", tmp_path, gripper_speed_m_s=float("nan"))
    finally:
        sim.close()
