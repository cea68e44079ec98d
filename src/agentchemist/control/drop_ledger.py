"""What one drops goal has dispensed: Q_stat, the drops heard, priming and the bulb's high-water mark (see
agentchemist.control.dispenser's module docstring for why each is counted as it is).

    Q_stat = sum over closing increments of k * dd      (from the measured opening)

Only closing past the deepest opening this goal has reached counts; before the first drop's report the
squeeze is dead travel (priming), and that report counts as one calibrated drop. The statistical estimates
go out one each time Q_stat crosses another drop volume, and a last one for the remainder (`flush`), so
that their increments add up to the Q_stat of the result.

Two counts of two kinds of evidence, each counted here once: Q_stat is the squeeze (displacement x k, the
statistical channel's own evidence; the session adds the experiment's earlier goals to it, control.ledger);
`drops_heard` is the drops this goal was told of by the audio supervisor (its AudioEvents classified
expected), published as DispenserState.drops and the result's drops. It is the dispenser's reaction to
those events, scoped to the goal; the audio supervisor's own count (perception.audio.context.DropContext,
per experiment, with the unbidden drops) is the experiment's, published on the audio channel
(docs/architecture.md, "Who decides what").
"""
from __future__ import annotations

import math

from agentchemist.control.dispenser_types import DispenserConfig, Estimate, State


class DropLedger:
    """The counts of one goal; the controller feeds it the measured opening and the drops heard."""

    def __init__(self, config: DispenserConfig, start_opening_mm: float):
        self.config = config
        self.q_stat = 0.0
        self.drops_heard = 0                 #: drops heard during this goal (published as its `drops`)
        self.primed = False
        self.dead_travel_mm = 0.0
        self.deepest_mm = start_opening_mm   #: the bulb's high-water mark as this goal knows it
        self.since_drop_mm = 0.0             #: squeeze past the high-water mark since the last drop heard
        self._next_report = config.drop_volume_ml
        self._reported = 0.0                 #: Q_stat carried by the estimates emitted so far

    def on_drop(self) -> None:
        """A drop was heard: counted, and the first one primes the count."""
        self.drops_heard += 1
        self.since_drop_mm = 0.0
        if not self.primed:
            self.primed = True
            # Counted from this report on: what was squeezed while it was on the way is left out, as much as
            # hangs at the tip when a later drop's report stops the squeeze, so at a hold Q_stat is what
            # landed whatever the audio's latency (counting from when the drop left the tip biased every
            # equivalence volume in the library by +0.4 drop: the pendant at each settled reading).
            self.q_stat = self.config.drop_volume_ml

    def landed_ml(self) -> float:
        """Q_stat less what was squeezed since the last drop was heard (the next pendant): what landed, by the
        squeeze each heard drop took."""
        if not self.primed:
            return 0.0
        return max(0.0, self.q_stat - self.config.k_ml_per_mm * self.since_drop_mm)

    def account(self, now: float, measured: float, state: State, stalled: bool) -> list[Estimate]:
        """The measured opening (mm): what it squeezed, and the estimates it is due (`state`, `stalled`: the
        controller's, for their confidence)."""
        if not math.isfinite(measured):
            return []
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
            self.since_drop_mm += dd
        # One statistical estimate each time Q_stat crosses another drop volume keeps the channel in step
        # with the audio channel's per-drop estimates.
        if self.q_stat >= self._next_report - 1e-12:
            dv = self.config.drop_volume_ml
            self._next_report = (math.floor(self.q_stat / dv + 1e-9) + 1) * dv
            estimate = Estimate(now, self.q_stat, self.q_stat - self._reported, self.confidence(state, stalled),
                                state.value)
            self._reported = self.q_stat
            return [estimate]
        return []

    def flush(self, now: float, state: State, stalled: bool) -> list[Estimate]:
        """The remainder of Q_stat since the last estimate, when the controller holds for good or resets."""
        if self.q_stat > self._reported + 1e-9:
            estimate = Estimate(now, self.q_stat, self.q_stat - self._reported, self.confidence(state, stalled),
                                state.value)
            self._reported = self.q_stat
            return [estimate]
        return []

    def confidence(self, state: State, stalled: bool) -> float:
        """Confidence of Q_stat: calibration residual relative to a drop, discounted by execution state."""
        c = self.config
        calib = max(0.0, 1.0 - c.calibration_residual_ml / c.drop_volume_ml)
        state_factor = {State.MOTION: 1.0, State.WAIT: 1.0, State.RESET: 0.3, State.DONE: 1.0}[state]
        stall_factor = 0.5 if stalled else 1.0
        return max(0.0, min(1.0, calib * state_factor * stall_factor))
