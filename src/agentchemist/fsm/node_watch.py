"""Peers a run depends on, watched by their heartbeats, free of ROS.

A node in its own process (on the robot every node is) publishes a heartbeat every half second of its
clock (agentchemist_interfaces/Heartbeat, from agentchemist_ros.common.runner). A peer that has been
heard and then falls silent for ``stale_s`` is lost: killed, hung in a callback, stopped by the OS, or
cut off from the network. The watcher cannot tell which, and need not: what the run must do is the
same. The supervisor watches the agents an experiment depends on (agentchemist.fsm.executor) and the
dispenser watches the supervisor, its endpoint judge (agentchemist.control.dispense_session):

* lost: dispensing is held (a ``node_lost`` anomaly names the peer): no drop falls that the lost peer
  would have counted, judged or recorded;
* back, the same process (it was stalled): dispensing goes on, the anomaly is resolved;
* back as another process (``instance`` changed: it was restarted): what it held is gone with the old
  process (a goal, a count); the watcher says so and its owner decides (the supervisor aborts when the
  restarted peer held a running goal);
* gone for ``lost_abort_s``: the run aborts with ``node_lost``.

A watcher that was itself away (its process stopped or starved: its own check did not run for longer
than the stale limit) does not count that time against its peers (`watcher_away`).

Only peers that have been heard are watched: in the one-process graph (demo, scenario runner, tests)
no node publishes heartbeats (they share one executor and cannot die apart), so nothing is watched.
The recorder has a watch of its own with more to say (agentchemist.fsm.record_watch).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from agentchemist.params import param

#: the period of every node's heartbeat (s of its clock): stale_s must leave room for a few
HEARTBEAT_PERIOD_S = 0.5


@dataclass(frozen=True)
class NodeWatchConfig:
    """When a peer counts as lost and when the run gives up on it (seconds of the watcher's clock)."""

    # 5 s: a peer in its own process may trail the twin's clock by its max_lead_s (2 s, sim.lockstep)
    # plus a heartbeat period before anything is wrong with it.
    stale_s: float = param(5.0, unit="s", low=1.0, high=120.0, description=(
        "No heartbeat this long from a peer the run depends on: it is lost and dispensing is held (node_lost)"))
    lost_abort_s: float = param(60.0, unit="s", low=1.0, high=3600.0, description=(
        "A peer lost this long during a run: the run aborts (node_lost)"))

    def __post_init__(self):
        if self.stale_s < 2 * HEARTBEAT_PERIOD_S:
            raise ValueError(f"stale_s must be at least two heartbeat periods ({2 * HEARTBEAT_PERIOD_S} s)")


def watcher_away(last_check: float | None, now: float, stale_s: float) -> float:
    """How long the watcher itself was away (its own timer did not run: its process was stopped or
    starved) for longer than the stale limit, else 0. Peers' messages queued
    meanwhile arrive late, so their silence over that time says nothing about them: a stalled supervisor
    must not take the recorder that kept recording for lost."""
    if last_check is None:
        return 0.0
    gap = now - last_check
    return gap if gap > stale_s else 0.0


@dataclass(frozen=True)
class PeerEvent:
    """A change in a peer's liveness: what happened ('lost', 'back', 'restarted', 'abort') and the text."""
    node: str
    what: str
    text: str


@dataclass
class NodeWatch:
    """Heartbeats in (`on_heartbeat`), verdicts out (`check`). `peers`: the node names watched (empty: all
    heard); `ignore`: names never watched (a peer with a watch of its own)."""

    config: NodeWatchConfig = field(default_factory=NodeWatchConfig)
    peers: frozenset[str] = frozenset()
    ignore: frozenset[str] = frozenset()
    last_seen: dict[str, float] = field(default_factory=dict)     #: node -> `now` of its last heartbeat
    instance: dict[str, str] = field(default_factory=dict)        #: node -> its process's instance
    lost_since: dict[str, float] = field(default_factory=dict)    #: node -> its last heartbeat before the loss
    aborted: set[str] = field(default_factory=set)
    last_check: float | None = None                               #: `now` of the last `check`

    def watches(self, node: str) -> bool:
        return node not in self.ignore and (not self.peers or node in self.peers)

    def on_heartbeat(self, node: str, instance: str, now: float) -> list[PeerEvent]:
        """A heartbeat: a lost peer is back (the same process, or a 'restarted' one)."""
        node = node.rsplit("/", 1)[-1]
        if not self.watches(node):
            return []
        events = []
        if node in self.instance and instance != self.instance[node]:
            events.append(PeerEvent(node, "restarted", f"{node} was restarted (a new process): what it held "
                                                        "in the old one is gone"))
        self.instance[node] = instance
        self.last_seen[node] = now
        since = self.lost_since.pop(node, None)
        if since is not None:
            self.aborted.discard(node)
            events.append(PeerEvent(node, "back", f"{node} is back after {now - since:.1f} s without a heartbeat"))
        return events

    def check(self, now: float) -> list[PeerEvent]:
        """The timer: peers newly lost, and peers lost for too long ('abort', once each)."""
        away = watcher_away(self.last_check, now, self.config.stale_s)
        self.last_check = now
        if away:  # the watcher itself did not run: what it missed is no peer's silence
            self.last_seen = {node: seen + away for node, seen in self.last_seen.items()}
            self.lost_since = {node: since + away for node, since in self.lost_since.items()}
        events = []
        for node, seen in sorted(self.last_seen.items()):
            silent = now - seen
            if node not in self.lost_since:
                if silent > self.config.stale_s:
                    self.lost_since[node] = seen
                    events.append(PeerEvent(node, "lost", f"no heartbeat from {node} for {silent:.1f} s"))
            elif silent > self.config.lost_abort_s and node not in self.aborted:
                self.aborted.add(node)
                events.append(PeerEvent(node, "abort", f"{node} has been gone for {silent:.0f} s"))
        return events

    @property
    def lost(self) -> list[str]:
        return sorted(self.lost_since)
