"""What the dispenser's session sends out and answers, as values: DispenserState changes, volume estimates,
the pour's taps, action feedback and results, the Calibrate service's response, and a refusal.

The node translates each to its message by the same field names (agentchemist_ros dispenser_controller).
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from agentchemist.contracts.dispense import DROPS, SOLID_POUR
from agentchemist.contracts.notes import Tap as TapNote
from agentchemist.control.dispenser_types import ControllerAnomaly

CALIBRATION = "calibration"
NAN = float("nan")


class Refusal(ValueError):
    """A goal refused before anything moved, with the ids its anomaly names: the goal's, except when the
    gripper is busy or its position unknown (the goal never ran)."""

    def __init__(self, reason: str, experiment_id: str = "", subtask_id: str = ""):
        super().__init__(reason)
        self.experiment_id, self.subtask_id = experiment_id, subtask_id


@dataclass(frozen=True)
class StateChange:
    """A DispenserState to publish (its fields but the stamp)."""
    experiment_id: str
    subtask_id: str
    mode: str
    state: str
    previous_state: str
    reason: str
    active: bool = True
    drop_interval_s: float = 0.0         #: only while squeezing (MOTION)
    priming: bool = False                #: MOTION after a RESET closes back on a bulb of air
    dispensed_ml: float = 0.0
    drops: int = 0


@dataclass(frozen=True)
class VolumeEstimate:
    """The experiment's cumulative titrant volume (statistical channel)."""
    stamp: float
    value_ml: float
    delta_ml: float
    confidence: float


@dataclass(frozen=True)
class Tap:
    """A pour pulse, told to the vision supervisor, stamped when the bottle came back under the flow."""
    stamp: float
    note: TapNote


@dataclass(frozen=True)
class Feedback:
    """The action's Feedback fields."""
    controller_state: str
    dispensed_ml: float = 0.0
    drops: int = 0
    gripper_position_mm: float = 0.0
    ph: float = 0.0
    mass_g: float = 0.0


@dataclass(frozen=True)
class GoalOutcome:
    """The action's Result fields."""
    success: bool = False
    stop_reason: str = ""
    message: str = ""
    dispensed_ml: float = 0.0
    drops: int = 0
    final_ph: float = 0.0
    dispensed_g: float = 0.0
    final_mass_g: float = 0.0


@dataclass
class Tick:
    """What one control update sends out; ids are the job's (for the anomalies, estimates and taps)."""
    experiment_id: str
    subtask_id: str
    gripper_opening_mm: float | None = None
    arm: tuple | None = None             #: (side, 6 joint targets, trajectory time s)
    estimates: list[VolumeEstimate] = field(default_factory=list)
    taps: list[Tap] = field(default_factory=list)
    anomalies: list[ControllerAnomaly] = field(default_factory=list)
    states: list[StateChange] = field(default_factory=list)
    feedback: Feedback | None = None
    done: Any = None                     #: the stop: StopResult, PourResult, or the finished CalibrationStep


@dataclass(frozen=True)
class CalibrationOutcome:
    """The Calibrate service's response fields, and whether the fit failed (an anomaly)."""
    success: bool = False
    message: str = ""
    k_ml_per_mm: float = 0.0
    drop_volume_ml: float = 0.0
    residual_ml: float = 0.0
    saved_path: str = ""
    fit_failed: bool = False

    def response_fields(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "fit_failed"}


class FeedbackPace:
    """Action feedback goes out every feedback period, and at once on a transition or the stop."""

    def __init__(self, period_s: float):
        self.period_s = period_s
        self._last = -1e9

    def due(self, now: float, urgent: bool) -> bool:
        if now - self._last >= self.period_s or urgent:
            self._last = now
            return True
        return False


def state_change(job, state: str, previous: str, reason: str, *, interval: float = 0.0, active: bool = True,
                 dispensed_ml: float = 0.0, drops: int = 0) -> StateChange:
    """The DispenserState of `job` (anything with mode and ids) entering `state`."""
    return StateChange(job.experiment_id, job.subtask_id, job.mode, state, previous, reason, active=active,
                       drop_interval_s=float(interval if state == "MOTION" else 0.0),
                       priming=state == "MOTION" and previous == "RESET", dispensed_ml=float(dispensed_ml),
                       drops=int(drops))


def refused(mode: str, reason: str) -> GoalOutcome:
    """The result of a refused goal (a solid pour's masses are unknown: NaN)."""
    unknown = {"final_ph": NAN, "dispensed_g": NAN, "final_mass_g": NAN} if mode == SOLID_POUR else {}
    return GoalOutcome(success=False, stop_reason="rejected", message=reason, **unknown)


__all__ = ["CALIBRATION", "DROPS", "NAN", "SOLID_POUR", "CalibrationOutcome", "Feedback", "FeedbackPace", "GoalOutcome",
           "Refusal", "StateChange", "Tap", "Tick", "VolumeEstimate", "refused", "state_change"]
