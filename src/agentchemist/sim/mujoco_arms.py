"""MuJoCo arm backend of the twin: the two Pipers under position actuators in the lab scene, RGB-D cameras.

The scene is :mod:`.mjcf_scene`'s (robot from the URDF, bench from the scenario's layout). Commands are
what the robot's controllers take: a joint trajectory per arm (points with time from start, linearly
interpolated, as joint_trajectory_controller does with position-only points) and a gripper opening. The
physics steps at the model's 2 ms; a grasp is contact: the pipette is held only while the fingers squeeze
it (force-limited to the URDF's 10 N) and friction carries its weight, so a weak or mis-placed grasp
slips. Cameras render headless (EGL, else OSMesa: :mod:`.mujoco_gl`); depth is the same camera's, so it is
aligned to colour pixel for pixel, in metres along the optical axis (REP 118's 32FC1).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from agentchemist.workcell.robot import ARM_JOINTS, JOINT_NAMES, SIDES, check_side
from agentchemist.sim.mjcf_scene import CAMERA_FOVY_DEG, CAMERAS, load_scene, mujoco
from agentchemist.sim.scene_model import SceneBody

__all__ = ["CameraFrame", "MujocoArms", "Trajectory", "intrinsics"]


@dataclass(frozen=True)
class Trajectory:
    """Joint names, then (time from start s, positions) points; starts at ``start`` (sim time s)."""

    joints: tuple[str, ...]
    points: tuple[tuple[float, tuple[float, ...]], ...]
    start: float

    def at(self, t: float, begin: Sequence[float]) -> np.ndarray:
        """Positions at sim time ``t``; ``begin``: the joints' targets when the trajectory started."""
        times = [0.0] + [p[0] for p in self.points]
        values = np.array([list(begin)] + [list(p[1]) for p in self.points])
        s = t - self.start
        return np.array([np.interp(s, times, values[:, j]) for j in range(len(self.joints))])

    @property
    def end(self) -> float:
        return self.start + (self.points[-1][0] if self.points else 0.0)


@dataclass(frozen=True)
class CameraFrame:
    """One RGB-D frame: rgb (h, w, 3) uint8, depth (h, w) float32 m (0 where nothing is hit), K (3x3)."""

    camera: str
    rgb: np.ndarray
    depth: np.ndarray
    k: np.ndarray


def intrinsics(width: int, height: int, fovy_deg: float = CAMERA_FOVY_DEG) -> np.ndarray:
    """Pinhole K of a MuJoCo camera (vertical field of view, square pixels, centred)."""
    f = (height / 2.0) / math.tan(math.radians(fovy_deg) / 2.0)
    return np.array([[f, 0.0, width / 2.0], [0.0, f, height / 2.0], [0.0, 0.0, 1.0]])


