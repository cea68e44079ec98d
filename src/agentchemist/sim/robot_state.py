"""The twin's two arms and their grippers as it moves them: commands, following, joint states.

Grippers follow on the twin's event-driven steps (a gripper squeezing the pipette makes the twin
sub-step); arms follow in closed form, brought up to date whenever the twin settles."""
from __future__ import annotations

from typing import Sequence

from agentchemist.sim.robot import JOINT_NAMES, SIDES, Arm, Gripper
from agentchemist.sim.scenario import RobotSpec

__all__ = ["RobotState"]


class RobotState:
    def __init__(self, spec: RobotSpec) -> None:
        self.grippers = {s: Gripper(spec.initial_gripper_opening_m, spec.initial_gripper_opening_m,
                                    spec.gripper_tau_s, spec.gripper_max_speed_m_s) for s in SIDES}
        self._gripper_list = list(self.grippers.values())
        self.arms = {s: Arm(list(spec.initial_arm_rad), list(spec.initial_arm_rad), spec.arm_tau_s) for s in SIDES}
        self._arm_t = 0.0

    def command_gripper(self, side: str, opening_m: float) -> tuple[float, bool, str]:
        """Set a gripper's command; (applied opening, clamped?, why) -- out-of-range values are clamped."""
        applied, clamped = self.grippers[side].set_command(opening_m)
        reason = f"opening {opening_m} m clamped to the Piper range 0..0.07 m" if clamped else ""
        return applied, clamped, reason

    def command_arm(self, side: str, positions_rad: Sequence[float]) -> tuple[list[float], bool, str]:
        return self.arms[side].set_command(positions_rad)

    def advance_grippers(self, dt: float) -> None:
        """Every gripper that is moving (and not stalled) follows its command for ``dt`` s."""
        for g in self._gripper_list:
            if g.position_m != g.command_m and not g.stalled:
                g.advance(dt)

    def settle_arms(self, now: float) -> None:
        """Bring the arms to ``now`` (closed form: they are not sub-stepped)."""
        dt = now - self._arm_t
        if dt > 0.0:
            for arm in self.arms.values():
                if arm.position != arm.command:
                    arm.advance(dt)
            self._arm_t = now

    def joint_states(self) -> tuple[list[str], list[float]]:
        """14 joint names and positions (rad; grippers in metres of measured opening)."""
        values: list[float] = []
        for side in SIDES:
            values.extend(self.arms[side].position)
            values.append(self.grippers[side].position_m)
        return list(JOINT_NAMES), values
