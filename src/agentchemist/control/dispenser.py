"""The dispenser controller: the paper's statistics-based chemical quantity logger.

The gripper squeezes a rubber-bulb pipette; every millimetre of closing expels k mL (offline linear
calibration, no flow meter). The controller is a three-state machine, MOTION / WAIT / RESET, with an
explicit transition table (`TRANSITIONS`); it takes the *measured* gripper opening, pH readings and drop
events, and returns the command to send. It never reads a clock: `now` is always an argument.

    Q_stat = sum over closing increments of k * dd      (from the measured opening)

Priming: a freshly drawn bulb has slack, and the tip must fill before anything falls, so the squeeze
before the first drop is dead travel. Q_stat starts at the first drop (counted as one calibrated drop)
and accumulates k * dd from there; until then the no-drop check allows `priming_allowance_mm`.

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

Statistical estimates: one each time Q_stat crosses another drop volume, each carrying the increment
since the previous estimate, and a last one for the remainder when the controller holds for a RESET or
stops; so the increments always add up to the Q_stat of the result (no estimate is lost).
"""
from __future__ import annotations

import math

from agentchemist.control.dispenser_types import (ControllerAnomaly, DispenseGoal, DispenserConfig, Estimate,
                                                  GoalError, Output, State, StopResult)
