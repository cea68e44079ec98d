"""When the dispenser's own target stop is not confirmed by the supervisor's endpoint, free of ROS.

Two judges see the pH endpoint of a titration. The dispenser stops when the mean of its short pH window
reaches the target; the vision supervisor's FSM takes ``ph_target`` only when the settled pH holds the
target for its endpoint hold. Near the endpoint the pH can sit a hair under the target, within the
meter's noise: the dispenser has stopped, the hold never comes, and the run would wait into a state
timeout. So when the confirmation has not come within the hold plus a margin, dispensing goes on (a new
goal: the dispenser settles and adds what its fresh window says is missing), up to a number of times,
after which the run ends with ``endpoint_not_confirmed``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

#: the FSM states in which a dispenser target stop still waits for the endpoint's confirmation
WAITING_STATES = ("titrating", "waiting_ph")


@dataclass(frozen=True)
class Decision:
    action: str          #: "wait" (nothing to do yet) | "continue" (send a new goal) | "give_up" (abort)
    count: int = 0       #: continuations so far, this one included
    message: str = ""


WAIT = Decision("wait")


class StopConfirmation:
    """Tracks one experiment's unconfirmed dispenser target stops (make a new one per experiment)."""

    def __init__(self, margin_s: float = 5.0, max_continuations: int = 30):
        if not (math.isfinite(margin_s) and margin_s >= 0):
            raise ValueError(f"margin_s must be finite and >= 0, got {margin_s!r}")
        if max_continuations < 0:
            raise ValueError(f"max_continuations must be >= 0, got {max_continuations!r}")
        self.margin_s = float(margin_s)
        self.max_continuations = int(max_continuations)
        self.stopped_at: float | None = None
        self.continuations = 0

    def dispenser_stopped(self, now: float) -> None:
        """The dispenser's goal ended at its pH target; the endpoint has not been confirmed yet."""
        self.stopped_at = float(now)

    def check(self, now: float, state: str, hold_s: float) -> Decision:
        """Called periodically with the FSM state and its endpoint hold (s)."""
        if self.stopped_at is None:
            return WAIT
        if state not in WAITING_STATES:  # confirmed (or the run ended otherwise): nothing pending
            self.stopped_at = None
            return WAIT
        if now - self.stopped_at < hold_s + self.margin_s:
            return WAIT
        self.stopped_at = None
        self.continuations += 1
        if self.continuations > self.max_continuations:
            return Decision("give_up", self.continuations,
                            f"the dispenser reached the target {self.continuations - 1} times but the pH never "
                            f"held it for {hold_s:.0f} s")
        return Decision("continue", self.continuations,
                        f"the dispenser stopped at the target but the pH did not hold it for {hold_s:.0f} s: "
                        f"dispensing goes on ({self.continuations}/{self.max_continuations})")
