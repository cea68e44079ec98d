"""Lock-step between the twin's clock and a gripper controller that streams commands.

While a controller streams gripper commands (a dispense is running), the next tick waits until it has
answered the last one, up to a wall timeout, so the squeeze does not depend on how loaded the graph is:
drop size depends on the squeeze. One-off commands (the action policy's grasp) are not a stream: only a
controller that has answered the last few ticks in a row is waited for.

The clock also stands still while any node waits for a peer's answer to a request (an action goal not
yet accepted, a service call not yet answered; agentchemist_interfaces/PeerWait). Those answers come in
wall time: on a loaded machine the ROS graph cache has lagged seconds behind a server that was serving,
and a request then waits up to the supervisor's agent_wait_s (15 s wall) before it goes out anyway;
at 50x that was 750 s of twin time in which a state's timeout ran out with nothing wrong in the graph
(CI, test_weighing_graph). A node that waits longer than `wait_limit_s` stops holding the clock: a dead
peer is the waiting node's own wall timeout to report, and the world must not freeze on it.

A node in its own process that follows the twin's clock acknowledges the sim time it has reached
(agentchemist_interfaces/ClockAck, every clock_ack_period_s of sim time). The clock then stays at most
`max_lead_s` ahead of the slowest acknowledging node: one starved of CPU slows the twin instead of
seeing the world rush past it. A node whose last acknowledgement is more than `ack_dead_s` of wall
time old is not waited for (it died or hangs: its watchdogs are others' to run).
Times are wall seconds, given; twin times are sim seconds.
"""
from __future__ import annotations

#: ticks in a row answered by a gripper command that make a controller "streaming"
STREAMING_TICKS = 3
#: looks at an unanswered tick before a controller past the wall timeout counts as stuck. In the one-process
#: graph the twin and the controller share a process: when it is not scheduled for a while (a loaded machine),
#: the twin's first look after the pause finds the timeout passed before the controller has had its turn, and
#: going on then would let CPU contention shift the squeeze by a tick.
MIN_LOOKS = 3


class Lockstep:
    def __init__(self, timeout_s: float, wait_limit_s: float = 60.0, max_lead_s: float = 2.0,
                 ack_dead_s: float = 10.0, streaming_ticks: int = STREAMING_TICKS):
        self.timeout_s = timeout_s      #: 0 = never wait
        #: answered ticks in a row that make a stream. The twin's free run (lab_sim_config.free_run) queues
        #: the next tick at once, before a controller's sim-time timer has fired for the last one (the
        #: executor's timers come from another thread): every answer then comes a tick late, the streak never
        #: reaches 3, nothing is waited for, and the controller skips periods (a Ca/EDTA dispense took 57 s
        #: instead of 22 s to its first drop). There one answered tick makes a stream.
        self.streaming_ticks = streaming_ticks
        self.streak = 0                 #: consecutive ticks answered by a gripper command
        self.answered = True            #: the last tick has been answered
        self.waiting_since: float | None = None
        self.looks = 0                  #: hold() calls since waiting_since
        self.wait_limit_s = wait_limit_s  #: 0 = never hold for a node waiting on a peer
        self.peer_waits: dict[str, float] = {}  #: node -> wall time it began waiting on a peer
        self.max_lead_s = max_lead_s
        self.ack_dead_s = ack_dead_s  #: 0 = never wait for an acknowledging node
        self.acks: dict[str, tuple[float, float]] = {}  #: node -> (sim time it reached, wall time told)

    def acked(self, node: str, t: float, wall_now: float) -> None:
        """`node` has reached sim time t."""
        self.acks[node] = (t, wall_now)

    def behind(self, t: float, wall_now: float) -> list[str]:
        """The live acknowledging nodes more than max_lead_s behind twin time t."""
        if not self.ack_dead_s:
            return []
        return sorted(n for n, (reached, told) in self.acks.items()
                      if wall_now - told <= self.ack_dead_s and t - reached > self.max_lead_s)

    def peer_wait(self, node: str, count: int, wall_now: float) -> None:
        """`node` now waits for `count` answers from its peers (0: for none)."""
        if count <= 0:
            self.peer_waits.pop(node, None)
        else:
            self.peer_waits.setdefault(node, wall_now)

    def waiting_on_peers(self, wall_now: float) -> list[str]:
        """The nodes whose wait holds the clock now."""
        if not self.wait_limit_s:
            return []
        return sorted(n for n, since in self.peer_waits.items() if wall_now - since <= self.wait_limit_s)

    def command(self) -> None:
        """The pipette's gripper was commanded: the last tick is answered."""
        if not self.answered:
            self.answered = True
            self.streak += 1

    def hold(self, wall_now: float, t: float | None = None) -> bool:
        """True while a node waits on a peer, an acknowledging node is more than max_lead_s behind twin
        time t, or the streaming controller has not yet answered the last tick (skip this tick)."""
        if self.waiting_on_peers(wall_now) or (t is not None and self.behind(t, wall_now)):
            return True
        if not (self.timeout_s and self.streak >= self.streaming_ticks) or self.answered:
            self.waiting_since = None
            return False
        if self.waiting_since is None:
            self.waiting_since, self.looks = wall_now, 0
        self.looks += 1
        if wall_now - self.waiting_since > self.timeout_s and self.looks > MIN_LOOKS:
            self.waiting_since = None  # the controller stopped or is stuck: do not stall the world
            self.streak = 0
            return False
        return True

    def ticked(self) -> None:
        """A tick goes out: it waits for its answer from now on."""
        if not self.answered:
            self.streak = 0  # a tick went by without a command: not (or no longer) streaming
        self.answered = False
