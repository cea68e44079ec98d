"""The dispenser session's jobs: one object per mode (drops, solid pour, calibration) behind one small
protocol, `Job`, so that the session hosts whichever has the gripper without asking which it is.

A job is made from a request (`DropsJob.prepare`, `PourJob.prepare`, `CalibrationJob.prepare`: the
request's unset settings resolved against the dispenser's configuration here, once) and then takes the
readings that concern it, one control update at a time (`step`, with the session as its host: the
measured gripper opening and arm joints, the latest pH, the experiment's volume and the feedback pace),
and says what its start, its end and its result are. An input a job has no use for is ignored by the base
class: a solid pour hears no droplets, a calibration obeys no supervisor's hold.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from agentchemist.contracts.dispense import DROPS, SOLID_POUR, DropsRequest, PourRequest, titration_direction
from agentchemist.contracts.notes import Tap as TapNote
from agentchemist.control.calibration import CalibrationError
from agentchemist.control.calibration_procedure import CalibrationProcedure, CalibrationProcedureConfig
from agentchemist.control.dispenser import DispenseGoal, DispenserConfig, DispenserController, GoalError
from agentchemist.control.dispenser_types import State
from agentchemist.control.session_types import (CALIBRATION, NAN, Feedback, GoalOutcome, Refusal, StateChange, Tap,
                                                Tick, VolumeEstimate, state_change)
from agentchemist.control.solid_pour import SolidPourConfig, SolidPourController, SolidPourGoal
from agentchemist.perception.ph_stability import ReadingError
from agentchemist.policy.primitives import PrimitiveError, pour_kinematics
from agentchemist.workcell.robot import SIDES


@dataclass(eq=False)
class Job:
    """The goal or calibration that has (or asks for) the gripper. The base class is the protocol the session
    calls; each mode's subclass answers the calls that concern it (the base ignores the others)."""
    mode: str
    experiment_id: str
    subtask_id: str
    controller: Any                      #: DispenserController | SolidPourController | CalibrationProcedure
    summary: str = ""                    #: one line for the log
    busy: ClassVar[str] = ""             #: why another job is refused while this one runs
    supervised: ClassVar[bool] = True    #: the supervisor's holds apply to it

    # ---- the supervisor and the endpoint judge
    def hold(self, reason: str) -> None:
        self.controller.hold(reason)

    def release(self, reason: str) -> None:
        self.controller.release(reason)

    def resume(self) -> None:
        """The supervisor's resume (its ph_stable): only a drops goal waits for it."""

    def judge_gone(self) -> bool:
        """The endpoint judge is gone for good: True when this job was cancelled for it (nobody would end it)."""
        return False

    # ---- readings
    def on_ph(self, stamp: float, value: float, noise: float) -> bool:
        """A pH reading; True when the node should run a control update now."""
        return False

    def on_droplet(self, stamp: float, classification: str) -> None:
        """A droplet the audio supervisor heard."""

    def on_mass(self, stamp: float, grams: float, self_check_ok: bool) -> None:
        """A balance reading (g). Raises ReadingError when the job refuses it."""

    # ---- start, control, end
    def start_state(self) -> StateChange | None:
        return None

    def step(self, host, now: float, cancel: bool) -> Tick | None:
        raise NotImplementedError(f"a {self.mode} job has no control update")

    def outcome(self) -> GoalOutcome:
        """The action result of a finished goal from its controller's stop (none: the node shut down)."""
        raise NotImplementedError(f"a {self.mode} job has no action result")

    def end_state(self, reason: str) -> StateChange:
        raise NotImplementedError(f"a {self.mode} job has no end state")

    def _stopped(self) -> dict:
        stop = self.controller.result
        return dict(success=bool(stop and stop.success), stop_reason=stop.reason if stop else "aborted",
                    message=stop.message if stop else "node shut down")


