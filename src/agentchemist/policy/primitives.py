"""Scripted motion primitives: the action policy's deterministic backend (and the VLA's fallback).

A primitive is a list of `Step`s: move an arm to a named joint pose, set a gripper opening, or wait.
The executor (the action_policy node) sends each step and checks completion against the measured joint
states with `step_reached`; the core never talks to a robot or reads a clock.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import yaml

from agentchemist.workcell.robot import ARM_JOINT_LIMITS_RAD, ARM_JOINTS
from agentchemist.workcell.stations import BUTTON_SUFFIX, STATION_PREFIX, button_pose, station_name, station_pose
from agentchemist.paths import config_dir
from agentchemist.perception.scene import aligned

JOINTS_PER_ARM = ARM_JOINTS


class PrimitiveError(ValueError):
    """Unknown primitive, unknown pose, or a target outside the arm's range."""


class NotSeenError(PrimitiveError):
    """The object is not in the front camera's view (the robot's own arm may hide it for a frame)."""


@dataclass(frozen=True)
class Step:
    kind: str                   #: "arm" | "gripper" | "wait"
    side: str = "right"
    target: tuple[float, ...] = ()   #: joint angles (rad) for arm; (opening_m,) for gripper
    duration_s: float = 1.0     #: time allotted to the motion (trajectory time_from_start)
    timeout_s: float = 10.0     #: give up after this long
    label: str = ""


@dataclass(frozen=True)
class Poses:
    arms: dict[str, dict[str, tuple[float, ...]]]
    gripper_mm: dict[str, float]
    tolerance_rad: float

    def pose(self, side: str, name: str) -> tuple[float, ...]:
        try:
            return self.arms[side][name]
        except KeyError:
            known = ", ".join(sorted(self.arms.get(side, {})))
            raise PrimitiveError(f"no pose '{name}' for the {side} arm (known: {known})") from None


def load_poses(path: str | Path | None = None) -> Poses:
    path = Path(path) if path else config_dir() / "poses.yaml"
    data = yaml.safe_load(path.read_text())
    arms = {}
    for side, poses in data["arms"].items():
        arms[side] = {}
        for name, values in poses.items():
            if len(values) != JOINTS_PER_ARM or not all(math.isfinite(float(v)) for v in values):
                raise PrimitiveError(f"{path}: arms.{side}.{name} must be {JOINTS_PER_ARM} finite angles")
            arms[side][name] = tuple(float(v) for v in values)
    return Poses(arms=arms, gripper_mm={k: float(v) for k, v in data["gripper"].items()},
                 tolerance_rad=float(data.get("tolerance_rad", 0.03)))


def _gripper(side: str, opening_mm: float, label: str, duration: float = 0.8) -> Step:
    return Step("gripper", side, (opening_mm / 1000.0,), duration, 8.0, label)


def _arm(side: str, poses: Poses, name: str, duration: float = 2.0) -> Step:
    return Step("arm", side, poses.pose(side, name), duration, 15.0, f"move to {name}")


ALIASES = {"grasp": "grasp_pipette", "draw": "draw_titrant", "move_to": "position_over_beaker",
           "release": "return_pipette"}

#: The arm that holds the solid bottle (the right one carries the pipette in titrations and the beaker).
BOTTLE_SIDE = "left"
#: Left-arm poses of the weighing: the bottle where it stands, and held upright above the beaker.
BOTTLE_POSE = "solid_bottle"
POUR_POSE = "pour_over_beaker"
# Carry stations (`beaker_at_<station>` poses) and device buttons (`<device>_button`) are named by the bench
# description (agentchemist.workcell.stations: STATION_PREFIX, BUTTON_SUFFIX; station_name takes a plan's
# name of a station or device, "magnetic_stirrer", to the bench's, "stirrer").
#: Grasp objects: the plan's object id, without a numeric suffix ("pipette_1"), -> the primitive.
GRASP_OBJECTS = {"pipette": "grasp_pipette", "solid_bottle": "grasp_bottle"}
#: Piper SDK upper limit of joint6 (rad; the bench's robot); the bottle's tilt turns the left wrist toward it.
JOINT6_MAX_RAD = ARM_JOINT_LIMITS_RAD[5][1]


def stations(poses: Poses, side: str = "right") -> list[str]:
    """Stations the beaker can be carried between: every `beaker_at_<station>` pose of ``side``."""
    return sorted(n[len(STATION_PREFIX):] for n in poses.arms.get(side, {}) if n.startswith(STATION_PREFIX))


def devices(poses: Poses, side: str = "right") -> list[str]:
    """Devices the press primitive can switch on: every `<device>_button` pose of ``side``."""
    return sorted(n[:-len(BUTTON_SUFFIX)] for n in poses.arms.get(side, {}) if n.endswith(BUTTON_SUFFIX))


def is_beaker(object_id: str) -> bool:
    return isinstance(object_id, str) and (object_id == "beaker" or object_id.startswith("beaker_"))


def needs_beaker_station(name: str, parameters: dict | None) -> bool:
    """True when the primitive carries a beaker, so the executor must first find where it stands."""
    p = parameters or {}
    return name in ("place", "move_to") and is_beaker(p.get("object", ""))


