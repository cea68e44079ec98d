"""The vision supervisor's decisions, free of ROS: run the plan's machine, say what to dispatch, turn
pH readings and liquid colour into symbols, and results into symbols.

The node feeds events in and carries out the returned `Command`s (send a goal, publish a message);
the supervisor alone applies transitions, as in the paper.

Which endpoint applies is the plan's: ``module_instantiation.vision.endpoint`` is ``ph`` (acid-base:
target pH reached and stable for ``endpoint_stable_s``) or ``colour`` (complexometric: the liquid turns
from ``colour_from`` to ``colour_to``, see :mod:`agentchemist.perception.colour_change`). Colour endpoint:

* a candidate change (hue past the hysteresis band) holds the dispenser at once, so that no drop
  falls while the change is being confirmed; a candidate that reverts releases it;
* the change confirmed over ``endpoint_stable_s`` (and the detector's frame count) stops dispensing and
  applies ``endpoint``;
* verification: every usable frame stays on the end colour for ``verify_hold_s``; a frame back on the
  start side aborts (the endpoint was false);
* ``colour_stable`` (waiting_mix -> titrating) when the hue settled over the plan's settle window;
* no usable front image for ``camera_stale_s`` while the colour is watched: an anomaly and a hold.

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
from dataclasses import dataclass, field

from agentchemist.fsm.commands import (Abort, Apply, Command, HoldDispensing, PauseDispensing, Report,
                                       ResumeDispensing, StopDispensing, UnpauseDispensing)
from agentchemist.fsm.endpoint import ENDPOINT_HOLD, EndpointJudge, Verdict
from agentchemist.fsm.errors import RejectedSymbolError
from agentchemist.fsm.machine import ExperimentMachine, Transition
from agentchemist.fsm.node_watch import NodeWatchConfig
from agentchemist.fsm.record_watch import RecordWatchConfig
from agentchemist.fsm.scheduler import SubtaskScheduler
from agentchemist.fsm.weighing import MassConfig, MassSupervision
from agentchemist.params import nested, param
from agentchemist.perception.frozen_reading import FrozenConfig, FrozenReadingDetector
from agentchemist.perception.scene import LabwareWatch, LabwareWatchConfig
from agentchemist.perception.colour_change import (ColourChangeConfig, ColourChangeDetector, HueReadingError,
                                                   HueStabilityConfig, HueStabilityDetector)
from agentchemist.perception.ph_stability import PhStabilityDetector, ReadingError, settle_config

__all__ = ["COLOUR_WATCH_STATES", "DISPENSING_STATES", "ENDPOINT_HOLD", "Supervision", "SupervisionConfig"]

#: Machine states in which the colour endpoint is watched (the complexometric protocol's names).
COLOUR_WATCH_STATES = ("titrating", "waiting_mix")
#: States in which the dispenser is at work (it reports meter faults there itself).
DISPENSING_STATES = ("titrating", "waiting_ph", "waiting_mix")



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
    """One experiment's supervision: machine + scheduler + chemical perception."""

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
        settle_s = float(params.get("stable_window_s") or getattr(disp, "settle_window_s", 1.0) or 1.0)
        self.settle = PhStabilityDetector(settle_config(settle_s, config.ph_settle_criterion))
        target = params.get("target_ph")
        self.target_ph = float(target) if isinstance(target, (int, float)) else None
        hold = float(params.get("endpoint_stable_s") or getattr(disp, "endpoint_stable_s", 5.0) or 5.0)
        self.endpoint: EndpointJudge | None = None
        self.ph_direction = 0  #: decided by start_dispensing (+1 / -1); 0 before
        self.endpoint_hold_s = hold
        self.verify_since: float | None = None
        self.last_ph: float | None = None
        self.last_temperature: float | None = None
        self.start_temperature: float | None = None
        self.rejected: list[str] = []
        self._last_stamp = now

        # ---- colour endpoint (complexometric protocols)
        self.endpoint_channel = vision.endpoint
        self.colour_endpoint = vision.endpoint == "colour"
        self.track_colour = self.colour_endpoint or "colour_hue" in plan.module_instantiation.recorder.quantities
        self.colour_change: ColourChangeDetector | None = None
        self.colour_settle: HueStabilityDetector | None = None
        self.verify_hold_s = float(vision.verify_hold_s)
        for task in plan.task_decomposition:
            if task.receiver == "vision_supervisor" and task.expected_transition is not None \
                    and task.expected_transition.symbol == "verified":
                hold_s = task.parameters.get("hold_s")
                if isinstance(hold_s, (int, float)) and not isinstance(hold_s, bool) and hold_s > 0:
                    self.verify_hold_s = float(hold_s)
        if self.colour_endpoint:
            if not vision.colour_from or not vision.colour_to:
                raise ValueError("the plan's vision endpoint is 'colour' but colour_from / colour_to are not set")
            self.colour_change = ColourChangeDetector(ColourChangeConfig.from_names(
                vision.colour_from, vision.colour_to, confirm_s=hold,
                confirm_frames=config.colour_confirm_frames, max_gap_s=config.colour_max_gap_s,
                min_confidence=config.colour_min_confidence))
            self.colour_settle = HueStabilityDetector(HueStabilityConfig(
                window_s=settle_s, max_spread_deg=config.hue_spread_deg, min_samples=config.colour_min_samples))
        self.last_hue: float | None = None
        self.last_colour_stamp: float | None = None
        self.watch_since: float | None = None
        self.holds: set[str] = set()  #: why dispensing is held: colour_candidate, camera_stale, unexpected_colour
        self.camera_stale = False
        self._early_colour_reported = False
        self._verify_last: float | None = None

        # ---- faults of the meter and of the bench
        self.frozen = FrozenReadingDetector(config.frozen)
        self._frozen_reported = False
        self.watch: LabwareWatch | None = None
        self.pauses: set[str] = set()  #: why dispensing is paused: labware, audio_noise

        # ---- mass endpoint (weighing and dissolution, agentchemist.fsm.weighing)
        self.mass: MassSupervision | None = None
        if vision.endpoint == "mass":
            self.mass = MassSupervision(MassConfig.from_plan(plan))
        self.stir_started: float | None = None
        self.dissolved_at: float | None = None
        self.clear_since: float | None = None

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
        if symbol == "drop":
            self.frozen.on_drop(now)
        if transition.to_state == "waiting_ph":
            self.settle.reset()
        if transition.to_state == "waiting_mix" and self.colour_settle is not None:
            self.colour_settle.reset()
        if transition.to_state in COLOUR_WATCH_STATES and self.watch_since is None:
            self.watch_since = now
        if symbol == "stir_ok":
            self.stir_started = now
        if transition.to_state == "done":
            self.verify_since = now
            self._verify_last = None
            self.holds.clear()
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
        """A dispensing subtask starts: the titration's direction is decided here, once per experiment
        (`ph_direction`, +1 rising / -1 falling, sent in the dispenser's goal), from the pH before the first
        drop. A later start keeps it: by then the pH may sit a hair past the target and would turn it round."""
        if self.target_ph is not None and self.endpoint is None:
            self.ph_direction = 1 if current_ph is None or self.target_ph >= current_ph else -1
            self.endpoint = EndpointJudge(self.target_ph, self.ph_direction, self.endpoint_hold_s,
                                          self.settle.config.window_s, self.config.ph_settle_criterion)
        return self.unpause(ENDPOINT_HOLD)  # a new goal is not held by an endpoint hold of an earlier one

    # ------------------------------------------------------------------ pH
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
            if self.endpoint is not None:
                self.endpoint.restart()  # frozen time is no hold time
                out += self.unpause(ENDPOINT_HOLD)  # the dispenser RESETs on the frozen meter itself
            if not self._frozen_reported and not self.machine.terminal and state not in DISPENSING_STATES:
                # While dispensing the dispenser reports it (and RESETs); here nothing else would.
                self._frozen_reported = True
                out.append(Report("ph_stuck", "warn", self.frozen.describe()
                                  + f"; no pH decision is taken on it ({state})", response="hold"))
            return out
        if self._frozen_reported:
            self._frozen_reported = False
            out.append(Report("ph_stuck", "info", "the pH meter reading moves again", resolved=True))
        if self.frozen.suspicious:
            return out  # a settled value made of repeated readings is not trusted yet
        if self.endpoint is not None and state in ("titrating", "waiting_ph"):
            # The one judge of the endpoint: the settled level at the target, then stable over the hold.
            # While the hold runs no drop may fall (the dispenser is paused); should the level fall back
            # short of the target, the dispenser goes on, one drop at a time near it.
            verdict = self.endpoint.update(stamp, ph)
            if verdict is Verdict.REACHED:
                out.append(StopDispensing())
                out.append(Apply("endpoint", {"ph": ph}))
                return out
            out += self.pause(ENDPOINT_HOLD, {"ph": ph}) if verdict is Verdict.HOLD else self.unpause(ENDPOINT_HOLD)
        if state == "waiting_ph" and self.settle.is_stable():
            out.append(Apply("ph_stable", {"ph": ph}))
        if state == "done" and self.verify_since is not None and self.target_ph is not None:
            reached = self.endpoint is None or self.endpoint.reached(ph)
            if stamp - self.verify_since >= self.endpoint_hold_s and self.settle.is_stable() and reached:
                out.append(Apply("verified", {"ph": ph}))
        return out

    def on_temperature(self, value: float) -> None:
        """A temperature reading (deg C); ReadingError when it is not a liquid-water temperature."""
        lo, hi = self.config.temperature_range_c
        if not math.isfinite(value) or not lo <= value <= hi:
            raise ReadingError(f"temperature {value!r} degC outside the probe's plausible range [{lo}, {hi}]")
        self.last_temperature = value
        if self.start_temperature is None:
            self.start_temperature = value

    # ------------------------------------------------------------------ colour
    def on_colour(self, stamp: float, hue_deg: float, confidence: float = 1.0) -> list[Command]:
        """One front-camera hue measurement -> commands. HueReadingError on bad input (never advances)."""
        if not (math.isfinite(stamp) and math.isfinite(hue_deg) and math.isfinite(confidence)) \
                or not 0.0 <= hue_deg < 360.0 or not 0.0 <= confidence <= 1.0:
            raise HueReadingError(f"hue {hue_deg!r} deg (confidence {confidence!r}) at {stamp!r} s is not a hue")
        if self.colour_change is None or self.colour_settle is None:
            self.last_hue, self.last_colour_stamp = hue_deg, stamp
            return []
        detector = self.colour_change
        event = detector.update(stamp, hue_deg, confidence)  # raises on time going backwards
        if confidence < detector.config.min_confidence:
            return []  # not usable: neither evidence for nor against; the staleness clock keeps running
        self.last_hue, self.last_colour_stamp = hue_deg, stamp
        out: list[Command] = []
        if self.camera_stale:
            self.camera_stale = False
            # The same kind as the warn, so that the report pairs the two (an info is a resolution)
            out.append(Report("camera_stale", "info", "front camera images are usable again", resolved=True))
            out += self._release("camera_stale")
        state = self.machine.state
        if self.machine.terminal or self.machine.paused:
            return out
        if state in COLOUR_WATCH_STATES:
            out += self._watch(stamp, hue_deg, event)
        elif state == "done":
            out += self._verify(stamp, hue_deg)
        elif event is not None and event.kind == "crossed":
            # Nothing has been added yet: an end colour now is a wrong solution, not an endpoint.
            detector.reset()
            out.append(self._early_colour(hue_deg, "before titration started"))
        return out

    def _watch(self, stamp: float, hue_deg: float, event) -> list[Command]:
        detector = self.colour_change
        out: list[Command] = []
        detail = {"hue_deg": hue_deg}
        if event is not None and event.kind == "armed":
            out += self._release("unexpected_colour")
        elif event is not None and event.kind == "crossed":
            out += self._hold("colour_candidate")
        elif event is not None and event.kind == "reverted":
            out += self._release("colour_candidate")
        elif event is not None and event.kind == "confirmed":
            self.holds.clear()
            out.append(StopDispensing())
            out.append(Apply("endpoint", detail))
            return out
        if not detector.armed and not self._early_colour_reported \
                and detector.progress(hue_deg) >= detector.config.enter_fraction:
            # Titrant into a solution that is already at the end colour: hold until the start colour
            # is seen (a passing reflection) or the state's timeout aborts the run (a wrong solution).
            out.append(self._early_colour(hue_deg, "while titrating, before the start colour was seen"))
            out += self._hold("unexpected_colour")
        self.colour_settle.add(stamp, hue_deg)
        if self.machine.state == "waiting_mix" and detector.state in ("unarmed", "before") \
                and "colour_stable" in self.plan.state_machine.input_symbols and self.colour_settle.is_stable():
            out.append(Apply("colour_stable", detail))
        return out

    def _verify(self, stamp: float, hue_deg: float) -> list[Command]:
        detector = self.colour_change
        if not detector.at_end_colour(hue_deg):
            return [Abort("endpoint_not_verified",
                          f"endpoint not verified: the colour went back to hue {hue_deg:.0f} deg "
                          f"({self.plan.module_instantiation.vision.colour_from} side) during verification")]
        if self.verify_since is None:
            return []
        if self._verify_last is not None and stamp - self._verify_last > detector.config.max_gap_s:
            self.verify_since = stamp  # no frames in between: the hold starts again
        self._verify_last = stamp
        if stamp >= self.verify_since + self.verify_hold_s:
            return [Apply("verified", {"hue_deg": hue_deg})]
        return []

    def _early_colour(self, hue_deg: float, when: str) -> Command:
        vision = self.plan.module_instantiation.vision
        self._early_colour_reported = True
        return Report("unexpected_colour", "warn",
                      f"the solution already shows the end colour ({vision.colour_to}, hue {hue_deg:.0f} deg) "
                      f"{when}; expected {vision.colour_from} first: not taken as an endpoint")

    def _hold(self, reason: str) -> list[Command]:
        first = not self.holds
        self.holds.add(reason)
        return [HoldDispensing(reason)] if first else []

    def _release(self, reason: str) -> list[Command]:
        if reason not in self.holds:
            return []
        self.holds.discard(reason)
        if self.holds or self.machine.state not in COLOUR_WATCH_STATES:
            return []
        return [ResumeDispensing(f"{reason} cleared")]

    def check_camera(self, now: float) -> list[Command]:
        """Stale front camera while a colour endpoint is watched -> one anomaly and a hold."""
        if not math.isfinite(now):
            raise ValueError(f"now must be finite, got {now!r}")
        if not self.colour_endpoint or self.machine.terminal or self.camera_stale:
            return []
        if self.machine.state not in (*COLOUR_WATCH_STATES, "done") or self.watch_since is None:
            return []
        since = max(self.watch_since, self.last_colour_stamp if self.last_colour_stamp is not None else -math.inf)
        silent = now - since
        if silent <= self.config.camera_stale_s:
            return []
        self.camera_stale = True
        last = "none yet" if self.last_colour_stamp is None else f"the last at {self.last_colour_stamp:.1f} s"
        out: list[Command] = [Report(
            "camera_stale", "warn", f"no usable front camera image for {silent:.1f} s ({last}) while the colour "
                                    f"endpoint is watched; dispensing held until images return")]
        if self.machine.state in COLOUR_WATCH_STATES:
            out += self._hold("camera_stale")
        return out

    # ------------------------------------------------------------------ mass and dissolution
    def on_mass(self, stamp: float, grams: float) -> list[Command]:
        """A balance reading (g) -> tare_ok / mass_stable / target_mass, or an abort (weighing plans only).
        ReadingError on bad readings (never advance)."""
        if self.mass is None or self.machine.terminal:
            return []
        out: list[Command] = []
        for symbol, detail in self.mass.on_mass(stamp, grams, self.machine.state):
            if symbol == "abort":
                out.append(Abort(detail.get("kind", "abort"), detail.get("reason", "supervisor abort")))
            else:
                out.append(Apply(symbol, detail))
        return out

    def on_dissolution(self, stamp: float, solid_visible: bool, dissolved: bool) -> list[Command]:
        """One front frame's view of the beaker (agentchemist.perception.dissolution) -> dissolved /
        verified, or an abort when crystals are seen again during verification."""
        if self.mass is None or self.machine.terminal or self.machine.paused:
            return []
        state = self.machine.state
        if state == "dissolving" and dissolved:
            self.dissolved_at = stamp
            self.clear_since = stamp
            took = None if self.stir_started is None else stamp - self.stir_started
            return [Apply("dissolved", {"dissolution_time_s": took})]
        if state != "solution_ready":
            return []
        if solid_visible:
            return [Abort("endpoint_not_verified", "undissolved solid is seen again in the beaker during verification")]
        if self.clear_since is None:
            self.clear_since = stamp
        if stamp - self.clear_since < self.verify_hold_s:
            return []
        problem = self.mass.verify()
        if problem:
            return [Abort("mass_out_of_tolerance", f"solution not verified: {problem}")]
        return [Apply("verified", {"mass_g": self.mass.weighed_g})]

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
