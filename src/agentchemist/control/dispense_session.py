"""The dispenser's bookkeeping around its controllers, one goal after another (no ROS here).

The dispenser node translates messages; a DispenseSession decides the rest:

- **who has the gripper**: one job at a time, a drops goal (DispenserController), a solid pour
  (SolidPourController) or a pipette calibration (CalibrationProcedure); another is refused with the
  reason (`busy`, `claim`);
- **the supervisor's standing holds**: they outlive a goal and apply to the next goal of the same
  experiment (a goal sent while one is in force starts held); a new experiment starts with none. A
  calibration belongs to no experiment and is not held;
- **the titrant volume of an experiment**: cumulative over its goals (a goal after a hold or a cancel
  counts from zero, on top of what the earlier goals of the experiment dispensed);
- **what a control tick sends out** (`step`): the gripper opening or the arm target, the volume
  estimates, the pour's taps, anomalies, DispenserState changes (on every controller transition; the
  goal's start and end come from `start_state` / `end_state`) and paced action feedback;
- **its endpoint judge alive**: the vision supervisor's heartbeat (when it runs in its own process,
  agentchemist.fsm.node_watch); lost, the running goal is held (no drop falls that nobody judges), back,
  released; gone too long or restarted (the new process never sent this goal), the goal is cancelled;
- **the action result** from the controller's stop (`outcome`), and why a goal is refused before anything
  moves (`prepare` raises Refusal).

The caller holds its lock around every call; time is an argument (`now`), as everywhere in the core.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace
from typing import Any

from agentchemist.workcell.robot import SIDES
from agentchemist.control.calibration import Calibration, CalibrationError, save_calibration
from agentchemist.control.calibration_procedure import CalibrationProcedure, CalibrationProcedureConfig
from agentchemist.control.dispenser import DispenseGoal, DispenserConfig, DispenserController, GoalError
from agentchemist.control.dispenser_types import ControllerAnomaly, State
from agentchemist.control.solid_pour import SolidPourConfig, SolidPourController, SolidPourGoal
from agentchemist.fsm.node_watch import NodeWatch
from agentchemist.perception.ph_stability import ReadingError
from agentchemist.policy.primitives import PrimitiveError, pour_kinematics

DROPS, SOLID_POUR, CALIBRATION = "drops", "solid_pour", "calibration"
JUDGE = "vision_supervisor"   #: the node whose verdicts end a titration (agentchemist.fsm.endpoint)
JUDGE_LOST = f"peer {JUDGE}"  #: the hold while it is lost
NAN = float("nan")
_BUSY = {DROPS: "a dispensing goal is running", SOLID_POUR: "a solid pour is running",
         CALIBRATION: "a pipette calibration is running"}


class Refusal(ValueError):
    """A goal refused before anything moved, with the ids its anomaly names: the goal's, except when the
    gripper is busy or its position unknown (the goal never ran)."""

    def __init__(self, reason: str, experiment_id: str = "", subtask_id: str = ""):
        super().__init__(reason)
        self.experiment_id, self.subtask_id = experiment_id, subtask_id


@dataclass(frozen=True)
class GoalRequest:
    """A Dispense goal's fields (the action's Goal, by the same names)."""
    experiment_id: str = ""
    subtask_id: str = ""
    mode: str = ""                       #: "" or drops | solid_pour
    target_volume_ml: float = 0.0
    use_target_ph: bool = False
    target_ph: float = 0.0
    ph_direction: int = 0                #: +1 | -1; 0: from the latest reading
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

    @classmethod
    def of(cls, goal) -> GoalRequest:
        """From any object with these attributes (the action's Goal message)."""
        return cls(**{f.name: getattr(goal, f.name) for f in fields(cls)})


@dataclass(eq=False)
class Job:
    """The goal or calibration that has (or asks for) the gripper."""
    mode: str
    experiment_id: str
    subtask_id: str
    controller: Any                      #: DispenserController | SolidPourController | CalibrationProcedure
    summary: str = ""                    #: one line for the log
    arm: tuple | None = None             #: solid_pour: (side, joints(tilt_deg), tilt(positions))
    volume_offset_ml: float = 0.0        #: drops: what the experiment's earlier goals dispensed
    phase: str = ""                      #: solid_pour: the phase last published


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
    payload: dict


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


def state_change(job: Job, state: str, previous: str, reason: str, *, interval: float = 0.0, active: bool = True,
                 dispensed_ml: float = 0.0, drops: int = 0) -> StateChange:
    return StateChange(job.experiment_id, job.subtask_id, job.mode, state, previous, reason, active=active,
                       drop_interval_s=float(interval if state == "MOTION" else 0.0),
                       priming=state == "MOTION" and previous == "RESET", dispensed_ml=float(dispensed_ml),
                       drops=int(drops))


def refused(mode: str, reason: str) -> GoalOutcome:
    """The result of a refused goal (a solid pour's masses are unknown: NaN)."""
    unknown = {"final_ph": NAN, "dispensed_g": NAN, "final_mass_g": NAN} if mode == SOLID_POUR else {}
    return GoalOutcome(success=False, stop_reason="rejected", message=reason, **unknown)


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


def calibration_summary(cal: Calibration, drops: int, saved_path: str | None) -> str:
    return (f"k {cal.k_ml_per_mm:.4f} mL/mm, drop {cal.drop_volume_ml:.5f} mL, residual {cal.residual_ml:.4f} mL "
            f"from {cal.samples} samples ({drops} drops)"
            + (f"; saved to {saved_path}" if saved_path is not None else "; not saved"))


class DispenseSession:
    """See the module docstring."""

    def __init__(self, config: DispenserConfig, pour_config: SolidPourConfig, *, side: str = "right",
                 pour_side: str = "left", approach_time_s: float = 2.0, feedback_period_s: float = 0.5):
        self.config, self.pour_config = config, pour_config
        self.side, self.pour_side = side, pour_side
        self.approach_time_s, self.feedback_period_s = approach_time_s, feedback_period_s
        self.job: Job | None = None
        self.last_ph: float | None = None
        self.last_ph_stamp: float | None = None
        self.opening_mm: float | None = None   #: the measured gripper opening (side's gripper)
        self.arm_positions: dict[str, tuple[float, ...]] = {}  #: measured joints 1..6 per arm (rad)
        self._holds: set[str] = set()
        self._holds_experiment = ""
        self.judge_watch = NodeWatch(peers=frozenset({JUDGE}))
        self._volume = ("", 0.0)            #: (experiment id, cumulative titrant volume published for it)
        self._last_feedback = -1e9

    # ------------------------------------------------------------------ the gripper
    def busy(self) -> str:
        """Why the gripper cannot take a new job now ("" when it can)."""
        return _BUSY[self.job.mode] if self.job is not None else ""

    def claim(self, job: Job) -> str:
        """Make `job` the running one unless another runs (returns why not, "" when claimed). The
        experiment's standing holds apply to a goal; a drops goal counts on from the experiment's volume."""
        busy = self.busy()
        if busy:
            return busy
        if job.mode != CALIBRATION:
            self._enter(job.experiment_id)
            for reason in self._holds:
                job.controller.hold(reason)
        if job.mode == DROPS:
            experiment, total = self._volume
            job.volume_offset_ml = total if experiment == job.experiment_id else 0.0
        self.job = job
        return ""

    def finish(self) -> Job | None:
        """The running job is over (its result has been read): the gripper is free."""
        job, self.job = self.job, None
        return job

    def running(self, mode: str):
        """The controller of the running job when it is of `mode`, else None."""
        return self.job.controller if self.job is not None and self.job.mode == mode else None

    def ids(self) -> tuple[str, str]:
        """(experiment id, subtask id) of the running job, or ("", "")."""
        return (self.job.experiment_id, self.job.subtask_id) if self.job is not None else ("", "")

    # ------------------------------------------------------------------ the supervisor's commands
    def set_hold(self, experiment_id: str, reason: str, hold: bool) -> list[str]:
        """A hold (or its release) for `experiment_id`: kept for its next goals, applied to the running one.
        Returns the holds in force."""
        self._enter(experiment_id)
        (self._holds.add if hold else self._holds.discard)(reason)
        if self.job is not None and self.job.mode != CALIBRATION:
            (self.job.controller.hold if hold else self.job.controller.release)(reason)
        return sorted(self._holds)

    # ------------------------------------------------------------------ the endpoint judge's heartbeat
    def on_heartbeat(self, node: str, instance: str, now: float) -> list[ControllerAnomaly]:
        return self._on_judge(self.judge_watch.on_heartbeat(node, instance, now), now)

    def check_judge(self, now: float) -> list[ControllerAnomaly]:
        """The control tick: the judge newly lost (hold) or gone too long (the running drops goal is
        cancelled: nobody would end it)."""
        return self._on_judge(self.judge_watch.check(now), now)

    def _on_judge(self, events, now: float) -> list[ControllerAnomaly]:
        out = []
        for e in events:
            if e.what == "lost":
                self.set_hold(self._holds_experiment, JUDGE_LOST, True)
                out.append(ControllerAnomaly(now, "node_lost", e.text + ": dispensing is held until it is back",
                                             response="pause"))
            elif e.what == "back":
                self.set_hold(self._holds_experiment, JUDGE_LOST, False)
                out.append(ControllerAnomaly(now, "node_lost", e.text, severity="info", resolved=True))
            elif e.what in ("abort", "restarted") and self.job is not None and self.job.mode == DROPS:
                # gone for good, or a new process that never sent this goal: nobody would end it
                self.job.controller.cancel()
                out.append(ControllerAnomaly(now, "node_lost", e.text + ": the dispensing goal is cancelled",
                                             severity="halt", response="abort"))
        return out

    def resume(self) -> None:
        if self.job is not None and self.job.mode == DROPS:
            self.job.controller.request_resume()

    def _enter(self, experiment_id: str) -> None:
        if experiment_id != self._holds_experiment:
            self._holds, self._holds_experiment = set(), experiment_id

    # ------------------------------------------------------------------ readings
    def on_joints(self, names, positions) -> None:
        """A joint state (names, positions in m or rad): the pipette gripper's opening and each arm's joints,
        when all finite."""
        names = list(names)
        gripper = f"{self.side}_gripper"
        if gripper in names:
            value = positions[names.index(gripper)] * 1000.0
            if math.isfinite(value):
                self.opening_mm = value
        for side in SIDES:
            joints = [f"{side}_joint{i}" for i in range(1, 7)]
            if all(j in names for j in joints):
                values = tuple(float(positions[names.index(j)]) for j in joints)
                if all(math.isfinite(v) for v in values):
                    self.arm_positions[side] = values

    def on_ph(self, stamp: float, value: float, noise: float) -> bool:
        """A pH reading with the meter's noise (sd; NaN or negative: unknown). Raises ReadingError. True when
        the node should run a control update now: while the gripper squeezes, the reading may stop it (a
        reading never starts a squeeze early: a WAIT is left on the control ticks)."""
        self.last_ph, self.last_ph_stamp = value, stamp
        if self.job is None or self.job.mode != DROPS:
            return False
        self.job.controller.on_ph(stamp, value, noise if math.isfinite(noise) and noise >= 0.0 else None)
        return self.job.controller.state == State.MOTION

    def on_droplet(self, stamp: float, classification: str) -> None:
        """A droplet the audio supervisor heard. Calibrating, nothing else dispenses: every droplet heard is
        ours; a drops goal counts the expected ones."""
        if self.job is None:
            return
        if self.job.mode == CALIBRATION and classification != "timeout":
            self.job.controller.on_drop(stamp)
        elif self.job.mode == DROPS and classification == "expected":
            self.job.controller.on_drop(stamp)

    def on_mass(self, stamp: float, grams: float, self_check_ok: bool = True) -> None:
        """A balance reading (g). Raises ReadingError when the running job refuses it."""
        if self.job is None:
            return
        if self.job.mode == SOLID_POUR:
            if not self_check_ok:
                raise ReadingError(f"balance reading {grams:.3f} g failed the balance's self-check "
                                   f"(overloaded or unsettled pan)")
            self.job.controller.on_mass(stamp, grams)
        elif self.job.mode == CALIBRATION:
            try:
                self.job.controller.on_mass(stamp, grams)
            except CalibrationError as exc:
                raise ReadingError(str(exc)) from None

    # ------------------------------------------------------------------ starting
    def start(self, request: GoalRequest, *, now: float) -> Job:
        """Prepare and claim the job of a Dispense goal in one step. Raises Refusal."""
        job = self.prepare(request, now=now)
        busy = self.claim(job)
        if busy:
            raise Refusal(busy)
        return job

    def missing_inputs(self, request: GoalRequest, now: float) -> list[str]:
        """What a drops goal needs that has not reached the node yet: the gripper's measured position and, for
        a goal judged on pH, a reading from the last sensor_timeout_s. A node just started in its own process
        (DDS still matching its topics) or starved of CPU lacks them for a while in wall time; the node waits
        for them with the twin's clock held before it starts the goal (prepare() refuses without a position,
        and the controller's sensor timeout would count the wait as a dead meter)."""
        if (request.mode or DROPS) != DROPS:
            return []
        missing = [] if self.opening_mm is not None else [f"the {self.side} gripper's position"]
        if (request.use_target_ph or request.settle_each_drop) and (
                self.last_ph_stamp is None or now - self.last_ph_stamp > self.config.sensor_timeout_s):
            missing.append("a pH reading")
        return missing

    def prepare(self, request: GoalRequest, *, now: float) -> Job:
        """The job for a Dispense goal (not yet claimed). Raises Refusal."""
        r = request
        mode = r.mode or DROPS
        if mode == SOLID_POUR:
            return self._prepare_pour(r, now)
        if mode != DROPS:
            raise Refusal(f"unknown dispensing mode {r.mode!r} (drops | solid_pour)", r.experiment_id, r.subtask_id)
        busy = self.busy()  # checked again when the goal claims the gripper
        if busy:
            raise Refusal(busy)
        if self.opening_mm is None:
            raise Refusal(f"no joint state for {self.side}_gripper yet: gripper position unknown")
        target_ph = r.target_ph if r.use_target_ph else None
        # The supervisor decides the direction once per experiment and sends it; a client that does not
        # (0) gets it from the latest reading.
        direction = r.ph_direction if r.ph_direction in (-1, 1) else (
            -1 if target_ph is not None and self.last_ph is not None and target_ph < self.last_ph else 1)
        goal = DispenseGoal(target_volume_ml=r.target_volume_ml, target_ph=target_ph, ph_direction=direction,
                            rate_mm_s=r.rate_mm_s, settle_each_drop=r.settle_each_drop,
                            resume_on_command=r.resume_on_command, change_rate_threshold=r.wait_on_change_threshold,
                            stable_window_s=r.stable_window_s, timeout_s=r.timeout_s)
        try:
            controller = DispenserController(self.config, goal, start_opening_mm=self.opening_mm, now=now)
        except GoalError as exc:
            raise Refusal(str(exc), r.experiment_id, r.subtask_id) from None
        return Job(DROPS, r.experiment_id, r.subtask_id, controller,
                   summary=f"dispensing: target {r.target_volume_ml} mL / pH {target_ph} (direction {direction:+d}), "
                           f"settle each drop {r.settle_each_drop}")

    def _prepare_pour(self, r: GoalRequest, now: float) -> Job:
        side = r.side or self.pour_side
        if side not in SIDES:
            raise Refusal(f"side {r.side!r} is not left or right", r.experiment_id, r.subtask_id)
        try:
            joints, tilt = pour_kinematics(side)
            joints(self.pour_config.max_tilt_deg)  # the search's furthest tilt must be within the wrist's reach
            controller = SolidPourController(
                self.pour_config,
                SolidPourGoal(target_mass_g=r.target_mass_g, mass_tolerance_g=r.mass_tolerance_g,
                              tilt_rate_deg_s=r.tilt_rate_deg_s, settle_each_drop=r.settle_each_drop,
                              stable_window_s=r.stable_window_s, change_rate_threshold=r.wait_on_change_threshold,
                              timeout_s=r.timeout_s),
                now=now)
        except (GoalError, PrimitiveError, OSError) as exc:
            raise Refusal(str(exc), r.experiment_id, r.subtask_id) from None
        return Job(SOLID_POUR, r.experiment_id, r.subtask_id, controller, arm=(side, joints, tilt),
                   summary=f"pouring {r.target_mass_g} g of solid (tolerance {controller.tolerance} g) "
                           f"from the bottle in the {side} gripper")

    def start_calibration(self, *, samples: int, liquid: str, pipette_id: str, now: float) -> Job:
        """Prepare and claim a calibration (0 samples: the default). Raises Refusal."""
        if self.opening_mm is None:
            raise Refusal(f"no joint state for {self.side}_gripper yet")
        try:
            config = CalibrationProcedureConfig(**({"samples": int(samples)} if samples else {}))
            procedure = CalibrationProcedure(config, self.config, start_opening_mm=self.opening_mm, now=now,
                                             liquid=liquid, pipette_id=pipette_id)
        except (CalibrationError, GoalError) as exc:
            raise Refusal(str(exc)) from None
        job = Job(CALIBRATION, "", CALIBRATION, procedure,
                  summary=f"calibrating {pipette_id} with {liquid}: {config.samples} samples "
                          f"of {config.drops_per_sample} drops at {config.rate_mm_s} mm/s")
        busy = self.claim(job)
        if busy:
            raise Refusal(busy)
        return job

    def conclude_calibration(self, job: Job, step, *, save: bool, path: str | None = None) -> CalibrationOutcome:
        """After the finished CalibrationStep: save the fit when asked (to `path`, default: the calibration
        file) and from now on dispense with it."""
        cal = step.calibration
        if cal is None:
            return CalibrationOutcome(message=f"calibration failed: {step.error}", fit_failed=True)
        saved = None
        if save:
            try:
                saved = str(save_calibration(cal, path or None))
            except OSError as exc:
                return CalibrationOutcome(message=f"calibration fitted but not saved: {exc}")
        self.adopt_calibration(cal)
        return CalibrationOutcome(True, calibration_summary(cal, job.controller.drops, saved), cal.k_ml_per_mm,
                                  cal.drop_volume_ml, cal.residual_ml, saved or "")

    def adopt_calibration(self, cal: Calibration) -> None:
        """From now on the dispenser counts with `cal`."""
        self.config = replace(self.config, k_ml_per_mm=cal.k_ml_per_mm, drop_volume_ml=cal.drop_volume_ml,
                              calibration_residual_ml=cal.residual_ml)

    def start_state(self, job: Job) -> StateChange | None:
        """The DispenserState when `job` starts (a solid pour's first phase comes with its first tick)."""
        if job.mode == DROPS:
            return state_change(job, job.controller.state.value, "IDLE", "goal",
                                interval=job.controller.drop_interval_s)
        if job.mode == CALIBRATION:
            c = job.controller.config
            return state_change(job, "MOTION", "IDLE", "calibrate",
                                interval=self.config.drop_volume_ml / (self.config.k_ml_per_mm * c.rate_mm_s)
                                + c.pause_s)
        return None

    # ------------------------------------------------------------------ ending
    @staticmethod
    def outcome(job: Job) -> GoalOutcome:
        """The action result of a finished goal from its controller's stop (none: the node shut down)."""
        c, stop = job.controller, job.controller.result
        common = dict(success=bool(stop and stop.success), stop_reason=stop.reason if stop else "aborted",
                      message=stop.message if stop else "node shut down")
        if job.mode == SOLID_POUR:
            return GoalOutcome(**common, drops=c.pulse_count, final_ph=NAN,
                               dispensed_g=stop.dispensed_g if stop else NAN,
                               final_mass_g=stop.final_mass_g if stop else NAN)
        return GoalOutcome(**common, dispensed_ml=c.q_stat, drops=c.drops, final_ph=stop.final_ph if stop else NAN)

    @staticmethod
    def end_state(job: Job, reason: str) -> StateChange:
        """The DispenserState when `job` has ended (`reason`: the stop reason)."""
        c = job.controller
        if job.mode == DROPS:
            return state_change(job, "IDLE", c.state.value, reason, active=False, dispensed_ml=c.q_stat, drops=c.drops)
        if job.mode == SOLID_POUR:
            return state_change(job, "IDLE", job.phase, reason, active=False, drops=c.pulse_count)
        return state_change(job, "IDLE", "MOTION", "calibration finished", active=False)

    # ------------------------------------------------------------------ the control loop
    def step(self, now: float, *, cancel: bool = False) -> Tick | None:
        """One control update of the running job (None: nothing to send; drops and calibration wait for the
        gripper's opening). `cancel`: the goal's client asked to cancel."""
        job, opening_mm = self.job, self.opening_mm
        if job is None:
            return None
        if job.mode == SOLID_POUR:
            return self._step_pour(job, now, cancel)
        if opening_mm is None:
            return None
        tick = Tick(job.experiment_id, job.subtask_id)
        if job.mode == CALIBRATION:
            step = job.controller.update(now, opening_mm)
            tick.gripper_opening_mm = step.command_opening_mm
            tick.anomalies = [replace(a, description=f"calibration: {a.description}", response="abort",
                                      resolved=False) for a in step.anomalies]
            tick.done = step if step.finished else None
            return tick
        c = job.controller
        if cancel:
            c.cancel()
        out = c.update(now, opening_mm)
        tick.gripper_opening_mm = out.command_opening_mm
        for est in out.estimates:
            value = job.volume_offset_ml + est.value_ml
            self._volume = (job.experiment_id, value)
            tick.estimates.append(VolumeEstimate(est.stamp, value, est.delta_ml, est.confidence))
        tick.anomalies = list(out.anomalies)
        tick.states = [state_change(job, dst.value, src.value, cond, interval=c.drop_interval_s,
                                    dispensed_ml=c.q_stat, drops=c.drops)
                       for src, cond, dst in out.transitions
                       if dst.value != "DONE"]  # the goal's end is published when its result goes out
        if self._feedback_due(now, bool(out.done or out.transitions)):
            tick.feedback = Feedback(out.state.value, dispensed_ml=c.q_stat, drops=c.drops,
                                     gripper_position_mm=opening_mm,
                                     ph=self.last_ph if self.last_ph is not None else NAN)
        tick.done = out.done
        return tick

    def _step_pour(self, job: Job, now: float, cancel: bool) -> Tick:
        c = job.controller
        side, joints, tilt_of = job.arm
        if cancel:
            c.cancel()
        positions = self.arm_positions.get(side)
        measured = tilt_of(positions) if positions is not None else None
        out = c.update(now, measured)
        tick = Tick(job.experiment_id, job.subtask_id, done=out.done)
        # Far from the pour pose (APPROACH) the arm is given time to get there; at it, each command is a
        # small step the wrist follows within the control period.
        tick.arm = (side, joints(out.command_tilt_deg),
                    self.pour_config.control_period_s if measured is not None else self.approach_time_s)
        tick.taps = [Tap(p.stamp, {"index": p.index, "kind": p.kind, "duration_s": round(p.duration_s, 3),
                                   "planned_g": None if math.isnan(p.planned_g) else round(p.planned_g, 4),
                                   "tilt_deg": round(p.tilt_deg, 2)}) for p in out.pulses]
        tick.anomalies = [replace(a, response=a.response or "abort", resolved=False) for a in out.anomalies]
        phase_changed = out.phase.value != job.phase
        if phase_changed:
            tick.states.append(state_change(job, out.phase.value, job.phase, "", drops=c.pulse_count))
        job.phase = out.phase.value
        if self._feedback_due(now, bool(out.done or phase_changed)):
            mass = c.latest_mass
            tick.feedback = Feedback(out.phase.value, drops=c.pulse_count, mass_g=mass if mass is not None else NAN,
                                     ph=NAN)
        return tick

    def _feedback_due(self, now: float, urgent: bool) -> bool:
        """Action feedback goes out every feedback period, and at once on a transition or the stop."""
        if now - self._last_feedback >= self.feedback_period_s or urgent:
            self._last_feedback = now
            return True
        return False
