"""The dispense request: one validated value from the executor to the dispenser's session, free of ROS.

A dispensing subtask is one of two requests:

- `DropsRequest`: drop-wise from the pipette (the Dispense action's drops mode);
- `PourRequest`: a mass of solid poured from a bottle (its solid_pour mode).

Where the defaults come from: a field left ``None`` is the dispenser's own configured value
(DispenserConfig / SolidPourConfig, the dispenser node's parameters), resolved once by its session when
the goal starts (agentchemist.control.jobs); the executor, which builds the request from the plan's
parameters (agentchemist.fsm.dispensing), does not know them. ``None`` targets mean no such target. Units are
in the field names. A request is checked when it is made (finite, not negative, pH within 0..14, a
target to stop at, a known side): a bad one raises `RequestError`, and nothing moves. What only the
dispenser's configuration can judge (a rate beyond the gripper's limit, a mass beyond the balance) is
refused by its controllers.

On the wire (the Dispense action's Goal, unchanged so that recorded bags replay) 0 means "the default"
and ``use_target_ph`` says whether ``target_ph`` is set; `goal_fields` and `from_goal_fields` are the one
mapping between the two, used by the ROS codec (agentchemist_ros.common.goals) and nowhere else.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

__all__ = ["DROPS", "SIDES", "SOLID_POUR", "DispenseRequest", "DropsRequest", "GoalFields", "PourRequest",
           "RequestError",
           "from_goal_fields", "goal_fields", "titration_direction"]

DROPS, SOLID_POUR = "drops", "solid_pour"
SIDES = ("left", "right")


class RequestError(ValueError):
    """A dispense request that cannot be carried out as asked; it names the goal it came with."""

    def __init__(self, reason: str, experiment_id: str = "", subtask_id: str = ""):
        super().__init__(reason)
        self.experiment_id, self.subtask_id = experiment_id, subtask_id


def titration_direction(target_ph: float | None, ph_before: float | None) -> int:
    """The one rule for a titration's pH direction: +1 when the titrant must raise the pH to `target_ph`, -1
    when it must lower it. Falling only when both are known and the target lies below the pH before the
    first drop; with no target (nothing to approach) or no reading yet, rising.

    Who calls it, when: the family's procedure (agentchemist.experiments.acid_base.procedure,
    ``PhEndpoint.start_dispensing``) decides it once per experiment, when dispensing starts, and sends it in
    the drops request (`DropsRequest.ph_direction`); the dispenser's session (agentchemist.control.jobs,
    ``DropsJob.prepare``) calls it only for a request that leaves it open (0: a client other than the
    supervisor), with its own latest reading."""
    return -1 if target_ph is not None and ph_before is not None and target_ph < ph_before else 1


def _check_numbers(request, names: tuple[str, ...]) -> None:
    for name in names:
        value = getattr(request, name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise RequestError(f"{name} is {value!r}: not a number", request.experiment_id, request.subtask_id)
        if value < 0:
            raise RequestError(f"{name} is {value}: must not be negative", request.experiment_id,
                               request.subtask_id)


@dataclass(frozen=True)
class DropsRequest:
    """Drop-wise dispensing: stop at a volume (a hard cap), paced near a pH target the supervisor judges."""
    mode: ClassVar[str] = DROPS
    experiment_id: str = ""
    subtask_id: str = ""
    target_volume_ml: float | None = None        #: None: no volume target
    target_ph: float | None = None               #: paces the dispenser; the endpoint is the supervisor's
    ph_direction: int = 0                        #: +1 rising, -1 falling; 0: from the dispenser's latest reading
    rate_mm_s: float | None = None               #: the gripper's closing rate; None: DispenserConfig.rate_mm_s
    change_rate_threshold_ph_s: float | None = None  #: WAIT above this |dpH/dt|; None: the configured one
    stable_window_s: float | None = None         #: the pH settle window; None: the configured one
    timeout_s: float | None = None               #: None: DispenserConfig.operation_timeout_s
    settle_each_drop: bool = False               #: act only on a settled pH: WAIT after every drop
    resume_on_command: bool = False              #: each such WAIT ends on the supervisor's resume

    def __post_init__(self):
        _check_numbers(self, ("target_volume_ml", "rate_mm_s", "change_rate_threshold_ph_s", "stable_window_s",
                              "timeout_s"))
        ph = self.target_ph
        if ph is not None and (isinstance(ph, bool) or not isinstance(ph, (int, float))
                               or not math.isfinite(ph) or not 0.0 <= ph <= 14.0):
            raise RequestError(f"target_ph {ph!r} is outside 0..14", self.experiment_id, self.subtask_id)
        if not self.target_volume_ml and ph is None:
            raise RequestError("the goal has neither a target volume nor a target pH", self.experiment_id,
                               self.subtask_id)
        if self.ph_direction not in (-1, 0, 1):
            raise RequestError("ph_direction must be +1 or -1 (0: from the latest reading)", self.experiment_id,
                               self.subtask_id)


@dataclass(frozen=True)
class PourRequest:
    """Pour a mass of solid onto the balance; the balance decides when it is there."""
    mode: ClassVar[str] = SOLID_POUR
    experiment_id: str = ""
    subtask_id: str = ""
    target_mass_g: float = 0.0
    mass_tolerance_g: float | None = None        #: None: SolidPourConfig.default_tolerance_g
    tilt_rate_deg_s: float | None = None         #: the flow search's ramp; None: the configured one
    side: str | None = None                      #: the gripper holding the bottle; None: the dispenser's pour side
    change_rate_threshold_g_s: float | None = None   #: |dm/dt| a settled balance stays within; None: configured
    stable_window_s: float | None = None         #: None: the configured one
    timeout_s: float | None = None               #: None: SolidPourConfig.operation_timeout_s
    settle_each_drop: bool = False               #: accepted either way: the balance settles after every pour

    def __post_init__(self):
        _check_numbers(self, ("target_mass_g", "mass_tolerance_g", "tilt_rate_deg_s", "change_rate_threshold_g_s",
                              "stable_window_s", "timeout_s"))
        if self.side is not None and self.side not in SIDES:
            raise RequestError(f"side {self.side!r} is not left or right", self.experiment_id, self.subtask_id)


DispenseRequest = DropsRequest | PourRequest


# ---------------------------------------------------------------------- the wire's conventions
@dataclass(frozen=True)
class GoalFields:
    """The Dispense action Goal's fields by value, free of ROS (0: the dispenser's default): what a caller
    without the message types (a unit test, a tool) sends the session; `from_goal_fields` reads it."""
    experiment_id: str = ""
    subtask_id: str = ""
    mode: str = ""                       #: "" or drops | solid_pour
    target_volume_ml: float = 0.0
    use_target_ph: bool = False
    target_ph: float = 0.0
    ph_direction: int = 0
    rate_mm_s: float = 0.0
    wait_on_change_threshold: float = 0.0
    stable_window_s: float = 0.0
    settle_each_drop: bool = False
    resume_on_command: bool = False
    timeout_s: float = 0.0
    target_mass_g: float = 0.0
    mass_tolerance_g: float = 0.0
    tilt_rate_deg_s: float = 0.0
    side: str = ""


def _given(value: float) -> float | None:
    """The wire's 0 (the default) as None; anything else as sent (a bad value is refused by the request)."""
    return None if value == 0 else value


