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

from agentchemist.paths import config_dir

JOINTS_PER_ARM = 6


class PrimitiveError(ValueError):
    """Unknown primitive, unknown pose, or a target outside the arm's range."""


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


def plan_primitive(name: str, poses: Poses, side: str = "right") -> list[Step]:
    """The steps of a named primitive. Names match the plan's `primitive` field (or its alias)."""
    name = ALIASES.get(name, name)
    g = poses.gripper_mm
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
    raise PrimitiveError(f"unknown primitive '{name}' (known: grasp_pipette, draw_titrant, "
                         "position_over_beaker, return_pipette, home)")


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