# ---------------------------------------------------------------------- drops
@dataclass(eq=False)
class DropsJob(Job):
    busy: ClassVar[str] = "a dispensing goal is running"
    volume_offset_ml: float = 0.0        #: what the experiment's earlier goals dispensed

    @classmethod
    def prepare(cls, r: DropsRequest, config: DispenserConfig, *, opening_mm: float, last_ph: float | None,
                now: float) -> DropsJob:
        """The job of a drops request: its unset settings are the configuration's. Raises Refusal."""
        # The supervisor decides the direction once per experiment and sends it; a client that does not
        # (0) gets it by the same rule from the latest reading.
        direction = r.ph_direction if r.ph_direction in (-1, 1) else titration_direction(r.target_ph, last_ph)
        goal = DispenseGoal(
            target_volume_ml=r.target_volume_ml or 0.0, target_ph=r.target_ph, ph_direction=direction,
            rate_mm_s=_or(r.rate_mm_s, config.rate_mm_s), settle_each_drop=r.settle_each_drop,
            resume_on_command=r.resume_on_command,
            change_rate_threshold=_or(r.change_rate_threshold_ph_s, config.change_rate_threshold),
            stable_window_s=_or(r.stable_window_s, config.settle.window_s),
            timeout_s=_or(r.timeout_s, config.operation_timeout_s))
        try:
            controller = DispenserController(config, goal, start_opening_mm=opening_mm, now=now)
        except GoalError as exc:
            raise Refusal(str(exc), r.experiment_id, r.subtask_id) from None
        return cls(DROPS, r.experiment_id, r.subtask_id, controller,
                   summary=f"dispensing: target {r.target_volume_ml or 0.0} mL / pH {r.target_ph} "
                           f"(direction {direction:+d}), settle each drop {r.settle_each_drop}")

    def resume(self) -> None:
        self.controller.request_resume()

    def judge_gone(self) -> bool:
        self.controller.cancel()
        return True

    def on_ph(self, stamp: float, value: float, noise: float) -> bool:
        # while the gripper squeezes, the reading may stop it (a reading never starts a squeeze early: a WAIT
        # is left on the control ticks)
        self.controller.on_ph(stamp, value, noise if math.isfinite(noise) and noise >= 0.0 else None)
        return self.controller.state == State.MOTION

    def on_droplet(self, stamp: float, classification: str) -> None:
        if classification == "expected":
            self.controller.on_drop(stamp)

    def start_state(self) -> StateChange:
        return state_change(self, self.controller.state.value, "IDLE", "goal", interval=self.controller.drop_interval_s)

    def step(self, host, now: float, cancel: bool) -> Tick | None:
        c, opening_mm = self.controller, host.opening_mm
        if opening_mm is None:
            return None
        tick = Tick(self.experiment_id, self.subtask_id)
        if cancel:
            c.cancel()
        out = c.update(now, opening_mm)
        tick.gripper_opening_mm = out.command_opening_mm
        for est in out.estimates:
            value = self.volume_offset_ml + est.value_ml
            host.volume.record(self.experiment_id, value)
            tick.estimates.append(VolumeEstimate(est.stamp, value, est.delta_ml, est.confidence))
        tick.anomalies = list(out.anomalies)
        tick.states = [state_change(self, dst.value, src.value, cond, interval=c.drop_interval_s,
                                    dispensed_ml=c.q_stat, drops=c.drops)
                       for src, cond, dst in out.transitions
                       if dst.value != "DONE"]  # the goal's end is published when its result goes out
        if host.feedback_due(now, bool(out.done or out.transitions)):
            tick.feedback = Feedback(out.state.value, dispensed_ml=c.q_stat, drops=c.drops,
                                     gripper_position_mm=opening_mm,
                                     ph=host.last_ph if host.last_ph is not None else NAN)
        tick.done = out.done
        return tick

    def outcome(self) -> GoalOutcome:
        c, stop = self.controller, self.controller.result
        return GoalOutcome(**self._stopped(), dispensed_ml=c.q_stat, drops=c.drops,
                           final_ph=stop.final_ph if stop else NAN)

    def end_state(self, reason: str) -> StateChange:
        c = self.controller
        return state_change(self, "IDLE", c.state.value, reason, active=False, dispensed_ml=c.q_stat, drops=c.drops)


