"""The experiment executor, free of ROS: typed events plus `now` in, typed effects out.

One `Executor` runs one experiment's plan: the machine and the readings (`Supervision`), the dispensing
subtask's goals (`DispenseBook`), the robot's own labware moves (`OwnMoves`), the bench watch, the
recorder's and the peers' watches (fsm/watch_holds.py). What the experiment family watches (a pH endpoint,
a colour endpoint with its holds, a mass and a dissolution) is its procedure's, asked at the hooks of
agentchemist.experiments.procedure: how a subtask goes out, what an applied symbol tells the recorder and
the dispenser, what a frame shows; the executor never asks which family runs. The vision supervisor node
feeds it what arrives (readings, frames, goal results, other agents' symbols, the timer) and carries out
the returned effects (agentchemist.fsm.effects) in order; what a goal's result means is
agentchemist.fsm.dispensing.DispenseBook.decide_result's.

Calls may nest (a symbol dispatches a subtask whose goal applies `titrate` ...): effects come out in the
order the old node produced its messages, which the replay tests compare message by message.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any

from agentchemist.contracts import Symbol
from agentchemist.contracts.notes import Hold, Release
from agentchemist.workcell.tags import MARKER_TABLE
from agentchemist.fsm.calibration import ElectrodeState
from agentchemist.fsm.commands import (Abort, Apply, HoldDispensing, PauseDispensing, Report, ResumeDispensing,
                                       StopDispensing, UnpauseDispensing)
from agentchemist.fsm.dispensing import DispenseBook, DispenseOutcome, Next
from agentchemist.fsm.episodes import Episodes
from agentchemist.fsm.effects import Cancel, Log, PublishState, SendGoal, Snapshot, announce, tell
from agentchemist.fsm.frame_problems import FrameProblems
from agentchemist.fsm.node_watch import NodeWatch
from agentchemist.fsm.own_moves import OwnMoves
from agentchemist.fsm.plan_gate import unmet_preconditions
from agentchemist.fsm.record_watch import RecordWatch
from agentchemist.fsm.supervision import Supervision, SupervisionConfig
from agentchemist.fsm import watch_holds
from agentchemist.perception.colour import LiquidRegionConfig
from agentchemist.perception.ph_stability import ReadingError
from agentchemist.perception.tags import detect_markers

#: symbols after which the scheduler is asked again although the state did not change
REDISPATCH = (Symbol.GRASP_OK, Symbol.DRAW_OK, Symbol.ACT, Symbol.TITRATE, Symbol.VERIFIED)
#: what other agents report that the executor applies (a drop heard, a pour pulse ended)
AGENT_SYMBOLS = (Symbol.DROP, Symbol.TAP)
SUPERVISOR = "vision_supervisor"


def published(machine, previous: str = "", symbol: str = "", subtask_id: str = "") -> PublishState:
    """The machine's state as published, reached from ``previous`` by ``symbol``."""
    return PublishState(machine.state, previous, symbol, subtask_id, bool(machine.accepting), bool(machine.terminal))


def judged(ex, instrument: str, stamp: float, judge) -> list:
    """``judge()``: the supervision's commands for one reading of ``instrument``, carried out; a refused
    reading is reported once per episode (fsm/episodes.py), for every node."""
    try:
        commands = judge()
    except ReadingError as exc:
        return ex.stamped(ex.bad_readings.failed(instrument, stamp, f"{instrument} reading refused: {exc}"))
    return ex.stamped(ex.bad_readings.passed(instrument, stamp)) + ex.carry_out(commands, stamp)