def _grasp_object(object_id: str) -> str | None:
    base = object_id.rstrip("0123456789").rstrip("_") if object_id[-1:].isdigit() else object_id
    return GRASP_OBJECTS.get(base)


def plan_primitive(name: str, poses: Poses, side: str | None = None, parameters: dict | None = None,
                   beaker_at: str | None = None) -> list[Step]:
    """The steps of a named primitive. Names match the plan's `primitive` field (or its alias); the
    plan's parameters choose between primitives of one name (grasp the pipette or the solid bottle;
    move_to over the beaker with the pipette, or carry a beaker to a station).

    ``beaker_at``: the station the beaker stands on now (from the scene), for place / move_to of a
    beaker; a beaker already on the target gives no steps (nothing to do). ``side`` defaults to the
    plan's `side` parameter, else the arm the primitive uses (left for the bottle, right otherwise).
    An unknown primitive, object, station or device raises PrimitiveError naming the known ones.
    """
    p = dict(parameters or {})
    side = p.get("side") or side
    obj = p.get("object")
    if name in ("place", "move_to") and obj is not None:
        return _carry(name, poses, side or "right", p, beaker_at)
    if name == "place":
        raise PrimitiveError(f"place needs the object to carry (a beaker_*), got parameters {p}")
    if name == "grasp" and obj:
        which = _grasp_object(str(obj))
        if which is None:
            raise PrimitiveError(f"grasp: unknown object '{obj}' (known: {', '.join(sorted(GRASP_OBJECTS))})")
        name = which
    if name == "press":
        return _press(poses, side or "right", p)
    name = ALIASES.get(name, name)
    g = poses.gripper_mm
    if name == "grasp_bottle":
        side = side or BOTTLE_SIDE
        return [_gripper(side, g["open_mm"], "open"), _arm(side, poses, BOTTLE_POSE),
                _gripper(side, g["bottle_grasp_mm"], "close on the bottle"),
                _arm(side, poses, POUR_POSE, 2.5)]
    side = side or "right"
    if name == "grasp_pipette":
        return [_gripper(side, g["open_mm"], "open"), _arm(side, poses, "pipette"),
                _gripper(side, g["grasp_mm"], "close on the bulb")]
    if name == "draw_titrant":
        return [_arm(side, poses, "titrant_bottle"),
                _gripper(side, g["draw_squeeze_mm"], "squeeze the bulb", 1.5),
                _gripper(side, g["grasp_mm"], "release: draw", 1.5),
                Step("wait", side, (), 1.0, 2.0, "let the liquid rise")]
    if name == "position_over_beaker":
        return [_arm(side, poses, "over_beaker")]
    if name == "return_pipette":
        return [_arm(side, poses, "pipette"), _gripper(side, g["open_mm"], "release the pipette"),
                _arm(side, poses, "home")]
    if name == "home":
        return [_arm(side, poses, "home")]
    raise PrimitiveError(f"unknown primitive '{name}' (known: grasp_pipette, grasp_bottle, draw_titrant, "
                         "position_over_beaker, return_pipette, home, place, move_to, press)")


def _carry(name: str, poses: Poses, side: str, p: dict, beaker_at: str | None) -> list[Step]:
    """Pick the beaker up at its station and set it down on the target (nothing if already there)."""
    obj, target = p.get("object"), p.get("target")
    known = stations(poses, side)
    if not is_beaker(str(obj)):
        raise PrimitiveError(f"{name}: unknown object '{obj}' (known: beaker_* carried between "
                             f"{', '.join(known) or 'no stations'})")
    to = station_name(str(target)) if target else ""
    if to not in known:
        raise PrimitiveError(f"{name} {obj}: unknown target '{target}' (known: {', '.join(known)})")
    if beaker_at is None:
        raise PrimitiveError(f"{name} {obj}: where the beaker stands is not known (the scene is needed)")
    frm = station_name(beaker_at)
    if frm == to:
        return []  # already in place
    if frm not in known:
        raise PrimitiveError(f"{name} {obj}: the beaker stands on '{beaker_at}', which has no pose to pick it "
                             f"up from (known: {', '.join(known)})")
    g = poses.gripper_mm
    return [_gripper(side, g["open_mm"], "open"),
            _arm(side, poses, station_pose(frm)),
            _gripper(side, g["beaker_grasp_mm"], "close on the beaker"),
            _arm(side, poses, station_pose(to), 3.0),
            _gripper(side, g["open_mm"], "release the beaker"),
            _arm(side, poses, "home")]


def _press(poses: Poses, side: str, p: dict) -> list[Step]:
    device = station_name(str(p.get("device", "")))
    known = devices(poses, side)
    if device not in known:
        raise PrimitiveError(f"press: unknown device '{p.get('device', '')}' (known: {', '.join(known)})")
    return [_arm(side, poses, button_pose(device), 2.0), _arm(side, poses, "home")]


