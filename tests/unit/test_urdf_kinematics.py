"""The URDF's Piper chain has the Piper's published kinematics.

Reference: the AgileX Piper SDK's forward kinematics (piper_sdk ``C_PiperForwardKinematics``), a modified
(Craig) Denavit-Hartenberg chain, ``T_i = RotX(alpha_i) TransX(a_i) RotZ(q_i + theta0_i) TransZ(d_i)``, with
the SDK's default table (``dh_is_offset=0x01``, current firmware). The numbers below are the SDK's, written
out here as facts; the product is computed independently of the URDF. pinocchio (the ``pin`` wheel) computes
the URDF side from the checked-in file, so a wrong joint origin, axis or sign in the xacro fails here.
"""
import math
import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin
import pytest

from agentchemist.workcell.robot import ARM_JOINT_LIMITS_RAD
from tests.conftest import REPO

URDF = REPO / "urdf" / "agentchemist_aloha.urdf"

# Piper SDK modified-DH table (metres, radians), dh_is_offset = 0x01.
DH_A = (0.0, 0.0, 0.28503, -0.02198, 0.0, 0.0)
DH_ALPHA = (0.0, -math.pi / 2, 0.0, math.pi / 2, -math.pi / 2, math.pi / 2)
DH_THETA0 = (0.0, -math.radians(172.22), -math.radians(102.78), 0.0, 0.0, 0.0)
DH_D = (0.123, 0.0, 0.0, 0.25075, 0.0, 0.091)
# The SDK's own pose of the flange at q = 0 for this table (init_pos: x, y, z mm; roll, pitch, yaw deg).
SDK_ZERO_POSE_MM_DEG = (56.128, 0.0, 213.266, 0.0, 85.0, 0.0)

POSITION_TOL_M = 1e-3
ANGLE_TOL_RAD = math.radians(0.5)


def dh_forward(q) -> np.ndarray:
    """Flange pose (4x4) in the arm's base frame by the SDK's modified-DH chain."""
    out = np.eye(4)
    for a, alpha, theta0, d, qi in zip(DH_A, DH_ALPHA, DH_THETA0, DH_D, q):
        ca, sa = math.cos(alpha), math.sin(alpha)
        ct, st = math.cos(qi + theta0), math.sin(qi + theta0)
        out = out @ np.array([[ct, -st, 0.0, a],
                              [st * ca, ct * ca, -sa, -sa * d],
                              [st * sa, ct * sa, ca, ca * d],
                              [0.0, 0.0, 0.0, 1.0]])
    return out


def configurations(n: int = 12) -> list[np.ndarray]:
    """q = 0, the limits' midpoints, then random points inside the SDK's joint limits (fixed seed)."""
    lo, hi = np.array(ARM_JOINT_LIMITS_RAD).T
    rng = np.random.default_rng(23)
    return [np.zeros(6), (lo + hi) / 2.0] + [rng.uniform(lo, hi) for _ in range(n - 2)]


@pytest.fixture(scope="module")
def robot():
    model = pin.buildModelFromXML(URDF.read_text())
    return model, model.createData()


def urdf_forward(robot, side: str, q) -> np.ndarray:
    """<side>_link6 in <side>_arm_base by pinocchio on the URDF, other joints at zero."""
    model, data = robot
    config = pin.neutral(model)
    for i, qi in enumerate(q, start=1):
        joint = model.joints[model.getJointId(f"{side}_joint{i}")]
        config[joint.idx_q] = qi
    pin.forwardKinematics(model, data, config)
    pin.updateFramePlacements(model, data)
    base = data.oMf[model.getFrameId(f"{side}_arm_base")]
    flange = data.oMf[model.getFrameId(f"{side}_link6")]
    return (base.actInv(flange)).homogeneous


def pose_error(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """(position error m, rotation error rad) between two 4x4 poses."""
    rel = a[:3, :3].T @ b[:3, :3]
    angle = math.acos(max(-1.0, min(1.0, (np.trace(rel) - 1.0) / 2.0)))
    return float(np.linalg.norm(a[:3, 3] - b[:3, 3])), angle


def test_dh_chain_reproduces_the_sdk_zero_pose():
    """The reference itself: the DH product at q = 0 is the SDK's published init pose."""
    pose = dh_forward(np.zeros(6))
    x, y, z, roll, pitch, yaw = SDK_ZERO_POSE_MM_DEG
    assert np.allclose(pose[:3, 3] * 1000.0, (x, y, z), atol=1e-3)
    r = pose[:3, :3]  # the SDK reports Z-Y-X angles: yaw about z, pitch about y, roll about x
    got = (math.atan2(r[2, 1], r[2, 2]), math.atan2(-r[2, 0], math.hypot(r[0, 0], r[1, 0])),
           math.atan2(r[1, 0], r[0, 0]))
    assert np.allclose(np.degrees(got), (roll, pitch, yaw), atol=1e-6)


@pytest.mark.parametrize("side", ["left", "right"])
def test_urdf_chain_matches_the_sdk_kinematics(robot, side):
    worst = (0.0, 0.0)
    for q in configurations():
        dist, angle = pose_error(dh_forward(q), urdf_forward(robot, side, q))
        assert dist < POSITION_TOL_M and angle < ANGLE_TOL_RAD, (q.round(3).tolist(), dist, math.degrees(angle))
        worst = max(worst[0], dist), max(worst[1], angle)
    assert len(configurations()) >= 10


def test_the_check_fails_on_a_wrong_joint_origin(robot):
    """A 2 mm error on joint4's origin (or a flipped axis) is caught by the same comparison."""
    text = URDF.read_text()
    root = ET.fromstring(text.encode())
    joint4 = next(j for j in root.findall("joint") if j.get("name") == "left_joint4")
    origin = joint4.find("origin")
    x, y, z = (float(v) for v in origin.get("xyz").split())
    origin.set("xyz", f"{x} {y - 0.002} {z}")
    broken = pin.buildModelFromXML(ET.tostring(root, encoding="unicode"))
    q = configurations()[3]
    dist, _ = pose_error(dh_forward(q), urdf_forward((broken, broken.createData()), "left", q))
    assert dist > POSITION_TOL_M
    joint6 = next(j for j in root.findall("joint") if j.get("name") == "left_joint6")
    origin.set("xyz", f"{x} {y} {z}")
    joint6.find("axis").set("xyz", "0 0 -1")
    flipped = pin.buildModelFromXML(ET.tostring(root, encoding="unicode"))
    _, angle = pose_error(dh_forward(q), urdf_forward((flipped, flipped.createData()), "left", q))
    assert angle > ANGLE_TOL_RAD


def test_urdf_limits_are_the_sdk_limits():
    root = ET.parse(URDF).getroot()
    joints = {j.get("name"): j for j in root.findall("joint")}
    for side in ("left", "right"):
        for i, (lo, hi) in enumerate(ARM_JOINT_LIMITS_RAD, start=1):
            limit = joints[f"{side}_joint{i}"].find("limit")
            assert (float(limit.get("lower")), float(limit.get("upper"))) == pytest.approx((lo, hi))
            assert joints[f"{side}_joint{i}"].find("axis").get("xyz") == "0 0 1"