class Executor:
    """One experiment. Raises InvalidMachineError / ValueError on a plan it cannot run."""

    def __init__(self, plan, now: float, config: SupervisionConfig = SupervisionConfig(),
                 region: LiquidRegionConfig = LiquidRegionConfig(), frames: FrameProblems | None = None,
                 ph_calibration: str | None = None):
        self.sup = Supervision(plan, now, config)
        self.machine = self.sup.machine
        self.procedure = self.sup.procedure   # the family's (agentchemist.experiments.procedure)
        self.region = region                  # where the beaker's liquid is in the front image
        self.book = DispenseBook()
        self.own_moves = OwnMoves()   # the robot's own labware moves: the bench watch restarts after each
        self.frames = frames if frames is not None else FrameProblems()
        self.record_watch = RecordWatch(plan.experiment_id, now, config.recorder)
        self.bad_readings = Episodes()  # refused pH / temperature / balance readings, once per episode
        self.pending_start: bool | None = None  # require_scene of a start that waits for the recorder
        # The recorder has its own watch (record_watch); the supervisor does not watch itself.
        self.peers = NodeWatch(config.peers, ignore=frozenset({"recorder", SUPERVISOR}))
        self.watch_hold_since: float | None = None  # a lost recorder or peer holds dispensing since then
        self.drops_heard = 0  # the audio supervisor's drop notes, whatever the state (docs/architecture.md)
        self.calibration = ElectrodeState.parse(ph_calibration)  # the pH meter's word (None: no meter said)

    def __getattr__(self, name: str):
        """The family procedure's own state (``ex.course`` of an acid-base run ...), for tools and tests."""
        procedure = self.__dict__.get("procedure")
        if procedure is None:
            raise AttributeError(name)
        return getattr(procedure, name)

    @property
    def running(self) -> bool:
        return not self.machine.terminal

    def initial_state(self) -> PublishState:
        return published(self.machine)

    def stamped(self, reports) -> list:
        """Reports carry the state they were decided in (effects are carried out after the whole chain)."""
        return [dataclasses.replace(r, fsm_state=self.machine.state) if isinstance(r, Report)
                and r.fsm_state is None else r for r in reports]

    # ------------------------------------------------------------------ start
    def start(self, now: float, frame, require_scene: bool) -> list:
        """The plan arrived: once the recorder has acknowledged it (nothing moves unrecorded), check the
        scene before anything moves, keep the bench, dispatch."""
        if not self.record_watch.acked:
            self.pending_start = require_scene
            return [Log("waiting for the recorder to acknowledge the plan before anything moves")]
        refused = self.procedure.refusal(self)
        if refused is not None:
            return self.abort(refused.reason, refused.kind, now)
        if require_scene:
            if frame is None:
                return self.abort("no front camera image: cannot check the scene before moving",
                                  "scene_unavailable", now)
            failed = unmet_preconditions(frame, list(self.sup.plan.module_instantiation.vision.preconditions))
            if failed:
                return self.abort("preconditions not met: " + "; ".join(f"{k}: {v}" for k, v in failed.items()),
                                  "precondition_failed", now)
        return self.start_watch(frame) + [Snapshot("start")] + self.dispatch(now)

    def start_watch(self, frame) -> list:
        """The bench as the scene check saw it (or as the robot left it after moving labware) is the one to
        keep during the run; items the robot holds are not part of it."""
        if frame is None:
            return [Log("no front image at the start: the bench is not watched during this run", "warn")]
        held = {m for m, info in MARKER_TABLE.items() if info.labware_id in self.own_moves.held}
        seen = {m: uv for m, uv in detect_markers(frame).items() if m not in held}
        self.sup.start_watch(seen, frame.shape[1])
        return []

    def suspend_watch(self, now: float) -> list:
        """The robot itself is about to move labware (a weighing: the beaker between balance and stirrer,
        the bottle into the gripper): its own moves are not faults of the bench."""
        self.own_moves.moving()  # no frame is the bench before this motion is over
        self.sup.watch = None
        return self.carry_out(self.sup.unpause("labware"), now)

    # ------------------------------------------------------------------ dispatch and symbols
    def dispatch(self, now: float) -> list:
        out: list = []
        for task in self.sup.dispatchable():
            out.append(announce(task))
            if task.receiver == "action_policy":
                out += self.procedure.policy_goal(self, task, now)
                symbol = task.expected_transition.symbol if task.expected_transition else ""
                out.append(SendGoal(task, {"primitive": task.primitive, "symbol": symbol,
                                           "parameters": task.parameters}))
            elif task.receiver == "dispenser_controller":
                out += self.procedure.send_dispense_goal(self, task, now)
            elif task.receiver == SUPERVISOR:
                out += self.procedure.own_task(self, task)  # verification runs on the readings
            elif task.receiver == "summarizer":
                self.sup.subtask_finished(task.id, True)
        return out

    def apply(self, symbol: str, now: float, source: str, subtask_id: str, detail=None) -> list:
        """Apply a symbol; what it means beyond the transition is the procedure's (an abort included)."""
        if not symbol:
            return []
        previous = self.machine.state
        if self.sup.apply(symbol, now, source, subtask_id) is None:
            return []
        state = self.machine.state
        out: list = [published(self.machine, previous, symbol, subtask_id)]
        out += self.procedure.on_applied(self, symbol, dict(detail or {}), subtask_id, now)
        if state != previous or symbol in REDISPATCH:
            out += self.dispatch(now)  # nothing once an abort ended the run
        return out

    def on_agent_symbol(self, symbol: str, now: float, source: str, subtask_id: str) -> list:
        """A drop heard (audio supervisor) or a pour pulse (dispenser)."""
        self.drops_heard += symbol == Symbol.DROP  # titrant in the beaker whatever the machine's state
        return self.apply(symbol, now, source, subtask_id) if symbol in AGENT_SYMBOLS else []

    def carry_out(self, commands, now: float) -> list:
        """Supervision's decisions (agentchemist.fsm.commands) -> effects."""
        out: list = []
        for cmd in commands:
            if isinstance(cmd, StopDispensing):
                if self.book.stop():  # a goal on its way is cancelled on arrival
                    out.append(Cancel("dispenser_controller"))
            elif isinstance(cmd, HoldDispensing):
                if not self.book.held:
                    out.append(Log(f"holding the dispenser: {cmd.reason}"))
                if self.book.hold():
                    out.append(Cancel("dispenser_controller"))
            elif isinstance(cmd, ResumeDispensing):
                if self.book.resume(self.procedure.watching(self.machine.state)):
                    out.append(Log(f"resuming the dispenser: {cmd.reason}"))
                    out += self.procedure.send_dispense_goal(self, self.book.task, now, resume=True)
            elif isinstance(cmd, (PauseDispensing, UnpauseDispensing)):
                # The dispenser holds its goal (position, volume, high-water mark) and goes on afterwards.
                note = (Hold if isinstance(cmd, PauseDispensing) else Release)(reason=cmd.reason)
                task_id = self.book.task.id if self.book.task is not None else ""
                out += [Log(f"{note.SYMBOL} the dispenser: {cmd}"), tell("dispenser_controller", note, task_id)]
            elif isinstance(cmd, Apply):
                out += self.apply(cmd.symbol, now, SUPERVISOR, "", cmd.detail)
            elif isinstance(cmd, Report):
                out += self.stamped([cmd])
                if cmd.kind.startswith("labware_") and cmd.severity == "warn":
                    out.append(Snapshot("anomaly"))
            elif isinstance(cmd, Abort):
                out += self.abort(cmd.reason, cmd.kind, now)
        return out

    # ------------------------------------------------------------------ agents' results
    def on_policy_result(self, task, success: bool, symbol: str, message: str, now: float) -> list:
        if not success:
            self.sup.subtask_finished(task.id, False, message)
            return self.abort(f"subtask {task.id} failed: {message}", "subtask_failed", now)
        self.sup.subtask_finished(task.id, True)
        self.procedure.policy_done(self, task, now)
        return self.apply(symbol, now, "action_policy", task.id)

    def on_tared(self, now: float) -> list:
        """The balance tared; what follows comes from its readings (the procedure's), not from its word."""
        self.procedure.on_tared(now)
        return []

    def on_dispense_result(self, task, outcome: DispenseOutcome, now: float) -> list:
        sup, m = self.sup, self.machine
        step = self.book.decide_result(outcome, state=m.state, colour_endpoint=self.procedure.colour_endpoint,
                                       terminal=m.terminal, subtask_done=task.id in sup.scheduler.done)
        self.procedure.dispense_returned(self, step, now)
        if step is Next.FINISHED:
            sup.subtask_finished(task.id, True)
            return self.dispatch(now)
        if step is Next.CAP_WITHOUT_COLOUR:
            return self.abort(f"the volume cap was dispensed ({outcome.dispensed_ml + self.book.dispensed_before_ml:.3f}"
                              " mL) without the colour change", "endpoint_not_reached", now)
        if step is Next.RESUME:
            return self.procedure.send_dispense_goal(self, task, now, resume=True)
        if step is Next.FAILED:
            sup.subtask_finished(task.id, False, outcome.message)
            return self.abort(f"dispensing failed: {outcome.stop_reason}: {outcome.message}", "dispense_failed", now)
        return []

    def on_calibration(self, data: str) -> list:
        """The pH meter's electrode calibration state (JSON, agentchemist.fsm.calibration)."""
        self.calibration = ElectrodeState.parse(data)
        return []

    # ------------------------------------------------------------------ readings and frames
    def on_ph(self, stamp: float, value: float, noise: float | None) -> list:
        return judged(self, "pH", stamp, lambda: self.sup.on_ph(stamp, value, noise))

    def on_temperature(self, value: float, stamp: float = 0.0) -> list:
        return judged(self, "temperature", stamp, lambda: self.sup.on_temperature(value) or [])

    def on_mass(self, stamp: float, grams: float) -> list:
        return judged(self, "balance", stamp, lambda: self.sup.on_mass(stamp, grams))

    def on_audio_noise(self, resolved: bool, stamp: float) -> list:
        """No drop can be heard: none may be squeezed (the dispenser relies on hearing each one)."""
        return self.carry_out(self.sup.unpause("audio_noise") if resolved else self.sup.pause("audio_noise"), stamp)

    def on_frame(self, stamp: float, frame, camera=None, depth_m=None) -> list:
        """A decoded front frame: the bench watch, and what the procedure reads in it. ``camera`` (a
        CameraModel of this frame's size) and ``depth_m`` (aligned depth, m), where the camera has them."""
        out = self.start_watch(frame) if self.own_moves.rebaseline(stamp) else []
        out += self.procedure.on_frame(self, stamp, frame, camera, depth_m)
        if self.sup.watch is not None and not self.machine.terminal and not self.own_moves.blind(stamp):
            out += self.carry_out(self.sup.on_scene(stamp, detect_markers(frame)), stamp)
        return out + self.procedure.on_frame_after_bench(self, stamp, frame)

    # ------------------------------------------------------------------ time, the watches and the end
    def on_tick(self, now: float) -> list:
        """The node's timer: state timeouts, a stale camera, the recorder, the peers."""
        if not math.isfinite(now):
            return []
        # While a lost recorder or peer holds dispensing, its own limit ends the run, not the state's timeout
        # (stopped meanwhile, fsm/watch_holds.py). FsmTimeError when the clock went back: the node says why.
        reason = None if self.watch_hold_since is not None else self.sup.check_timeout(now)
        if reason:
            return self.abort(reason, "state_timeout", now)
        return (self.carry_out(self.sup.check_camera(now), now) + watch_holds.check_recorder(self, now)
                + watch_holds.check_peers(self, now))

    def on_recorder_status(self, experiment_id: str, recording: bool, stored_through: float, now: float, frame) -> list:
        return watch_holds.on_recorder_status(self, experiment_id, recording, stored_through, now, frame)

    def on_heartbeat(self, node: str, instance: str, now: float) -> list:
        return watch_holds.on_peers(self, self.peers.on_heartbeat(node, instance, now), now) if self.running else []

    def abort(self, reason: str, kind: str, now: float) -> list:
        """End the experiment: an anomaly, the robot stops what it does for it, the state, a snapshot."""
        self.pending_start = None  # a start that waited for the recorder will not come
        out: list[Any] = [Log(f"abort: {reason}", "error"),
                          *self.stamped([Report(kind, "halt", reason, response="abort")]),
                          Cancel("dispenser_controller"), Cancel("action_policy")]
        if self.machine.terminal:
            return out + [PublishState("aborted", "", "abort", terminal=True)]
        previous = self.machine.state
        self.sup.abort(reason, now)
        return out + [published(self.machine, previous, "abort"), Snapshot("anomaly")]
