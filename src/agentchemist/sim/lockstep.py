"""Lock-step between the twin's clock and a gripper controller that streams commands.

While a controller streams gripper commands (a dispense is running), the next tick waits until it has
answered the last one, up to a wall timeout, so the squeeze does not depend on how loaded the graph is:
drop size depends on the squeeze. One-off commands (the action policy's grasp) are not a stream: only a
controller that has answered the last few ticks in a row is waited for. Times are wall seconds, given.
"""
from __future__ import annotations

#: ticks in a row answered by a gripper command that make a controller "streaming"
STREAMING_TICKS = 3


class Lockstep:
    def __init__(self, timeout_s: float):
        self.timeout_s = timeout_s      #: 0 = never wait
        self.streak = 0                 #: consecutive ticks answered by a gripper command
        self.answered = True            #: the last tick has been answered
        self.waiting_since: float | None = None

    def command(self) -> None:
        """The pipette's gripper was commanded: the last tick is answered."""
        if not self.answered:
            self.answered = True
            self.streak += 1

    def hold(self, wall_now: float) -> bool:
        """True while the streaming controller has not yet answered the last tick (skip this tick)."""
        if not (self.timeout_s and self.streak >= STREAMING_TICKS) or self.answered:
            self.waiting_since = None
            return False
        if self.waiting_since is None:
            self.waiting_since = wall_now
        if wall_now - self.waiting_since > self.timeout_s:
            self.waiting_since = None  # the controller stopped or is stuck: do not stall the world
            self.streak = 0
            return False
        return True

    def ticked(self) -> None:
        """A tick goes out: it waits for its answer from now on."""
        if not self.answered:
            self.streak = 0  # a tick went by without a command: not (or no longer) streaming
        self.answered = False
