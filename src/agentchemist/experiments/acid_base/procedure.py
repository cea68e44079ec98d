"""The acid-base titration's procedure: a pH endpoint judged on the meter's readings.

* the titration's direction is decided once, from the pH before the first drop, when dispensing starts;
  the one judge of the endpoint (:class:`agentchemist.fsm.endpoint.EndpointJudge`) then pauses the
  dispenser while the level at the target is confirmed and applies ``endpoint`` when it is;
* ``ph_stable`` (waiting_ph -> titrating) when the reading settled after a drop: the recorder is told the
  settled pH and the dispenser may squeeze the next drop;
* ``verified`` once the settled pH stays at the target over the hold after the endpoint;
* the sample is checked before anything is dispensed: the settled pH before the first drop against the plan's
  analyte (:meth:`.course_check.CourseCheck.on_initial`), whatever the settle mode: another sample is a
  ``reagent_mismatch`` refusal before the first drop;
* each settled reading and the endpoint's go to the course check (:mod:`.course_check`): a course the
  plan's reagents cannot explain halts the run (``reagent_mismatch``);
  a run that does not settle each drop (no ``ph_stable`` after each) still has its course checked: a
  stable reading while it dispenses is judged at the volume the reading shows (the drops heard up to the
  reading's lag before it), once every ``TRACE_CHECK_DROPS`` drops;
* no titration on readings of an electrode without a valid calibration (``calibration_required``).
"""
from __future__ import annotations

import bisect
from collections import deque
from typing import Any

from agentchemist.contracts import Symbol
from agentchemist.contracts.dispense import titration_direction
from agentchemist.contracts.notes import PhStable, Resume
from agentchemist.experiments.acid_base.course_check import CourseCheck
from agentchemist.experiments.procedure import Procedure
from agentchemist.fsm.calibration import CALIBRATION_REQUIRED
from agentchemist.fsm.commands import Abort, Apply, StopDispensing
from agentchemist.fsm.effects import tell
from agentchemist.fsm.endpoint import ENDPOINT_HOLD, EndpointJudge, Verdict

__all__ = ["PROCEDURE", "PhEndpoint"]

#: the states in which the endpoint is judged (the protocol's names)
JUDGED = ("titrating", "waiting_ph")
#: the reading trails the beaker by the stirred mixing and the electrode (1 s + 2 s, agentchemist.control.approach's
#: priors): a reading shows the drops that fell this long before it
READING_LAG_S = 3.0
#: a run that does not settle each drop: one course point per this many drops at the most (about 0.5 mL)
TRACE_CHECK_DROPS = 10
#: ... on a steady reading: its last 2 s within 0.05 pH (a flat part of the curve, or a hold)
TRACE_STEADY_S, TRACE_STEADY_PH = 2.0, 0.05