class MujocoArms:
    """The physics of the arms and the lab; ``t`` is its own sim time (s)."""

    def __init__(self, bodies: Iterable[SceneBody], urdf_text: str, asset_dir: Path, width: int = 320,
                 height: int = 240, gripper_speed_m_s: float | None = None) -> None:
        """``gripper_speed_m_s``: the gripper's target moves toward a commanded opening at this speed, as
        the Piper's gripper firmware drives it (None: the target jumps, the actuator's force limit alone
        sets the pace)."""
        if gripper_speed_m_s is not None and not (math.isfinite(gripper_speed_m_s) and gripper_speed_m_s > 0):
            raise ValueError(f"gripper_speed_m_s must be > 0, got {gripper_speed_m_s!r}")
        self.gripper_speed = gripper_speed_m_s
        self._grip_goal: dict[str, float] = {}
        self.model, self.mjcf = load_scene(bodies, urdf_text, Path(asset_dir))
        self.data = mujoco.MjData(self.model)
        self.width, self.height = int(width), int(height)
        self._renderer: _Offscreen | None = None
        self._act = {n: self.model.actuator(n).id for n in JOINT_NAMES}
        self._qadr = {n: int(self.model.joint(n).qposadr[0]) for n in JOINT_NAMES}
        self._vadr = {n: int(self.model.joint(n).dofadr[0]) for n in JOINT_NAMES}
        self._traj: dict[str, tuple[Trajectory, np.ndarray]] = {}
        for side in SIDES:
            self.set_targets([f"{side}_gripper"], [self.model.actuator_ctrlrange[self._act[f"{side}_gripper"]][1]])
            self.data.qpos[self._qadr[f"{side}_gripper"]] = self.data.ctrl[self._act[f"{side}_gripper"]]
        mujoco.mj_forward(self.model, self.data)
        self.settle(0.5)

    @property
    def t(self) -> float:
        return float(self.data.time)

    # ----------------------------------------------------------------- commands
    def follow(self, trajectory: Trajectory) -> None:
        """Start following a trajectory (replaces the one of the same joints' arm)."""
        unknown = [j for j in trajectory.joints if j not in self._act]
        if unknown:
            raise ValueError(f"unknown joints {unknown}")
        for p in trajectory.points:
            if len(p[1]) != len(trajectory.joints) or not all(math.isfinite(v) for v in p[1]):
                raise ValueError("trajectory point positions must be finite, one per joint")
        begin = np.array([self.data.ctrl[self._act[j]] for j in trajectory.joints])
        side = trajectory.joints[0].split("_", 1)[0]
        self._traj[side] = (trajectory, begin)

    def set_targets(self, joints: Sequence[str], positions: Sequence[float]) -> None:
        """Hold ``joints`` at ``positions`` (clamped to the actuator ranges)."""
        for name, value in zip(joints, positions):
            lo, hi = self.model.actuator_ctrlrange[self._act[name]]
            self.data.ctrl[self._act[name]] = min(max(float(value), lo), hi)

    def set_gripper(self, side: str, opening_m: float) -> None:
        if self.gripper_speed is None:
            self.set_targets([f"{check_side(side)}_gripper"], [opening_m])
        else:  # step_to moves the target there at the gripper's speed
            self._grip_goal[check_side(side)] = float(opening_m)

    # ----------------------------------------------------------------- time
    def step_to(self, t: float) -> None:
        """Advance the physics to sim time ``t``, feeding trajectory targets at every step."""
        dt = self.model.opt.timestep
        while self.data.time + dt / 2.0 <= t:
            for side, (traj, begin) in list(self._traj.items()):
                self.set_targets(traj.joints, traj.at(self.data.time, begin))
                if self.data.time > traj.end:
                    del self._traj[side]
            for side, goal in list(self._grip_goal.items()):
                a = self._act[f"{side}_gripper"]
                now, reach = float(self.data.ctrl[a]), self.gripper_speed * dt
                self.set_targets([f"{side}_gripper"], [min(max(goal, now - reach), now + reach)])
                if abs(goal - now) <= reach:
                    del self._grip_goal[side]
            mujoco.mj_step(self.model, self.data)

    def forward(self) -> None:
        """Recompute positions after the model changed (a fixed body moved), without advancing time."""
        mujoco.mj_forward(self.model, self.data)

    def settle(self, seconds: float) -> None:
        self.step_to(self.t + seconds)

    def moving(self, side: str) -> bool:
        return side in self._traj

    # ----------------------------------------------------------------- state
    def joint_state(self) -> tuple[list[str], list[float], list[float]]:
        """Names, positions and velocities of every commanded joint (the robot's /joint_states)."""
        names = list(JOINT_NAMES)
        return (names, [float(self.data.qpos[self._qadr[n]]) for n in names],
                [float(self.data.qvel[self._vadr[n]]) for n in names])

    def arm_positions(self, side: str) -> list[float]:
        return [float(self.data.qpos[self._qadr[f"{side}_joint{i}"]]) for i in range(1, ARM_JOINTS + 1)]

    def body_position(self, name: str) -> np.ndarray:
        return self.data.xpos[self.model.body(name).id].copy()

    def touching(self, body_a: str, body_b: str) -> bool:
        a, b = self.model.body(body_a).id, self.model.body(body_b).id
        for c in self.data.contact[:self.data.ncon]:
            pair = {int(self.model.geom_bodyid[c.geom1]), int(self.model.geom_bodyid[c.geom2])}
            if pair == {a, b}:
                return True
        return False

    def held_by(self, body: str = "pipette") -> str | None:
        """The side whose two fingers both touch ``body`` (a grasp by contact), or None."""
        for side in SIDES:
            if self.touching(f"{side}_finger_a", body) and self.touching(f"{side}_finger_b", body):
                return side
        return None

    # ----------------------------------------------------------------- cameras
    def render(self, camera: str) -> CameraFrame:
        """Colour and aligned depth of one camera at the current state: one render pass, both buffers read
        back together (mujoco.Renderer would render the scene twice)."""
        if camera not in CAMERAS:
            raise ValueError(f"unknown camera {camera!r}; cameras: {CAMERAS}")
        if self._renderer is None:
            self._renderer = _Offscreen(self.model, self.width, self.height)
        rgb, depth = self._renderer.render(self.data, self.model.camera(camera).id)
        return CameraFrame(camera, rgb, depth, intrinsics(self.width, self.height))

    def close(self) -> None:
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None


class _Offscreen:
    """A headless GL context with MuJoCo's scene and render context for one image size."""

    def __init__(self, model: mujoco.MjModel, width: int, height: int) -> None:
        self.model = model
        self.gl = mujoco.GLContext(width, height)
        self.gl.make_current()
        self.ctx = mujoco.MjrContext(model, mujoco.mjtFontScale.mjFONTSCALE_100)
        mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN, self.ctx)
        self.scene = mujoco.MjvScene(model, maxgeom=2000)
        self.option = mujoco.MjvOption()
        self.camera = mujoco.MjvCamera()
        self.camera.type = mujoco.mjtCamera.mjCAMERA_FIXED
        self.rect = mujoco.MjrRect(0, 0, width, height)
        self.rgb = np.empty((height, width, 3), dtype=np.uint8)
        self.zbuf = np.empty((height, width), dtype=np.float32)
        extent = model.stat.extent
        self.near, self.far = model.vis.map.znear * extent, model.vis.map.zfar * extent

    def render(self, data: mujoco.MjData, camera_id: int) -> tuple[np.ndarray, np.ndarray]:
        self.gl.make_current()
        self.camera.fixedcamid = camera_id
        mujoco.mjv_updateScene(self.model, data, self.option, None, self.camera, mujoco.mjtCatBit.mjCAT_ALL,
                               self.scene)
        mujoco.mjr_render(self.rect, self.scene, self.ctx)
        mujoco.mjr_readPixels(self.rgb, self.zbuf, self.rect, self.ctx)
        rgb = np.flipud(self.rgb).copy()  # GL rows run bottom-up
        z = np.flipud(self.zbuf)
        # Depth buffer -> distance along the optical axis (m); the far plane means nothing was hit.
        depth = (self.near / (1.0 - z * (1.0 - self.near / self.far))).astype(np.float32)
        depth[z >= 1.0 - 1e-7] = 0.0
        return rgb, depth

    def close(self) -> None:
        self.ctx.free()
        self.gl.free()