# ---------------------------------------------------------------------- solid pour
@dataclass(eq=False)
class PourJob(Job):
    busy: ClassVar[str] = "a solid pour is running"
    arm: tuple | None = None             #: (side, joints(tilt_deg), tilt(positions))
    phase: str = ""                      #: the phase last published

    @classmethod
    def prepare(cls, r: PourRequest, config: SolidPourConfig, *, default_side: str, now: float) -> PourJob:
        """The job of a pour request: its unset settings are the configuration's. Raises Refusal."""
        side = r.side or default_side
        if side not in SIDES:
            raise Refusal(f"side {r.side or ''!r} is not left or right", r.experiment_id, r.subtask_id)
        try:
            joints, tilt = pour_kinematics(side)
            joints(config.max_tilt_deg)  # the search's furthest tilt must be within the wrist's reach
            controller = SolidPourController(
                config,
                SolidPourGoal(target_mass_g=r.target_mass_g,
                              mass_tolerance_g=_or(r.mass_tolerance_g, config.default_tolerance_g),
                              tilt_rate_deg_s=_or(r.tilt_rate_deg_s, config.default_tilt_rate_deg_s),
                              settle_each_drop=r.settle_each_drop,
                              stable_window_s=_or(r.stable_window_s, config.default_stable_window_s),
                              change_rate_threshold=_or(r.change_rate_threshold_g_s,
                                                        config.default_change_threshold_g_s),
                              timeout_s=_or(r.timeout_s, config.operation_timeout_s)),
                now=now)
        except (GoalError, PrimitiveError, OSError) as exc:
            raise Refusal(str(exc), r.experiment_id, r.subtask_id) from None
        return cls(SOLID_POUR, r.experiment_id, r.subtask_id, controller, arm=(side, joints, tilt),
                   summary=f"pouring {r.target_mass_g} g of solid (tolerance {controller.tolerance} g) "
                           f"from the bottle in the {side} gripper")

    def on_mass(self, stamp: float, grams: float, self_check_ok: bool) -> None:
        if not self_check_ok:
            raise ReadingError(f"balance reading {grams:.3f} g failed the balance's self-check "
                               f"(overloaded or unsettled pan)")
        self.controller.on_mass(stamp, grams)

    def step(self, host, now: float, cancel: bool) -> Tick:
        c = self.controller
        side, joints, tilt_of = self.arm
        if cancel:
            c.cancel()
        positions = host.arm_positions.get(side)
        measured = tilt_of(positions) if positions is not None else None
        out = c.update(now, measured)
        tick = Tick(self.experiment_id, self.subtask_id, done=out.done)
        # Far from the pour pose (APPROACH) the arm is given time to get there; at it, each command is a
        # small step the wrist follows within the control period.
        tick.arm = (side, joints(out.command_tilt_deg),
                    host.pour_config.control_period_s if measured is not None else host.approach_time_s)
        tick.taps = [Tap(p.stamp, TapNote(index=p.index, kind=p.kind, duration_s=round(p.duration_s, 3),
                                          planned_g=None if math.isnan(p.planned_g) else round(p.planned_g, 4),
                                          tilt_deg=round(p.tilt_deg, 2))) for p in out.pulses]
        tick.anomalies = [replace(a, response=a.response or "abort", resolved=False) for a in out.anomalies]
        phase_changed = out.phase.value != self.phase
        if phase_changed:
            tick.states.append(state_change(self, out.phase.value, self.phase, "", drops=c.pulse_count))
        self.phase = out.phase.value
        if host.feedback_due(now, bool(out.done or phase_changed)):
            mass = c.latest_mass
            tick.feedback = Feedback(out.phase.value, drops=c.pulse_count, mass_g=mass if mass is not None else NAN,
                                     ph=NAN)
        return tick

    def outcome(self) -> GoalOutcome:
        stop = self.controller.result
        return GoalOutcome(**self._stopped(), drops=self.controller.pulse_count, final_ph=NAN,
                           dispensed_g=stop.dispensed_g if stop else NAN,
                           final_mass_g=stop.final_mass_g if stop else NAN)

    def end_state(self, reason: str) -> StateChange:
        return state_change(self, "IDLE", self.phase, reason, active=False, drops=self.controller.pulse_count)


# ---------------------------------------------------------------------- calibration
@dataclass(eq=False)
class CalibrationJob(Job):
    busy: ClassVar[str] = "a pipette calibration is running"
    supervised: ClassVar[bool] = False   #: it belongs to no experiment
    drop_interval_s: float = 0.0         #: between drops at the procedure's rate, its pause included

    @classmethod
    def prepare(cls, config: DispenserConfig, *, samples: int, liquid: str, pipette_id: str, opening_mm: float,
                now: float) -> CalibrationJob:
        """A calibration (0 samples: the default). Raises Refusal."""
        try:
            procedure_config = CalibrationProcedureConfig(**({"samples": int(samples)} if samples else {}))
            procedure = CalibrationProcedure(procedure_config, config, start_opening_mm=opening_mm, now=now,
                                             liquid=liquid, pipette_id=pipette_id)
        except (CalibrationError, GoalError) as exc:
            raise Refusal(str(exc)) from None
        c = procedure_config
        return cls(CALIBRATION, "", CALIBRATION, procedure,
                   summary=f"calibrating {pipette_id} with {liquid}: {c.samples} samples "
                           f"of {c.drops_per_sample} drops at {c.rate_mm_s} mm/s",
                   drop_interval_s=config.drop_volume_ml / (config.k_ml_per_mm * c.rate_mm_s) + c.pause_s)

    def hold(self, reason: str) -> None:
        """Not held: a calibration belongs to no experiment."""

    def release(self, reason: str) -> None:
        """Not held: see hold."""

    def on_droplet(self, stamp: float, classification: str) -> None:
        # calibrating, nothing else dispenses: every droplet heard is ours
        if classification != "timeout":
            self.controller.on_drop(stamp)

    def on_mass(self, stamp: float, grams: float, self_check_ok: bool) -> None:
        try:
            self.controller.on_mass(stamp, grams)
        except CalibrationError as exc:
            raise ReadingError(str(exc)) from None

    def start_state(self) -> StateChange:
        return state_change(self, "MOTION", "IDLE", "calibrate", interval=self.drop_interval_s)

    def step(self, host, now: float, cancel: bool) -> Tick | None:
        if host.opening_mm is None:
            return None
        step = self.controller.update(now, host.opening_mm)
        return Tick(self.experiment_id, self.subtask_id, gripper_opening_mm=step.command_opening_mm,
                    anomalies=[replace(a, description=f"calibration: {a.description}", response="abort",
                                       resolved=False) for a in step.anomalies],
                    done=step if step.finished else None)

    def end_state(self, reason: str) -> StateChange:
        return state_change(self, "IDLE", "MOTION", "calibration finished", active=False)


def _or(value: float | None, default: float) -> float:
    """A request's setting, or the configuration's when the request leaves it unset."""
    return default if value is None else value


__all__ = ["CalibrationJob", "DropsJob", "Job", "PourJob"]
