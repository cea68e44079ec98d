"""The scripted backend's targets from where the camera sees the labware: a seen tag -> the robot's base
frame -> a tool-centre target on the item -> joints by inverse kinematics, timed within the velocity limits.

The vision supervisor's DescribeScene gives each seen item's tag pose in a camera's optical frame (the
response header's frame, a URDF link such as ``front_color_optical_frame``; an all-zero pose, a zero quaternion, means
not known: the kinematic twin's drawn camera has no calibration). :class:`RobotFrames` places that frame
in the robot's base (the URDF root, the frame :class:`~agentchemist.policy.ik.ArmIK` solves in) with
pinocchio: the front camera is fixed; a wrist camera moves with its arm, so it is placed at the measured
joints. :mod:`agentchemist.workcell.grasp_points` says where on the item the hand goes, from its tag. The
IK starts from the station's named pose (config/poses.yaml), so the arm stays on the taught branch.

Only the primitives that touch a movable item use it: grasp the pipette (its bulb), position over the beaker
(the held pipette's tip above the mouth; only when ``camera_kinds`` names it: see its description), grasp
the solid bottle (its neck; only when ``camera_kinds`` names it: the twin's weighing effects read the taught
pose), and return the pipette to where it was taken. Fixed stations (the titrant bottle, the pour pose, the
beaker stations, the buttons) keep their named poses, and so does everything when no pose is known. A pose
that is known but bad (not finite, behind the camera, not a unit quaternion, a face turned away, too old, in
a frame the URDF does not have) or a target out of reach raises PrimitiveError: the robot does not move.

No rclpy, no clock: the caller passes ``now`` and the measured joints.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np
from scipy.spatial.transform import Rotation

from agentchemist.workcell.grasp_points import PIPETTE, grasp_point
from agentchemist.workcell.labware import canonical_kind
from agentchemist.params import param
from agentchemist.policy.ik import ArmIK, IKError, default_urdf
from agentchemist.policy.primitives import (ALIASES, BOTTLE_POSE, BOTTLE_SIDE, POUR_POSE, Poses, PrimitiveError,
                                            Step, _grasp_object, is_beaker, plan_primitive)

__all__ = ["RobotFrames", "SeenObject", "SeenPlan", "SeenTargetConfig", "SeenTargets", "seen_kind"]

TARGET_SOURCES = ("camera", "named")
#: The pipette is taken from above: the fingers close across the bulb, the tube hangs along the tool axis.
DOWN = (0.0, 0.0, -1.0)
#: A tag farther than this from the camera (m) is not on the bench: a garbage pose.
MAX_RANGE_M = 5.0


@dataclass(frozen=True)
class SeenTargetConfig:
    target_source: str = param("camera", choices=TARGET_SOURCES,
                               description="Arm targets of grasp / position subtasks: camera (inverse kinematics "
                                           "to where the front camera sees the labware when its 3-D pose is "
                                           "known, else the named pose) | named (always the named poses)")
    camera_kinds: tuple = param(("pipette",), choices=("pipette", "beaker", "solid_bottle"),
                                description="Labware whose seen pose the targets come from (target_source camera). "
                                            "beaker is left out by default: the position-only IK over the beaker "
                                            "tilts the hand over the pH probe's tag, which the bench watch then "
                                            "counts as missing (every titration with arm_backend mujoco aborted); "
                                            "solid_bottle too: the twin's weighing effects decide the bottle is "
                                            "held from the taught solid_bottle pose")
    target_scene_timeout_s: float = param(2.0, unit="s", low=0.0, high=60.0,
                                          description="Wait this long (wall) for the scene before a grasp or "
                                                      "position subtask; no answer: the named pose")
    pose_max_age_s: float = param(2.0, unit="s", low=0.0, high=60.0,
                                  description="A seen pose older than this (sim) is stale: the subtask fails")
    approach_height_m: float = param(0.08, unit="m", low=0.0, high=0.3,
                                     description="A grasp first goes this far above the grasp point")
    tip_clearance_m: float = param(0.0065, unit="m", low=0.0, high=0.2,
                                   description="Held pipette's tip above the beaker's rim (the drawing's 6 px)")
    speed_fraction: float = param(0.5, low=0.05, high=1.0,
                                  description="IK moves take at least the time each joint needs at this "
                                              "fraction of its URDF velocity limit")


@dataclass(frozen=True)
class SeenObject:
    """One item as DescribeScene gives it: tag position (m) and orientation (x, y, z, w) in ``frame``."""

    id: str
    kind: str
    position: tuple[float, float, float]
    orientation: tuple[float, float, float, float]

    @property
    def known(self) -> bool:
        """The contract: a zero quaternion means the pose is not known. So does a zero position (no tag
        sits in the camera's lens): a SceneObject whose pose was never set has geometry_msgs' default,
        position 0 and the identity quaternion (0, 0, 0, 1), which is what a vision supervisor without
        3-D poses sends."""
        return bool(np.any(np.asarray(self.orientation, float) != 0.0)) and \
            bool(np.any(np.asarray(self.position, float) != 0.0))


@dataclass(frozen=True)
class SeenPlan:
    steps: list[Step]
    note: str                                  #: what the log says: "IK to pipette seen at (x, y, z) m"
    taken: tuple[float, ...] | None = None     #: the grasp joints, to put the item back there


class RobotFrames:
    """Placements of the URDF's frames in its root (pinocchio, the whole robot at given joints)."""

    def __init__(self, urdf: str | Path | None = None):
        import pinocchio as pin
        self.pin = pin
        self.model = pin.buildModelFromUrdf(str(urdf or default_urdf()))
        self.data = self.model.createData()

    def placement(self, frame: str, joints: Mapping[str, float] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(R, p) of ``frame`` in the root. A frame on a moving link needs the measured ``joints``."""
        m, pin = self.model, self.pin
        if not frame or not m.existFrame(frame):
            raise PrimitiveError(f"the scene's frame {frame!r} is not a frame of the robot's URDF")
        fid = m.getFrameId(frame)
        q = pin.neutral(m)
        moving = self._moving_joints(m.frames[fid].parentJoint)
        for name in moving:
            value = (joints or {}).get(name)
            if value is None or not math.isfinite(value):
                raise PrimitiveError(f"the scene's frame {frame} moves with {name}, whose position is not known")
            jid = m.getJointId(name)
            q[m.joints[jid].idx_q] = float(value)
        pin.framesForwardKinematics(m, self.data, q)
        oMf = self.data.oMf[fid]
        return oMf.rotation.copy(), oMf.translation.copy()

    def _moving_joints(self, jid: int) -> list[str]:
        out = []
        while jid > 0:
            out.append(self.model.names[jid])
            jid = self.model.parents[jid]
        return out


def seen_kind(primitive: str, parameters: Mapping | None) -> str | None:
    """The labware kind whose pose a primitive's target comes from, or None (a fixed station / no item)."""
    p = dict(parameters or {})
    name = ALIASES.get(primitive, primitive) if not (primitive == "grasp" and p.get("object")) else primitive
    if primitive in ("place", "move_to") and p.get("object") is not None:
        return None                                   # a beaker carried between stations: named stations
    if name == "grasp":
        which = _grasp_object(str(p["object"]))
        return {"grasp_pipette": "pipette", "grasp_bottle": "solid_bottle"}.get(which or "")
    return {"grasp_pipette": "pipette", "grasp_bottle": "solid_bottle", "position_over_beaker": "beaker",
            "return_pipette": "pipette"}.get(name)


@dataclass
class SeenTargets:
    """Plans the camera-targeted primitives; remembers where each arm took the pipette from."""

    poses: Poses
    config: SeenTargetConfig = field(default_factory=SeenTargetConfig)
    urdf: str | Path | None = None
    taken: dict[str, tuple[float, ...]] = field(default_factory=dict)

    def __post_init__(self):
        self.frames = RobotFrames(self.urdf)
        self._ik: dict[str, ArmIK] = {}

    def ik(self, side: str) -> ArmIK:
        if side not in self._ik:
            self._ik[side] = ArmIK(side, self.urdf)
        return self._ik[side]

    # ------------------------------------------------------------------ seen poses
    def base_pose(self, frame: str, obj: SeenObject, stamp: float, now: float,
                  joints: Mapping[str, float] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(R, p) of the item's tag in the robot's base; raises PrimitiveError for a bad or stale pose."""
        p, q = np.asarray(obj.position, float), np.asarray(obj.orientation, float)
        if p.shape != (3,) or q.shape != (4,) or not (np.isfinite(p).all() and np.isfinite(q).all()):
            raise PrimitiveError(f"{obj.id}: the seen pose is not finite ({obj.position}, {obj.orientation})")
        if abs(float(np.linalg.norm(q)) - 1.0) > 0.01:
            raise PrimitiveError(f"{obj.id}: the seen orientation is not a unit quaternion (|q| = "
                                 f"{np.linalg.norm(q):.3f})")
        if not 0.0 < p[2] < MAX_RANGE_M or np.linalg.norm(p) > MAX_RANGE_M:
            raise PrimitiveError(f"{obj.id}: the seen position {p.round(3).tolist()} m is not in front of the "
                                 f"camera within {MAX_RANGE_M} m")
        r_tag = Rotation.from_quat(q / np.linalg.norm(q)).as_matrix()  # (x, y, z, w), as geometry_msgs
        if float(r_tag[:, 2] @ p) >= 0.0:
            raise PrimitiveError(f"{obj.id}: the seen tag faces away from the camera (a flipped pose)")
        age = float(now) - float(stamp)
        if not math.isfinite(age) or age > self.config.pose_max_age_s:
            raise PrimitiveError(f"{obj.id}: the seen pose is stale ({age:.1f} s old, limit "
                                 f"{self.config.pose_max_age_s:.1f} s)")
        r_cam, p_cam = self.frames.placement(frame, joints)
        return r_cam @ r_tag, r_cam @ p + p_cam

    def point_on(self, frame: str, obj: SeenObject, stamp: float, now: float,
                 joints: Mapping[str, float] | None = None) -> np.ndarray:
        """The item's grasp point (workcell/grasp_points.py) in the robot's base."""
        r, p = self.base_pose(frame, obj, stamp, now, joints)
        return p + r @ np.asarray(grasp_point(canonical_kind(obj.kind)).offset)

    # ------------------------------------------------------------------ planning
    def needs_scene(self, primitive: str, parameters: Mapping | None) -> bool:
        """Whether the primitive's target may come from the scene (putting back the pipette does not)."""
        return (self.config.target_source == "camera" and seen_kind(primitive, parameters) in self.config.camera_kinds
                and ALIASES.get(primitive, primitive) != "return_pipette")

    def plan(self, primitive: str, side: str | None, parameters: Mapping | None, frame: str, stamp: float,
             objects: Iterable[SeenObject], now: float, arm_now: Mapping[str, Sequence[float] | None],
             joints: Mapping[str, float] | None = None) -> SeenPlan | None:
        """Steps with IK targets, or None when the named poses stand (config, no item, pose not known).

        ``arm_now``: side -> measured joints (moves are timed from there); ``joints``: every measured
        joint by name (for a wrist camera's frame)."""
        p = dict(parameters or {})
        kind = seen_kind(primitive, p)
        side = p.get("side") or side or (BOTTLE_SIDE if kind == "solid_bottle" else "right")
        if self.config.target_source == "named" or kind not in self.config.camera_kinds:
            return None
        name = ALIASES.get(primitive, primitive)
        if name == "return_pipette":
            return self._return(side)
        obj = self._find(kind, p, list(objects))
        if obj is None or not obj.known:
            if kind == "pipette":
                self.taken.pop(side, None)  # a named grasp: it goes back to the named pose
            return None
        point = self.point_on(frame, obj, stamp, now, joints)
        where = "(" + ", ".join(f"{v:.3f}" for v in point) + ") m"
        current = arm_now.get(side)
        if current is None or len(current) != 6:
            raise PrimitiveError(f"the {side} arm's joints are not known: a move cannot be timed within its limits")
        g = self.poses.gripper_mm
        if kind == "beaker":
            target = point + np.array([0.0, 0.0, self.config.tip_clearance_m + PIPETTE.tip_below_bulb()])
            # Position only: straight down is out of the Piper's wrist range (joint5 +-70 deg) that high over the
            # bench; the tip is taken as below the bulb, as the pipette hangs when held from above.
            q = self._solve(side, target, self.poses.pose(side, "over_beaker"), obj.id)
            return SeenPlan([self._arm(side, q, current, 2.0, f"move over {obj.id} (IK)")],
                            f"IK over {obj.id} seen at {where}")
        seed = self.poses.pose(side, "pipette" if kind == "pipette" else BOTTLE_POSE)
        axis = DOWN if kind == "pipette" else None   # the bottle is held from the side (poured by joint6)
        at = self._solve(side, point, seed, obj.id, axis)
        above = self._above(side, point, at, axis)
        approach = self._arm(side, above, current, 2.0, f"approach {obj.id} (IK)")
        reach = self._arm(side, at, above, 1.0, f"move to {obj.id} (IK)")
        if kind == "pipette":
            steps = [Step("gripper", side, (g["open_mm"] / 1000.0,), 0.8, 8.0, "open"), approach, reach,
                     Step("gripper", side, (g["grasp_mm"] / 1000.0,), 0.8, 8.0, "close on the bulb")]
            self.taken[side] = tuple(float(v) for v in at)
            return SeenPlan(steps, f"IK to {obj.id} seen at {where}", self.taken[side])
        named = plan_primitive("grasp_bottle", self.poses, side)  # open, bottle pose, close, pour pose
        pour = self.poses.pose(side, POUR_POSE)
        lift = replace(named[3], duration_s=max(named[3].duration_s, self.ik(side).move_duration(
            at, pour, self.config.speed_fraction)))
        return SeenPlan([named[0], approach, reach, named[2], lift], f"IK to {obj.id} seen at {where}")

    def _return(self, side: str) -> SeenPlan | None:
        at = self.taken.pop(side, None)
        if at is None:
            return None
        named = plan_primitive("return_pipette", self.poses, side)   # pipette pose, open, home
        put = replace(named[0], target=at, label="put the pipette back where it was taken (IK)")
        home = replace(named[2], duration_s=max(named[2].duration_s, self.ik(side).move_duration(
            at, named[2].target, self.config.speed_fraction)))
        return SeenPlan([put, named[1], home], "IK: the pipette goes back where it was taken from")

    def _find(self, kind: str, p: Mapping, objects: list[SeenObject]) -> SeenObject | None:
        wanted = p.get("object") if kind != "beaker" else p.get("target")
        if wanted:
            hit = next((o for o in objects if o.id == wanted), None)
            if hit is not None or kind != "beaker" or is_beaker(str(wanted)):
                return hit
        same = [o for o in objects if canonical_kind(o.kind) == kind]
        return same[0] if len(same) == 1 else None  # several and none named: the named pose

    def _above(self, side: str, point: np.ndarray, at: np.ndarray, axis) -> np.ndarray:
        """The approach: approach_height_m above the grasp point, or lower where the wrist's range ends
        (tool straight down, the Piper's joint5 +-70 deg limits how high it can be over the bench)."""
        for k in (1.0, 0.75, 0.5, 0.25):
            try:
                return self.ik(side).solve(point + np.array([0.0, 0.0, k * self.config.approach_height_m]), at,
                                           tool_axis=axis)
            except IKError:
                continue
        return at

    def _solve(self, side: str, target: np.ndarray, seed: Sequence[float], what: str, axis=None) -> np.ndarray:
        try:
            return self.ik(side).solve(target, seed, tool_axis=axis)
        except IKError as exc:
            raise PrimitiveError(f"{what}: {exc}") from None

    def _arm(self, side: str, q, q_from, duration: float, label: str) -> Step:
        need = self.ik(side).move_duration(q_from, q, self.config.speed_fraction)
        return Step("arm", side, tuple(float(v) for v in q), max(duration, need), 15.0 + need, label)