from agentchemist.perception.ph_stability import PhStabilityDetector, StabilityConfig

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
    (State.WAIT, "goal_reached", State.DONE, "hold; report success"),
    (State.WAIT, "anomaly", State.RESET, "retract to the safe opening; report the anomaly"),
    (State.WAIT, "settled", State.MOTION, "resume closing"),
    (State.WAIT, "resume_command", State.MOTION, "resume closing"),
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
            settle = StabilityConfig(window_s=goal.stable_window_s, max_slope=settle.max_slope,
                                     max_spread=settle.max_spread, min_samples=settle.min_samples)
        self._settle = PhStabilityDetector(settle)
        self.timeout = goal.timeout_s or config.operation_timeout_s
        self.started = now
        self.command = start_opening_mm
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

    # ----------------------------------------------------------------- inputs
    def on_ph(self, stamp: float, ph: float) -> None:
        """A pH reading. Bad readings raise ReadingError (the node reports it; nothing moves on it)."""
        self._settle.add(stamp, ph)
        self._last_ph, self._last_ph_stamp = ph, stamp
        self._ph_history.append((stamp, ph))
        if len(self._ph_history) > 64:
            del self._ph_history[:32]

    def on_drop(self, stamp: float) -> None:
        """A drop landed (heard by the audio supervisor or seen by the twin's ground truth)."""
        self.drops += 1
        self._disp_since_drop = 0.0
        self._resume_requested = False  # a resume meant the previous drop's pH had settled
        if not self.primed:
            self.primed = True
            self.q_stat = self.config.drop_volume_ml
        if self.state == State.MOTION:
            if self.goal.settle_each_drop:
                self._drop_pending_settle = "drop_landed_settle"
            elif self._near_target():
                self._increment_count += 1
                if self._increment_count >= self._planned_increment():
                    self._drop_pending_settle = "near_target_drop"

    def request_resume(self) -> None:
        """The supervisor's command to leave WAIT."""
        self._resume_requested = True

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
        self._account_displacement(now, measured_opening_mm, out)

        if self._cancel:
            return self._finish(out, now, False, "canceled", "canceled by the supervisor")

        anomaly = self._detect_anomaly(now, measured_opening_mm)
        if self._anchor is None and self._last_ph is not None and self._settle.is_stable():
            self._anchor = (self.q_stat, self._last_ph)  # the pH before (or barely after) the first drops
        if self.state == State.MOTION:
            if self._goal_reached():
                return self._finish_goal(out, now)
            if anomaly:
                self._enter_reset(out, now, anomaly, "anomaly")
            elif self._change_rate_high():
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
                self.command = self._quantise(max(floor, self.command - step))
        elif self.state == State.WAIT:
            if self._goal_reached():
                return self._finish_goal(out, now)
            if anomaly:
                self._enter_reset(out, now, anomaly, "anomaly")
            elif self._resume_requested:
                self._resume_requested = False
                self._go(out, State.MOTION, "resume_command", now)
            elif self._settled(now) and not self._paced_by_supervisor(now):
                self._update_sensitivity()
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
                        or self._reset_reason.kind in ("pipette_empty", "operation_timeout")
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
                # Squeeze again from the safe opening: the released bulb has refilled with air.
                self._go(out, State.MOTION, "retracted_resume", now)
                self._disp_since_drop = 0.0
                self._stall_since = None
        out.command_opening_mm = self.command
        out.state = self.state
        return out

    # ----------------------------------------------------------------- internals
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
            return held >= self.config.settle_delay_s + self._settle.config.window_s and self._settle.is_stable()
        return held >= self.config.drop_pause_s

    def _update_sensitivity(self) -> None:
        """A settled hold is an anchor (Q_stat, pH); the secant to the previous one is the curve's slope."""
        if self._last_ph is None:
            return
        here = (self.q_stat, self._last_ph)
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
            if self._steep():
                return True  # the next drop may cross the target
        if g.target_volume_ml > 0 and g.target_volume_ml - self.q_stat <= c.near_target_ml:
            return True
        return False

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
        return self._increment

    def _increment_for_now(self) -> int:
        g, c = self.goal, self.config
        if g.target_ph is None or self._last_ph is None or self._steep() or math.isnan(self.sensitivity_ph_per_ml):
            return 1  # no pH target, no slope measured yet, or steep: one drop at a time
        per_drop = self._sensitivity_bound * c.drop_volume_ml
        distance = g.ph_direction * (g.target_ph - self._last_ph)
        predicted = distance / per_drop
        return int(min(max(math.floor(c.approach_fraction * predicted), 1), c.max_increment_drops))

    def _goal_reached(self) -> bool:
        g = self.goal
        if g.target_volume_ml > 0 and self.q_stat >= g.target_volume_ml - 0.5 * self.config.drop_volume_ml:
            return True
        if g.target_ph is not None and self._last_ph is not None and self._settle.is_stable():
            # The window's mean, as the supervisor's endpoint detector judges it: one noisy reading
            # must not stop (or keep going) on its own.
            return g.ph_direction * (self._settle.mean() - g.target_ph) >= -self.config.target_tolerance_ph
        return False

    def _change_rate_high(self) -> bool:
        # A slope through two or three noisy readings is mostly noise: judge only a filled window.
        window = self._settle.config
        if self._last_ph_stamp is None:
            return False
        recent = [ph for stamp, ph in self._ph_history if stamp >= self._last_ph_stamp - window.window_s]
        if len(recent) < window.min_samples:
            return False
        # A step shows first as one reading off the ones before it, a reading before the slope shows it.
        if abs(recent[-1] - sum(recent[:-1]) / (len(recent) - 1)) > self.config.jump_threshold_ph:
            return True
        slope = self._settle.slope()
        return math.isfinite(slope) and abs(slope) > self.change_threshold

    def _detect_anomaly(self, now: float, measured: float) -> ControllerAnomaly | None:
        c = self.config
        if now - self.started > self.timeout:
            return ControllerAnomaly(now, "operation_timeout",
                                     f"dispensing ran longer than {self.timeout:.0f} s", "halt")
        if self.state == State.RESET:
            return None
        if self.goal.target_ph is not None:
            last = self._last_ph_stamp if self._last_ph_stamp is not None else self.started
            if now - last > c.sensor_timeout_s:
                return ControllerAnomaly(now, "sensor_timeout",
                                         f"no pH reading for {now - last:.1f} s", "warn")
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
        return None

    def _enter_reset(self, out: Output, now: float, anomaly: ControllerAnomaly, condition: str) -> None:
        self.resets += 1
        self._reset_reason = anomaly
        self._flush_estimate(out, now)
        out.anomalies.append(anomaly)
        self._go(out, State.RESET, condition, now)
        self._reset_since = now
        self.command = self.config.safe_opening_mm

    def _go(self, out: Output, target: State, condition: str, now: float) -> None:
        out.transitions.append((self.state, condition, target))
        self._increment, self._increment_count = None, 0  # every hold ends an increment
        self.state = target
        self._wait_since = now if target == State.WAIT else None
        self._wait_reason = condition if target == State.WAIT else ""
        self._self_settled_at = None
        out.state = target

    def _finish_goal(self, out: Output, now: float) -> Output:
        g = self.goal
        if g.target_volume_ml > 0 and self.q_stat >= g.target_volume_ml - 0.5 * self.config.drop_volume_ml:
            reason, msg = "target_volume", f"dispensed {self.q_stat:.4f} mL (target {g.target_volume_ml:.4f} mL)"
        else:
            reason, msg = "target_ph", f"pH {self._last_ph:.2f} reached the target {g.target_ph:.2f}"
        out.transitions.append((self.state, "goal_reached", State.DONE))
        return self._finish(out, now, True, reason, msg)

    def _finish(self, out: Output, now: float, success: bool, reason: str, message: str) -> Output:
        self._flush_estimate(out, now)
        self.state = State.DONE
        self.result = StopResult(success, reason, self.q_stat, self.drops,
                                 self._last_ph if self._last_ph is not None else float("nan"), message)
        out.state = State.DONE
        out.command_opening_mm = self.command
        out.done = self.result
        return out

    def _quantise(self, opening_mm: float) -> float:
        r = self.config.resolution_mm
        return round(round(opening_mm / r) * r, 6)
