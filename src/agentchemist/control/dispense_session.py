"""The dispenser's bookkeeping around its controllers, one goal after another (no ROS here).

The dispenser node translates messages; a DispenseSession decides the rest:

- **who has the gripper**: one job at a time, a drops goal (DispenserController), a solid pour
  (SolidPourController) or a pipette calibration (CalibrationProcedure), each an object of its mode behind
  one protocol (agentchemist.control.jobs); another is refused with the reason (`busy`, `claim`);
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
  moves (`start` raises Refusal). A goal comes as a dispense request (agentchemist.contracts.dispense),
  or as the action Goal's fields, read into one here.

The caller holds its lock around every call; time is an argument (`now`), as everywhere in the core.
"""
from __future__ import annotations

import math
from dataclasses import replace

from agentchemist.contracts.dispense import (DROPS, SOLID_POUR, DispenseRequest, DropsRequest, GoalFields,
                                             PourRequest, RequestError, from_goal_fields)
from agentchemist.control.calibration import Calibration, save_calibration
from agentchemist.control.dispenser import DispenserConfig
from agentchemist.control.dispenser_types import ControllerAnomaly
from agentchemist.control.jobs import CalibrationJob, DropsJob, Job, PourJob
from agentchemist.control.ledger import ExperimentVolume
from agentchemist.control.session_types import (CALIBRATION, NAN, CalibrationOutcome, Feedback, FeedbackPace,
                                                GoalOutcome, Refusal, StateChange, Tap, Tick, VolumeEstimate,
                                                refused, state_change)
from agentchemist.control.solid_pour import SolidPourConfig
from agentchemist.fsm.node_watch import NodeWatch
from agentchemist.workcell.robot import SIDES

JUDGE = "vision_supervisor"   #: the node whose verdicts end a titration (agentchemist.fsm.endpoint)
JUDGE_LOST = f"peer {JUDGE}"  #: the hold while it is lost

__all__ = ["CALIBRATION", "DROPS", "JUDGE", "JUDGE_LOST", "NAN", "SOLID_POUR", "CalibrationOutcome",
           "DispenseSession", "DispenserConfig", "Feedback", "GoalOutcome", "Job", "Refusal",
           "SolidPourConfig", "StateChange", "Tap", "Tick", "VolumeEstimate", "calibration_summary", "refused",
           "state_change"]


def calibration_summary(cal: Calibration, drops: int, saved_path: str | None) -> str:
    return (f"k {cal.k_ml_per_mm:.4f} mL/mm, drop {cal.drop_volume_ml:.5f} mL, residual {cal.residual_ml:.4f} mL "
            f"from {cal.samples} samples ({drops} drops)"
            + (f"; saved to {saved_path}" if saved_path is not None else "; not saved"))


