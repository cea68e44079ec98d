"""Inverse kinematics of one Piper arm on the checked-in URDF (pinocchio): the joint pose that puts the
arm's tool centre point (``<side>_tcp``) at a position in the robot's base frame, within the bench's joint
limits (agentchemist.workcell.robot, the Piper SDK's, tighter than the URDF's), and the time a move needs
to stay within the URDF's velocity limits.

Damped least squares on the 3-D position (the gripper's orientation is left free: the arm's 6 joints give
the remaining freedom; optionally also the tool's approach axis, e.g. straight down for a grasp from
above), from a seed pose (the named pose of the station, so the solution stays on the same
branch), clamping to the limits every iteration. policy/seen_targets.py gives it targets from where the camera
sees the labware.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from agentchemist.workcell.robot import ARM_JOINT_LIMITS_RAD, check_side
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

    def solve(self, target_xyz, seed, tolerance_m: float = 1e-3, iterations: int = 200, damping: float = 1e-3,
              tool_axis=None, axis_tolerance_rad: float = 0.05, axis_weight: float = 0.3):
        """Joints (6, rad, within the limits) putting the TCP within ``tolerance_m`` of ``target_xyz``.

        ``tool_axis``: a direction (base frame) for the tool's approach axis (the TCP frame's z, from the
        wrist out between the fingers), e.g. (0, 0, -1) to grasp from above; reached within
        ``axis_tolerance_rad``. The rotation about that axis (joint6) stays free, so it stays at the seed's."""
        pin = self.pin
        target = np.asarray(target_xyz, float)
        if target.shape != (3,) or not np.isfinite(target).all():
            raise IKError(f"target must be 3 finite coordinates, got {target_xyz!r}")
        axis = None
        if tool_axis is not None:
            axis = np.asarray(tool_axis, float)
            if axis.shape != (3,) or not np.isfinite(axis).all() or np.linalg.norm(axis) < 1e-9:
                raise IKError(f"tool_axis must be a finite non-zero direction, got {tool_axis!r}")
            axis = axis / np.linalg.norm(axis)
        q = np.clip(np.asarray(seed, float), self.lower, self.upper)
        err, tilt = np.inf, 0.0
        for _ in range(iterations):
            pin.computeJointJacobians(self.model, self.data, q)
            pin.framesForwardKinematics(self.model, self.data, q)
            frame = self.data.oMf[self.frame]
            e = target - frame.translation
            err = float(np.linalg.norm(e))
            J6 = pin.getFrameJacobian(self.model, self.data, self.frame, pin.LOCAL_WORLD_ALIGNED)
            if axis is None:
                J, task = J6[:3], e
            else:
                z = frame.rotation[:, 2]
                turn = np.cross(z, axis)   # the rotation that takes the tool axis onto the wanted one
                tilt = float(np.arctan2(np.linalg.norm(turn), z @ axis))
                J, task = np.vstack([J6[:3], axis_weight * J6[3:]]), np.concatenate([e, axis_weight * turn])
            if err <= tolerance_m and tilt <= axis_tolerance_rad:
                return q
            dq = J.T @ np.linalg.solve(J @ J.T + damping * np.eye(len(task)), task)
            q = np.clip(q + dq, self.lower, self.upper)
        what = "" if axis is None else f", tool axis {np.degrees(tilt):.1f} deg off"
        raise IKError(f"{self.side} arm: no pose within the joint limits reaches {target.round(3).tolist()} "
                      f"(closest {err * 1000:.1f} mm away{what})")

    def move_duration(self, q_from, q_to, fraction: float = 0.5) -> float:
        """Seconds for a straight joint-space move at most ``fraction`` of each joint's velocity limit."""
        dq = np.abs(np.asarray(q_to, float) - np.asarray(q_from, float))
        return float(max((dq / (self.vmax * fraction)).max(), 0.0))
