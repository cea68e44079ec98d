"""The complexometric titration's procedure: a colour endpoint the front camera reads.

The liquid turns from the plan's ``colour_from`` to ``colour_to`` (see
:mod:`agentchemist.perception.colour_change`):

* a candidate change (hue past the hysteresis band) holds the dispenser at once, so that no drop
  falls while the change is being confirmed; a candidate that reverts releases it. A hold cancels the
  dispense goal and its end sends a new one for the rest of the volume cap (fsm/dispensing.py);
* the change confirmed over ``endpoint_stable_s`` (and the detector's frame count) stops dispensing and
  applies ``endpoint``;
* verification: every usable frame stays on the end colour for ``verify_hold_s``; a frame back on the
  start side aborts (the endpoint was false);
* ``colour_stable`` (waiting_mix -> titrating) when the hue settled over the plan's settle window: the
  dispenser may squeeze the next drop;
* no usable front image for ``camera_stale_s`` while the colour is watched: an anomaly and a hold;
* every frame's hue is published as an estimate (the recorder keeps colour_hue).
"""
from __future__ import annotations

import math
from typing import Any

from agentchemist.contracts import Symbol
from agentchemist.contracts.notes import Resume
from agentchemist.experiments.procedure import Procedure
from agentchemist.fsm.commands import Abort, Apply, HoldDispensing, Report, ResumeDispensing, StopDispensing
from agentchemist.fsm.effects import PublishHue, tell
from agentchemist.perception.colour import BeakerColourTracker, ColourError
from agentchemist.perception.colour_change import (ColourChangeConfig, ColourChangeDetector, HueReadingError,
                                                   HueStabilityConfig, HueStabilityDetector)

__all__ = ["COLOUR_WATCH_STATES", "PROCEDURE", "ColourEndpoint"]

#: Machine states in which the colour endpoint is watched (the complexometric protocol's names).
COLOUR_WATCH_STATES = ("titrating", "waiting_mix")