def as_request(goal) -> DispenseRequest:
    """A dispense request as it is, or the one the action Goal's fields carry. Raises Refusal."""
    if isinstance(goal, (DropsRequest, PourRequest)):
        return goal
    try:
        return from_goal_fields(goal)
    except RequestError as exc:
        raise Refusal(str(exc), exc.experiment_id, exc.subtask_id) from None


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
        self.volume = ExperimentVolume()    #: the experiment's cumulative titrant volume published
        self.feedback_due = FeedbackPace(feedback_period_s).due   #: (now, urgent) -> whether feedback goes out

    # ------------------------------------------------------------------ the gripper
    def busy(self) -> str:
        """Why the gripper cannot take a new job now ("" when it can)."""
        return self.job.busy if self.job is not None else ""

    def claim(self, job: Job) -> str:
        """Make `job` the running one unless another runs (returns why not, "" when claimed). The
        experiment's standing holds apply to a goal; a drops goal counts on from the experiment's volume."""
        busy = self.busy()
        if busy:
            return busy
        if job.supervised:
            self._enter(job.experiment_id)
            for reason in self._holds:
                job.hold(reason)
        if isinstance(job, DropsJob):
            job.volume_offset_ml = self.volume.offset_for(job.experiment_id)
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
        if self.job is not None:
            (self.job.hold if hold else self.job.release)(reason)
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
            elif e.what in ("abort", "restarted") and self.job is not None and self.job.judge_gone():
                # gone for good, or a new process that never sent this goal: nobody would end it
                out.append(ControllerAnomaly(now, "node_lost", e.text + ": the dispensing goal is cancelled",
                                             severity="halt", response="abort"))
        return out

    def resume(self) -> None:
        if self.job is not None:
            self.job.resume()

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
        the node should run a control update now: while the gripper squeezes, the reading may stop it."""
        self.last_ph, self.last_ph_stamp = value, stamp
        return self.job.on_ph(stamp, value, noise) if self.job is not None else False

    def on_droplet(self, stamp: float, classification: str) -> None:
        """A droplet the audio supervisor heard. Calibrating, nothing else dispenses: every droplet heard is
        ours; a drops goal counts the expected ones."""
        if self.job is not None:
            self.job.on_droplet(stamp, classification)

    def on_mass(self, stamp: float, grams: float, self_check_ok: bool = True) -> None:
        """A balance reading (g). Raises ReadingError when the running job refuses it."""
        if self.job is not None:
            self.job.on_mass(stamp, grams, self_check_ok)

    # ------------------------------------------------------------------ starting
    def missing_inputs(self, request, now: float) -> list[str]:
        """What a drops goal needs that has not reached the node yet: the gripper's measured position and, for
        a goal judged on pH, a reading from the last sensor_timeout_s. A node just started in its own process
        (DDS still matching its topics) or starved of CPU lacks them for a while in wall time; the node waits
        for them with the twin's clock held before it starts the goal (start() refuses without a position,
        and the controller's sensor timeout would count the wait as a dead meter). A request that cannot
        be read waits for nothing: it is refused at once."""
        try:
            request = as_request(request)
        except Refusal:
            return []
        if not isinstance(request, DropsRequest):
            return []
        missing = [] if self.opening_mm is not None else [f"the {self.side} gripper's position"]
        if (request.target_ph is not None or request.settle_each_drop) and (
                self.last_ph_stamp is None or now - self.last_ph_stamp > self.config.sensor_timeout_s):
            missing.append("a pH reading")
        return missing

    def start(self, request, *, now: float) -> Job:
        """Prepare and claim the job of a Dispense goal in one step: a dispense request, or the action Goal's
        fields. Raises Refusal."""
        r = as_request(request)
        if isinstance(r, PourRequest):
            job = PourJob.prepare(r, self.pour_config, default_side=self.pour_side, now=now)
        else:
            busy = self.busy()  # checked again when the goal claims the gripper
            if busy:
                raise Refusal(busy)
            if self.opening_mm is None:
                raise Refusal(f"no joint state for {self.side}_gripper yet: gripper position unknown")
            job = DropsJob.prepare(r, self.config, opening_mm=self.opening_mm, last_ph=self.last_ph, now=now)
        busy = self.claim(job)
        if busy:
            raise Refusal(busy)
        return job

    def start_calibration(self, *, samples: int, liquid: str, pipette_id: str, now: float) -> Job:
        """Prepare and claim a calibration (0 samples: the default). Raises Refusal."""
        if self.opening_mm is None:
            raise Refusal(f"no joint state for {self.side}_gripper yet")
        job = CalibrationJob.prepare(self.config, samples=samples, liquid=liquid, pipette_id=pipette_id,
                                     opening_mm=self.opening_mm, now=now)
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
        # from now on the dispenser counts with it
        self.config = replace(self.config, k_ml_per_mm=cal.k_ml_per_mm, drop_volume_ml=cal.drop_volume_ml,
                              calibration_residual_ml=cal.residual_ml)
        return CalibrationOutcome(True, calibration_summary(cal, job.controller.drops, saved), cal.k_ml_per_mm,
                                  cal.drop_volume_ml, cal.residual_ml, saved or "")

    @staticmethod
    def start_state(job: Job) -> StateChange | None:
        """The DispenserState when `job` starts (a solid pour's first phase comes with its first tick)."""
        return job.start_state()

    # ------------------------------------------------------------------ ending
    @staticmethod
    def outcome(job: Job) -> GoalOutcome:
        """The action result of a finished goal from its controller's stop (none: the node shut down)."""
        return job.outcome()

    @staticmethod
    def end_state(job: Job, reason: str) -> StateChange:
        """The DispenserState when `job` has ended (`reason`: the stop reason)."""
        return job.end_state(reason)

    # ------------------------------------------------------------------ the control loop
    def step(self, now: float, *, cancel: bool = False) -> Tick | None:
        """One control update of the running job (None: nothing to send; drops and calibration wait for the
        gripper's opening). `cancel`: the goal's client asked to cancel."""
        return self.job.step(self, now, cancel) if self.job is not None else None
