"""Kinematic stand-in for the two Piper arms: clamping, first-order follow, gripper stall.

The arms' sides, joint names, joint limits and gripper range are the bench description's
(:mod:`agentchemist.workcell.robot`: the Piper SDK's software limits, which the firmware enforces);
commands are clamped to those.

Arms follow their command with a first-order lag (``arm_tau_s``); grippers with a first-order lag whose
speed is capped at ``gripper_max_speed_m_s`` (a closed-form update, exact for any step length). A stalled
gripper (fault) holds its position while the command keeps changing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from agentchemist.workcell import robot as _bench
from agentchemist.workcell.robot import ARM_JOINT_LIMITS_RAD, GRIPPER_RANGE_M, JOINT_NAMES, SIDES
from agentchemist.sim.errors import SimCommandError, finite_number

__all__ = [
    "ARM_JOINT_LIMITS_RAD",
    "GRIPPER_RANGE_M",
    "JOINT_NAMES",
    "SIDES",
    "Arm",
    "Gripper",
    "check_side",
]


def check_side(side: str) -> str:
    """The bench's check of an arm's side, raising the twin's SimCommandError."""
    try:
        return _bench.check_side(side)
    except ValueError as exc:
        raise SimCommandError(str(exc)) from None


@dataclass
class Gripper:
    """One parallel gripper: commanded and measured opening (m)."""

    command_m: float
    position_m: float
    tau_s: float
    max_speed_m_s: float
    stalled: bool = False

    def set_command(self, opening_m: float) -> tuple[float, bool]:
        """Clamp to the Piper range; returns (applied value, clamped?)."""
        v = finite_number(opening_m, "gripper opening (m)")
        lo, hi = GRIPPER_RANGE_M
        applied = min(max(v, lo), hi)
        self.command_m = applied
        return applied, applied != v

    @property
    def moving(self) -> bool:
        return not self.stalled and abs(self.command_m - self.position_m) > 1e-9

    def position_after(self, dt: float) -> float:
        """Measured opening after ``dt`` s of following the present command (does not change state)."""
        x, c = self.position_m, self.command_m
        if self.stalled or dt <= 0.0 or x == c:
            return x
        e = c - x
        knee = self.max_speed_m_s * self.tau_s  # below this error the lag, not the speed cap, limits
        if abs(e) > knee:
            t_lin = (abs(e) - knee) / self.max_speed_m_s
            d = min(dt, t_lin)
            x += math.copysign(self.max_speed_m_s * d, e)
            dt -= d
            e = c - x
        if dt > 0.0:
            x = c - e * math.exp(-dt / self.tau_s)
        if abs(c - x) < 1e-9:
            x = c
        return x

    def advance(self, dt: float) -> None:
        self.position_m = self.position_after(dt)

    def time_to_settle(self) -> float:
        """Rough time (s) until the measured opening reaches the command (speed phase + 3 tau)."""
        e = abs(self.command_m - self.position_m)
        knee = self.max_speed_m_s * self.tau_s
        return max(e - knee, 0.0) / self.max_speed_m_s + 3.0 * self.tau_s if e > 1e-9 else 0.0

    def peak_speed(self) -> float:
        """Fastest the gripper will move toward the present command (m/s)."""
        return min(self.max_speed_m_s, abs(self.command_m - self.position_m) / self.tau_s)


@dataclass
class Arm:
    """Six joints (rad) following their command with a first-order lag."""

    command: list[float]
    position: list[float]
    tau_s: float

    def set_command(self, positions_rad: Sequence[float]) -> tuple[list[float], bool, str]:
        """Clamp each joint to the Piper limits; returns (applied, clamped?, reason)."""
        try:
            values = [finite_number(p, f"joint{i + 1} position (rad)") for i, p in enumerate(positions_rad)]
        except TypeError:
            raise SimCommandError(f"arm command must be a sequence of 6 numbers, got {positions_rad!r}") from None
        if len(values) != len(ARM_JOINT_LIMITS_RAD):
            raise SimCommandError(f"arm command needs {len(ARM_JOINT_LIMITS_RAD)} joint positions, got {len(values)}")
        applied, notes = [], []
        for i, (v, (lo, hi)) in enumerate(zip(values, ARM_JOINT_LIMITS_RAD)):
            a = min(max(v, lo), hi)
            if a != v:
                notes.append(f"joint{i + 1} {v:.4f} rad clamped to {a:.4f} (limits {lo:.4f}..{hi:.4f})")
            applied.append(a)
        self.command = applied
        return applied, bool(notes), "; ".join(notes)

    def advance(self, dt: float) -> None:
        if dt <= 0.0 or self.position == self.command:
            return
        f = math.exp(-dt / self.tau_s)
        self.position = [c + (p - c) * f for p, c in zip(self.position, self.command)]
        if all(abs(p - c) < 1e-12 for p, c in zip(self.position, self.command)):
            self.position = list(self.command)  # converged: later advances are free
