"""The dispenser controller: the paper's statistics-based chemical quantity logger.

The gripper squeezes a rubber-bulb pipette; every millimetre of closing expels k mL (offline linear
calibration, no flow meter). The controller is a three-state machine, MOTION / WAIT / RESET, with an
explicit transition table (`TRANSITIONS`); it takes the *measured* gripper opening, pH readings and drop
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
the goal (the supervisor decides it once per experiment).

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
"""
from __future__ import annotations

import dataclasses
import math
from collections import deque

from agentchemist.control.approach import CurveTracker, JumpWatch
from agentchemist.control.dispenser_types import (ControllerAnomaly, DispenseGoal, DispenserConfig, Estimate,
                                                  GoalError, Output, State, StopResult)
from agentchemist.perception.frozen_reading import FrozenReadingDetector
from agentchemist.perception.ph_stability import PhStabilityDetector, StabilityConfig

# A RESET for these ends the goal once the gripper is retracted: an empty pipette has nothing to retry
# with, and a goal past its time has no time left.
GIVE_UP_KINDS = ("pipette_empty", "operation_timeout")

__all__ = ["TRANSITIONS", "ControllerAnomaly", "DispenseGoal", "DispenserConfig", "DispenserController",
           "Estimate", "GoalError", "Output", "State", "StopResult"]

