"""When a VLA subtask has done its work: the subtask's own success condition on the measured joints, not
the first pause of the commands.

Issue 42: a subtask used to end when the commands had settled for ``settle_s`` (0.5 s) and the joints had
reached them. A draw pauses at the bottle before it squeezes the bulb, so it often ended there, with the
pipette empty. Now the settle rule is necessary but not sufficient for a draw: the measured right gripper
must first have closed to the squeeze (below ``draw_squeeze_below_m``) and then opened again to the
holding grasp (above ``draw_release_above_m``), the cycle that fills the pipette. A pose subtask (grasp,
position, return) is done when its pose is reached and held, as before.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: The measured right gripper opening in the 14-joint vector (JOINT_NAMES: left 0..6, right 7..13).
RIGHT_GRIPPER = 13


def subtask_name(instruction: str) -> str:
    """The subtask in an instruction text: 'draw titrant (container=...)' -> 'draw titrant'."""
    return instruction.split(" (", 1)[0].strip()


@dataclass
class DrawCycle:
    """Squeeze then release of the bulb, seen in the measured gripper opening (m)."""
    squeeze_below_m: float
    release_above_m: float
    squeezed: bool = False
    released: bool = False

    def update(self, state: np.ndarray | None) -> None:
        if state is None:
            return
        opening = float(state[RIGHT_GRIPPER])
        if opening < self.squeeze_below_m:
            self.squeezed = True
        elif self.squeezed and opening > self.release_above_m:
            self.released = True

    @property
    def met(self) -> bool:
        return self.squeezed and self.released

    def progress(self) -> str:
        return "released" if self.released else "squeezed" if self.squeezed else "not squeezed"


class PoseHeld:
    """A pose subtask: no condition beyond the settle rule (the pose reached and held)."""
    met = True

    def update(self, state: np.ndarray | None) -> None:
        pass

    def progress(self) -> str:
        return "pose"


def condition_for(instruction: str, cfg) -> DrawCycle | PoseHeld:
    if subtask_name(instruction).startswith("draw"):
        return DrawCycle(cfg.draw_squeeze_below_m, cfg.draw_release_above_m)
    return PoseHeld()
