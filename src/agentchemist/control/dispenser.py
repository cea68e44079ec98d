"""The dispenser controller: the paper's statistics-based chemical quantity logger.

The gripper squeezes a rubber-bulb pipette; every millimetre of closing expels k mL (offline linear
calibration, no flow meter). The controller is a three-state machine, MOTION / WAIT / RESET, driven by
its transition table (`TRANSITIONS`: every transition `update` takes is looked up there, and one that is
not in it is refused with TransitionError); it takes the *measured* gripper opening, pH readings and drop
events, and returns the command to send. It never reads a clock: `now` is always an argument.

    Q_stat = sum over closing increments of k * dd      (from the measured opening)

Priming: a freshly drawn bulb has slack, and the tip must fill before anything falls, so the squeeze
before the first drop is dead travel. Q_stat starts at the first drop's report (counted as one calibrated
drop) and accumulates k * dd from there; until then the no-drop check allows `priming_allowance_mm`. What
is squeezed while a report is on the way is left out once, at priming, and hangs at the tip at each later
hold, so at a hold Q_stat is what landed, whatever the audio's latency. A volume goal stops on what has
landed (Q_stat less the squeeze since the last drop was heard), to the nearest drop.

High-water mark: a bulb that was released (RESET retracts the gripper) fills with air through the tip,
and squeezing it again pushes that air out before any liquid moves. So only closing past the deepest
opening this goal has reached counts (for Q_stat and for the no-drop check), and after a RESET the
gripper closes back to that depth at `reapproach_rate_mm_s` before dispensing at the goal's rate.

Adaptive rate. MOTION closes at the goal's rate far from the target; near it, it doses increments and
settles after each. Every settled hold gives an anchor (Q_stat, pH), and the pH change per mL between
the last two anchors is the curve's measured sensitivity S (a secant, as dynamic-increment titrators
use). Near the target means: within `near_target_ml` of a volume target, within `near_target_ph` of a pH
target, or a steep curve (S x drop >= `fine_ph_per_drop`, and not flattening past an inflection: the
next drop may cross the target; a strong acid jumps several pH units in one drop at equivalence, so the
pH distance would notice only after the jump). The increment is one drop at `fine_rate_mm_s`, except in
a gently sloped band, where it is `approach_fraction` of the drops S predicts to the target (at the
goal's rate): the distance shrinks geometrically and a 0.5 pH band at 0.01 pH per drop takes a handful
of holds, not fifty.

Prediction (`config.predictive`, on by default; agentchemist.control.approach). The reading trails the
beaker by the mixing and the electrode lags (about 3 s: 16 drops at the top rate), so a hold on every fast
change costs a settle wherever the curve is merely steep, and one hold per drop near the target costs a
settle per drop. The controller instead passes its own squeeze through those lags, so the readings trace
the curve while it squeezes (pH against the volume the reading shows); from that it bounds the volume
left to the next equivalence jump by the log law (a lower bound for strong and weak acids alike) and to the
target on the local slope. Far from both it holds only where either comes within `lead_drops` of what is
already squeezed; near them it doses `jump_fraction` of the bound (or `approach_fraction` of the distance
to the target) in one increment that ends on the squeeze (n drop volumes, not n heard drops: the audio
arrives 0.1-0.3 s late), and a hold ends ("predicted_clear") once the reading has caught up and what is
squeezed reaches neither the jump nor the target, without waiting for the settle test. Past a gentle
inflection (a diprotic acid's first equivalence: the slope peaks and falls) the bound is set aside. Every
settled hold still gives its anchor; without prediction (or while the readings span too little of the
curve) the secant rules above decide. The graph's per-drop record (settle_each_drop) does not predict:
every drop settles there anyway.

The endpoint is not the controller's to judge. A pH target paces it (one drop at a time near it) but
never ends its goal: the supervisor alone decides the endpoint (target reached, then stable over the
hold), holds the controller while it confirms (reason "endpoint"), releases it when the pH falls back
short of the target, and cancels the goal once confirmed. The goal's own ends are its hard limits: the
volume target, an empty pipette, anomalies it cannot recover from, timeouts. The pH direction comes in
the goal (the supervisor decides it once per experiment, by agentchemist.contracts.dispense.titration_direction).

Supervisor holds. `hold(reason)` keeps the gripper where it is (MOTION -> WAIT) until every reason is
released (`release`): the supervisor holds while it confirms an endpoint, while a labware item is
missing or moved and while the contact microphone is deafened by noise (no drop can be heard, so none
may be squeezed). A hold keeps
the goal (Q_stat, the high-water mark, priming); a hold that interrupted MOTION goes back to MOTION on
release, one that came during a settle WAIT leaves that WAIT as usual. While held, the pH-silence and
frozen-meter checks wait: the hold already stops dispensing, and they apply as soon as it is released.

Frozen meter. The pH readings also feed a FrozenReadingDetector (agentchemist.perception.frozen_reading):
bit-identical readings the meter's noise makes improbable, or many drops without any change, are a
"ph_stuck" anomaly and a RESET like a silent meter; it clears once the reading moves again.

Unbidden drops. A drop that left the tip after less than `early_drop_fraction` of a drop's squeeze
since the previous one, or `still_drop_s` after the command last moved, did not come from the squeeze
(a drop leaking from the tip): it is counted (it fell) and reported as "unexpected_drop", with no
RESET. (A leak that takes a nearly full pendant while the bulb is being squeezed looks like the drop
that was due, and is not told apart: the volume it adds unmetered is then the small remainder.) The squeeze between two drops is read from the command
history between the moments they left the tip (their heard onsets less the fall time, the jaws'
lag added), not from when their reports arrive: those come 0.1-0.3 s late by the audio chunking,
which at 0.2 mm/s alone would blur the squeeze by most of a drop.

Statistical estimates: one each time Q_stat crosses another drop volume, each carrying the increment
since the previous estimate, and a last one for the remainder when the controller holds for a RESET or
stops; so the increments always add up to the Q_stat of the result (no estimate is lost).

The parts: the counts (Q_stat, drops, priming, the high-water mark) in agentchemist.control.drop_ledger,
the pace (holds, increments, settling, prediction) in agentchemist.control.pacing, the fault checks and
the unbidden drops in agentchemist.control.drop_faults; this module is the machine that ties them.
"""
from __future__ import annotations

