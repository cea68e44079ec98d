"""The twin's arm backends: who moves the arms and draws the cameras (``arm_backend`` kinematic | mujoco).

``kinematic`` (default): the twin's own first-order arms and grippers and its 2-D camera drawings.

``mujoco``: the arms, grippers and labware are simulated by :class:`~agentchemist.sim.mujoco_arms.MujocoArms`
in the scene written from the scenario's layout. Trajectories are followed point by point; the twin still
validates and clamps every command (same limits, same CommandResult, same warnings). After each physics
step the twin's arm joints are set to the simulated ones and its gripper models follow the simulated
openings (its pipette, bench-effect and audio models read those), and /joint_states comes from the
simulation. The cameras are MuJoCo renders: colour, depth aligned to it (m) and the pinhole K; the
beaker's liquid takes the twin's solution colour before each render, and in a beaker where solid dissolves
the twin's undissolved mass is shown as grains, a pile or a cloud (:mod:`.mujoco_solid`).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

from agentchemist.workcell.robot import ARM_JOINT_LIMITS_RAD, GRIPPER_RANGE_M, SIDES
from agentchemist.sim.errors import SimCommandError
from agentchemist.sim.types import CommandResult

__all__ = ["ARM_BACKENDS", "KinematicArms", "MujocoBackend", "make_arm_backend"]

ARM_BACKENDS = ("kinematic", "mujoco")
Points = Sequence[tuple[float, Sequence[float]]]


class KinematicArms:
    """The twin's own arms and drawings (no physics)."""

    name = "kinematic"

    def __init__(self, twin: Any) -> None:
        self.twin = twin

    def command_arm(self, side: str, joint_names: Sequence[str], points: Points, now: float) -> CommandResult:
        try:
            return self.twin.command_arm(side, _ordered(side, joint_names, points[-1][1]), now)
        except (SimCommandError, ValueError, TypeError, IndexError) as exc:
            return _refused(exc)

    def command_gripper(self, side: str, opening_m: float, now: float) -> CommandResult:
        try:
            return self.twin.command_gripper(side, opening_m, now)
        except (SimCommandError, ValueError, TypeError) as exc:
            return _refused(exc)

    def step(self, now: float) -> None:
        self.twin.step(now)

    def joint_states(self) -> tuple[list[str], list[float]]:
        return self.twin.joint_states()

    def render(self, camera: str, now: float) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        """(rgb, depth m or None, K or None)."""
        return self.twin.render_camera(camera, now), None, None