class PhEndpoint(Procedure):
    """One acid-base titration's pH endpoint, its settled readings and its course check."""

    dispensing_states = JUDGED

    def __init__(self, sup):
        super().__init__(sup)
        self.endpoint: EndpointJudge | None = None  #: built when dispensing starts (the direction is known)
        # The measured pH course against the plan's curve (reagent_mismatch); volume = the executor's count
        # of the audio supervisor's drop notes x the plan's drop (not the notes' total_ml: see
        # docs/architecture.md, "Who decides what").
        self.course = CourseCheck.from_plan(sup.plan)
        self.drop_ml = float(sup.plan.module_instantiation.dispenser.drop_volume_ml)
        self.settles = bool(sup.plan.module_instantiation.dispenser.settle_each_drop)
        self.drop_stamps: list[float] = []   #: when each drop was heard (a run that does not settle each drop)
        self._traced_at = 0                  #: drops shown at the last trace course point
        self._recent: deque[tuple[float, float]] = deque()  #: (stamp, pH) of the last TRACE_STEADY_S

    # ------------------------------------------------------------------ readings
    def on_transition(self, symbol: str, transition, now: float) -> None:
        if transition.to_state == "waiting_ph":
            self.sup.settle.reset()  # the settle after this drop starts from its first reading

    def start_dispensing(self, now: float, current_ph: float | None) -> list:
        """The titration's direction is decided here, once per experiment (`ph_direction`, +1 rising / -1
        falling, sent in the dispenser's goal), from the pH before the first drop, by the one rule
        (agentchemist.contracts.dispense.titration_direction) the dispenser applies to a goal without one.
        A later start keeps it: by then the pH may sit a hair past the target and would turn it round."""
        sup = self.sup
        if sup.target_ph is not None and self.endpoint is None:
            self.ph_direction = titration_direction(sup.target_ph, current_ph)
            self.endpoint = EndpointJudge(sup.target_ph, self.ph_direction, sup.endpoint_hold_s,
                                          sup.settle.config.window_s, sup.config.ph_settle_criterion)
        return sup.unpause(ENDPOINT_HOLD)  # a new goal is not held by an endpoint hold of an earlier one

    def on_frozen_ph(self) -> list:
        if self.endpoint is None:
            return []
        self.endpoint.restart()  # frozen time is no hold time
        return self.sup.unpause(ENDPOINT_HOLD)  # the dispenser RESETs on the frozen meter itself

    def on_ph(self, stamp: float, ph: float) -> list:
        sup = self.sup
        state = sup.machine.state
        out: list = []
        if self.endpoint is not None and state in JUDGED:
            # The one judge of the endpoint: the settled level at the target, then stable over the hold.
            # While the hold runs no drop may fall (the dispenser is paused); should the level fall back
            # short of the target, the dispenser goes on, one drop at a time near it.
            verdict = self.endpoint.update(stamp, ph)
            if verdict is Verdict.REACHED:
                return [StopDispensing(), Apply(Symbol.ENDPOINT, {"ph": ph})]
            out += sup.pause(ENDPOINT_HOLD, {"ph": ph}) if verdict is Verdict.HOLD else sup.unpause(ENDPOINT_HOLD)
        if state == "waiting_ph" and sup.settle.is_stable():
            out.append(Apply(Symbol.PH_STABLE, {"ph": ph}))
        if not self.settles and state in JUDGED:
            out += self._trace_course(stamp, ph)
        if state == "done" and sup.verify_since is not None and sup.target_ph is not None:
            reached = self.endpoint is None or self.endpoint.reached(ph)
            if stamp - sup.verify_since >= sup.endpoint_hold_s and sup.settle.is_stable() and reached:
                out.append(Apply(Symbol.VERIFIED, {"ph": ph}))
        return out

    # ------------------------------------------------------------------ the executor's
    def refusal(self, ex) -> Abort | None:
        """A pH endpoint needs readings corrected by a valid, fresh electrode calibration; and the sample must
        read as the plan's analyte before the first drop."""
        if self.sup.target_ph is None:
            return None   # no pH endpoint: nothing to judge
        why = ex.calibration.refusal() if ex.calibration is not None else ""
        if why:
            return Abort(CALIBRATION_REQUIRED, why)
        mismatch = self._initial(ex)
        return Abort("reagent_mismatch", mismatch) if mismatch else None

    def _initial(self, ex) -> str:
        """The settled pH before the first drop to the course check; its alarm, or ''. Not judged without a
        settled reading, once a drop fell, or while a reading was refused (its own judge owns it)."""
        sup = self.sup
        ph = sup.last_ph
        if self.course is None or ex.drops_heard or not isinstance(ph, (int, float)) or ex.bad_readings.open \
                or not sup.settle.is_stable():
            return ""
        try:
            return self.course.on_initial(float(ph))
        except (ValueError, ArithmeticError):  # a reading or curve it cannot judge: no verdict, never a crash
            return ""

    def on_applied(self, ex, symbol: str, detail: dict[str, Any], subtask_id: str, now: float) -> list:
        if symbol == Symbol.DROP and not self.settles:
            self.drop_stamps.append(now)
        if symbol == Symbol.PH_STABLE:
            out = [tell("recorder", PhStable(ph=detail.get("ph")), subtask_id, now)]
            mismatch = self._course(ex, detail.get("ph"))
            if mismatch:
                return out + ex.abort(mismatch, "reagent_mismatch", now)
            # The solution settled after the drop: the dispenser may squeeze the next one.
            return out + [tell("dispenser_controller", Resume(), subtask_id, now)]
        if symbol == Symbol.ENDPOINT:
            mismatch = self._course(ex, detail.get("ph"), final=True)
            if mismatch:  # reached, but not where the plan's reagents would reach it: not a result
                return ex.abort(mismatch, "reagent_mismatch", now)
        return super().on_applied(ex, symbol, detail, subtask_id, now)

    def _trace_course(self, stamp: float, ph: float) -> list:
        """A stable reading while the run dispenses without settling each drop, to the course check at the
        volume it shows; an Abort when the course is one the plan's reagents cannot give."""
        if self.course is None:
            return []
        sup = self.sup
        # the supervisor's settle test restarts at every drop (on_transition), so while drops keep falling it
        # never passes: steady here is the readings of the last TRACE_STEADY_S within TRACE_STEADY_PH
        self._recent.append((stamp, ph))
        while self._recent and self._recent[0][0] < stamp - TRACE_STEADY_S:
            self._recent.popleft()
        values = [p for _, p in self._recent]
        steady = len(values) >= 5 and max(values) - min(values) <= TRACE_STEADY_PH
        if not steady or sup.pauses - {ENDPOINT_HOLD}:
            return []
        shown = bisect.bisect_right(self.drop_stamps, stamp - READING_LAG_S)
        if shown < self._traced_at + TRACE_CHECK_DROPS:
            return []
        self._traced_at = shown
        try:
            alarm = self.course.on_settled(shown * self.drop_ml, float(ph)).alarm
        except (ValueError, ArithmeticError):
            return []
        return [Abort("reagent_mismatch", alarm)] if alarm else []

    def _course(self, ex, ph, final: bool = False) -> str:
        """A settled reading to the course check; its alarm sentence, or ''. Not judged while another
        anomaly pauses the dispenser (its own judge owns that reading) or a reading was refused, nor
        before the first drop is heard (no volume to judge at)."""
        if self.course is None or not ex.drops_heard or not isinstance(ph, (int, float)) \
                or self.sup.pauses - {ENDPOINT_HOLD} or ex.bad_readings.open:
            return ""
        try:
            return self.course.on_settled(ex.drops_heard * self.drop_ml, float(ph), final).alarm
        except (ValueError, ArithmeticError):  # a reading or curve it cannot judge: no verdict, never a crash
            return ""


PROCEDURE = PhEndpoint