#: (state, condition) -> (next state, action). The controller's `update` evaluates the conditions
#: of the current state in this order; tests walk every row.
TRANSITIONS: tuple[tuple[State, str, State, str], ...] = (
    (State.MOTION, "goal_reached", State.DONE, "hold; report success"),
    (State.MOTION, "anomaly", State.RESET, "retract to the safe opening; report the anomaly"),
    (State.MOTION, "change_rate_high", State.WAIT, "hold position"),
    (State.MOTION, "drop_landed_settle", State.WAIT, "hold position until the pH settles"),
    (State.MOTION, "near_target_drop", State.WAIT, "fine mode: one drop (or a planned increment), then settle"),
    (State.MOTION, "hold_command", State.WAIT, "hold position until the supervisor releases every hold"),
    (State.WAIT, "goal_reached", State.DONE, "hold; report success"),
    (State.WAIT, "anomaly", State.RESET, "retract to the safe opening; report the anomaly"),
    (State.WAIT, "settled", State.MOTION, "resume closing"),
    (State.WAIT, "predicted_clear", State.MOTION,
     "resume before the reading settles: what is squeezed reaches neither the target nor the next jump"),
    (State.WAIT, "resume_command", State.MOTION, "resume closing"),
    (State.WAIT, "released", State.MOTION, "the hold that interrupted MOTION is released: resume closing"),
    (State.RESET, "retracted_resume", State.MOTION, "squeeze again from the safe opening"),
    (State.RESET, "retracted_give_up", State.DONE, "hold open; report failure"),
    (State.RESET, "retract_timeout", State.DONE, "hold; report that the gripper never reached the safe opening"),
)


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
        self.change_threshold = goal.change_rate_threshold or config.change_rate_threshold
        settle = config.settle
        if goal.stable_window_s:
            longest = settle.max_window_s and max(settle.max_window_s, goal.stable_window_s)  # 0: 4 x window
            settle = dataclasses.replace(settle, window_s=goal.stable_window_s, max_window_s=longest)
        self._settle = PhStabilityDetector(settle)
        self.timeout = goal.timeout_s or config.operation_timeout_s
        self.started = now
        self.command = start_opening_mm
        # The squeeze before rounding to the gripper's resolution: each update moves this, and the command is
        # its rounding, so the fraction of a step carries over (rounding each step instead ran 0.25 mm/s at
        # 0.26 and 0.0625 at 0.06, and an update soon after a tick lost its sub-resolution step altogether).
        self._exact_command = start_opening_mm
        self.deepest_mm = start_opening_mm   #: the bulb's high-water mark as this goal knows it
        self._reset_since: float | None = None
        self._last_update = now
        self.q_stat = 0.0
        self._next_report = config.drop_volume_ml
        self._reported = 0.0             #: Q_stat carried by the estimates emitted so far
        self._anchor: tuple[float, float] | None = None   #: (Q_stat, settled pH) of the last settled hold
        self.sensitivity_ph_per_ml = math.nan  #: |dpH/dQ| between the last two anchors
        self._sensitivity_bound = math.nan     #: the same with the settle band added: an upper bound
        self._sensitivity_before = math.nan    #: the secant before that one
        self.drops = 0
        self._disp_since_drop = 0.0
        self.primed = False
        self.dead_travel_mm = 0.0
        self._drop_pending_settle: str | None = None
        self._increment: int | None = None   #: drops to dose before the next hold (near the target)
        self._increment_count = 0
        self._increment_from = start_opening_mm   #: where the current increment's squeeze began (mm)
        self._last_ph: float | None = None
        self._last_ph_stamp: float | None = None
        self._ph_history: list[tuple[float, float]] = []
        self._wait_since: float | None = None
        self._stall_since: float | None = None
        self.resets = 0
        self._reset_reason: ControllerAnomaly | None = None
        self._resume_requested = False
        self._wait_reason = ""
        self._self_settled_at: float | None = None
        self._cancel = False
        self.result: StopResult | None = None
        self._frozen = FrozenReadingDetector(config.frozen)
        self.holds: set[str] = set()     #: the supervisor's reasons to hold (see `hold`)
        self._notes: list[ControllerAnomaly] = []  #: anomalies to report that need no RESET
        self._early_check = False        #: the next drop's squeeze can be judged (see on_drop)
        self._release_pending = False    #: the last hold was released since the last update
        self._released_at = -math.inf
        self._follow: deque[tuple[float, float, float]] = deque()  #: (t, command, measured) in this MOTION
        self._commands: deque[tuple[float, float]] = deque([(now, start_opening_mm)])  #: (t, command) history
        self._last_drop_stamp: float | None = None
        self._to_judge: list[tuple[float, float]] = []  #: (previous drop, drop) onsets not yet judged
        self._curve = CurveTracker(config.reading_lags_s, goal.ph_direction, 0.0, now)  #: see _ahead_ml
        self._settled_since: float | None = None   #: when this WAIT's settle test first passed
        self._ramp_stop: tuple[float, float] | None = None  #: (pH, pH/s) when a change-rate hold began
        # fits with up to 3 drops in flight place the peak: those at the end of a hold near a jump
        self._jump = JumpWatch(config.lead_drops * config.drop_volume_ml, 3.0 * config.drop_volume_ml)

    # ----------------------------------------------------------------- inputs
    def on_ph(self, stamp: float, ph: float, noise_sd: float | None = None) -> None:
        """A pH reading (`noise_sd`: the meter's stated noise, pH). Bad readings raise ReadingError (the
        node reports it; nothing moves on it)."""
        self._settle.add(stamp, ph)
        self._frozen.add(stamp, ph, noise_sd)
        self._last_ph, self._last_ph_stamp = ph, stamp
        self._curve.add(stamp, ph, self.q_stat)
        self._ph_history.append((stamp, ph))
        if len(self._ph_history) > 64:
            del self._ph_history[:32]

    def on_drop(self, stamp: float) -> None:
        """A drop landed (heard by the audio supervisor or seen by the twin's ground truth)."""
        self.drops += 1
        back = self.config.drop_fall_s + self.config.gripper_lag_s
        if (self._early_check and self._last_drop_stamp is not None and stamp >= self._last_drop_stamp
                and self._last_drop_stamp - back >= self.started):
            # judged once the command history covers the moment it left the tip (see _judge_drops)
            self._to_judge.append((self._last_drop_stamp, stamp))
        # The first drop of a goal or after a RESET comes from a pendant formed before: not judged.
        self._early_check = self.primed
        # keep the history the judgements still need: from the earliest onset a pending one looks at
        keep_from = min([b for b, _ in self._to_judge] + [stamp]) - back - 0.5
        self._last_drop_stamp = stamp
        while len(self._commands) > 2 and self._commands[1][0] <= keep_from:
            self._commands.popleft()
        self._disp_since_drop = 0.0
        self._frozen.on_drop(stamp)
        self._resume_requested = False  # a resume meant the previous drop's pH had settled
        if not self.primed:
            self.primed = True
            # Counted from this report on: what was squeezed while it was on the way is left out, as much as
            # hangs at the tip when a later drop's report stops the squeeze, so at a hold Q_stat is what
            # landed whatever the audio's latency (counting from when the drop left the tip biased every
            # equivalence volume in the library by +0.4 drop: the pendant at each settled reading).
            self.q_stat = self.config.drop_volume_ml
        if self.state == State.MOTION:
            if self.goal.settle_each_drop:
                self._drop_pending_settle = "drop_landed_settle"
            elif self._near_target():
                self._increment_count += 1
                if self._increment_count >= self._planned_increment():
                    self._drop_pending_settle = "near_target_drop"

    def _landed_ml(self) -> float:
        """Q_stat less what was squeezed since the last drop was heard (the next pendant): what landed, by the
        squeeze each heard drop took."""
        if not self.primed:
            return 0.0
        return max(0.0, self.q_stat - self.config.k_ml_per_mm * self._disp_since_drop)

    def _last_move_before(self, t: float) -> float:
        """When the command last changed at or before t (the goal's start if it never did)."""
        last = self.started
        hist = self._commands
        for (t0, c0), (t1, c1) in zip(hist, list(hist)[1:]):
            if t1 > t:
                break
            if c1 != c0:
                last = t1
        return last

    def _judge_drops(self) -> None:
        """Was each pending drop squeezed out (see the module docstring, unbidden drops)?"""
        c = self.config
        back = c.drop_fall_s + c.gripper_lag_s
        known = self._commands[-1][0]
        while self._to_judge and self._to_judge[0][1] - back <= known:
            before, stamp = self._to_judge.pop(0)
            share = (self._command_at(before - back) - self._command_at(stamp - back)) / c.drop_displacement_mm
            still = stamp - c.drop_fall_s - self._last_move_before(stamp - c.drop_fall_s)
            why = ""
            if share < c.early_drop_fraction:
                why = f"after only {share:.2f} of a drop's squeeze since the previous one"
            elif still >= c.still_drop_s:
                why = f"{still:.2f} s after the gripper stopped squeezing"
            if why:
                self._notes.append(ControllerAnomaly(
                    stamp, "unexpected_drop", f"a drop fell {why}: it was not squeezed out (a drop leaking "
                    f"from the tip); counted in the volume", "warn", "adjustment"))

    def _command_at(self, t: float) -> float:
        """The commanded opening at time t (mm), linear between control updates."""
        hist = self._commands
        if t <= hist[0][0]:
            return hist[0][1]
        for (t0, c0), (t1, c1) in zip(hist, list(hist)[1:]):
            if t <= t1:
                return c0 + (c1 - c0) * (t - t0) / (t1 - t0) if t1 > t0 else c1
        return hist[-1][1]

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

    @property
    def ph_frozen(self) -> bool:
        return self._frozen.frozen

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
            self._release_pending, self._released_at = False, now
        self._account_displacement(now, measured_opening_mm, out)
        self._curve.advance(now, self.q_stat)

        if self._cancel:
            return self._finish(out, now, False, "canceled", "canceled by the supervisor")

        anomaly = self._detect_anomaly(now, measured_opening_mm)
        if self._notes:
            out.anomalies += self._notes
            self._notes = []
        if self._anchor is None and self._last_ph is not None and self._settle.is_stable():
            self._anchor = (self.q_stat, self._settle.level())  # the pH before (or barely after) the first drops
        if self.state == State.MOTION:
            if self._goal_reached():
                return self._finish_goal(out, now)
            if anomaly:
                self._enter_reset(out, now, anomaly, "anomaly")
            elif self.holds:
                self._go(out, State.WAIT, "hold_command", now)
            elif self._hold_for_change():
                self._ramp_stop = (self._settle.mean(), self._settle.slope())
                self._go(out, State.WAIT, "change_rate_high", now)
            elif self._drop_pending_settle:
                condition, self._drop_pending_settle = self._drop_pending_settle, None
                self._go(out, State.WAIT, condition, now)
            else:
                rate = self.rate
                if self._near_target() and self._planned_increment() == 1:
                    rate = self.config.fine_rate_mm_s
                step = min(dt, self.config.control_period_s)
                floor = self.config.min_opening_mm
                if self.command > self.deepest_mm + self.config.resolution_mm:
                    # Back to the high-water mark quickly (air only), then on at the dispensing rate.
                    step *= max(rate, self.config.reapproach_rate_mm_s)
                    floor = self.deepest_mm
                else:
                    step *= rate
                # a command set elsewhere (RESET, the safe opening) restarts the carried fraction
                exact = (self._exact_command if abs(self._exact_command - self.command) <= self.config.resolution_mm / 2
                         else self.command)
                stop = self._increment_stop()
                self._exact_command = max(floor, exact - step, stop if stop is not None else -math.inf)
                self.command = self._quantise(self._exact_command)
                if stop is not None and self._exact_command <= stop + 1e-9:
                    self._go(out, State.WAIT, "near_target_drop", now)
        elif self.state == State.WAIT:
            if self._goal_reached():
                return self._finish_goal(out, now)
            if anomaly:
                self._enter_reset(out, now, anomaly, "anomaly")
            elif self.holds:
                # Held: neither settling nor a resume moves the gripper, and the settle timeout counts
                # from the release (a long hold is not a pH that will not settle).
                self._wait_since = now
            elif self._wait_reason == "hold_command":
                self._go(out, State.MOTION, "released", now)
            elif self._resume_requested:
                self._resume_requested = False
                self._go(out, State.MOTION, "resume_command", now)
            elif self._clear_ahead(now):
                self._go(out, State.MOTION, "predicted_clear", now)
            elif self._settled(now) and not self._paced_by_supervisor(now):
                self._update_sensitivity()
                if self._wait_reason == "change_rate_high" and self._ramp_stop is not None:
                    # a squeeze stopped on a moving reading, now settled: the rise since over the slope then
                    # measures the reading's lag (approach.CurveTracker.observe_settle)
                    d = self.goal.ph_direction
                    self._curve.observe_settle(d * (self._settle.level() - self._ramp_stop[0]), d * self._ramp_stop[1])
                self._go(out, State.MOTION, "settled", now)
            elif now - (self._wait_since or now) > self.config.settle_timeout_s:
                a = ControllerAnomaly(now, "settle_timeout",
                                      f"pH did not settle within {self.config.settle_timeout_s:.0f} s")
                self._enter_reset(out, now, a, "anomaly")
        elif self.state == State.RESET:
            retracted = abs(measured_opening_mm - self.config.safe_opening_mm) <= self.config.stall_tolerance_mm
            if not retracted and now - self._reset_since > self.config.retract_timeout_s:
                out.transitions.append((State.RESET, "retract_timeout", State.DONE))
                return self._finish(out, now, False, "anomaly",
                                    f"{self._reset_reason.description}; the gripper did not retract to "
                                    f"{self.config.safe_opening_mm:.1f} mm within "
                                    f"{self.config.retract_timeout_s:.0f} s "
                                    f"(at {measured_opening_mm:.3f} mm)")
            if retracted:
                cleared = self._cause_cleared()
                if (self.resets > self.config.max_resets
                        or self._reset_reason.kind in GIVE_UP_KINDS
                        or (not cleared and now - self._reset_since > self.config.recovery_timeout_s)):
                    out.transitions.append((State.RESET, "retracted_give_up", State.DONE))
                    reason = "timeout" if self._reset_reason.kind == "operation_timeout" else "anomaly"
                    message = self._reset_reason.description
                    if not cleared:
                        message += f"; it did not clear within {self.config.recovery_timeout_s:.0f} s"
                    return self._finish(out, now, False, reason, message)
                if not cleared:
                    out.command_opening_mm = self.command
                    out.state = self.state
                    return out  # hold open until the cause clears (or recovery_timeout_s passes)
                if self._reset_reason.kind in ("sensor_timeout", "ph_stuck"):
                    # Its cause is seen to be over (the meter reports / its reading moves again): say so,
                    # so the record shows the anomaly resolved and not left open.
                    what = "reports again" if self._reset_reason.kind == "sensor_timeout" else "moves again"
                    out.anomalies.append(ControllerAnomaly(now, self._reset_reason.kind,
                                                           f"the pH reading {what}: dispensing resumes", "info",
                                                           response="resume", resolved=True))
                # Squeeze again from the safe opening: the released bulb has refilled with air.
                self._go(out, State.MOTION, "retracted_resume", now)
                self._disp_since_drop = 0.0
                self._early_check = False  # the pendant formed before the RESET may fall early
                self._stall_since = None
        out.command_opening_mm = self.command
        out.state = self.state
        self._record_command(now)
        return out

    # ----------------------------------------------------------------- internals
    def _record_command(self, now: float) -> None:
        if now > self._commands[-1][0]:
            self._commands.append((now, self.command))
            if len(self._commands) > 20000:  # no drop for a long time: nothing to judge that far back
                self._commands.popleft()
        if self._to_judge:
            self._judge_drops()
    def _account_displacement(self, now: float, measured: float, out: Output) -> None:
        if not math.isfinite(measured):
            return
        dd = self.deepest_mm - measured
        if dd > 0:
            # Only closing past the high-water mark squeezes liquid out; opening lets air back into the
            # bulb, and closing again first pushes that air out. (Counted in any state: liquid that left
            # while the gripper caught up with a hold is still dispensed.)
            self.deepest_mm = measured
            if self.primed:
                self.q_stat += self.config.k_ml_per_mm * dd
            else:
                self.dead_travel_mm += dd
            self._disp_since_drop += dd
        # One statistical estimate each time Q_stat crosses another drop volume keeps the channel in step
        # with the audio channel's per-drop estimates.
        if self.q_stat >= self._next_report - 1e-12:
            dv = self.config.drop_volume_ml
            self._next_report = (math.floor(self.q_stat / dv + 1e-9) + 1) * dv
            out.estimates.append(Estimate(now, self.q_stat, self.q_stat - self._reported, self.confidence(),
                                          self.state.value))
            self._reported = self.q_stat

    def _cause_cleared(self) -> bool:
        """Whether the anomaly behind the current RESET is gone: a silent pH meter must report again
        (resuming into the same silence would only reset again); the others clear by retracting."""
        if self._reset_reason is not None and self._reset_reason.kind == "sensor_timeout":
            return self._last_ph_stamp is not None and self._last_ph_stamp > self._reset_since
        if self._reset_reason is not None and self._reset_reason.kind == "ph_stuck":
            return not self._frozen.frozen  # the reading moved again
        return True

    def _flush_estimate(self, out: Output, now: float) -> None:
        """The remainder of Q_stat since the last estimate, when the controller holds for good or resets."""
        if self.q_stat > self._reported + 1e-9:
            out.estimates.append(Estimate(now, self.q_stat, self.q_stat - self._reported, self.confidence(),
                                          self.state.value))
            self._reported = self.q_stat

    def confidence(self) -> float:
        """Confidence of Q_stat: calibration residual relative to a drop, discounted by execution state."""
        c = self.config
        calib = max(0.0, 1.0 - c.calibration_residual_ml / c.drop_volume_ml)
        state_factor = {State.MOTION: 1.0, State.WAIT: 1.0, State.RESET: 0.3, State.DONE: 1.0}[self.state]
        stall_factor = 0.5 if self._stall_since is not None else 1.0
        return max(0.0, min(1.0, calib * state_factor * stall_factor))

    def _paced_by_supervisor(self, now: float) -> bool:
        """With resume_on_command every WAIT ends on the supervisor's resume (it records each drop's
        settled pH and must see it before the next drop). Should that resume not come although the pH has
        settled here for `resume_grace_s` (a report lost on the way), the controller goes on by itself
        rather than wait for the settle timeout."""
        if not (self.goal.settle_each_drop and self.goal.resume_on_command):
            return False
        if self._self_settled_at is None:
            self._self_settled_at = now
        return now - self._self_settled_at < self.config.resume_grace_s

    def _settled(self, now: float) -> bool:
        """pH settled when a pH stream exists (over a window that starts `settle_delay_s` after the hold
        at the earliest); otherwise the hanging drop had time to fall."""
        held = now - (self._wait_since if self._wait_since is not None else now)
        if self._last_ph is not None:
            settled = held >= self.config.settle_delay_s + self._settle.config.window_s and self._settle.is_stable()
            if not settled:
                self._settled_since = None
                return False
            if self._settled_since is None or self._settled_since < (self._wait_since or now):
                self._settled_since = now
            return not self._at_the_edge() or now - self._settled_since >= self.config.edge_settle_s
        return held >= self.config.drop_pause_s

    def _at_the_edge(self) -> bool:
        """With prediction, a reading settled within `clear_margin_ph` short of the target: its tail may
        still carry it over the target. The endpoint judge's window (2 s) and slope test are stricter than
        the settle test here, so the controller holds `edge_settle_s` longer for it: a drop that just
        crossed is confirmed there, not followed by another (a held-out run did that with the reading
        0.01-0.02 pH under the target after this settle test passed)."""
        g = self.goal
        if not (self.config.predictive and g.target_ph is not None and not g.settle_each_drop):
            return False
        return g.ph_direction * (g.target_ph - self._settle.level()) < self.config.clear_margin_ph

    def _update_sensitivity(self) -> None:
        """A settled hold is an anchor (Q_stat, pH); the secant to the previous one is the curve's slope."""
        if self._last_ph is None:
            return
        here = (self.q_stat, self._settle.level())  # the settled window's mean: one noisy reading does not decide
        if self._anchor is not None:
            dq = here[0] - self._anchor[0]
            if dq < 0.5 * self.config.drop_volume_ml:
                return  # too little dispensed since the last anchor to measure a slope
            self._sensitivity_before = self.sensitivity_ph_per_ml
            self.sensitivity_ph_per_ml = abs(here[1] - self._anchor[1]) / dq
            # A settled reading is known to within the settle band: increments are planned on the
            # steepest slope the two anchors allow, so that noise never makes them too large.
            self._sensitivity_bound = (abs(here[1] - self._anchor[1]) + self._settle.config.max_spread) / dq
        self._anchor = here

    def _near_target(self) -> bool:
        g, c = self.goal, self.config
        if g.target_ph is not None and self._last_ph is not None:
            if g.ph_direction * (g.target_ph - self._last_ph) <= c.near_target_ph:
                return True
            if self._steep_ahead():
                return True  # the next drop may cross the target
        if g.target_volume_ml > 0 and g.target_volume_ml - self.q_stat <= c.near_target_ml:
            return True
        return False

    def _ahead_ml(self) -> tuple[float, float] | None:
        """(volume to the next equivalence jump, volume to the target) from the Q_stat squeezed so far (mL),
        as the readings traced against the squeeze through the reading's lags show them
        (agentchemist.control.approach): the jump by the log law's lower bound (set aside across a gentle
        inflection, approach.JumpWatch), the target on the local
        slope (its upper bound: the nearest the target can be on a line; a concave approach only lies
        further). None without a pH target, when every drop settles anyway (settle_each_drop: the graph's
        per-drop record, where there is no squeeze to plan) or while the readings span too little."""
        c, g = self.config, self.goal
        if not c.predictive or g.target_ph is None or g.settle_each_drop:
            return None
        fit = self._curve.fit(c.fit_span_drops * c.drop_volume_ml)
        if fit is None:
            return None
        flight = max(0.0, self.q_stat - fit.end_ml)   # squeezed, not yet in the reading
        steepest = fit.slope + 2.0 * fit.slope_se
        distance = g.ph_direction * (g.target_ph - fit.level)
        to_target = distance / steepest - flight if steepest > 0 else math.inf
        return self._jump.to_jump(fit, flight), to_target

    def _hold_for_change(self) -> bool:
        """MOTION holds on a fast-moving reading (the paper: no action while the pH changes). With
        prediction, far from the target only where the curve says the target or the next jump may be
        within reach of what is already squeezed: elsewhere a fast change is just the curve, which the
        lag model already accounts for (a hold there would cost a settle, 5-10 s, and tell nothing new)."""
        fast = self._change_rate_high()
        ahead = self._ahead_ml()
        if ahead is None:
            return fast
        if self._near_target():
            # near: a fast change holds unless what is squeezed is already seen to be clear (the same test
            # that ends such a hold early, so that the two never alternate)
            return fast and not self._clear(ahead)
        return min(ahead) <= self.config.lead_drops * self.config.drop_volume_ml

    def _clear_ahead(self, now: float) -> bool:
        """A hold of the controller's own (a fast change, or after a planned increment near the target) may
        end before the reading settles, once the reading has caught up with the squeeze (the titrant in
        flight is under 0.3 drop, or under a quarter of the volume left: a lag model off by a third
        then moves the prediction by less than a tenth of it) and the curve says that what is squeezed
        reaches neither the target nor the next jump. A drop that crossed the target shows as a steep
        rise within the drop, so the volume left comes out below nothing and the hold goes on: the
        supervisor's endpoint judge sees it, as after a settle. (Settling to the settle test takes 5-10 s
        after a step; the reading is 70 % of the way after about 3.5 s.)"""
        c, g = self.config, self.goal
        if (not c.predictive or g.target_ph is None or g.settle_each_drop
                or self._wait_reason not in ("change_rate_high", "near_target_drop")
                or now - (self._wait_since if self._wait_since is not None else now) < c.settle_delay_s):
            return False
        ahead = self._ahead_ml()
        return ahead is not None and self._clear(ahead)

    def _clear(self, ahead: tuple[float, float]) -> bool:
        """... (at least half a drop of it short of the jump or the target) and the reading is at least
        `clear_margin_ph` short of the target: closer than that, a
        reading still creeping up may end within the judge's tolerance of the target, which only a settled
        reading shows (then the judge holds)."""
        c = self.config
        left = min(ahead)
        flight = self._curve.in_flight(self.q_stat)
        gap = self.goal.ph_direction * (self.goal.target_ph - self._last_ph)
        return (left >= 0.5 * c.drop_volume_ml and flight <= max(0.3 * c.drop_volume_ml, 0.25 * left)
                and gap >= c.clear_margin_ph)

    def _steep_ahead(self) -> bool:
        """One drop (or a planned increment) at a time: with prediction where the next jump or the target
        may be within `lead_drops`; without (or while it cannot tell), where the last secant is steep (`_steep`)."""
        ahead = self._ahead_ml()
        if ahead is None:
            return self._steep()
        return min(ahead) <= self.config.lead_drops * self.config.drop_volume_ml

    def _steep(self) -> bool:
        """A drop moves the pH by fine_ph_per_drop or more, and the curve is not past an inflection: even
        the steepest slope the last two anchors allow is below the secant before them (after a strong
        acid's equivalence jump the slope falls by 10x per drop; NaN compares False)."""
        c = self.config
        if not self.sensitivity_ph_per_ml * c.drop_volume_ml >= c.fine_ph_per_drop:
            return False
        return not self._sensitivity_bound < self._sensitivity_before

    def _planned_increment(self) -> int:
        """Drops to dose before the next hold while near the target; fixed for the current increment."""
        if self._increment is None:
            self._increment = self._increment_for_now()
            self._increment_from = min(self.command, self.deepest_mm)
        return self._increment

    def _increment_stop(self) -> float | None:
        """With prediction, an increment of several drops ends on the squeeze, not on the drops heard: at
        the top rate the hold after the n-th heard drop comes 0.1-0.3 s late (the audio chunks), by when
        up to 1.5 drops more are squeezed into the pendant; n drop volumes squeezed from where it began
        land n drops (whatever hung at the tip before stays there). The opening it stops at, or None."""
        c = self.config
        if self._increment is None or self._increment <= 1 or self._ahead_ml() is None:
            return None
        return self._increment_from - self._increment * c.drop_displacement_mm

    def _increment_for_now(self) -> int:
        g, c = self.goal, self.config
        ahead = self._ahead_ml()
        if ahead is None and c.predictive and g.target_ph is not None and not g.settle_each_drop:
            return 1  # predicting, but the readings do not span enough of the curve to plan: one drop
        if ahead is not None:
            # A fraction of the volume left to the next jump (the log law's lower bound: a larger share of
            # it, `jump_fraction`) or to the target (on the steepest slope the readings allow,
            # `approach_fraction`), whichever is less: the distance shrinks geometrically, and no increment
            # reaches either bound.
            planned = min(c.jump_fraction * ahead[0], c.approach_fraction * ahead[1])
            return self._whole_drops(planned / c.drop_volume_ml)
        if g.target_ph is None or self._last_ph is None or self._steep() or math.isnan(self.sensitivity_ph_per_ml):
            return 1  # no pH target, no slope measured yet, or steep: one drop at a time
        per_drop = self._sensitivity_bound * c.drop_volume_ml
        distance = g.ph_direction * (g.target_ph - self._last_ph)
        predicted = distance / per_drop
        return self._whole_drops(c.approach_fraction * predicted)

    def _whole_drops(self, drops: float) -> int:
        """An increment of `drops` as whole drops, 1 to max_increment_drops (neither bound in sight: an
        infinite distance, the most)."""
        if math.isnan(drops):
            return 1
        if math.isinf(drops):
            return self.config.max_increment_drops if drops > 0 else 1
        return int(min(max(math.floor(drops), 1), self.config.max_increment_drops))

    def _goal_reached(self) -> bool:
        """The goal's own end: its volume target (a hard cap). A pH target is never the dispenser's to
        judge: the supervisor decides the endpoint (target reached, then stable over its hold), holds the
        dispenser while it confirms it, and cancels the goal (agentchemist.fsm.supervision)."""
        g = self.goal
        # on what has landed (the pendant at the tip stays there once the squeeze stops): the nearest drop
        return g.target_volume_ml > 0 and self._landed_ml() >= g.target_volume_ml - 0.5 * self.config.drop_volume_ml

    def _change_rate_high(self) -> bool:
        # A slope through two or three noisy readings is mostly noise: judge only a filled window.
        window = self._settle.config
        if self._last_ph_stamp is None:
            return False
        recent = [ph for stamp, ph in self._ph_history if stamp >= self._last_ph_stamp - window.window_s]
        if len(recent) < window.min_samples:
            return False
        # A step shows first as one reading off the ones before it, a reading before the slope shows it.
        # Both thresholds grow with the probe's measured noise, so that an ageing electrode's scatter is
        # not taken for a change (jump: 5 sd of the difference; slope: its one-sided 95 % bound).
        noise = self._settle.noise_sd()
        jump = self.config.jump_threshold_ph
        if math.isfinite(noise):
            jump = max(jump, 5.0 * noise * math.sqrt(1.0 + 1.0 / (len(recent) - 1)))
        if abs(recent[-1] - sum(recent[:-1]) / (len(recent) - 1)) > jump:
            return True
        slope = self._settle.slope()
        margin = 0.0
        if math.isfinite(noise) and noise > window.noise_floor:
            t = [stamp for stamp, _ in self._ph_history if stamp >= self._last_ph_stamp - window.window_s]
            tc = [x - sum(t) / len(t) for x in t]
            stt = sum(x * x for x in tc)
            margin = window.confidence_z * noise / math.sqrt(stt) if stt > 0 else math.inf
        return math.isfinite(slope) and abs(slope) > self.change_threshold + margin

    def _detect_anomaly(self, now: float, measured: float) -> ControllerAnomaly | None:
        c = self.config
        if now - self.started > self.timeout:
            return ControllerAnomaly(now, "operation_timeout",
                                     f"dispensing ran longer than {self.timeout:.0f} s", "halt")
        if self.state == State.RESET:
            return None
        if self.goal.target_ph is not None and not self.holds:
            last = max(self._last_ph_stamp if self._last_ph_stamp is not None else self.started, self._released_at)
            if now - last > c.sensor_timeout_s:
                return ControllerAnomaly(now, "sensor_timeout",
                                         f"no pH reading for {now - last:.1f} s", "warn")
        if (self.goal.target_ph is not None or self.goal.settle_each_drop) and not self.holds and self._frozen.frozen:
            # Dispensing on a frozen reading would titrate blind (and call every drop settled).
            return ControllerAnomaly(now, "ph_stuck", self._frozen.describe(), "warn")
        if self.state == State.MOTION:
            if (self.command <= c.min_opening_mm + c.resolution_mm
                    and measured <= c.min_opening_mm + c.stall_tolerance_mm):
                return ControllerAnomaly(now, "pipette_empty",
                                         "the bulb is fully squeezed: the pipette is empty", "warn")
            allowed = c.no_drop_factor * c.drop_displacement_mm + (0.0 if self.primed else c.priming_allowance_mm)
            if self._disp_since_drop > allowed:
                return ControllerAnomaly(
                    now, "no_drop",
                    f"no drop after {self._disp_since_drop:.3f} mm of squeeze "
                    f"(expected one every {c.drop_displacement_mm:.3f} mm)", "warn")
        if abs(self.command - measured) > c.stall_tolerance_mm:
            if self._stall_since is None:
                self._stall_since = now
            elif now - self._stall_since > c.stall_time_s:
                return ControllerAnomaly(
                    now, "gripper_stall",
                    f"gripper at {measured:.3f} mm, commanded {self.command:.3f} mm for "
                    f"{now - self._stall_since:.1f} s", "warn")
        else:
            self._stall_since = None
        return self._not_following(now, measured) if self.state == State.MOTION else None

    def _not_following(self, now: float, measured: float) -> ControllerAnomaly | None:
        """A gripper that does not follow a slow squeeze at all: over stall_time_s of MOTION the command
        moved by stall_min_move_mm or more and the gripper by less than stall_follow_fraction of it."""
        c = self.config
        if not math.isfinite(measured):
            return None
        follow = self._follow
        follow.append((now, self.command, measured))
        while len(follow) > 1 and follow[1][0] <= now - c.stall_time_s:
            follow.popleft()
        t0, command0, measured0 = follow[0]
        if now - t0 < c.stall_time_s:
            return None
        commanded, moved = abs(command0 - self.command), abs(measured0 - measured)
        if commanded >= c.stall_min_move_mm and moved < c.stall_follow_fraction * commanded:
            return ControllerAnomaly(
                now, "gripper_stall",
                f"gripper at {measured:.3f} mm does not follow: commanded {commanded:.3f} mm in "
                f"{now - t0:.1f} s, moved {moved:.3f} mm", "warn")
        return None

    def _enter_reset(self, out: Output, now: float, anomaly: ControllerAnomaly, condition: str) -> None:
        self.resets += 1
        # Drops around a RESET (a pendant shaken off while the jaws open) are not judged as unbidden.
        self._early_check = False
        self._to_judge.clear()
        if not anomaly.response:  # what this RESET leads to, as far as it is known now
            gives_up = anomaly.kind in GIVE_UP_KINDS or self.resets > self.config.max_resets
            anomaly = dataclasses.replace(anomaly, response="abort" if gives_up else "retry")
        self._reset_reason = anomaly
        self._flush_estimate(out, now)
        out.anomalies.append(anomaly)
        self._go(out, State.RESET, condition, now)
        self._reset_since = now
        self.command = self.config.safe_opening_mm

    def _go(self, out: Output, target: State, condition: str, now: float) -> None:
        out.transitions.append((self.state, condition, target))
        self._follow.clear()  # the follow check looks at one MOTION at a time
        self._increment, self._increment_count = None, 0  # every hold ends an increment
        self.state = target
        self._wait_since = now if target == State.WAIT else None
        self._wait_reason = condition if target == State.WAIT else ""
        self._self_settled_at = None
        out.state = target

    def _finish_goal(self, out: Output, now: float) -> Output:
        g = self.goal
        msg = f"dispensed {self.q_stat:.4f} mL (target {g.target_volume_ml:.4f} mL)"
        out.transitions.append((self.state, "goal_reached", State.DONE))
        return self._finish(out, now, True, "target_volume", msg)

    def _finish(self, out: Output, now: float, success: bool, reason: str, message: str) -> Output:
        self._flush_estimate(out, now)
        self.state = State.DONE
        self.result = StopResult(success, reason, self.q_stat, self.drops,
                                 self._last_ph if self._last_ph is not None else float("nan"), message)
        out.state = State.DONE
        out.command_opening_mm = self.command
        out.done = self.result
        return out

    @property
    def reading_lag_s(self) -> float:
        """The reading's total lag (s) the prediction uses now: the prior, rescaled by settled holds."""
        return self._curve.total_lag_s

    @property
    def drop_interval_s(self) -> float:
        """Seconds between drops while squeezing at the goal's rate: what the audio supervisor expects."""
        return self.config.drop_volume_ml / (self.config.k_ml_per_mm * self.rate)

    def _quantise(self, opening_mm: float) -> float:
        r = self.config.resolution_mm
        return round(round(opening_mm / r) * r, 6)