import dataclasses
import math

from agentchemist.control.dispenser_types import (ControllerAnomaly, DispenseGoal, DispenserConfig, Estimate,
                                                  GoalError, Output, State, StopResult)
from agentchemist.control.drop_faults import FaultChecks, UnbiddenDrops
from agentchemist.control.drop_ledger import DropLedger
from agentchemist.control.pacing import Pacing
from agentchemist.perception.frozen_reading import FrozenReadingDetector

# A RESET for these ends the goal once the gripper is retracted: an empty pipette has nothing to retry
# with, and a goal past its time has no time left.
GIVE_UP_KINDS = ("pipette_empty", "operation_timeout")

__all__ = ["TRANSITIONS", "ControllerAnomaly", "DispenseGoal", "DispenserConfig", "DispenserController",
           "Estimate", "GoalError", "Output", "State", "StopResult", "TransitionError", "next_state"]

#: (state, condition) -> (next state, action). The controller's `update` evaluates the conditions
#: of the current state in this order and takes the transition the table gives; tests walk every row.
TRANSITIONS: tuple[tuple[State, str, State, str], ...] = (
    (State.MOTION, "goal_reached", State.DONE, "hold; report success"),
    (State.MOTION, "anomaly", State.RESET, "retract to the safe opening; report the anomaly"),
    (State.MOTION, "hold_command", State.WAIT, "hold position until the supervisor releases every hold"),
    (State.MOTION, "change_rate_high", State.WAIT, "hold position"),
    (State.MOTION, "drop_landed_settle", State.WAIT, "hold position until the pH settles"),
    (State.MOTION, "near_target_drop", State.WAIT, "fine mode: one drop (or a planned increment), then settle"),
    (State.WAIT, "goal_reached", State.DONE, "hold; report success"),
    (State.WAIT, "anomaly", State.RESET, "retract to the safe opening; report the anomaly"),
    (State.WAIT, "released", State.MOTION, "the hold that interrupted MOTION is released: resume closing"),
    (State.WAIT, "resume_command", State.MOTION, "resume closing"),
    (State.WAIT, "predicted_clear", State.MOTION,
     "resume before the reading settles: what is squeezed reaches neither the target nor the next jump"),
    (State.WAIT, "settled", State.MOTION, "resume closing"),
    (State.RESET, "retract_timeout", State.DONE, "hold; report that the gripper never reached the safe opening"),
    (State.RESET, "retracted_give_up", State.DONE, "hold open; report failure"),
    (State.RESET, "retracted_resume", State.MOTION, "squeeze again from the safe opening"),
)
_NEXT = {(state, condition): target for state, condition, target, _action in TRANSITIONS}


