"""The robot: two AgileX Piper arms, their joint names, joint limits and gripper range.

Joint limits are the Piper SDK's software limits (piper_sdk ``C_PiperParamManager``: joint1 +-150 deg,
joint2 0..180 deg, joint3 -170..0 deg, joint4 +-100 deg, joint5 +-70 deg, joint6 +-120 deg; gripper
0..0.07 m). The Piper URDF is slightly wider on joint4 (+-105 deg) and joint6 (+-180 deg); the firmware
enforces the SDK values, so the driver and the twin clamp commands to these.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ARM_JOINTS", "ARM_JOINT_LIMITS_RAD", "GRIPPER_RANGE_M", "JOINT_NAMES", "PIPER", "SIDES", "ArmSpec",
           "JointLimit", "check_side"]


@dataclass(frozen=True)
class JointLimit:
    """One joint's range: ``lower`` .. ``upper`` in rad (a revolute joint) or m (the gripper opening)."""

    name: str
    lower: float
    upper: float

    def __post_init__(self) -> None:
        if not self.lower < self.upper:
            raise ValueError(f"{self.name}: lower limit {self.lower} must be below upper {self.upper}")

    @property
    def range(self) -> tuple[float, float]:
        return self.lower, self.upper


@dataclass(frozen=True)
class ArmSpec:
    """One arm model: its six revolute joints in order and its parallel gripper."""

    model: str
    joints: tuple[JointLimit, ...]
    gripper: JointLimit


PIPER = ArmSpec(
    model="AgileX Piper",
    joints=(
        JointLimit("joint1", -2.618, 2.618),
        JointLimit("joint2", 0.0, 3.14),
        JointLimit("joint3", -2.967, 0.0),
        JointLimit("joint4", -1.745, 1.745),
        JointLimit("joint5", -1.22, 1.22),
        JointLimit("joint6", -2.0944, 2.0944),
    ),
    gripper=JointLimit("gripper", 0.0, 0.07),
)

SIDES = ("left", "right")
ARM_JOINTS = len(PIPER.joints)
#: (lower, upper) rad of joint1..joint6, the form the driver and the twin clamp with.
ARM_JOINT_LIMITS_RAD: tuple[tuple[float, float], ...] = tuple(j.range for j in PIPER.joints)
#: (closed, open) gripper opening in m.
GRIPPER_RANGE_M: tuple[float, float] = PIPER.gripper.range
#: Every joint of both arms as the joint state names them: ``<side>_joint1..6``, ``<side>_gripper``.
JOINT_NAMES: tuple[str, ...] = tuple(
    f"{side}_{j.name}" for side in SIDES for j in (*PIPER.joints, PIPER.gripper)
)


def camera_body_frame(camera: str) -> str:
    """The camera's body frame (x forward, z up): the vendor drivers' ``<camera_name>_link``."""
    return f"{camera}_link"


def camera_optical_frame(camera: str) -> str:
    """The frame image headers name (z forward, x right, y down; REP-103's optical convention): what the
    RealSense and Orbbec drivers stamp for a camera named ``camera`` (``<camera_name>_color_optical_frame``),
    so that on the robot the images, the URDF and TF name the same frame; the twin stamps it too."""
    return f"{camera}_color_optical_frame"


def check_side(side: str) -> str:
    """``side`` if it names an arm; ValueError otherwise."""
    if side not in SIDES:
        raise ValueError(f"side must be 'left' or 'right', got {side!r}")
    return side
