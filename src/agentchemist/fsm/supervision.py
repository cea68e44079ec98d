"""The vision supervisor's decisions, free of ROS: run the plan's machine, say what to dispatch, turn the
instruments' readings into symbols, and results into symbols.

The node feeds events in and carries out the returned `Command`s (send a goal, publish a message);
the supervisor alone applies transitions, as in the paper.

What a reading means is the experiment family's: its procedure (agentchemist.experiments.<family>.procedure,
found from the plan's family) judges a pH endpoint (acid-base), a colour endpoint with its holds
(complexometric), a mass and a dissolution (weighing). This host checks each reading before the procedure
sees it and keeps what every family shares: the machine and the subtasks, the pH meter's settle window
and its frozen-reading check, the temperature, the last usable hue, the verification's start, the bench
and the pauses of the dispenser.

Bad evidence never advances the machine: readings that are not finite or out of range raise
:class:`ReadingError` / :class:`HueReadingError` before any detector sees them. A frozen pH meter
(:mod:`agentchemist.perception.frozen_reading`) is bad evidence too: while its readings repeat
themselves suspiciously no pH is called settled, no endpoint reached and nothing verified (the dispenser
RESETs on it while it dispenses; outside dispensing this supervisor reports ``ph_stuck``).

Pauses (``pause_dispensing`` / ``unpause_dispensing`` with a reason, each one idempotent, carried out by
holding the dispenser controller without ending its goal):

* the bench (:class:`agentchemist.perception.scene.LabwareWatch`): the first front frame in which an item
  of the scene check is missing or moved pauses at once; the change confirmed over the next frame(s)
  is a ``labware_missing`` / ``labware_moved`` anomaly; the item back in place resumes (and resolves the
  anomaly); not back within ``return_timeout_s`` aborts with what is missing;
* the audio supervisor's ``audio_noise`` (no drop can be heard): `pause` / `unpause` from the node.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from agentchemist.contracts import Symbol
from agentchemist.experiments.procedure import procedure_for
from agentchemist.fsm.commands import Abort, Command, PauseDispensing, Report, UnpauseDispensing
from agentchemist.fsm.errors import RejectedSymbolError
from agentchemist.fsm.machine import ExperimentMachine, Transition
from agentchemist.fsm.node_watch import NodeWatchConfig
from agentchemist.fsm.record_watch import RecordWatchConfig
from agentchemist.fsm.scheduler import SubtaskScheduler
from agentchemist.params import nested, param
from agentchemist.perception.frozen_reading import FrozenConfig, FrozenReadingDetector
from agentchemist.perception.scene import LabwareWatch, LabwareWatchConfig
from agentchemist.perception.colour_change import HueReadingError
from agentchemist.perception.ph_stability import PhStabilityDetector, ReadingError, settle_config

__all__ = ["Supervision", "SupervisionConfig"]


@dataclass(frozen=True)
class SupervisionConfig:
    """Thresholds of the supervisor's own checks (seconds, degrees C, degrees of hue)."""

    camera_stale_s: float = param(10.0, unit="s", low=0.5, high=600.0, description=(
        "No usable front image this long while a colour endpoint is watched: anomaly + hold"))
    max_plan_age_s: float = param(30.0, unit="s", low=1.0, high=3600.0, description=(
        "A plan received this long after it was published is not run (an executor restarted mid-run finds "
        "its predecessor's latched plan)"))
    temperature_range_c: tuple[float, float] = (-5.0, 105.0)   #: a liquid-water probe outside this is broken
    hue_spread_deg: float = 6.0                  #: colour settled: hue spread over the settle window
    colour_min_samples: int = 3                  #: frames needed inside the settle window
    colour_confirm_frames: int = param(3, low=1, high=100, description=(
        "Frames a colour change must hold before the endpoint"))
    colour_max_gap_s: float = param(2.0, unit="s", low=0.1, high=60.0, description=(
        "A longer gap between usable frames restarts a colour confirmation"))
    colour_min_confidence: float = 0.5           #: frames below this are ignored
    ph_settle_criterion: str = param("trend", choices=("trend", "spread"), description=(
        "pH settled: trend (slope and its standard error from the probe's own noise) or spread (the "
        "fixed 0.03 pH spread in the window, before issue 21; replays of older recordings)"))
    frozen: FrozenConfig = nested(FrozenConfig, prefix="ph_")            #: when the pH meter counts as frozen
    labware: LabwareWatchConfig = nested(LabwareWatchConfig, prefix="labware_")  #: when a bench change counts
    recorder: RecordWatchConfig = nested(RecordWatchConfig, prefix="recorder_")  #: when the recorder is gone
    peers: NodeWatchConfig = nested(NodeWatchConfig, prefix="peer_")  #: when another agent is gone

    def __post_init__(self):
        lo, hi = self.temperature_range_c
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise ValueError(f"temperature_range_c must be (low, high), got {self.temperature_range_c}")
        if not (self.camera_stale_s > 0 and self.colour_max_gap_s > 0 and 0 < self.hue_spread_deg < 180):
            raise ValueError("camera_stale_s, colour_max_gap_s must be > 0 and hue_spread_deg in (0, 180)")
        if self.colour_min_samples < 2 or self.colour_confirm_frames < 1:
            raise ValueError("colour_min_samples must be >= 2 and colour_confirm_frames >= 1")
        if not 0.0 <= self.colour_min_confidence <= 1.0:
            raise ValueError("colour_min_confidence must be within [0, 1]")
        if self.ph_settle_criterion not in ("trend", "spread"):
            raise ValueError(f"ph_settle_criterion must be trend or spread, got {self.ph_settle_criterion!r}")


