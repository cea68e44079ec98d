"""The twin's pipette draws titrant when its arm squeezes and releases the bulb at the titrant bottle
(draw_trigger.DrawTrigger's rule), fed from the twin's measured joints every tick."""
from __future__ import annotations

from agentchemist.policy.primitives import Poses
from agentchemist.sim.draw_trigger import DrawTrigger, DrawTriggerConfig
from agentchemist.sim.lab import LabTwin


class PipetteDraw:
    def __init__(self, twin: LabTwin, poses: Poses):
        self.twin = twin
        self.side = twin.scenario.pipette.held_by
        self.trigger = DrawTrigger(DrawTriggerConfig(poses.pose(self.side, "titrant_bottle"), poses.tolerance_rad))

    def tick(self, t: float) -> list[tuple[str, str]]:
        """Draw if this tick completed a squeeze-release at the bottle; (log level, message) of what happened."""
        names, positions = self.twin.joint_states()
        arm = [p for n, p in zip(names, positions) if n.startswith(f"{self.side}_joint")]
        if not self.trigger.update(arm, self.twin.gripper_opening_m(self.side) * 1000.0):
            return []
        scenario = self.twin.scenario
        titrant = next(iter(scenario.titrant))
        result = self.twin.draw(titrant, scenario.pipette.capacity_ml, t)
        return [("info" if result.accepted else "warn", f"draw {titrant}: {result.accepted_value} mL {result.reason}")]
