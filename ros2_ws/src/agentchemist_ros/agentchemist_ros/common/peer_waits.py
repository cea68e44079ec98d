"""The requests a node waits on its peers to answer, told on /agentchemist/peer_waits (PeerWait).

The twin holds its clock while any node waits (agentchemist.sim.lockstep): an answer's delay in wall
time on a loaded machine then costs no simulated time. Each node has one PeerWaits (`peer_waits(node)`);
every change is published, latched, with the node's whole list.
"""
import itertools
import threading

from agentchemist_interfaces.msg import PeerWait
from agentchemist_ros.common import topics
from agentchemist_ros.common.qos import LATCHED
from agentchemist_ros.common.timeconv import node_now, to_msg
from agentchemist_ros.common.waiting import first_of, resolved_after


class PeerWaits:
    def __init__(self, node):
        self.node = node
        self.lock = threading.Lock()  # requests begin and end on any executor thread
        self.open: dict[int, str] = {}
        self.tokens = itertools.count(1)
        self.pub = node.create_publisher(PeerWait, topics.PEER_WAITS, LATCHED)

    def begin(self, what: str) -> int:
        """A request goes to a peer: the token ends the wait (`end`)."""
        with self.lock:
            token = next(self.tokens)
            self.open[token] = what
            self._publish()
        return token

    def end(self, token: int) -> None:
        """The peer answered, or the node stopped waiting (idempotent)."""
        with self.lock:
            if self.open.pop(token, None) is not None:
                self._publish()

    def _publish(self) -> None:
        self.pub.publish(PeerWait(stamp=to_msg(node_now(self.node)), node=self.node.get_fully_qualified_name(),
                                  count=len(self.open), what=list(self.open.values())))


def peer_waits(node) -> PeerWaits:
    """The node's PeerWaits, made on first use."""
    waits = getattr(node, "_peer_waits", None)
    if waits is None:
        waits = node._peer_waits = PeerWaits(node)
    return waits


def hold_while(waits: PeerWaits, token: int | None, waiting: bool, what: str) -> int | None:
    """Keep one wait open exactly while `waiting`: begin it when none is open, end the open one when not.
    Returns the token of the open wait (None when none)."""
    if waiting and token is None:
        return waits.begin(what)
    if not waiting and token is not None:
        waits.end(token)
        return None
    return token


async def hold_until(node, ready, limit_s: float, what: str) -> bool:
    """Await `ready()` without blocking the executor, the twin's clock held meanwhile: what the node needs has
    not reached it yet (a node just started in its own process before DDS matched its topics, or one starved
    of CPU), which takes wall time that must cost no simulated time. Gives up after `limit_s` wall seconds
    (the caller's own checks then report what is missing). True when ready."""
    if ready():
        return True
    waits = peer_waits(node)
    token = waits.begin(what)
    deadline = resolved_after(node, limit_s, steady=True)
    try:
        while not ready():
            index, _ = await first_of(resolved_after(node, 0.02, steady=True), deadline)
            if index == 1:
                return ready()
        return True
    finally:
        waits.end(token)
        deadline.cancel()


def recorder_waits(node) -> None:
    """The supervisor waiting for the recorder (its acknowledgement of the plan, its return after a loss) is
    waiting on a peer: the twin's clock stands still meanwhile, up to the twin's own limit. `node` is the
    vision supervisor (its lock, its executor `ex` and the two wait tokens)."""
    with node.lock:
        ex = node.ex if node.ex is not None and node.ex.running else None
        node.ack_wait = hold_while(peer_waits(node), node.ack_wait, ex is not None and ex.pending_start is not None,
                                   "the recorder's acknowledgement")
        node.back_wait = hold_while(peer_waits(node), node.back_wait, ex is not None and
                                    ex.record_watch.lost_since is not None, "the recorder's return")