class Supervision:
    """One experiment's supervision: machine + scheduler + the instruments' readings, read by the family's
    procedure (agentchemist.experiments.procedure), whose own state reads through this object too
    (``sup.colour_change``, ``sup.mass`` ...)."""

    def __init__(self, plan, now: float, config: SupervisionConfig = SupervisionConfig()):
        self.plan = plan
        self.config = config
        self.machine = ExperimentMachine.from_plan(plan, now=now)
        self.scheduler = SubtaskScheduler(plan)
        disp = plan.module_instantiation.dispenser
        vision = plan.module_instantiation.vision
        params = {}
        for task in plan.task_decomposition:
            if task.receiver == "dispenser_controller":
                params = dict(task.parameters)
        self.dispense_params = params
        self.settle_window_s = float(params.get("stable_window_s") or getattr(disp, "settle_window_s", 1.0) or 1.0)
        self.settle = PhStabilityDetector(settle_config(self.settle_window_s, config.ph_settle_criterion))
        target = params.get("target_ph")
        self.target_ph = float(target) if isinstance(target, (int, float)) else None
        self.endpoint_hold_s = float(params.get("endpoint_stable_s") or getattr(disp, "endpoint_stable_s", 5.0) or 5.0)
        self.verify_since: float | None = None   #: when the machine last reached its verification state
        self.verify_hold_s = float(vision.verify_hold_s)
        for task in plan.task_decomposition:
            if task.receiver == "vision_supervisor" and task.expected_transition is not None \
                    and task.expected_transition.symbol == Symbol.VERIFIED:
                hold_s = task.parameters.get("hold_s")
                if isinstance(hold_s, (int, float)) and not isinstance(hold_s, bool) and hold_s > 0:
                    self.verify_hold_s = float(hold_s)
        self.last_ph: float | None = None
        self.last_temperature: float | None = None
        self.start_temperature: float | None = None
        self.last_hue: float | None = None            #: the last usable hue of the liquid (deg)
        self.last_colour_stamp: float | None = None
        self.rejected: list[str] = []
        self._last_stamp = now
        # ---- faults of the meter and of the bench
        self.frozen = FrozenReadingDetector(config.frozen)
        self._frozen_reported = False
        self.watch: LabwareWatch | None = None
        self.pauses: set[str] = set()  #: why dispensing is paused: labware, audio_noise
        self.procedure = procedure_for(self)  # last: it reads the plan's settings above

    def __getattr__(self, name: str):
        """The family procedure's own state (only called for a name this object does not have)."""
        procedure = self.__dict__.get("procedure")
        if procedure is None:
            raise AttributeError(name)
        return getattr(procedure, name)

    # ------------------------------------------------------------------ dispatch
    def dispatchable(self) -> list:
        """Subtasks whose dependencies are done and whose FSM state is current; marked dispatched."""
        if self.machine.terminal or self.machine.paused:
            return []
        ready = self.scheduler.ready(self.machine.state)
        for task in ready:
            self.scheduler.mark_dispatched(task.id)
        return ready

    def apply(self, symbol: str, now: float, source: str = "", subtask_id: str = "") -> Transition | None:
        """Apply a symbol; a symbol the current state does not accept is kept in `rejected` (not raised):
        agents run concurrently and a late report must not crash the supervisor."""
        # Reports arrive stamped with when their event happened (a drop's onset), which can be a little
        # earlier than the last transition; the machine's history must stay monotone.
        now = max(now, self._last_stamp)
        try:
            transition = self.machine.apply(symbol, now, source=source, subtask_id=subtask_id)
        except RejectedSymbolError as exc:
            self.rejected.append(f"{symbol} from {source or '?'} in {self.machine.state}: {exc}")
            return None
        self._last_stamp = now
        if symbol == Symbol.DROP:
            self.frozen.on_drop(now)
        if transition.to_state == "done":
            self.verify_since = now
        self.procedure.on_transition(symbol, transition, now)
        # The supervisor's own subtasks (verification) are done when their symbol is applied.
        for task_id in self.scheduler.dispatched:
            task = self.plan.subtask(task_id)
            if task.receiver == "vision_supervisor" and task.expected_transition is not None \
                    and task.expected_transition.symbol == symbol:
                self.scheduler.mark_done(task_id)
        return transition

    def abort(self, reason: str, now: float) -> Transition:
        now = max(now, self._last_stamp)
        self._last_stamp = now
        return self.machine.abort(reason, now)

    def subtask_finished(self, subtask_id: str, success: bool, reason: str = "") -> None:
        if success:
            self.scheduler.mark_done(subtask_id)
        else:
            self.scheduler.mark_failed(subtask_id, reason)

    def start_dispensing(self, now: float, current_ph: float | None) -> list[Command]:
        """A dispensing subtask starts (the family decides what that sets up: a pH direction)."""
        return self.procedure.start_dispensing(now, current_ph)

    # ------------------------------------------------------------------ readings
    def on_ph(self, stamp: float, ph: float, noise_sd: float | None = None) -> list[Command]:
        """A pH reading (`noise_sd`: the meter's stated noise) -> the symbols it justifies. Bad readings
        raise ReadingError (never advance)."""
        if not (math.isfinite(ph) and math.isfinite(stamp)):
            raise ReadingError(f"pH reading {ph!r} at {stamp!r} s is not a number")
        self.settle.add(stamp, ph)  # range and time order checked here, before any decision
        self.last_ph = ph
        out: list[Command] = []
        state = self.machine.state
        self.frozen.add(stamp, ph, noise_sd)
        if self.frozen.frozen:
            out += self.procedure.on_frozen_ph()
            # While dispensing the dispenser reports it (and RESETs); elsewhere nothing else would.
            if not self._frozen_reported and not self.machine.terminal \
                    and state not in self.procedure.dispensing_states:
                self._frozen_reported = True
                out.append(Report("ph_stuck", "warn", self.frozen.describe()
                                  + f"; no pH decision is taken on it ({state})", response="hold"))
            return out
        if self._frozen_reported:
            self._frozen_reported = False
            out.append(Report("ph_stuck", "info", "the pH meter reading moves again", resolved=True))
        if self.frozen.suspicious:
            return out  # a settled value made of repeated readings is not trusted yet
        return out + self.procedure.on_ph(stamp, ph)

    def on_temperature(self, value: float) -> None:
        """A temperature reading (deg C); ReadingError when it is not a liquid-water temperature."""
        lo, hi = self.config.temperature_range_c
        if not math.isfinite(value) or not lo <= value <= hi:
            raise ReadingError(f"temperature {value!r} degC outside the probe's plausible range [{lo}, {hi}]")
        self.last_temperature = value
        if self.start_temperature is None:
            self.start_temperature = value

    def on_colour(self, stamp: float, hue_deg: float, confidence: float = 1.0) -> list[Command]:
        """One front-camera hue measurement -> commands. HueReadingError on bad input (never advances)."""
        if not (math.isfinite(stamp) and math.isfinite(hue_deg) and math.isfinite(confidence)) \
                or not 0.0 <= hue_deg < 360.0 or not 0.0 <= confidence <= 1.0:
            raise HueReadingError(f"hue {hue_deg!r} deg (confidence {confidence!r}) at {stamp!r} s is not a hue")
        return self.procedure.on_colour(stamp, hue_deg, confidence)

    def check_camera(self, now: float) -> list[Command]:
        """The timer: a stale front camera the family watches (an anomaly and a hold)."""
        if not math.isfinite(now):
            raise ValueError(f"now must be finite, got {now!r}")
        return self.procedure.check_camera(now)

    def on_mass(self, stamp: float, grams: float) -> list[Command]:
        """A balance reading (g) -> commands (a family that weighs nothing ignores it). ReadingError on bad
        readings (never advance)."""
        return [] if self.machine.terminal else self.procedure.on_mass(stamp, grams)

    def on_dissolution(self, stamp: float, solid_visible: bool, dissolved: bool) -> list[Command]:
        """One front frame's view of the beaker (agentchemist.perception.dissolution) -> commands."""
        if self.machine.terminal or self.machine.paused:
            return []
        return self.procedure.on_dissolution(stamp, solid_visible, dissolved)

    # ------------------------------------------------------------------ bench and pauses
    def start_watch(self, reference: dict[int, tuple[float, float]], image_width: int) -> None:
        """The scene check's tags (tag id -> centre px in an image `image_width` px wide) become the
        bench to keep."""
        self.watch = LabwareWatch(reference, self.config.labware, image_width)

    def on_scene(self, stamp: float, seen: dict[int, tuple[float, float]]) -> list[Command]:
        """One front frame's tags -> pauses, anomalies, an abort (see the module docstring)."""
        if self.watch is None or self.machine.terminal:
            return []
        out: list[Command] = []
        for event in self.watch.update(stamp, seen):
            kind, what = event.anomaly_kind, event.describe()
            if event.kind == "suspect":
                out += self.pause("labware", {"changes": what})
            elif event.kind == "cleared":
                out += self.unpause("labware")
            elif event.kind == "confirmed":
                out.append(Report(kind, "warn", f"{what} (front camera, since {event.since:.1f} s): dispensing is "
                                                f"held until it is back in place; the run stops if it is not "
                                                f"back within {self.config.labware.return_timeout_s:.0f} s",
                                  response="hold"))
            elif event.kind == "restored":
                out.append(Report(kind, "info", f"back in place after {stamp - event.since:.1f} s ({what} before): "
                                                f"dispensing resumes", resolved=True))
                out += self.unpause("labware")
            elif event.kind == "timeout":
                out.append(Abort(kind, f"{what}: not back in place {stamp - event.since:.0f} s after it was first "
                                       f"seen changed ({event.since:.1f} s); the experiment cannot go on "
                                       f"safely without it"))
        return out

    def pause(self, reason: str, detail: dict | None = None) -> list[Command]:
        """Pause dispensing for `reason` (idempotent)."""
        if reason in self.pauses:
            return []
        self.pauses.add(reason)
        return [PauseDispensing(reason, detail or {})]

    def unpause(self, reason: str) -> list[Command]:
        if reason not in self.pauses:
            return []
        self.pauses.discard(reason)
        return [UnpauseDispensing(reason)]

    def check_timeout(self, now: float) -> str | None:
        return None if self.machine.terminal else self.machine.check_timeout(now)