class TransitionError(RuntimeError):
    """A transition the table does not have: a bug in the controller, never carried out."""


def next_state(state: State, condition: str) -> State:
    """The state `condition` leads to from `state`, by the table. Raises TransitionError."""
    try:
        return _NEXT[(state, condition)]
    except KeyError:
        raise TransitionError(f"no transition from {state.value} on {condition!r}") from None


class DispenserController:
    """One dispensing goal from start to stop. Create a new controller per goal."""

    def __init__(self, config: DispenserConfig, goal: DispenseGoal, *, start_opening_mm: float, now: float):
        goal.validate(config)
        if not (math.isfinite(start_opening_mm)
                and config.min_opening_mm <= start_opening_mm <= config.max_opening_mm):
            raise GoalError(f"gripper opening {start_opening_mm!r} mm is outside the gripper range")
        self.config = config
        self.goal = goal
        self.state = State.MOTION
        self.rate = goal.rate_mm_s or config.rate_mm_s
        self.timeout = goal.timeout_s or config.operation_timeout_s
        self.started = now
        self.command = start_opening_mm
        # The squeeze before rounding to the gripper's resolution: each update moves this, and the command is
        # its rounding, so the fraction of a step carries over (rounding each step instead ran 0.25 mm/s at
        # 0.26 and 0.0625 at 0.06, and an update soon after a tick lost its sub-resolution step altogether).
        self._exact_command = start_opening_mm
        self.ledger = DropLedger(config, start_opening_mm)
        self.pacing = Pacing(config, goal, self.ledger, start_opening_mm=start_opening_mm, now=now)
        self.faults = FaultChecks(config)
        self.unbidden = UnbiddenDrops(config, start_opening_mm, now)
        self.frozen = FrozenReadingDetector(config.frozen)
        self._reset_since: float | None = None
        self._last_update = now
        self._drop_pending_settle: str | None = None
        self._wait_since: float | None = None
        self.resets = 0
        self._reset_reason: ControllerAnomaly | None = None
        self._resume_requested = False
        self._wait_reason = ""
        self._cancel = False
        self.result: StopResult | None = None
        self.holds: set[str] = set()     #: the supervisor's reasons to hold (see `hold`)
        self._release_pending = False    #: the last hold was released since the last update
        self.released_at = -math.inf

    # ----------------------------------------------------------------- what it has counted
    q_stat = property(lambda self: self.ledger.q_stat)
    drops = property(lambda self: self.ledger.drops_heard)   #: this goal's heard drops (DispenserState.drops)
    primed = property(lambda self: self.ledger.primed)
    dead_travel_mm = property(lambda self: self.ledger.dead_travel_mm)
    deepest_mm = property(lambda self: self.ledger.deepest_mm)
    sensitivity_ph_per_ml = property(lambda self: self.pacing.sensitivity_ph_per_ml)
    #: the reading's total lag (s) the prediction uses now: the prior, rescaled by settled holds
    reading_lag_s = property(lambda self: self.pacing.reading_lag_s)

    @property
    def drop_interval_s(self) -> float:
        """Seconds between drops while squeezing at the goal's rate: what the audio supervisor expects."""
        return self.config.drop_volume_ml / (self.config.k_ml_per_mm * self.rate)

    # ----------------------------------------------------------------- inputs
    def on_ph(self, stamp: float, ph: float, noise_sd: float | None = None) -> None:
        """A pH reading (`noise_sd`: the meter's stated noise, pH). Bad readings raise ReadingError (the
        node reports it; nothing moves on it)."""
        self.pacing.settle.add(stamp, ph)
        self.frozen.add(stamp, ph, noise_sd)
        self.pacing.on_ph(stamp, ph)

    def on_drop(self, stamp: float) -> None:
        """A drop landed (heard by the audio supervisor or seen by the twin's ground truth)."""
        self.unbidden.on_drop(stamp, self.ledger.primed)
        self.ledger.on_drop()
        self.frozen.on_drop(stamp)
        self._resume_requested = False  # a resume meant the previous drop's pH had settled
        if self.state == State.MOTION:
            self._drop_pending_settle = self.pacing.on_drop_in_motion(self.command) or self._drop_pending_settle

    def request_resume(self) -> None:
        """The supervisor's command to leave WAIT."""
        self._resume_requested = True

    def hold(self, reason: str) -> None:
        """The supervisor's hold (a missing labware item, a deafened microphone ...): no squeezing until
        every reason is released."""
        self.holds.add(reason)

    def release(self, reason: str) -> None:
        if reason in self.holds:
            self.holds.discard(reason)
            # The meter gets its full timeout again from the release: a held probe that was away comes
            # back with the release, and its next reading may be a fraction of a second behind it.
            self._release_pending = not self.holds

    def cancel(self) -> None:
        self._cancel = True

    # ----------------------------------------------------------------- step
    def update(self, now: float, measured_opening_mm: float) -> Output:
        out = Output(command_opening_mm=self.command, state=self.state)
        if self.state == State.DONE:
            out.done = self.result
            return out
        dt = max(0.0, now - self._last_update)
        self._last_update = now
        if self._release_pending:
            self._release_pending, self.released_at = False, now
        out.estimates += self.ledger.account(now, measured_opening_mm, self.state, self.faults.stall_since is not None)
        self.pacing.advance(now)

        if self._cancel:
            return self._finish(out, now, False, "canceled", "canceled by the supervisor")

        anomaly = self.faults.detect(self, now, measured_opening_mm)
        out.anomalies += self.unbidden.take_notes()
        self.pacing.first_anchor()
        if self.state != State.RESET and self._goal_reached():
            return self._finish(out, now, True, "target_volume",
                                f"dispensed {self.q_stat:.4f} mL (target {self.goal.target_volume_ml:.4f} mL)",
                                "goal_reached")
        step = {State.MOTION: self._in_motion, State.WAIT: self._in_wait, State.RESET: self._in_reset}[self.state]
        if step(out, now, measured_opening_mm, anomaly, dt):
            return out
        out.command_opening_mm = self.command
        out.state = self.state
        self.unbidden.record_command(now, self.command)
        return out

    def _in_motion(self, out: Output, now: float, measured: float, anomaly, dt: float) -> bool:
        """MOTION: hold, reset, stop, or squeeze on. True when the goal ended here."""
        c = self.config
        if anomaly:
            self._enter_reset(out, now, anomaly)
        elif self.holds:
            self._go(out, "hold_command", now)
        elif self.pacing.hold_for_change():
            self._go(out, "change_rate_high", now)
        elif self._drop_pending_settle:
            condition, self._drop_pending_settle = self._drop_pending_settle, None
            self._go(out, condition, now)
        else:
            rate = self.rate
            if self.pacing.near_target() and self.pacing.planned_increment(self.command) == 1:
                rate = c.fine_rate_mm_s
            step = min(dt, c.control_period_s)
            floor = c.min_opening_mm
            if self.command > self.ledger.deepest_mm + c.resolution_mm:
                # Back to the high-water mark quickly (air only), then on at the dispensing rate.
                step *= max(rate, c.reapproach_rate_mm_s)
                floor = self.ledger.deepest_mm
            else:
                step *= rate
            # a command set elsewhere (RESET, the safe opening) restarts the carried fraction
            exact = (self._exact_command if abs(self._exact_command - self.command) <= c.resolution_mm / 2
                     else self.command)
            stop = self.pacing.increment_stop()
            self._exact_command = max(floor, exact - step, stop if stop is not None else -math.inf)
            r = c.resolution_mm
            self.command = round(round(self._exact_command / r) * r, 6)   # the gripper's resolution
            if stop is not None and self._exact_command <= stop + 1e-9:
                self._go(out, "near_target_drop", now)
        return False

    def _in_wait(self, out: Output, now: float, measured: float, anomaly, dt: float) -> bool:
        """WAIT: until held no more, resumed, clear ahead or settled. True when the goal ended here."""
        if anomaly:
            self._enter_reset(out, now, anomaly)
        elif self.holds:
            # Held: neither settling nor a resume moves the gripper, and the settle timeout counts
            # from the release (a long hold is not a pH that will not settle).
            self._wait_since = now
        elif self._wait_reason == "hold_command":
            self._go(out, "released", now)
        elif self._resume_requested:
            self._resume_requested = False
            self._go(out, "resume_command", now)
        elif self.pacing.clear_ahead(now, self._wait_reason, self._wait_since):
            self._go(out, "predicted_clear", now)
        elif self.pacing.settled(now, self._wait_since) and not self.pacing.paced_by_supervisor(now):
            self.pacing.settled_hold(self._wait_reason)
            self._go(out, "settled", now)
        elif now - (self._wait_since or now) > self.config.settle_timeout_s:
            a = ControllerAnomaly(now, "settle_timeout",
                                  f"pH did not settle within {self.config.settle_timeout_s:.0f} s")
            self._enter_reset(out, now, a)
        return False

    def _in_reset(self, out: Output, now: float, measured: float, anomaly, dt: float) -> bool:
        """RESET: retract, then resume once the cause is gone, or give up. True when the goal ended here (or
        holds open this update)."""
        c, why = self.config, self._reset_reason
        retracted = abs(measured - c.safe_opening_mm) <= c.stall_tolerance_mm
        if not retracted and now - self._reset_since > c.retract_timeout_s:
            self._finish(out, now, False, "anomaly",
                         f"{why.description}; the gripper did not retract to {c.safe_opening_mm:.1f} mm within "
                         f"{c.retract_timeout_s:.0f} s (at {measured:.3f} mm)", "retract_timeout")
            return True
        if not retracted:
            return False
        if why.kind == "sensor_timeout":  # a silent meter must report again: resuming into silence resets again
            stamp = self.pacing.last_ph_stamp
            cleared = stamp is not None and stamp > self._reset_since
        elif why.kind == "ph_stuck":
            cleared = not self.frozen.frozen  # the reading moved again
        else:
            cleared = True  # the others clear by retracting
        if (self.resets > c.max_resets or why.kind in GIVE_UP_KINDS
                or (not cleared and now - self._reset_since > c.recovery_timeout_s)):
            message = why.description
            if not cleared:
                message += f"; it did not clear within {c.recovery_timeout_s:.0f} s"
            self._finish(out, now, False, "timeout" if why.kind == "operation_timeout" else "anomaly", message,
                         "retracted_give_up")
            return True
        if not cleared:
            out.command_opening_mm = self.command
            out.state = self.state
            return True  # hold open until the cause clears (or recovery_timeout_s passes)
        if why.kind in ("sensor_timeout", "ph_stuck"):
            # Its cause is seen to be over (the meter reports / its reading moves again): say so,
            # so the record shows the anomaly resolved and not left open.
            what = "reports again" if why.kind == "sensor_timeout" else "moves again"
            out.anomalies.append(ControllerAnomaly(now, why.kind, f"the pH reading {what}: dispensing resumes",
                                                   "info", response="resume", resolved=True))
        # Squeeze again from the safe opening: the released bulb has refilled with air.
        self._go(out, "retracted_resume", now)
        self.ledger.since_drop_mm = 0.0
        self.unbidden.reset(pending=False)  # the pendant formed before the RESET may fall early
        self.faults.stall_since = None
        return False

    # ----------------------------------------------------------------- transitions
    def _goal_reached(self) -> bool:
        """The goal's own end: its volume target (a hard cap). A pH target is never the dispenser's to
        judge: the supervisor decides the endpoint (target reached, then stable over its hold), holds the
        dispenser while it confirms it, and cancels the goal (agentchemist.fsm.supervision)."""
        g = self.goal
        # on what has landed (the pendant at the tip stays there once the squeeze stops): the nearest drop
        landed = self.ledger.landed_ml()
        return g.target_volume_ml > 0 and landed >= g.target_volume_ml - 0.5 * self.config.drop_volume_ml

    def _enter_reset(self, out: Output, now: float, anomaly: ControllerAnomaly) -> None:
        self.resets += 1
        # Drops around a RESET (a pendant shaken off while the jaws open) are not judged as unbidden.
        self.unbidden.reset(pending=True)
        if not anomaly.response:  # what this RESET leads to, as far as it is known now
            gives_up = anomaly.kind in GIVE_UP_KINDS or self.resets > self.config.max_resets
            anomaly = dataclasses.replace(anomaly, response="abort" if gives_up else "retry")
        self._reset_reason = anomaly
        out.estimates += self.ledger.flush(now, self.state, self.faults.stall_since is not None)
        out.anomalies.append(anomaly)
        self._go(out, "anomaly", now)
        self._reset_since = now
        self.command = self.config.safe_opening_mm

    def _go(self, out: Output, condition: str, now: float) -> None:
        """Take the table's transition for `condition` from the current state (TransitionError: none)."""
        target = next_state(self.state, condition)
        out.transitions.append((self.state, condition, target))
        if target == State.DONE:
            return  # the stop itself is _finish's
        self.faults.new_state()
        self.pacing.new_state()
        self.state = target
        self._wait_since = now if target == State.WAIT else None
        self._wait_reason = condition if target == State.WAIT else ""
        out.state = target

    def _finish(self, out: Output, now: float, success: bool, reason: str, message: str,
                condition: str | None = None) -> Output:
        """The goal stops (`condition`: the table's transition to DONE that stops it; none for a cancel)."""
        if condition is not None:
            self._go(out, condition, now)
        out.estimates += self.ledger.flush(now, self.state, self.faults.stall_since is not None)
        self.state = State.DONE
        last_ph = self.pacing.last_ph
        self.result = StopResult(success, reason, self.q_stat, self.drops,
                                 last_ph if last_ph is not None else float("nan"), message)
        out.state = State.DONE
        out.command_opening_mm = self.command
        out.done = self.result
        return out

    # ----------------------------------------------------------------- kept for the tests' probes
    def _whole_drops(self, drops: float) -> int:
        return self.pacing.whole_drops(drops)

    def _change_rate_high(self) -> bool:
        return self.pacing.change_rate_high()
