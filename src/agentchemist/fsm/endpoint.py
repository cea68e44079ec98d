"""The one judge of a pH endpoint, free of ROS: the settled level at the target, then stable over the hold.

The supervisor runs it (agentchemist.fsm.supervision) and everyone else acts on its verdict: while the hold
runs the dispenser is paused (no drop falls), a level that falls back short of the target releases it
(it squeezes the next drop, one at a time near the target), and the endpoint cancels its goal. The
dispenser never judges the target itself; closed loops without the graph (agentchemist.sim.closed_loop,
the controller's unit benches) drive a DispenserController with the same verdicts through `steer`.
"""
from __future__ import annotations

from enum import Enum

from agentchemist.perception.ph_stability import (EndpointConfig, EndpointDetector, PhStabilityDetector,
                                                  StabilityConfig, settle_config)

#: the pause reason while an endpoint is being confirmed
ENDPOINT_HOLD = "endpoint"


class Verdict(str, Enum):
    GO = "go"              #: not at the target: dispensing goes on
    HOLD = "hold"          #: at the target, the hold runs: no drop may fall
    REACHED = "reached"    #: the endpoint: stop dispensing


class EndpointJudge:
    """Feed every pH reading; `update` says what dispensing must do now.

    The hold must come no later than the next drop may: the dispenser squeezes again once its own short
    window has settled (or the supervisor's ph_stable resumes it), while the endpoint's window is longer
    (2 s) and its mean lags a jump. So until that long window has settled, the mean of a window as long
    as the settle window (`settle_window_s`) already holds at the target; once it has settled, it alone
    says whether the level is at the target (hold, then the endpoint after `hold_s`) or short of it
    (dispensing goes on: a level sitting a hair under the target cannot keep the dispenser waiting)."""

    def __init__(self, target_ph: float, direction: int, hold_s: float, settle_window_s: float = 1.0,
                 criterion: str = "trend"):
        stability = EndpointConfig.stability if criterion == "trend" else \
            StabilityConfig(window_s=2.0, max_slope=0.01, max_spread=0.05, criterion="spread")
        self.config = EndpointConfig(target_ph=target_ph, direction=direction, hold_s=hold_s, stability=stability)
        self.detector = EndpointDetector(self.config)
        self.settle_window_s = settle_window_s
        self.recent = PhStabilityDetector(settle_config(settle_window_s, criterion))
        self.reached_at: float | None = None

    def update(self, stamp: float, ph: float) -> Verdict:
        if self.reached_at is not None:
            return Verdict.REACHED
        self.recent.add(stamp, ph)
        if self.detector.update(stamp, ph):
            self.reached_at = stamp
            return Verdict.REACHED
        if self.detector.confirming:
            return Verdict.HOLD
        if self.detector.stable:
            return Verdict.GO  # settled short of the target
        return Verdict.HOLD if self.detector.reached(self.recent.mean()) else Verdict.GO

    def restart(self) -> None:
        """Evidence that cannot be trusted (a frozen meter): the hold starts again."""
        self.detector = EndpointDetector(self.config)
        self.recent = PhStabilityDetector(self.recent.config)

    def reached(self, ph: float) -> bool:
        return self.detector.reached(ph)


def steer(controller, verdict: Verdict) -> None:
    """Apply a verdict to a DispenserController directly (closed loops without the supervisor node)."""
    if verdict is Verdict.REACHED:
        controller.cancel()
    elif verdict is Verdict.HOLD:
        controller.hold(ENDPOINT_HOLD)
    elif ENDPOINT_HOLD in controller.holds:
        controller.release(ENDPOINT_HOLD)
