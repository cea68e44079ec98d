"""The experiment executor, free of ROS: typed events plus `now` in, typed effects out.

One `Executor` runs one experiment's plan. It owns the machine and the supervisor's perception
(`Supervision`), the dispensing subtask's goals (`DispenseBook`), the robot's own labware moves
(`OwnMoves`), the colour tracker and the dissolution watch. The vision supervisor node feeds it what
arrives (readings, frames, goal results, other agents' symbols, the timer) and carries out the returned
effects (agentchemist.fsm.effects: publish the state, tell an agent, send or cancel a goal, call the tare
service, save a snapshot, publish an anomaly) in order. Every decision is taken here, once:

* which subtask goes out when (the scheduler, after every transition);
* what a symbol means beyond the transition (the recorder is told ph_stable / endpoint / verified / the
  settled mass, the dispenser may squeeze the next drop after a settle, snapshots at the milestones);
* what a goal's result means (agentchemist.fsm.dispensing.DispenseBook.decide_result);
* the endpoint (agentchemist.fsm.endpoint, inside Supervision), the pauses and holds of the dispenser;
* when the experiment aborts.

Calls may nest (a symbol dispatches a subtask whose goal applies `titrate` ...): effects come out in the
order the old node produced its messages, which the replay tests compare message by message.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any

from agentchemist.workcell.tags import MARKER_TABLE
from agentchemist.fsm.commands import (Abort, Apply, HoldDispensing, PauseDispensing, Report, ResumeDispensing,
                                       StopDispensing, UnpauseDispensing)
from agentchemist.fsm.course_check import CourseCheck
from agentchemist.fsm.calibration import CALIBRATION_REQUIRED, ElectrodeState
from agentchemist.fsm.dispensing import DispenseBook, DispenseOutcome, Next, pour_goal
from agentchemist.fsm.episodes import Episodes
from agentchemist.fsm.effects import CallTare, Cancel, Log, PublishHue, PublishState, SendGoal, Snapshot, Tell, announce
from agentchemist.fsm.frame_problems import FrameProblems
from agentchemist.fsm.node_watch import NodeWatch
from agentchemist.fsm.own_moves import OwnMoves
from agentchemist.fsm.record_watch import RecordWatch
from agentchemist.fsm.supervision import COLOUR_WATCH_STATES, ENDPOINT_HOLD, Supervision, SupervisionConfig
from agentchemist.perception.colour import BeakerColourTracker, ColourError, LiquidRegionConfig
from agentchemist.perception.colour_change import HueReadingError
from agentchemist.perception.dissolution import DissolutionError, DissolutionWatch
from agentchemist.perception.ph_stability import ReadingError
from agentchemist.perception.scene import describe_scene
from agentchemist.perception.tags import detect_markers

#: symbols after which the scheduler is asked again although the state did not change
REDISPATCH = ("grasp_ok", "draw_ok", "act", "titrate", "verified")
#: peers whose loss holds dispensing: what they count, judge, command or measure would be missed
HOLD_FOR = frozenset({"dispenser_controller", "action_policy", "audio_supervisor", "ph_meter", "balance", "lab_sim"})
#: peers that hold a running goal: restarted, the goal is gone with the old process
GOAL_HOLDERS = frozenset({"dispenser_controller", "action_policy"})


def unmet_preconditions(frame, required) -> dict[str, str]:
    """The plan's preconditions the front camera does not see met (name -> why). Only the plan's are
    required (a weighing needs no probe in the beaker); one the camera cannot judge is not taken as met."""
    desc = describe_scene(frame)
    return {k: desc.reasons.get(k, "") if k in desc.checks else "the front camera check does not know it"
            for k in required if not desc.checks.get(k, False)}


def rejected(exc: Exception) -> list:
    """A plan that cannot run (InvalidMachineError or ValueError): nothing moves, the run is over."""
    why = "; ".join(exc.reasons) if hasattr(exc, "reasons") else str(exc)
    return [Report("invalid_plan", "halt", f"plan rejected: {why}", response="abort", fsm_state=""),
            PublishState("aborted", "", "reject", terminal=True)]


def plan_age_problem(published: float, now: float, max_age_s: float) -> str | None:
    """Why a plan must not be run by this executor, or None. The plan topic is latched, so an executor that
    starts (or restarts) after a plan went out receives it too: that plan belongs to a run its predecessor
    held, which the planner ended when it lost it; running it again would move the robot for a goal nobody
    holds. The planner asks this executor (DescribeScene) before it publishes, so a live executor's clock
    runs when a plan comes: a clock that has not started yet (0 on sim time) means it has just started.
    An unstamped plan (0: hand-made, not the planner's) cannot be aged and is not judged."""
    if published <= 0.0:
        return None
    if now <= 0.0:
        return ("the plan was published before this executor's clock started (it has just started): an executor "
                "does not run a plan it did not see sent; send the goal again")
    if now - published > max_age_s:
        return (f"the plan was published {now - published:.1f} s before this executor received it (more than "
                f"{max_age_s:g} s: an executor restarted mid-run does not run its predecessor's plan); "
                "send the goal again")
    return None


def idle_abort(reason: str, kind: str) -> list:
    """An abort with no experiment: the anomaly and a terminal state, nothing to cancel."""
    return [Log(f"abort: {reason}", "error"), Report(kind, "halt", reason, response="abort", fsm_state=""),
            PublishState("aborted", "", "abort", terminal=True)]


class Executor:
    """One experiment. Raises InvalidMachineError / ValueError on a plan it cannot run."""

    def __init__(self, plan, now: float, config: SupervisionConfig = SupervisionConfig(),
                 region: LiquidRegionConfig = LiquidRegionConfig(), frames: FrameProblems | None = None,
                 ph_calibration: str | None = None):
        self.sup = Supervision(plan, now, config)
        self.book = DispenseBook()
        self.own_moves = OwnMoves()   # the robot's own labware moves: the bench watch restarts after each
        self.tracker = BeakerColourTracker(region)
        self.dissolution = DissolutionWatch()
        self.frames = frames if frames is not None else FrameProblems()
        self.last_hue: float | None = None
        self.record_watch = RecordWatch(plan.experiment_id, now, config.recorder)
        self.bad_readings = Episodes()  # refused pH / temperature / balance readings, once per episode
        self.pending_start: bool | None = None  # require_scene of a start that waits for the recorder
        # The recorder has its own watch (record_watch); the supervisor does not watch itself.
        self.peers = NodeWatch(config.peers, ignore=frozenset({"recorder", "vision_supervisor"}))
        self.watch_hold_since: float | None = None  # a lost recorder or peer holds dispensing since then
        # The measured pH course against the plan's curve (reagent_mismatch); volume = heard drops x drop.
        self.course = CourseCheck.from_plan(plan)
        self.drops_heard = 0
        self.drop_ml = float(plan.module_instantiation.dispenser.drop_volume_ml)
        self.calibration = ElectrodeState.parse(ph_calibration)  # the pH meter's word (None: no meter said)

    # ------------------------------------------------------------------ state
    @property
    def machine(self):
        return self.sup.machine

    @property
    def running(self) -> bool:
        return not self.sup.machine.terminal

    @property
    def weighing(self) -> bool:
        return self.sup.mass is not None

    def _state(self, previous: str, symbol: str, subtask_id: str = "") -> PublishState:
        m = self.sup.machine
        return PublishState(m.state, previous, symbol, subtask_id, bool(m.accepting), bool(m.terminal))

    def initial_state(self) -> PublishState:
        return self._state("", "")

    def _stamped(self, reports) -> list:
        """Reports carry the state they were decided in (effects are carried out after the whole chain)."""
        return [dataclasses.replace(r, fsm_state=self.sup.machine.state) if isinstance(r, Report)
                and r.fsm_state is None else r for r in reports]

    # ------------------------------------------------------------------ start
    def start(self, now: float, frame, require_scene: bool) -> list:
        """The plan arrived: once the recorder has acknowledged it (nothing moves unrecorded), check the
        scene before anything moves, keep the bench, dispatch."""
        if not self.record_watch.acked:
            self.pending_start = require_scene
            return [Log("waiting for the recorder to acknowledge the plan before anything moves")]
        out: list = []
        refused = self.calibration_refused()
        if refused:
            return self.abort(refused, CALIBRATION_REQUIRED, now)
        if require_scene:
            if frame is None:
                return self.abort("no front camera image: cannot check the scene before moving",
                                  "scene_unavailable", now)
            failed = unmet_preconditions(frame, list(self.sup.plan.module_instantiation.vision.preconditions))
            if failed:
                return self.abort("preconditions not met: " + "; ".join(f"{k}: {v}" for k, v in failed.items()),
                                  "precondition_failed", now)
        out += self.start_watch(frame)
        out.append(Snapshot("start"))
        return out + self.dispatch(now)

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
        """The robot itself is about to move labware (weighing: the beaker between balance and stirrer,
        the bottle into the gripper): its own moves are not faults of the bench."""
        self.own_moves.moving()  # no frame is the bench before this motion is over
        self.sup.watch = None
        return self.carry_out(self.sup.unpause("labware"), now)

    # ------------------------------------------------------------------ dispatch
    def dispatch(self, now: float) -> list:
        out: list = []
        for task in self.sup.dispatchable():
            out.append(announce(task))
            if task.receiver == "action_policy":
                if self.weighing:
                    out += self.suspend_watch(now)
                else:
                    self.own_moves.passing(now)  # the arm passes the bench: its frames are not compared
                symbol = task.expected_transition.symbol if task.expected_transition else ""
                out.append(SendGoal(task, {"primitive": task.primitive, "symbol": symbol,
                                           "parameters": task.parameters}))
            elif task.receiver == "dispenser_controller":
                out += self.send_dispense_goal(task, now)
            elif task.receiver == "vision_supervisor":
                if task.primitive == "tare":
                    out.append(CallTare(task))
                # verification runs on the pH stream (Supervision.on_ph), the balance or the camera
            elif task.receiver == "summarizer":
                self.sup.subtask_finished(task.id, True)
        return out

    def send_dispense_goal(self, task, now: float, resume: bool = False) -> list:
        if task.primitive == "pour_solid":
            # The tilted bottle hangs over the beaker and hides its tag from the front camera: the robot's own
            # pour is not a missing beaker. The bench is watched again from the first frame after the pour.
            self.book.task = task
            out = self.suspend_watch(now)
            out += self.apply("dose", now, "vision_supervisor", task.id)
            self.book.sending()
            return out + [SendGoal(task, goal=pour_goal(task.parameters))]
        refused = "" if resume else self.calibration_refused()  # the state may have come after the start
        if refused:
            return self.abort(refused, CALIBRATION_REQUIRED, now)
        out = [] if resume else self.carry_out(self.sup.start_dispensing(now, self.sup.last_ph), now)
        goal = self.book.drop_goal(task, colour_endpoint=self.sup.colour_endpoint,
                                   ph_direction=self.sup.ph_direction, resume=resume)
        if isinstance(goal, str):
            return out + self.abort(goal, "endpoint_not_reached", now)
        if not resume:
            out += self.apply("titrate", now, "vision_supervisor", task.id)
        self.book.sending()
        return out + [SendGoal(task, goal=goal)]

    # ------------------------------------------------------------------ symbols
    def apply(self, symbol: str, now: float, source: str, subtask_id: str, detail=None) -> list:
        """Apply a symbol; what it means beyond the transition follows here, once."""
        if not symbol:
            return []
        previous = self.sup.machine.state
        if self.sup.apply(symbol, now, source, subtask_id) is None:
            return []
        state = self.sup.machine.state
        detail = dict(detail or {})
        out: list = [self._state(previous, symbol, subtask_id)]
        if symbol == "ph_stable":
            out.append(Tell("recorder", "ph_stable", subtask_id, {"ph": detail.get("ph")}, now))
            mismatch = self._course(detail.get("ph"))
            if mismatch:
                return out + self.abort(mismatch, "reagent_mismatch", now)
        if symbol in ("mass_stable", "target_mass") and detail:
            out.append(Tell("recorder", "mass_settled", subtask_id, {"mass_g": detail.get("mass_g"),
                                                                     "final": symbol == "target_mass"}, now))
        if symbol == "dissolved":
            out += [Tell("recorder", "dissolved", subtask_id, detail, now), Snapshot("dissolved")]
        if symbol == "target_mass":
            out.append(Snapshot("weighed"))
        if symbol in ("ph_stable", "colour_stable", "mass_stable"):
            # The solution settled after the drop: the dispenser may squeeze the next one.
            out.append(Tell("dispenser_controller", "resume", subtask_id, {}, now))
        if symbol == "endpoint":
            mismatch = self._course(detail.get("ph"), final=True)
            if mismatch:  # reached, but not where the plan's reagents would reach it: not a result
                return out + self.abort(mismatch, "reagent_mismatch", now)
            out.append(Snapshot("endpoint"))
            task = self.book.task
            # a held (cancelled) dispenser has no result left to report: its subtask ends here
            if self.book.endpoint() and task.id not in self.sup.scheduler.done:
                self.sup.subtask_finished(task.id, True)
        if symbol in ("endpoint", "verified"):
            out.append(Tell("recorder", symbol, subtask_id, {"ph": detail.get("ph"),
                                                              "temperature_c": self.sup.last_temperature}, now))
        if state != previous or symbol in REDISPATCH:
            out += self.dispatch(now)
        return out

    def _course(self, ph, final: bool = False) -> str:
        """A settled reading to the course check; its alarm sentence, or ''. Not judged while another
        anomaly holds or pauses the dispenser (its own judge owns that reading) or a reading was refused, nor
        before the first drop is heard (no volume to judge at)."""
        if self.course is None or not self.drops_heard or not isinstance(ph, (int, float)) or self.sup.holds \
                or self.sup.pauses - {ENDPOINT_HOLD} or self.bad_readings.open:
            return ""
        try:
            return self.course.on_settled(self.drops_heard * self.drop_ml, float(ph), final).alarm
        except (ValueError, ArithmeticError):  # a reading or curve it cannot judge: no verdict, never a crash
            return ""

    def on_agent_symbol(self, symbol: str, now: float, source: str, subtask_id: str) -> list:
        """A drop heard (audio supervisor) or a pour pulse (dispenser)."""
        self.drops_heard += symbol == "drop"  # titrant in the beaker whatever the machine's state
        return self.apply(symbol, now, source, subtask_id) if symbol in ("drop", "tap") else []

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
                if self.book.resume(self.sup.machine.state in COLOUR_WATCH_STATES):
                    out.append(Log(f"resuming the dispenser: {cmd.reason}"))
                    out += self.send_dispense_goal(self.book.task, now, resume=True)
            elif isinstance(cmd, (PauseDispensing, UnpauseDispensing)):
                # The dispenser holds its goal (position, volume, high-water mark) and goes on afterwards.
                symbol = "hold" if isinstance(cmd, PauseDispensing) else "release"
                task_id = self.book.task.id if self.book.task is not None else ""
                out += [Log(f"{symbol} the dispenser: {cmd}"), Tell("dispenser_controller", symbol, task_id,
                                                                   {"reason": cmd.reason})]
            elif isinstance(cmd, Apply):
                out += self.apply(cmd.symbol, now, "vision_supervisor", "", cmd.detail)
            elif isinstance(cmd, Report):
                out += self._stamped([cmd])
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
        if self.weighing:
            held = str(task.parameters.get("object", "")) if task.primitive == "grasp" else None
            self.own_moves.moved(now, held)  # the first frame after the motion is the bench to keep
        else:
            self.own_moves.passed(now)  # frames after it are compared with the scene check's bench again
        return self.apply(symbol, now, "action_policy", task.id)

    def on_tared(self, now: float) -> list:
        """The balance tared; tare_ok follows from its readings (Supervision.on_mass), not from its word."""
        if self.sup.mass is not None:
            self.sup.mass.tare_sent(now)
        return []

    def on_dispense_result(self, task, outcome: DispenseOutcome, now: float) -> list:
        if self.weighing:
            self.own_moves.moved(now)
        sup = self.sup
        step = self.book.decide_result(outcome, state=sup.machine.state, colour_endpoint=sup.colour_endpoint,
                                       terminal=sup.machine.terminal, subtask_done=task.id in sup.scheduler.done)
        if step is Next.FINISHED:
            sup.subtask_finished(task.id, True)
            if sup.mass is not None:
                sup.mass.dispenser_finished()  # target_mass waits for the balance to agree
            return self.dispatch(now)
        if step is Next.CAP_WITHOUT_COLOUR:
            return self.abort(f"the volume cap was dispensed ({outcome.dispensed_ml + self.book.dispensed_before_ml:.3f}"
                              " mL) without the colour change", "endpoint_not_reached", now)
        if step is Next.RESUME:
            return self.send_dispense_goal(task, now, resume=True)
        if step is Next.FAILED:
            sup.subtask_finished(task.id, False, outcome.message)
            return self.abort(f"dispensing failed: {outcome.stop_reason}: {outcome.message}", "dispense_failed", now)
        return []

    # ------------------------------------------------------------------ electrode calibration
    def on_calibration(self, data: str) -> list:
        """The pH meter's electrode calibration state (JSON, agentchemist.fsm.calibration)."""
        self.calibration = ElectrodeState.parse(data)
        return []

    def calibration_refused(self) -> str:
        """Why this experiment may not titrate on the pH meter's readings ('' when it may): a pH endpoint
        needs readings corrected by a valid, fresh electrode calibration."""
        if self.sup.target_ph is None or self.calibration is None:
            return ""   # no pH endpoint, or no meter that states a calibration (nothing to judge)
        return self.calibration.refusal()

    # ------------------------------------------------------------------ readings
    def on_ph(self, stamp: float, value: float, noise: float | None) -> list:
        """A pH reading; a refused one is reported once per episode (fsm/episodes.py), for every node."""
        try:
            commands = self.sup.on_ph(stamp, value, noise)
        except ReadingError as exc:
            return self._stamped(self.bad_readings.failed("pH", stamp, f"pH reading refused: {exc}"))
        return self._stamped(self.bad_readings.passed("pH", stamp)) + self.carry_out(commands, stamp)

    def on_temperature(self, value: float, stamp: float = 0.0) -> list:
        try:
            self.sup.on_temperature(value)
        except ReadingError as exc:
            return self._stamped(self.bad_readings.failed("temperature", stamp,
                                                          f"temperature reading refused: {exc}"))
        return self._stamped(self.bad_readings.passed("temperature", stamp))

    def on_mass(self, stamp: float, grams: float) -> list:
        if self.sup.mass is None:
            return []
        try:
            commands = self.sup.on_mass(stamp, grams)
        except ReadingError as exc:
            return self._stamped(self.bad_readings.failed("balance", stamp, f"balance reading refused: {exc}"))
        return self._stamped(self.bad_readings.passed("balance", stamp)) + self.carry_out(commands, stamp)

    def on_audio_noise(self, resolved: bool, stamp: float) -> list:
        """No drop can be heard: none may be squeezed (the dispenser relies on hearing each one)."""
        return self.carry_out(self.sup.unpause("audio_noise") if resolved else self.sup.pause("audio_noise"), stamp)

    def on_frame(self, stamp: float, frame, camera=None, depth_m=None) -> list:
        """A decoded front frame: the bench watch, the dissolution watch, the liquid's colour. ``camera``
        (a CameraModel of this frame's size) and ``depth_m`` (aligned depth, m), where the camera has them:
        the dissolution watch then finds the beaker's floor in 3-D (perception/beaker_floor.py)."""
        sup = self.sup
        out: list = []
        if self.own_moves.rebaseline(stamp):
            out += self.start_watch(frame)
        if sup.mass is not None and sup.machine.state in ("dissolving", "solution_ready"):
            try:
                seen = self.dissolution.update(stamp, frame, camera, depth_m)
            except DissolutionError as exc:
                out += self._stamped(self.frames.issue("bad_image", "dissolution",
                                                       f"front camera: cannot see the beaker's contents: {exc}"))
            else:
                out += self._stamped(self.frames.passed("dissolution", "front camera shows the beaker's contents again"))
                out += self.carry_out(sup.on_dissolution(stamp, seen.solid_visible, seen.dissolved), stamp)
        if sup.watch is not None and not sup.machine.terminal and not self.own_moves.blind(stamp):
            out += self.carry_out(sup.on_scene(stamp, detect_markers(frame)), stamp)
        if not sup.track_colour or sup.machine.terminal:
            return out
        try:
            m = self.tracker.measure(frame, stamp)
        except ColourError as exc:
            return out + self._stamped(self.frames.issue("colour_unreadable", "colour", f"front camera: {exc}"))
        try:
            commands = sup.on_colour(stamp, m.hue_deg, m.confidence)
        except HueReadingError as exc:
            return out + self._stamped(self.frames.issue("bad_image", "colour", f"front camera colour refused: {exc}"))
        out += self._stamped(self.frames.passed("colour", "front camera colour readable again"))
        delta = 0.0 if self.last_hue is None else (m.hue_deg - self.last_hue + 180.0) % 360.0 - 180.0
        self.last_hue = m.hue_deg
        out.append(PublishHue(stamp, float(m.hue_deg), float(delta), float(m.confidence), sup.machine.state,
                              self.book.task.id if self.book.task is not None else ""))
        return out + self.carry_out(commands, stamp)

    # ------------------------------------------------------------------ time and the end
    def on_tick(self, now: float) -> list:
        """The node's timer: state timeouts, a stale camera, the recorder."""
        if not math.isfinite(now):
            return []
        # While a lost recorder or peer holds dispensing the state cannot progress: its own limit
        # (lost_abort_s) ends the run, not the state's timeout, which is stopped meanwhile (watch_hold).
        # check_timeout raises FsmTimeError when the clock went back: the node says why.
        reason = None if self.watch_hold_since is not None else self.sup.check_timeout(now)
        if reason:
            return self.abort(reason, "state_timeout", now)
        return self.carry_out(self.sup.check_camera(now), now) + self.check_recorder(now) + self.check_peers(now)

    # ------------------------------------------------------------------ the record (fsm/record_watch.py)
    def on_recorder_status(self, experiment_id: str, recording: bool, stored_through: float, now: float,
                           frame) -> list:
        """The recorder's status: the acknowledgement starts a waiting run; its return ends a gap."""
        if not self.running:
            return []
        verdict = self.record_watch.on_status(experiment_id, recording, stored_through, now)
        if verdict == "acked" and self.pending_start is not None:
            require_scene, self.pending_start = self.pending_start, None
            return self.start(now, frame, require_scene)
        if verdict == "back":
            gap = self.record_watch.gaps[-1]
            return self.watch_hold(now, self.sup.unpause("recorder")) + self._stamped([
                Report("recorder_lost", "info", f"the recorder is back; dispensing goes on (gap {gap})",
                       resolved=True),
                Report("record_gap", "warn", f"the record has a gap from {gap.start:.1f} s to {gap.end:.1f} s "
                       "(dispensing was held from when it was noticed): the run cannot be reported as a "
                       "success")])
        return []

    def check_recorder(self, now: float) -> list:
        watch = self.record_watch
        verdict = watch.check(now) if self.running else ""
        if verdict == "abort_unacked":
            return self.abort(f"the recorder did not acknowledge the plan within {watch.config.ack_wait_s:.0f} s; "
                              "nothing was moved", "recorder_unavailable", now)
        if verdict == "abort_lost":
            return self.abort(f"the recorder has been gone since {watch.lost_since:.1f} s", "recorder_lost", now)
        if verdict == "lost":
            return self.watch_hold(now, self.sup.pause("recorder")) + self._stamped([Report(
                "recorder_lost", "warn", f"{watch.why_lost(now)}: dispensing is held until it is back",
                response="pause")])
        return []

    # ------------------------------------------------------------------ the peers (fsm/node_watch.py)
    def on_heartbeat(self, node: str, instance: str, now: float) -> list:
        return self.on_peers(self.peers.on_heartbeat(node, instance, now), now) if self.running else []

    def check_peers(self, now: float) -> list:
        return self.on_peers(self.peers.check(now), now) if self.running else []

    def on_peers(self, events, now: float) -> list:
        """A peer lost holds dispensing (if the run needs it), back releases it; a restarted goal holder or
        a peer gone too long ends the run."""
        out: list[Any] = []
        for e in events:
            held = e.node in HOLD_FOR
            if e.what == "lost":
                out += self.watch_hold(now, self.sup.pause(f"peer {e.node}")) if held else []
                out += self._stamped([Report("node_lost", "warn", e.text + (": dispensing is held until it is back"
                                             if held else ""), response="pause" if held else "")])
            elif e.what == "back":
                out += self.watch_hold(now, self.sup.unpause(f"peer {e.node}"))
                out += self._stamped([Report("node_lost", "info", e.text, resolved=True)])
            elif e.what == "abort" or (e.what == "restarted" and e.node in GOAL_HOLDERS):
                why = e.text if e.what == "abort" else e.text + ", including this run's goal"
                return out + self.abort(why, "node_lost", now)
        return out

    def watch_hold(self, now: float, commands) -> list:
        """Carry out a watch's pause or unpause; the state's timeout stops while any watch holds."""
        held = any(r == "recorder" or r.startswith("peer ") for r in self.sup.pauses)
        if held and self.watch_hold_since is None:
            self.watch_hold_since = now
        elif not held and self.watch_hold_since is not None:
            self.machine.discount(now - self.watch_hold_since)
            self.watch_hold_since = None
        return self.carry_out(commands, now)

    def abort(self, reason: str, kind: str, now: float) -> list:
        """End the experiment: an anomaly, the robot stops what it does for it, the state, a snapshot."""
        self.pending_start = None  # a start that waited for the recorder will not come
        out: list[Any] = [Log(f"abort: {reason}", "error"),
                          *self._stamped([Report(kind, "halt", reason, response="abort")]),
                          Cancel("dispenser_controller"), Cancel("action_policy")]
        if self.sup.machine.terminal:
            return out + [PublishState("aborted", "", "abort", terminal=True)]
        previous = self.sup.machine.state
        self.sup.abort(reason, now)
        return out + [self._state(previous, "abort"), Snapshot("anomaly")]