class ColourEndpoint(Procedure):
    """One complexometric titration's colour endpoint, its holds and its hue estimates."""

    colour_endpoint = True
    track_colour = True   #: every frame's hue is estimated and published (the recorder keeps colour_hue)
    dispensing_states = COLOUR_WATCH_STATES

    def __init__(self, sup):
        super().__init__(sup)
        vision, config = sup.plan.module_instantiation.vision, sup.config
        if not vision.colour_from or not vision.colour_to:
            raise ValueError("the plan's vision endpoint is 'colour' but colour_from / colour_to are not set")
        self.colour_change = ColourChangeDetector(ColourChangeConfig.from_names(
            vision.colour_from, vision.colour_to, confirm_s=sup.endpoint_hold_s,
            confirm_frames=config.colour_confirm_frames, max_gap_s=config.colour_max_gap_s,
            min_confidence=config.colour_min_confidence))
        self.colour_settle = HueStabilityDetector(HueStabilityConfig(
            window_s=sup.settle_window_s, max_spread_deg=config.hue_spread_deg, min_samples=config.colour_min_samples))
        self.watch_since: float | None = None
        self.holds: set[str] = set()  #: why dispensing is held: colour_candidate, camera_stale, unexpected_colour
        self.camera_stale = False
        self._early_colour_reported = False
        self._verify_last: float | None = None
        self.tracker: BeakerColourTracker | None = None  # on the executor's region, from its first frame
        self.published_hue: float | None = None

    def watching(self, state: str) -> bool:
        return state in COLOUR_WATCH_STATES

    def on_transition(self, symbol: str, transition, now: float) -> None:
        if transition.to_state == "waiting_mix":
            self.colour_settle.reset()
        if transition.to_state in COLOUR_WATCH_STATES and self.watch_since is None:
            self.watch_since = now
        if transition.to_state == "done":
            self._verify_last = None
            self.holds.clear()

    # ------------------------------------------------------------------ colour
    def on_colour(self, stamp: float, hue_deg: float, confidence: float) -> list:
        sup, detector = self.sup, self.colour_change
        event = detector.update(stamp, hue_deg, confidence)  # raises on time going backwards
        if confidence < detector.config.min_confidence:
            return []  # not usable: neither evidence for nor against; the staleness clock keeps running
        sup.last_hue, sup.last_colour_stamp = hue_deg, stamp
        out: list = []
        if self.camera_stale:
            self.camera_stale = False
            # The same kind as the warn, so that the report pairs the two (an info is a resolution)
            out.append(Report("camera_stale", "info", "front camera images are usable again", resolved=True))
            out += self._release("camera_stale")
        state = sup.machine.state
        if sup.machine.terminal or sup.machine.paused:
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

    def _watch(self, stamp: float, hue_deg: float, event) -> list:
        detector = self.colour_change
        out: list = []
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
            out.append(Apply(Symbol.ENDPOINT, detail))
            return out
        if not detector.armed and not self._early_colour_reported \
                and detector.progress(hue_deg) >= detector.config.enter_fraction:
            # Titrant into a solution that is already at the end colour: hold until the start colour
            # is seen (a passing reflection) or the state's timeout aborts the run (a wrong solution).
            out.append(self._early_colour(hue_deg, "while titrating, before the start colour was seen"))
            out += self._hold("unexpected_colour")
        self.colour_settle.add(stamp, hue_deg)
        if self.sup.machine.state == "waiting_mix" and detector.state in ("unarmed", "before") \
                and Symbol.COLOUR_STABLE in self.sup.plan.state_machine.input_symbols \
                and self.colour_settle.is_stable():
            out.append(Apply(Symbol.COLOUR_STABLE, detail))
        return out

    def _verify(self, stamp: float, hue_deg: float) -> list:
        detector, sup = self.colour_change, self.sup
        if not detector.at_end_colour(hue_deg):
            return [Abort("endpoint_not_verified",
                          f"endpoint not verified: the colour went back to hue {hue_deg:.0f} deg "
                          f"({sup.plan.module_instantiation.vision.colour_from} side) during verification")]
        if sup.verify_since is None:
            return []
        if self._verify_last is not None and stamp - self._verify_last > detector.config.max_gap_s:
            sup.verify_since = stamp  # no frames in between: the hold starts again
        self._verify_last = stamp
        if stamp >= sup.verify_since + sup.verify_hold_s:
            return [Apply(Symbol.VERIFIED, {"hue_deg": hue_deg})]
        return []

    def _early_colour(self, hue_deg: float, when: str) -> Report:
        vision = self.sup.plan.module_instantiation.vision
        self._early_colour_reported = True
        return Report("unexpected_colour", "warn",
                      f"the solution already shows the end colour ({vision.colour_to}, hue {hue_deg:.0f} deg) "
                      f"{when}; expected {vision.colour_from} first: not taken as an endpoint")

    def _hold(self, reason: str) -> list:
        first = not self.holds
        self.holds.add(reason)
        return [HoldDispensing(reason)] if first else []

    def _release(self, reason: str) -> list:
        if reason not in self.holds:
            return []
        self.holds.discard(reason)
        if self.holds or self.sup.machine.state not in COLOUR_WATCH_STATES:
            return []
        return [ResumeDispensing(f"{reason} cleared")]

    def check_camera(self, now: float) -> list:
        """Stale front camera while the colour endpoint is watched -> one anomaly and a hold."""
        sup = self.sup
        if sup.machine.terminal or self.camera_stale:
            return []
        if sup.machine.state not in (*COLOUR_WATCH_STATES, "done") or self.watch_since is None:
            return []
        last = sup.last_colour_stamp
        silent = now - max(self.watch_since, last if last is not None else -math.inf)
        if silent <= sup.config.camera_stale_s:
            return []
        self.camera_stale = True
        seen = "none yet" if last is None else f"the last at {last:.1f} s"
        out: list = [Report(
            "camera_stale", "warn", f"no usable front camera image for {silent:.1f} s ({seen}) while the colour "
                                    f"endpoint is watched; dispensing held until images return")]
        if sup.machine.state in COLOUR_WATCH_STATES:
            out += self._hold("camera_stale")
        return out

    # ------------------------------------------------------------------ the executor's
    def on_applied(self, ex, symbol: str, detail: dict[str, Any], subtask_id: str, now: float) -> list:
        if symbol == Symbol.COLOUR_STABLE:
            # The solution settled after the drop: the dispenser may squeeze the next one.
            return [tell("dispenser_controller", Resume(), subtask_id, now)]
        return super().on_applied(ex, symbol, detail, subtask_id, now)

    def on_frame_after_bench(self, ex, stamp: float, frame) -> list:
        """The liquid's colour: the endpoint's evidence and the hue estimate published for the recorder."""
        sup = self.sup
        if sup.machine.terminal:
            return []
        if self.tracker is None:
            self.tracker = BeakerColourTracker(ex.region)
        try:
            m = self.tracker.measure(frame, stamp)
        except ColourError as exc:
            return ex.stamped(ex.frames.issue("colour_unreadable", "colour", f"front camera: {exc}"))
        try:
            commands = sup.on_colour(stamp, m.hue_deg, m.confidence)
        except HueReadingError as exc:
            return ex.stamped(ex.frames.issue("bad_image", "colour", f"front camera colour refused: {exc}"))
        out = ex.stamped(ex.frames.passed("colour", "front camera colour readable again"))
        delta = 0.0 if self.published_hue is None else (m.hue_deg - self.published_hue + 180.0) % 360.0 - 180.0
        self.published_hue = m.hue_deg
        out.append(PublishHue(stamp, float(m.hue_deg), float(delta), float(m.confidence), sup.machine.state,
                              ex.book.task.id if ex.book.task is not None else ""))
        return out + ex.carry_out(commands, stamp)


PROCEDURE = ColourEndpoint
