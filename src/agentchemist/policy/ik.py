"""Inverse kinematics of one Piper arm on the checked-in URDF (pinocchio): the joint pose that puts the
arm's tool centre point (``<side>_tcp``) at a position in the robot's base frame, within the bench's joint
limits (agentchemist.bench.robot, the Piper SDK's, tighter than the URDF's), and the time a move needs
to stay within the URDF's velocity limits.

Damped least squares on the 3-D position (the gripper's orientation is left free: the arm's 6 joints give
the remaining freedom), from a seed pose (the named pose of the station, so the solution stays on the same
branch), clamping to the limits every iteration. Not yet wired to the camera: the twin's front image is a
2-D drawing, not a calibrated projection, so labware pixels do not give base-frame positions yet.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from agentchemist.bench.robot import ARM_JOINT_LIMITS_RAD, check_side
from agentchemist.paths import config_dir


class IKError(ValueError):
    """No joint pose within the limits reaches the target (or the URDF cannot be read)."""


def default_urdf() -> Path:
    return config_dir().parent / "urdf" / "agentchemist_aloha.urdf"


class ArmIK:
    def __init__(self, side: str, urdf: str | Path | None = None):
        import pinocchio as pin
        self.pin, self.side = pin, check_side(side)
        path = str(urdf or default_urdf())
        try:
            full = pin.buildModelFromUrdf(path)
        except (RuntimeError, ValueError) as exc:
            raise IKError(f"cannot read the URDF {path}: {exc}") from None
        arm = [f"{side}_joint{i}" for i in range(1, 7)]
        lock = [full.getJointId(n) for n in full.names[1:] if n not in arm]
        self.model = pin.buildReducedModel(full, lock, pin.neutral(full))
        self.data = self.model.createData()
        self.frame = self.model.getFrameId(f"{side}_tcp")
        self.lower = np.array([lo for lo, _ in ARM_JOINT_LIMITS_RAD])
        self.upper = np.array([hi for _, hi in ARM_JOINT_LIMITS_RAD])
        self.vmax = np.array([self.model.velocityLimit[self.model.joints[self.model.getJointId(n)].idx_v]
                              for n in arm])

    def fk(self, q) -> np.ndarray:
        """The TCP position (m, base frame) at joints q."""
        pin = self.pin
        pin.framesForwardKinematics(self.model, self.data, np.asarray(q, float))
        return self.data.oMf[self.frame].translation.copy()

    def solve(self, target_xyz, seed, tolerance_m: float = 1e-3, iterations: int = 200, damping: float = 1e-3):
        """Joints (6, rad, within the limits) putting the TCP within ``tolerance_m`` of ``target_xyz``."""
        pin = self.pin
        target = np.asarray(target_xyz, float)
        if target.shape != (3,) or not np.isfinite(target).all():
            raise IKError(f"target must be 3 finite coordinates, got {target_xyz!r}")
        q = np.clip(np.asarray(seed, float), self.lower, self.upper)
        err = np.inf
        for _ in range(iterations):
            pin.computeJointJacobians(self.model, self.data, q)
            pin.framesForwardKinematics(self.model, self.data, q)
            e = target - self.data.oMf[self.frame].translation
            err = float(np.linalg.norm(e))
            if err <= tolerance_m:
                return q
            J = pin.getFrameJacobian(self.model, self.data, self.frame, pin.LOCAL_WORLD_ALIGNED)[:3]
            dq = J.T @ np.linalg.solve(J @ J.T + damping * np.eye(3), e)
            q = np.clip(q + dq, self.lower, self.upper)
        raise IKError(f"{self.side} arm: no pose within the joint limits reaches {target.round(3).tolist()} "
                      f"(closest {err * 1000:.1f} mm away)")

    def move_duration(self, q_from, q_to, fraction: float = 0.5) -> float:
        """Seconds for a straight joint-space move at most ``fraction`` of each joint's velocity limit."""
        dq = np.abs(np.asarray(q_to, float) - np.asarray(q_from, float))
        return float(max((dq / (self.vmax * fraction)).max(), 0.0))
