"""The gravimetric calibration procedure as a step-driven state machine (the robot's Calibrate service).

The node feeds it drops (heard by the audio supervisor), balance readings and the measured gripper
opening, and calls `update(now, measured)` every control period; it answers with the gripper command.
It never reads a clock and never blocks, so the node's executor keeps serving everything else.

Phases (as `sim.calibration_run` does in the twin, drop size depends on how drops form, so the
squeezing is the dispenser's own controller with a pause after every drop, as during a titration):

    PRIME    squeeze until the first drop falls (the tip fills; that drop is not counted)
    TARE     hold `settle_s`, then the first balance reading is the tare
    SQUEEZE  dispense `drops_per_sample` more drops, one at a time with a `pause_s` hold after each
    WEIGH    hold `pause_s + settle_s`, then the first balance reading gives one CalibrationSample
             (displacement since TARE, mass since TARE, drops since TARE); back to SQUEEZE
    DONE     after `samples` samples: least-squares fit (calibration.fit_calibration)
    FAILED   an anomaly of the squeezing controller, a timeout, a balance that stays silent, a bad fit

    proc = CalibrationProcedure(CalibrationProcedureConfig(samples=6), DispenserConfig(),
                                start_opening_mm=60.0, now=0.0, liquid="naoh 0.1 M", pipette_id="p1")
    # every control period:  step = proc.update(now, measured_mm); send step.command_opening_mm
    # on inputs:             proc.on_drop(stamp); proc.on_mass(stamp, grams)
    # when step.finished:    step.calibration (or step.error)
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from enum import Enum

from agentchemist.control.calibration import Calibration, CalibrationError, CalibrationSample, fit_calibration
from agentchemist.control.dispenser import DispenseGoal, DispenserConfig, DispenserController


class Phase(str, Enum):
    PRIME = "PRIME"
    TARE = "TARE"
    SQUEEZE = "SQUEEZE"
    WEIGH = "WEIGH"
    DONE = "DONE"
    FAILED = "FAILED"


@dataclass(frozen=True)
class CalibrationProcedureConfig:
    """How the calibration dispenses and weighs. Times in s, rates in mm/s, density in g/mL."""
    samples: int = 12               #: balance samples to fit (>= 3)
    drops_per_sample: int = 8       #: drops dispensed between two weighings
    rate_mm_s: float = 0.1          #: closing rate (drop size depends on it: calibrate at the titration rate)
    pause_s: float = 1.0            #: hold after every drop (as when acting only on a settled pH)
    settle_s: float = 4.0           #: hold before reading the balance (its settling time is ~0.8 s)
    prime_timeout_s: float = 60.0   #: no first drop by then: the pipette is not dripping
    sample_timeout_s: float = 120.0  #: one sample's drops must fall within this
    balance_timeout_s: float = 5.0  #: no balance reading this long after a hold ended: failure
    density_g_ml: float = 1.0       #: of the liquid (mass -> volume)

    def __post_init__(self):
        for name in ("samples", "drops_per_sample"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise CalibrationError(f"CalibrationProcedureConfig.{name} must be an int >= 1, got {value!r}")
        if self.samples < 3:
            raise CalibrationError(f"calibration needs at least 3 samples, got {self.samples}")
        for name in ("rate_mm_s", "pause_s", "settle_s", "prime_timeout_s", "sample_timeout_s",
                     "balance_timeout_s", "density_g_ml"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
                raise CalibrationError(f"CalibrationProcedureConfig.{name} must be a finite number > 0, got {value!r}")


@dataclass
class CalibrationStep:
    command_opening_mm: float
    phase: Phase
    finished: bool = False
    calibration: Calibration | None = None
    error: str = ""
    anomalies: list = field(default_factory=list)   #: ControllerAnomaly of the squeezing controller


class CalibrationProcedure:
    """One calibration run; see the module docstring."""

    def __init__(self, config: CalibrationProcedureConfig, dispenser: DispenserConfig, *,
                 start_opening_mm: float, now: float, liquid: str, pipette_id: str):
        if not liquid.strip() or not pipette_id.strip():
            raise CalibrationError("calibration needs a pipette id and a liquid name")
        if config.rate_mm_s > dispenser.max_rate_mm_s:
            raise CalibrationError(f"calibration rate {config.rate_mm_s} mm/s exceeds the dispensing limit "
                                   f"{dispenser.max_rate_mm_s} mm/s")
        self.config = config
        self.liquid, self.pipette_id = liquid.strip(), pipette_id.strip()
        # Pause after every drop, never slow down for a volume target: the controller only squeezes.
        self._dispenser = replace(dispenser, drop_pause_s=config.pause_s, near_target_ml=0.0)
        self.phase = Phase.PRIME
        self.command = start_opening_mm
        self.drops = 0
        self.samples: list[CalibrationSample] = []
        self.calibration: Calibration | None = None
        self.error = ""
        self._phase_since = now
        self._controller = self._new_controller(start_opening_mm, now)
        self._hold_until = math.inf
        self._mass: tuple[float, float] | None = None   #: the newest balance reading (stamp, g)
        self._tare = (0.0, 0.0, 0)                       #: (opening mm, mass g, drops) at the tare
        self._sample_target = 0

    # ------------------------------------------------------------------ inputs
    def on_drop(self, stamp: float) -> None:
        """A drop heard landing (any drop: during calibration nothing else dispenses)."""
        if self.phase in (Phase.DONE, Phase.FAILED):
            return
        self.drops += 1
        if self._controller is not None:
            self._controller.on_drop(stamp)

    def on_mass(self, stamp: float, grams: float) -> None:
        """A balance reading (g). Non-finite readings are refused."""
        if not (math.isfinite(stamp) and math.isfinite(grams)):
            raise CalibrationError(f"balance reading {grams!r} g at {stamp!r} s is not a number")
        self._mass = (stamp, grams)

    def abort(self, reason: str) -> None:
        self._fail(reason)

    # ------------------------------------------------------------------ step
    def update(self, now: float, measured_opening_mm: float) -> CalibrationStep:
        step = CalibrationStep(self.command, self.phase)
        if self.phase in (Phase.DONE, Phase.FAILED):
            return self._result(step)
        c = self.config
        if self._controller is not None:
            out = self._controller.update(now, measured_opening_mm)
            self.command = out.command_opening_mm
            if out.anomalies:
                step.anomalies = list(out.anomalies)
                self.command = self._dispenser.safe_opening_mm  # the controller's RESET retracts
                self._fail(f"{self.phase.value.lower()}: {out.anomalies[0].kind}: {out.anomalies[0].description}")
                return self._result(step)
        if self.phase == Phase.PRIME:
            if self.drops >= 1:
                self._hold(now, c.settle_s, Phase.TARE)
            elif now - self._phase_since > c.prime_timeout_s:
                self._fail(f"no drop within {c.prime_timeout_s:.0f} s of squeezing: is the pipette filled?")
        elif self.phase in (Phase.TARE, Phase.WEIGH) and now >= self._hold_until:
            reading = self._mass if self._mass is not None and self._mass[0] >= self._hold_until else None
            if reading is None:
                if now - self._hold_until > c.balance_timeout_s:
                    self._fail(f"the balance gave no reading within {c.balance_timeout_s:.0f} s of settling")
            elif self.phase == Phase.TARE:
                self._tare = (measured_opening_mm, reading[1], self.drops)
                self._squeeze(now, measured_opening_mm)
            else:
                opening, mass, drops = self._tare
                self.samples.append(CalibrationSample(opening - measured_opening_mm, reading[1] - mass,
                                                      self.drops - drops))
                if len(self.samples) >= c.samples:
                    self._fit()
                else:
                    self._squeeze(now, measured_opening_mm)
        elif self.phase == Phase.SQUEEZE:
            if self.drops >= self._sample_target:
                self._hold(now, c.pause_s + c.settle_s, Phase.WEIGH)
            elif now - self._phase_since > c.sample_timeout_s:
                self._fail(f"the pipette stopped dripping: {self.drops - self._sample_target + c.drops_per_sample}"
                           f" of {c.drops_per_sample} drops in {c.sample_timeout_s:.0f} s")
        step.command_opening_mm = self.command
        step.phase = self.phase
        return self._result(step)

    @property
    def progress(self) -> str:
        return f"{self.phase.value}: {len(self.samples)}/{self.config.samples} samples, {self.drops} drops"

    # ------------------------------------------------------------------ internals
    def _new_controller(self, opening: float, now: float) -> DispenserController:
        goal = DispenseGoal(target_volume_ml=1000.0, rate_mm_s=self.config.rate_mm_s, settle_each_drop=True,
                            timeout_s=self.config.prime_timeout_s + self.config.sample_timeout_s)
        return DispenserController(self._dispenser, goal, start_opening_mm=opening, now=now)

    def _hold(self, now: float, seconds: float, phase: Phase) -> None:
        """Stop squeezing (the command stays where it is) and wait `seconds`."""
        self._controller = None
        self._hold_until = now + seconds
        self._enter(phase, now)

    def _squeeze(self, now: float, opening: float) -> None:
        self._sample_target = self.drops + self.config.drops_per_sample
        self._controller = self._new_controller(opening, now)
        self._enter(Phase.SQUEEZE, now)

    def _enter(self, phase: Phase, now: float) -> None:
        self.phase = phase
        self._phase_since = now

    def _fit(self) -> None:
        try:
            self.calibration = fit_calibration(self.samples, density_g_ml=self.config.density_g_ml,
                                               rate_mm_s=self.config.rate_mm_s, liquid=self.liquid,
                                               pipette_id=self.pipette_id)
        except CalibrationError as exc:
            self._fail(f"fit: {exc}")
            return
        self.phase = Phase.DONE

    def _fail(self, reason: str) -> None:
        self._controller = None
        self.error = reason
        self.phase = Phase.FAILED

    def _result(self, step: CalibrationStep) -> CalibrationStep:
        step.phase = self.phase
        step.command_opening_mm = self.command
        step.finished = self.phase in (Phase.DONE, Phase.FAILED)
        step.calibration = self.calibration
        step.error = self.error
        return step