def beaker_station(beaker_id: str, objects, image_width: float, station_kinds,
                   horizontal_tolerance: float = 0.12, supports: dict | None = None) -> str | None:
    """Where the scene shows the beaker: the kind of the station it stands on, or None (on none of them).

    ``objects``: the scene's labware as (id, kind, u, v) in front-image pixels. ``supports``: what the
    scene check decided each item stands on from the tags' 3-D poses (DescribeScene's ``on``: a platform's
    id, or ``bench``; perception/scene.py): where it has the beaker, that decides. Else the rule is the
    scene check's image rule (perception/scene.py aligned): an item within ``horizontal_tolerance`` of the
    image width of the beaker, and below it, is what the beaker stands on. Raises PrimitiveError when the
    beaker is not in the scene (the robot does not move blind).
    """
    objs = [(str(i), str(k), float(u), float(v)) for i, k, u, v in objects]
    beaker = next((o for o in objs if o[0] == beaker_id), None)
    if beaker is None:
        seen = ", ".join(sorted(o[0] for o in objs)) or "nothing"
        raise NotSeenError(f"{beaker_id} is not seen by the front camera (seen: {seen})")
    kinds = {station_name(k) for k in station_kinds}
    if supports and beaker_id in supports:  # decided in 3-D
        under = next((station_name(k) for i, k, _, _ in objs if i == supports[beaker_id]), None)
        return under if under in kinds else None
    tol = horizontal_tolerance * float(image_width)
    under = [(abs(u - beaker[2]), station_name(k)) for i, k, u, v in objs
             if station_name(k) in kinds and aligned((u, v), beaker[2:], tol, below=True)]
    return min(under)[1] if under else None


def bottle_tilt_joints(poses: Poses, tilt_deg: float) -> tuple[float, ...]:
    """The left arm's target holding the bottle at ``tilt_deg`` over the beaker (0 = upright): the pour
    pose with joint6 turned by the tilt. Negative tilts are upright; beyond the wrist's limit raises."""
    tilt = float(tilt_deg)
    if not math.isfinite(tilt):
        raise PrimitiveError(f"bottle tilt must be finite, got {tilt_deg!r}")
    base = poses.pose(BOTTLE_SIDE, POUR_POSE)
    j6 = base[5] + math.radians(max(tilt, 0.0))
    if j6 > JOINT6_MAX_RAD + 1e-9:
        raise PrimitiveError(f"a tilt of {tilt:.1f} deg is beyond the wrist's limit "
                             f"({math.degrees(JOINT6_MAX_RAD - base[5]):.1f} deg from {POUR_POSE})")
    return (*base[:5], j6)


def bottle_tilt_deg(poses: Poses, left_arm_positions) -> float | None:
    """The bottle's tilt (deg, >= 0) for measured left-arm joints, or None when joints 1..5 are not at
    the pour pose (within tolerance_rad): anywhere else the held bottle is upright."""
    if left_arm_positions is None or len(left_arm_positions) != JOINTS_PER_ARM:
        return None
    base = poses.pose(BOTTLE_SIDE, POUR_POSE)
    if max(abs(float(a) - b) for a, b in zip(left_arm_positions[:5], base[:5])) > poses.tolerance_rad:
        return None
    return max(0.0, math.degrees(float(left_arm_positions[5]) - base[5]))


def pour_kinematics(side: str, poses: Poses | None = None):
    """(joints(tilt_deg) -> 6 joint targets, tilt(positions) -> deg or None) for a bottle held by `side`
    at the pour pose (the contract's tilt convention: tilt = joint6 - the pose's joint6, with joints 1..5
    at the pose within tolerance_rad; elsewhere None). The bottle's arm (BOTTLE_SIDE) uses the helpers
    above, which also refuse a tilt beyond the wrist's limit. Raises PrimitiveError naming the known poses
    when the poses (config/poses.yaml unless given) have no such pose."""
    poses = poses if poses is not None else load_poses()
    pose = poses.pose(side, POUR_POSE)
    if side == BOTTLE_SIDE:
        return (lambda tilt_deg: tuple(bottle_tilt_joints(poses, tilt_deg)),
                lambda positions: bottle_tilt_deg(poses, positions))

    def joints(tilt_deg):
        return (*pose[:5], pose[5] + math.radians(tilt_deg))

    def tilt(positions):
        if len(positions) != JOINTS_PER_ARM or any(abs(q - p) > poses.tolerance_rad
                                                   for q, p in zip(positions[:5], pose[:5])):
            return None
        return max(0.0, math.degrees(positions[5] - pose[5]))
    return joints, tilt


def step_reached(step: Step, arm_positions: tuple[float, ...] | None, gripper_opening_m: float | None,
                 tolerance_rad: float, gripper_tolerance_m: float = 0.0005) -> bool:
    """Whether the measured state satisfies the step (waits are timed by the executor)."""
    if step.kind == "arm":
        if arm_positions is None or len(arm_positions) != len(step.target):
            return False
        return max(abs(a - b) for a, b in zip(arm_positions, step.target)) <= tolerance_rad
    if step.kind == "gripper":
        return gripper_opening_m is not None and abs(gripper_opening_m - step.target[0]) <= gripper_tolerance_m
    return True