def from_goal_fields(goal: Any) -> DispenseRequest:
    """The request from an object with the Dispense action Goal's fields (the message, or its field values).
    Raises RequestError."""
    ids = {"experiment_id": goal.experiment_id, "subtask_id": goal.subtask_id}
    mode = goal.mode or DROPS
    if mode == SOLID_POUR:
        return PourRequest(**ids, target_mass_g=goal.target_mass_g, mass_tolerance_g=_given(goal.mass_tolerance_g),
                           tilt_rate_deg_s=_given(goal.tilt_rate_deg_s), side=goal.side or None,
                           change_rate_threshold_g_s=_given(goal.wait_on_change_threshold),
                           stable_window_s=_given(goal.stable_window_s), timeout_s=_given(goal.timeout_s),
                           settle_each_drop=bool(goal.settle_each_drop))
    if mode != DROPS:
        raise RequestError(f"unknown dispensing mode {goal.mode!r} (drops | solid_pour)", **ids)
    return DropsRequest(**ids, target_volume_ml=_given(goal.target_volume_ml),
                        target_ph=goal.target_ph if goal.use_target_ph else None, ph_direction=int(goal.ph_direction),
                        rate_mm_s=_given(goal.rate_mm_s),
                        change_rate_threshold_ph_s=_given(goal.wait_on_change_threshold),
                        stable_window_s=_given(goal.stable_window_s), timeout_s=_given(goal.timeout_s),
                        settle_each_drop=bool(goal.settle_each_drop), resume_on_command=bool(goal.resume_on_command))


def goal_fields(request: DispenseRequest) -> dict[str, Any]:
    """The Dispense action Goal's fields for `request` (a drops goal keeps the wire's mode "", as recorded)."""
    r, zero = request, (lambda value: 0.0 if value is None else float(value))
    common = {"experiment_id": r.experiment_id, "subtask_id": r.subtask_id, "stable_window_s": zero(r.stable_window_s),
              "timeout_s": zero(r.timeout_s), "settle_each_drop": r.settle_each_drop}
    if isinstance(r, PourRequest):
        return {**common, "mode": SOLID_POUR, "target_mass_g": float(r.target_mass_g),
                "mass_tolerance_g": zero(r.mass_tolerance_g), "tilt_rate_deg_s": zero(r.tilt_rate_deg_s),
                "side": r.side or "", "wait_on_change_threshold": zero(r.change_rate_threshold_g_s)}
    return {**common, "target_volume_ml": zero(r.target_volume_ml), "use_target_ph": r.target_ph is not None,
            "target_ph": zero(r.target_ph), "ph_direction": int(r.ph_direction), "rate_mm_s": zero(r.rate_mm_s),
            "wait_on_change_threshold": zero(r.change_rate_threshold_ph_s),
            "resume_on_command": r.resume_on_command}
