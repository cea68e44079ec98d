"""How fast the drops controller may go: where it holds (a fast-moving reading, the next jump or the target
within reach), how many drops it doses near the target before the next hold, and when a hold is over (the
reading settled, or caught up and clear of both). See agentchemist.control.dispenser's module docstring
(adaptive rate, prediction) for the reasons; agentchemist.control.approach traces the curve.
"""
from __future__ import annotations

import dataclasses
import math

from agentchemist.control.approach import CurveTracker, JumpWatch
from agentchemist.control.dispenser_types import DispenseGoal, DispenserConfig
from agentchemist.control.drop_ledger import DropLedger
from agentchemist.perception.ph_stability import PhStabilityDetector


class Pacing:
    """The pH side of one goal: the readings, the curve they trace against the squeeze, and the pace."""

    def __init__(self, config: DispenserConfig, goal: DispenseGoal, ledger: DropLedger, *, start_opening_mm: float,
                 now: float):
        self.config, self.goal, self.ledger = config, goal, ledger
        self.change_threshold = goal.change_rate_threshold or config.change_rate_threshold
        settle = config.settle
        if goal.stable_window_s:
            longest = settle.max_window_s and max(settle.max_window_s, goal.stable_window_s)  # 0: 4 x window
            settle = dataclasses.replace(settle, window_s=goal.stable_window_s, max_window_s=longest)
        self.settle = PhStabilityDetector(settle)
        self.last_ph: float | None = None
        self.last_ph_stamp: float | None = None
        self._ph_history: list[tuple[float, float]] = []
        self._anchor: tuple[float, float] | None = None   #: (Q_stat, settled pH) of the last settled hold
        self.sensitivity_ph_per_ml = math.nan  #: |dpH/dQ| between the last two anchors
        self._sensitivity_bound = math.nan     #: the same with the settle band added: an upper bound
        self._sensitivity_before = math.nan    #: the secant before that one
        self._increment: int | None = None   #: drops to dose before the next hold (near the target)
        self._increment_count = 0
        self._increment_from = start_opening_mm   #: where the current increment's squeeze began (mm)
        self._self_settled_at: float | None = None
        self._curve = CurveTracker(config.reading_lags_s, goal.ph_direction, 0.0, now)  #: see ahead_ml
        self._settled_since: float | None = None   #: when this WAIT's settle test first passed
        self._ramp_stop: tuple[float, float] | None = None  #: (pH, pH/s) when a change-rate hold began
        # fits with up to 3 drops in flight place the peak: those at the end of a hold near a jump
        self._jump = JumpWatch(config.lead_drops * config.drop_volume_ml, 3.0 * config.drop_volume_ml)

    # ----------------------------------------------------------------- readings and the squeeze
    def on_ph(self, stamp: float, ph: float) -> None:
        """A reading the settle detector and the frozen-meter check have taken."""
        self.last_ph, self.last_ph_stamp = ph, stamp
        self._curve.add(stamp, ph, self.ledger.q_stat)
        self._ph_history.append((stamp, ph))
        if len(self._ph_history) > 64:
            del self._ph_history[:32]

    def advance(self, now: float) -> None:
        """A control update: the squeeze so far goes through the reading's lags."""
        self._curve.advance(now, self.ledger.q_stat)

    def first_anchor(self) -> None:
        """The first settled reading is the first anchor (the pH before, or barely after, the first drops)."""
        if self._anchor is None and self.last_ph is not None and self.settle.is_stable():
            self._anchor = (self.ledger.q_stat, self.settle.level())

    @property
    def reading_lag_s(self) -> float:
        return self._curve.total_lag_s

    def on_drop_in_motion(self, command: float) -> str | None:
        """A drop heard while squeezing: the hold it calls for once it has landed, if any."""
        if self.goal.settle_each_drop:
            return "drop_landed_settle"
        if self.near_target():
            self._increment_count += 1
            if self._increment_count >= self.planned_increment(command):
                return "near_target_drop"
        return None

    def new_state(self) -> None:
        """Every hold ends an increment."""
        self._increment, self._increment_count = None, 0
        self._self_settled_at = None

    # ----------------------------------------------------------------- where to hold
    def near_target(self) -> bool:
        g, c = self.goal, self.config
        if g.target_ph is not None and self.last_ph is not None:
            if g.ph_direction * (g.target_ph - self.last_ph) <= c.near_target_ph:
                return True
            if self._steep_ahead():
                return True  # the next drop may cross the target
        if g.target_volume_ml > 0 and g.target_volume_ml - self.ledger.q_stat <= c.near_target_ml:
            return True
        return False

    def hold_for_change(self) -> bool:
        """MOTION holds on a fast-moving reading (the paper: no action while the pH changes). With
        prediction, far from the target only where the curve says the target or the next jump may be
        within reach of what is already squeezed: elsewhere a fast change is just the curve, which the
        lag model already accounts for (a hold there would cost a settle, 5-10 s, and tell nothing new).
        A hold it calls for notes where the ramp stopped (see settled_hold)."""
        fast = self.change_rate_high()
        ahead = self.ahead_ml()
        if ahead is None:
            hold = fast
        elif self.near_target():
            # near: a fast change holds unless what is squeezed is already seen to be clear (the same test
            # that ends such a hold early, so that the two never alternate)
            hold = fast and not self._clear(ahead)
        else:
            hold = min(ahead) <= self.config.lead_drops * self.config.drop_volume_ml
        if hold:
            self._ramp_stop = (self.settle.mean(), self.settle.slope())
        return hold

    def ahead_ml(self) -> tuple[float, float] | None:
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
        flight = max(0.0, self.ledger.q_stat - fit.end_ml)   # squeezed, not yet in the reading
        steepest = fit.slope + 2.0 * fit.slope_se
        distance = g.ph_direction * (g.target_ph - fit.level)
        to_target = distance / steepest - flight if steepest > 0 else math.inf
        return self._jump.to_jump(fit, flight), to_target

    def _steep_ahead(self) -> bool:
        """One drop (or a planned increment) at a time: with prediction where the next jump or the target
        may be within `lead_drops`; without (or while it cannot tell), where the last secant is steep (`_steep`)."""
        ahead = self.ahead_ml()
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

    def change_rate_high(self) -> bool:
        # A slope through two or three noisy readings is mostly noise: judge only a filled window.
        window = self.settle.config
        if self.last_ph_stamp is None:
            return False
        recent = [ph for stamp, ph in self._ph_history if stamp >= self.last_ph_stamp - window.window_s]
        if len(recent) < window.min_samples:
            return False
        # A step shows first as one reading off the ones before it, a reading before the slope shows it.
        # Both thresholds grow with the probe's measured noise, so that an ageing electrode's scatter is
        # not taken for a change (jump: 5 sd of the difference; slope: its one-sided 95 % bound).
        noise = self.settle.noise_sd()
        jump = self.config.jump_threshold_ph
        if math.isfinite(noise):
            jump = max(jump, 5.0 * noise * math.sqrt(1.0 + 1.0 / (len(recent) - 1)))
        if abs(recent[-1] - sum(recent[:-1]) / (len(recent) - 1)) > jump:
            return True
        slope = self.settle.slope()
        margin = 0.0
        if math.isfinite(noise) and noise > window.noise_floor:
            t = [stamp for stamp, _ in self._ph_history if stamp >= self.last_ph_stamp - window.window_s]
            tc = [x - sum(t) / len(t) for x in t]
            stt = sum(x * x for x in tc)
            margin = window.confidence_z * noise / math.sqrt(stt) if stt > 0 else math.inf
        return math.isfinite(slope) and abs(slope) > self.change_threshold + margin

    # ----------------------------------------------------------------- increments near the target
    def planned_increment(self, command: float) -> int:
        """Drops to dose before the next hold while near the target; fixed for the current increment."""
        if self._increment is None:
            self._increment = self._increment_for_now()
            self._increment_from = min(command, self.ledger.deepest_mm)
        return self._increment

    def increment_stop(self) -> float | None:
        """With prediction, an increment of several drops ends on the squeeze, not on the drops heard: at
        the top rate the hold after the n-th heard drop comes 0.1-0.3 s late (the audio chunks), by when
        up to 1.5 drops more are squeezed into the pendant; n drop volumes squeezed from where it began
        land n drops (whatever hung at the tip before stays there). The opening it stops at, or None."""
        c = self.config
        if self._increment is None or self._increment <= 1 or self.ahead_ml() is None:
            return None
        return self._increment_from - self._increment * c.drop_displacement_mm

    def _increment_for_now(self) -> int:
        g, c = self.goal, self.config
        ahead = self.ahead_ml()
        if ahead is None and c.predictive and g.target_ph is not None and not g.settle_each_drop:
            return 1  # predicting, but the readings do not span enough of the curve to plan: one drop
        if ahead is not None:
            # A fraction of the volume left to the next jump (the log law's lower bound: a larger share of
            # it, `jump_fraction`) or to the target (on the steepest slope the readings allow,
            # `approach_fraction`), whichever is less: the distance shrinks geometrically, and no increment
            # reaches either bound.
            planned = min(c.jump_fraction * ahead[0], c.approach_fraction * ahead[1])
            return self.whole_drops(planned / c.drop_volume_ml)
        if g.target_ph is None or self.last_ph is None or self._steep() or math.isnan(self.sensitivity_ph_per_ml):
            return 1  # no pH target, no slope measured yet, or steep: one drop at a time
        per_drop = self._sensitivity_bound * c.drop_volume_ml
        distance = g.ph_direction * (g.target_ph - self.last_ph)
        predicted = distance / per_drop
        return self.whole_drops(c.approach_fraction * predicted)

    def whole_drops(self, drops: float) -> int:
        """An increment of `drops` as whole drops, 1 to max_increment_drops (neither bound in sight: an
        infinite distance, the most)."""
        if math.isnan(drops):
            return 1
        if math.isinf(drops):
            return self.config.max_increment_drops if drops > 0 else 1
        return int(min(max(math.floor(drops), 1), self.config.max_increment_drops))

    # ----------------------------------------------------------------- when a hold is over
    def clear_ahead(self, now: float, wait_reason: str, wait_since: float | None) -> bool:
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
                or wait_reason not in ("change_rate_high", "near_target_drop")
                or now - (wait_since if wait_since is not None else now) < c.settle_delay_s):
            return False
        ahead = self.ahead_ml()
        return ahead is not None and self._clear(ahead)

    def _clear(self, ahead: tuple[float, float]) -> bool:
        """... (at least half a drop of it short of the jump or the target) and the reading is at least
        `clear_margin_ph` short of the target: closer than that, a
        reading still creeping up may end within the judge's tolerance of the target, which only a settled
        reading shows (then the judge holds)."""
        c = self.config
        left = min(ahead)
        flight = self._curve.in_flight(self.ledger.q_stat)
        gap = self.goal.ph_direction * (self.goal.target_ph - self.last_ph)
        return (left >= 0.5 * c.drop_volume_ml and flight <= max(0.3 * c.drop_volume_ml, 0.25 * left)
                and gap >= c.clear_margin_ph)

    def settled(self, now: float, wait_since: float | None) -> bool:
        """pH settled when a pH stream exists (over a window that starts `settle_delay_s` after the hold
        at the earliest); otherwise the hanging drop had time to fall."""
        held = now - (wait_since if wait_since is not None else now)
        if self.last_ph is not None:
            settled = held >= self.config.settle_delay_s + self.settle.config.window_s and self.settle.is_stable()
            if not settled:
                self._settled_since = None
                return False
            if self._settled_since is None or self._settled_since < (wait_since or now):
                self._settled_since = now
            return not self._at_the_edge() or now - self._settled_since >= self.config.edge_settle_s
        return held >= self.config.drop_pause_s

    def paced_by_supervisor(self, now: float) -> bool:
        """With resume_on_command every WAIT ends on the supervisor's resume (it records each drop's
        settled pH and must see it before the next drop). Should that resume not come although the pH has
        settled here for `resume_grace_s` (a report lost on the way), the controller goes on by itself
        rather than wait for the settle timeout."""
        if not (self.goal.settle_each_drop and self.goal.resume_on_command):
            return False
        if self._self_settled_at is None:
            self._self_settled_at = now
        return now - self._self_settled_at < self.config.resume_grace_s

    def settled_hold(self, wait_reason: str) -> None:
        """A hold ended settled: an anchor for the curve's slope and, after a change-rate hold, the
        reading's lag."""
        self._update_sensitivity()
        if wait_reason == "change_rate_high" and self._ramp_stop is not None:
            # a squeeze stopped on a moving reading, now settled: the rise since over the slope then
            # measures the reading's lag (approach.CurveTracker.observe_settle)
            d = self.goal.ph_direction
            self._curve.observe_settle(d * (self.settle.level() - self._ramp_stop[0]), d * self._ramp_stop[1])

    def _at_the_edge(self) -> bool:
        """With prediction, a reading settled within `clear_margin_ph` short of the target: its tail may
        still carry it over the target. The endpoint judge's window (2 s) and slope test are stricter than
        the settle test here, so the controller holds `edge_settle_s` longer for it: a drop that just
        crossed is confirmed there, not followed by another (a held-out run did that with the reading
        0.01-0.02 pH under the target after this settle test passed)."""
        g = self.goal
        if not (self.config.predictive and g.target_ph is not None and not g.settle_each_drop):
            return False
        return g.ph_direction * (g.target_ph - self.settle.level()) < self.config.clear_margin_ph

    def _update_sensitivity(self) -> None:
        """A settled hold is an anchor (Q_stat, pH); the secant to the previous one is the curve's slope."""
        if self.last_ph is None:
            return
        here = (self.ledger.q_stat, self.settle.level())  # the settled window's mean: one noisy reading does not decide
        if self._anchor is not None:
            dq = here[0] - self._anchor[0]
            if dq < 0.5 * self.config.drop_volume_ml:
                return  # too little dispensed since the last anchor to measure a slope
            self._sensitivity_before = self.sensitivity_ph_per_ml
            self.sensitivity_ph_per_ml = abs(here[1] - self._anchor[1]) / dq
            # A settled reading is known to within the settle band: increments are planned on the
            # steepest slope the two anchors allow, so that noise never makes them too large.
            self._sensitivity_bound = (abs(here[1] - self._anchor[1]) + self.settle.config.max_spread) / dq
        self._anchor = here