class MujocoBackend(KinematicArms):
    """Arms, grippers, labware and cameras in MuJoCo; the twin's chemistry reads their state."""

    name = "mujoco"

    def __init__(self, twin: Any, urdf_text: str, asset_dir: Path) -> None:
        super().__init__(twin)
        from agentchemist.sim.mujoco_arms import MujocoArms, Trajectory
        from agentchemist.sim.scene_model import twin_scene

        from agentchemist.sim.mjcf_scene import CAMERA_SIZE

        self._trajectory = Trajectory
        # The renders are the robot's 640 x 480, not the scenario's drawing size (cameras.width x height,
        # the 2-D drawing's): the tags are read at the resolution the robot's cameras have.
        # The physical gripper moves at the twin's gripper speed (the Piper's): the twin's gripper model,
        # which squeezes the pipette's bulb and draws, follows the simulated opening, and a gripper that
        # jumped there would be reported done (joint_states) before the twin's had got there.
        self.physics = MujocoArms(twin_scene(twin), urdf_text, asset_dir, *CAMERA_SIZE,
                                  gripper_speed_m_s=twin.scenario.robot.gripper_max_speed_m_s)
        model = self.physics.model
        # Fixed labware bodies and where the scene put them: a bench change in the twin (an item taken away
        # or moved, by a fault or by the robot's own carry) moves them before the next render.
        self._fixed = {b.name: model.body(b.name).id for b in twin_scene(twin) if not b.free and b.name != "bench"}
        self._bench_key = _bench_key(twin.scene_state())  # the bench the scene was built from
        self._liquid = self.physics.model.geom(f"{twin.scenario.beaker.id}_liquid").id if _has_geom(
            self.physics.model, f"{twin.scenario.beaker.id}_liquid") else None
        from agentchemist.sim.mujoco_solid import SolidDisplay

        beaker = twin.scenario.beaker.id
        self._solid = SolidDisplay(model, beaker) if SolidDisplay.present(model, beaker) else None
        self._offset = twin.t - self.physics.t  # physics time starts at 0 (after settling), the twin's at t
        self._sync()

    def command_arm(self, side: str, joint_names: Sequence[str], points: Points, now: float) -> CommandResult:
        result = super().command_arm(side, joint_names, points, now)
        if not result.accepted:
            return result  # refused (NaN, wrong length): the physics keeps its present targets
        clamped = tuple((float(t), tuple(_clamp(_ordered(side, joint_names, p)))) for t, p in points)
        joints = tuple(f"{side}_joint{i}" for i in range(1, 7))
        self.physics.follow(self._trajectory(joints, clamped, now - self._offset))
        return result

    def command_gripper(self, side: str, opening_m: float, now: float) -> CommandResult:
        result = super().command_gripper(side, opening_m, now)
        if result.accepted:
            self.physics.set_gripper(side, float(result.accepted_value))
        return result

    def step(self, now: float) -> None:
        self.physics.step_to(now - self._offset)
        self._sync()
        self.twin.step(now)

    def joint_states(self) -> tuple[list[str], list[float]]:
        names, positions, _ = self.physics.joint_state()
        return names, positions

    def render(self, camera: str, now: float) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        self.step(now)
        state = self.twin.scene_state()
        self._follow_bench(state)
        if self._solid is not None:
            beaker = next(i for i in state["items"] if i.id == state["beaker_id"])
            stirring = bool(state["stirrer_on"]) and beaker.on == state["stirrer_id"]
            rgba = self._solid.update(float(state["solid_in_vessel_g"]), float(state["beaker_volume_ml"]), stirring,
                                      self.physics.t, state["solution_rgb"])
            if self._liquid is not None:
                self.physics.model.geom_rgba[self._liquid] = rgba
            self.physics.forward()  # the grains' new places into the geoms' world poses
        elif self._liquid is not None:
            r, g, b = state["solution_rgb"]
            self.physics.model.geom_rgba[self._liquid] = (r / 255.0, g / 255.0, b / 255.0, 0.85)
        frame = self.physics.render(camera)
        return frame.rgb, frame.depth, frame.k

    def _follow_bench(self, state: dict) -> None:
        """Fixed labware where the twin's bench has it now; an item gone from the bench goes under the floor
        (out of every camera's view). Only items in the scene at the start can come and go."""
        key = _bench_key(state)
        if key == self._bench_key:
            return
        self._bench_key = key
        from agentchemist.sim.scene_model import FLOOR_Z, twin_scene

        now = {b.name: b for b in twin_scene(self.twin)}
        model = self.physics.model
        for name, body_id in self._fixed.items():
            body = now.get(name)
            model.body_pos[body_id] = body.pos if body is not None else (0.0, 0.0, FLOOR_Z - 5.0)
        self.physics.forward()

    def _sync(self) -> None:
        """The twin's arms are where the simulated ones are; its grippers head for the simulated openings."""
        for side in SIDES:
            q = self.physics.arm_positions(side)
            arm = self.twin.arms[side]
            arm.position, arm.command = list(q), list(q)
            opening = float(self.physics.data.qpos[self.physics.model.joint(f"{side}_gripper").qposadr[0]])
            gripper = self.twin.grippers[side]
            if not gripper.stalled:
                gripper.command_m = min(max(opening, GRIPPER_RANGE_M[0]), GRIPPER_RANGE_M[1])


def make_arm_backend(name: str, twin: Any, urdf_file: Path | None = None, asset_dir: Path | None = None):
    """The backend called ``name`` ("kinematic" or "mujoco") for ``twin``."""
    if name == "kinematic":
        return KinematicArms(twin)
    if name == "mujoco":
        if urdf_file is None or asset_dir is None:
            raise ValueError("arm_backend mujoco needs the URDF file and a folder for the scene's textures")
        return MujocoBackend(twin, Path(urdf_file).read_text(), Path(asset_dir))
    raise ValueError(f"arm_backend must be one of {ARM_BACKENDS}, got {name!r}")


def _refused(exc: Exception) -> CommandResult:
    """A command the twin refused (non-finite or malformed): nothing moves; the reason says why."""
    return CommandResult(None, clamped=False, accepted=False, reason=f"command refused: {exc}")


def _bench_key(state: dict) -> tuple:
    return tuple((i.id, i.present, tuple(i.position), i.on) for i in state["items"])


def _has_geom(model: Any, name: str) -> bool:
    try:
        model.geom(name)
    except KeyError:
        return False
    return True


def _ordered(side: str, joint_names: Sequence[str], positions: Sequence[float]) -> list[float]:
    """Six positions in joint1..joint6 order; ``joint_names`` (may be empty: already in order)."""
    values = [float(v) for v in positions]
    if not joint_names:
        return values
    index = {n: i for i, n in enumerate(joint_names)}
    wanted = [f"{side}_joint{i}" for i in range(1, 7)]
    if set(wanted) <= set(index):
        return [values[index[n]] for n in wanted]
    return values  # names the twin does not know: it validates the values and reports


def _clamp(values: Sequence[float]) -> list[float]:
    out = []
    for v, (lo, hi) in zip(values, ARM_JOINT_LIMITS_RAD):
        out.append(min(max(v, lo), hi))
    return out
