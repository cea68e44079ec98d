"""Value types of the dispenser controller: its states, configuration, goal, and what it reports.

Every threshold is a field of DispenserConfig with its unit and the reason for its default; the
controller itself (and its transition table) is in agentchemist.control.dispenser.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum

from agentchemist.params import nested, param
from agentchemist.perception.frozen_reading import FrozenConfig
from agentchemist.perception.ph_stability import StabilityConfig


class State(str, Enum):
    MOTION = "MOTION"
    WAIT = "WAIT"
    RESET = "RESET"
    DONE = "DONE"


class GoalError(ValueError):
    """A goal the controller refuses; nothing moves."""


@dataclass(frozen=True)
class DispenserConfig:
    """Every threshold of the controller, with its unit and why it has its default."""
    k_ml_per_mm: float = 1.0            #: calibration: mL expelled per mm of closing
    drop_volume_ml: float = 0.046875    #: calibrated mean drop (the paper's 0.046875 mL)
    calibration_residual_ml: float = 0.002  #: RMS residual of the calibration fit (mL per drop)
    # The audio supervisor tells drops apart up to about 0.25 mm/s (5 drops/s at k = 1 mL/mm), and the
    # no-drop check relies on hearing them (bench/dispenser.py).
    rate_mm_s: float = param(0.2, unit="mm/s", low=0.001, high=5.0, description="Default closing rate in MOTION")
    max_rate_mm_s: float = 5.0          #: beyond this the bulb jets instead of dripping
    fine_rate_mm_s: float = param(0.05, unit="mm/s", low=0.001, high=5.0, description=(
        "Closing rate near the target"))
    resolution_mm: float = 0.001        #: Piper gripper command resolution
    control_period_s: float = param(0.05, unit="s", low=0.001, high=1.0, description=(
        "Control period on the ROS clock"))  #: nominal update period; a late update never advances more than
                                        #: one period's travel, because a jump in the command makes the
                                        #: gripper lunge, the flow spike and the next drop bigger
    min_opening_mm: float = 0.0
    max_opening_mm: float = 70.0        #: Piper gripper usable travel
    safe_opening_mm: float = param(62.0, unit="mm", low=1.0, high=70.0, description=(
        "RESET retracts to this opening (clear of the bulb)"))
    retract_timeout_s: float = 10.0     #: a RESET that has not reached the safe opening by then gives up
    recovery_timeout_s: float = 30.0    #: a retracted RESET waits this long for its cause to clear (the pH
                                        #: meter to report again) before giving up
    reapproach_rate_mm_s: float = 1.5   #: closing back to the high-water mark after a RESET (air only);
                                        #: slow enough that the gripper's lag stays inside stall_tolerance_mm
    change_rate_threshold: float = param(0.05, unit="pH/s", low=1e-4, high=10.0, description=(
        "|dpH/dt| above which MOTION holds"))
    jump_threshold_ph: float = 0.025    #: ... or the newest reading this far from the mean of the window
                                        #: before it (5 sd of the twin's 0.005 pH noise): one reading
                                        #: sooner than the slope after a step (raise it for noisier meters)
    settle: StabilityConfig = StabilityConfig(window_s=1.0)  #: noise-aware trend test (perception.ph_stability)
    near_target_ph: float = param(0.5, unit="pH", low=0.0, high=14.0, description=(
        "Within this of the target pH: one drop at a time"))
    resume_grace_s: float = 5.0         #: resume_on_command: go on alone this long after settling here
    near_target_ml: float = 0.25        #: within this of the target volume: one drop at a time
    fine_ph_per_drop: float = 0.02      #: a measured pH change per drop (secant between settled holds)
                                        #: at or above this: one drop at a time (steep part of the curve)
    approach_fraction: float = 0.5      #: near a pH target on a gentle slope, dose this fraction of the
                                        #: drops the measured sensitivity predicts to the target
    max_increment_drops: int = 40       #: cap of such an increment (drops)
    # Prediction (agentchemist.control.approach): the controller passes its own squeeze through the reading's
    # lags, so the readings trace the curve while it squeezes; holds are taken where the curve says the
    # target or the next equivalence jump may be near, not wherever the reading moves fast.
    predictive: bool = True             #: False: hold wherever the reading moves fast (the constant-rate
                                        #: strategy of bench/adaptive_dispensing.py)
    reading_lags_s: tuple[float, float] = (1.0, 2.0)  #: priors: stirred mixing and the glass electrode's
                                        #: time constant (t90 about 5 s); rescaled by settled holds
    lead_drops: float = 4.0             #: hold once the titrant already squeezed may come within this many
                                        #: drops of the next jump (log law) or of the target (local slope)
    fit_span_drops: float = 3.0         #: the readings must span this much seen volume for a prediction
    clear_margin_ph: float = 0.05       #: a hold ends before the reading settles only this far short of
                                        #: the target or more (5x the endpoint judge's tolerance)
    edge_settle_s: float = 2.0          #: ... and a reading settled closer than that holds this long more
                                        #: (the endpoint judge's window) before the next drop
    jump_fraction: float = 0.75         #: near a jump, dose this fraction of the log law's bound on the
                                        #: volume left to it in one increment: the bound is a lower bound
                                        #: already (2 sigma on the slope), the quarter left covers an error
                                        #: of the lag model (tuned on seeds 1-5: 0.5 took 152 s, 0.75 142 s,
                                        #: both without a drop past the crossing one)
    settle_delay_s: float = 0.5         #: a hold's settle window starts at the earliest this long after
                                        #: the hold (drop falls, mixing starts): a pH that has not yet
                                        #: moved is not a settled one
    no_drop_factor: float = param(4.0, low=1.0, high=100.0, description=(
        "Drop displacements without a drop before a no_drop anomaly"))
    priming_allowance_mm: float = 1.5   #: squeeze allowed before the first drop (bulb slack, tip filling)
    sensor_timeout_s: float = param(3.0, unit="s", low=0.1, high=600.0, description=(
        "pH silence while titrating that is a sensor_timeout anomaly"))
    operation_timeout_s: float = 7200.0
    stall_tolerance_mm: float = 0.3     #: commanded vs measured opening beyond this ...
    stall_time_s: float = 1.0           #: ... for this long -> gripper stall
    stall_min_move_mm: float = 0.04     #: ... or, over stall_time_s of MOTION, a commanded move of at least
    stall_follow_fraction: float = 0.2  #: this that the gripper followed by less than this fraction: at
                                        #: 0.2 mm/s the gap takes 1.5 s to pass stall_tolerance_mm, longer
                                        #: at the fine rate, while a gripper that does not follow at all
                                        #: shows within stall_time_s (before the missing drops do)
    max_resets: int = 2                 #: RESETs before giving up
    settle_timeout_s: float = 60.0      #: a WAIT that never settles ends in RESET
    drop_pause_s: float = 0.5           #: without pH readings, WAIT this long after a drop (it falls)
    frozen: FrozenConfig = nested(FrozenConfig, prefix="ph_")  #: when the pH reading counts as frozen (ph_stuck)
    early_drop_fraction: float = 0.7    #: a drop that follows the previous one after less than this
                                        #: fraction of a drop's squeeze fell unbidden ("unexpected_drop");
                                        #: in closed loop with the twin (2,200 drops, four titrations) the
                                        #: smallest share seen is 0.84
    still_drop_s: float = 0.4           #: ... and so did a drop that left the tip this long after the
                                        #: command last moved (the jaws settle within about 5 lags; the
                                        #: latest squeezed drop seen left 0.28 s after the stop)
    drop_fall_s: float = 0.1            #: a drop is heard this long after it leaves the tip (5 cm fall) ...
    gripper_lag_s: float = 0.05         #: ... and the jaws trail the command by this (the squeeze that made
                                        #: a drop is read from the command history this much earlier)

    def __post_init__(self):
        for name in ("k_ml_per_mm", "drop_volume_ml", "rate_mm_s", "max_rate_mm_s", "fine_rate_mm_s",
                     "resolution_mm", "control_period_s", "sensor_timeout_s", "operation_timeout_s", "stall_time_s",
                     "fine_ph_per_drop", "jump_threshold_ph", "retract_timeout_s", "reapproach_rate_mm_s",
                     "recovery_timeout_s"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise ValueError(f"DispenserConfig.{name} must be a finite number > 0, got {value!r}")
        if not (math.isfinite(self.approach_fraction) and 0 < self.approach_fraction <= 1):
            raise ValueError(f"DispenserConfig.approach_fraction must be in (0, 1], got {self.approach_fraction!r}")
        if not (isinstance(self.max_increment_drops, int) and self.max_increment_drops >= 1):
            raise ValueError(f"DispenserConfig.max_increment_drops must be an int >= 1, "
                             f"got {self.max_increment_drops!r}")
        if not (math.isfinite(self.settle_delay_s) and self.settle_delay_s >= 0):
            raise ValueError(f"DispenserConfig.settle_delay_s must be a finite number >= 0, "
                             f"got {self.settle_delay_s!r}")
        if not (math.isfinite(self.stall_min_move_mm) and self.stall_min_move_mm > 0
                and 0 < self.stall_follow_fraction < 1):
            raise ValueError("DispenserConfig: stall_min_move_mm must be > 0 and stall_follow_fraction in (0, 1)")
        if not all(math.isfinite(v) and v >= 0 for v in (self.drop_fall_s, self.gripper_lag_s, self.still_drop_s)):
            raise ValueError("DispenserConfig: drop_fall_s, gripper_lag_s and still_drop_s must be finite and >= 0")
        if not (math.isfinite(self.early_drop_fraction) and 0 <= self.early_drop_fraction < 1):
            raise ValueError(f"DispenserConfig.early_drop_fraction must be in [0, 1), got {self.early_drop_fraction!r}")
        if not self.min_opening_mm < self.safe_opening_mm <= self.max_opening_mm:
            raise ValueError("DispenserConfig: need min_opening_mm < safe_opening_mm <= max_opening_mm")

    @property
    def drop_displacement_mm(self) -> float:
        return self.drop_volume_ml / self.k_ml_per_mm


@dataclass(frozen=True)
class DispenseGoal:
    target_volume_ml: float = 0.0        #: 0: no volume target
    target_ph: float | None = None       #: None: no pH target
    ph_direction: int = +1               #: +1 when the titrant raises the pH
    rate_mm_s: float = 0.0               #: 0: the configured default
    settle_each_drop: bool = False
    resume_on_command: bool = False      #: with settle_each_drop: a WAIT after a drop ends only on request_resume
    change_rate_threshold: float = 0.0   #: 0: the configured default
    stable_window_s: float = 0.0         #: 0: the configured default
    timeout_s: float = 0.0               #: 0: the configured default

    def validate(self, config: DispenserConfig) -> None:
        numbers = {"target_volume_ml": self.target_volume_ml, "rate_mm_s": self.rate_mm_s,
                   "change_rate_threshold": self.change_rate_threshold,
                   "stable_window_s": self.stable_window_s, "timeout_s": self.timeout_s}
        for name, value in numbers.items():
            if not math.isfinite(value):
                raise GoalError(f"{name} is {value!r}: not a number")
            if value < 0:
                raise GoalError(f"{name} is {value}: must not be negative")
        if self.target_ph is not None:
            if not math.isfinite(self.target_ph) or not 0.0 <= self.target_ph <= 14.0:
                raise GoalError(f"target_ph {self.target_ph!r} is outside 0..14")
        if self.target_volume_ml == 0 and self.target_ph is None:
            raise GoalError("the goal has neither a target volume nor a target pH")
        if self.rate_mm_s > config.max_rate_mm_s:
            raise GoalError(f"rate {self.rate_mm_s} mm/s exceeds the gripper's dispensing limit "
                            f"{config.max_rate_mm_s} mm/s")
        if 0 < self.rate_mm_s < config.resolution_mm:
            raise GoalError(f"rate {self.rate_mm_s} mm/s is below the gripper resolution")
        if self.ph_direction not in (-1, 1):
            raise GoalError("ph_direction must be +1 or -1")


@dataclass(frozen=True)
class Estimate:
    """A statistical-channel estimate of the dispensed volume (cumulative and increment)."""
    stamp: float
    value_ml: float
    delta_ml: float
    confidence: float
    state: str


@dataclass(frozen=True)
class ControllerAnomaly:
    stamp: float
    kind: str          #: no_drop | sensor_timeout | ph_stuck | operation_timeout | gripper_stall | pipette_empty |
                       #: settle_timeout (each one RESETs); unexpected_drop (reported only, nothing to undo)
    description: str
    severity: str = "warn"
    response: str = ""  #: "" = the RESET's: the controller fills in retry, or abort when the goal will give up
    resolved: bool = False  #: a resolution: the earlier anomaly of this kind is over


@dataclass(frozen=True)
class StopResult:
    success: bool
    reason: str        #: target_volume | canceled | anomaly | timeout
    dispensed_ml: float
    drops: int
    final_ph: float
    message: str


@dataclass
class Output:
    command_opening_mm: float
    state: State
    estimates: list[Estimate] = field(default_factory=list)
    anomalies: list[ControllerAnomaly] = field(default_factory=list)
    transitions: list[tuple[State, str, State]] = field(default_factory=list)
    done: StopResult | None = None
