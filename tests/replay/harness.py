"""Replay test helpers: the fixture bags and what the tests read from them. The lock-step replay engine
(`replay`, `drain`, `Probe` ...) lives in agentchemist_ros.tools.bag.replay and is re-exported here."""
from __future__ import annotations

import json
from pathlib import Path

import rclpy
from rclpy.event_handler import SubscriptionEventCallbacks
from rclpy.executors import TimeoutException
from rclpy.node import Node
from rclpy.serialization import deserialize_message

from agentchemist.bag.playback import NS, clock_steps
from agentchemist_ros.common.timeconv import to_sec
from agentchemist_ros.tools.bag.replay import (NODE_KW, SIM_TIME, Probe, ReplayResult, drain,  # noqa: F401
                                               not_from, replay, ticked_steps)
from tests.conftest import REPO

FIXTURES = REPO / "tests" / "fixtures" / "bags"
LIVE = FIXTURES / "hcl_short_live.json"


def recorded(bag: Path, topic: str, cls) -> list:
    """Every message of `topic` in `bag`, deserialized with the rclpy class `cls` (the live outputs)."""
    from agentchemist.bag import BagReader
    with BagReader(bag) as reader:
        return [deserialize_message(m.data, cls) for m in reader.messages([topic])]


def in_bag(bag: Path, wanted) -> list[str]:
    """The topics of `wanted` that `bag` holds (a topic nobody published live is not recorded)."""
    from agentchemist.bag import BagReader
    with BagReader(bag) as reader:
        present = {t.name for t in reader.info().topics}
    return [t for t in wanted if t in present]


def live_summary() -> dict:
    return json.loads(LIVE.read_text())


def ensure_rclpy():
    if not rclpy.ok():
        rclpy.init()


def stamp(msg) -> float:
    return to_sec(msg.stamp)


# ---------------------------------------------------------------------------------------------------------
# For the node fixtures (planner, action policy, dispenser controller: tests/replay/peers.py reads their taps)

def from_rosbags(obj, cls):
    """An rclpy message of class `cls` from a rosbags object (decoded with the definitions a bag embeds),
    field by field by name: a field the recording lacks keeps its default (a field added to the interface
    since), one it has that `cls` lacks is dropped. So a fixture recorded before an interface change still
    gives the installed message (agentchemist.bag.migrate does the same for played topics)."""
    import importlib

    from rosidl_parser.definition import AbstractSequence, Array, NamespacedType

    msg = cls()
    for (name, _kind), slot in zip(cls.get_fields_and_field_types().items(), cls.SLOT_TYPES):
        if not hasattr(obj, name):
            continue
        value = getattr(obj, name)
        inner = slot.value_type if isinstance(slot, (AbstractSequence, Array)) else slot
        if isinstance(inner, NamespacedType):
            nested = getattr(importlib.import_module(".".join(inner.namespaces)), inner.name)
            value = [from_rosbags(v, nested) for v in value] if inner is not slot else from_rosbags(value, nested)
        elif hasattr(value, "tolist"):
            value = value.tolist()
        setattr(msg, name, value)
    return msg


def recorded_as(bag: Path, topic: str, cls) -> list:
    """Like `recorded`, decoded with the definitions the bag embeds and built as `cls` field by field
    (`from_rosbags`): the live outputs of a node fixture still read after an interface gained a field."""
    from agentchemist.bag import BagReader
    with BagReader(bag) as reader:
        return [from_rosbags(reader.decode(m), cls) for m in reader.messages([topic])]


class TimedProbe(Node):
    """Captures (sim time s, topic, message) of every output topic, in arrival order; the time is this node's
    sim clock, which the replay's /clock sets before the nodes under test act on it (a node's /clock
    subscription comes first), so it is when the output was published. Pass it among the replay's nodes."""

    def __init__(self, outputs: dict[str, tuple[type, object]], name: str = "replay_timed_probe"):
        super().__init__(name, **NODE_KW)
        self.received: list[tuple[float, str, object]] = []
        for topic, (cls, qos) in outputs.items():
            self.create_subscription(
                cls, topic, lambda m, t=topic: self.received.append((self.get_clock().now().nanoseconds * 1e-9, t, m)),
                qos, event_callbacks=SubscriptionEventCallbacks(use_default_callbacks=False))

    def on(self, topic: str) -> list[tuple[float, object]]:
        return [(t, m) for t, top, m in self.received if top == topic]


def settle(executor, limit: int = 200_000) -> int:
    """`drain` for nodes with coroutines that wait (an action server's execute awaiting the end of a goal,
    a primitive's step): rclpy resumes every pending task on every executor pass whether or not what it
    awaits is done, so such a graph is never idle to `drain`. Here a task run that neither is its first run
    nor finishes it is no progress, and the graph is idle once some waiting task has been resumed three
    times since the last progress (two whole passes in which no entity was ready and no task moved on).
    Returns how many callbacks ran."""
    ran = 0
    resumed: dict = {}
    seen: set = set()
    progressed = False
    while ran < limit:
        try:
            handler, _entity, _node = executor.wait_for_ready_callbacks(timeout_sec=0.0)
        except TimeoutException:  # nothing pending at all: as in `drain`
            if not progressed:
                return ran
            progressed = False
            continue
        first = handler not in seen
        seen.add(handler)
        handler()
        if handler.exception() is not None:
            raise handler.exception()
        ran += 1
        if first or handler.done():
            progressed = True
            resumed.clear()
        else:
            resumed[handler] = resumed.get(handler, 0) + 1
            if resumed[handler] >= 3:
                return ran
    raise RuntimeError(f"the graph did not go idle after {limit} callbacks")


def timer_steps(player, ticks_ns, after_timer=None, resolution_ns: int = 1_000_000):
    """One pass of `player`'s bag for a node whose timer the live run drove at `ticks_ns` (sorted bag
    times: when the node's recorded outputs show that its timer ran). Up to each tick, the recorded
    messages go out first, one step each, with /clock still at the tick before: live, everything recorded
    by the time the node's output of a tick reached the recorder had been delivered to the node before its
    timer ran. Then /clock moves to the tick, and the timer runs (once, however far the clock moved: a tick
    the live timer skipped is skipped here too). Past the last tick, /clock moves with the messages as usual.
    `after_timer(msg)`: messages of a tick that reached the live node only after its timer had run.
    Yields after each step; the caller settles the executor."""
    messages = [m for m in player.reader.messages(list(player.publishers_by_topic))
                if player.message_filter is None or player.message_filter(m)]
    publish = player.publish
    mi = 0
    for tick in sorted(ticks_ns):
        late = []
        while mi < len(messages) and messages[mi].timestamp < tick + resolution_ns:
            msg = messages[mi]
            mi += 1
            if player.clock_ns is None:  # the first message: the clock starts there
                player.publish_clock(msg.timestamp)
                yield None
            if after_timer is not None and msg.timestamp >= tick - resolution_ns and after_timer(msg):
                late.append(msg)
            elif publish(msg) is not None:
                yield None
        if player.clock_ns is None or tick > player.clock_ns:
            player.publish_clock(tick)
            yield None
        for msg in late:
            if publish(msg) is not None:
                yield None
    for msg in messages[mi:]:
        for ns in clock_steps(player.clock_ns, msg.timestamp, 0.0, resolution_ns / NS):
            player.publish_clock(ns)
            yield None
        if publish(msg) is not None:
            yield None


WAIT_FOR_S = 30.0


def replay_nodes(bag: Path, nodes: list[Node], inputs: list[str], senders: set[str], *,
                 clock_ticks_s=(), timer_ticks_s=None, after_timer=None, transform=None,
                 wait_for=()) -> ReplayResult:
    """`replay` for nodes whose servers run coroutines (see `settle`): play `inputs` of `bag` into `nodes`
    in lock step, /clock at every bag time and at each of `clock_ticks_s` (`ticked_steps`); or, given
    `timer_ticks_s`, at exactly those while they last (`timer_steps`). Outputs are captured by a TimedProbe
    among `nodes` (the returned result's probe captures nothing). `after_timer`: see `timer_steps`.
    `transform(msg) -> msg`: what to publish instead of a recorded message (e.g. with the replay's
    experiment id instead of the live one). `wait_for`: conditions (a client seeing
    its server: DDS discovery takes a moment of wall time) to wait for, up to WAIT_FOR_S, before the first
    message. Destroys the nodes after."""
    import time

    from rclpy.executors import SingleThreadedExecutor

    from agentchemist.bag import PlaybackOptions
    from agentchemist_ros.tools.bag.player import BagPlayer

    probe = Probe({})
    player = BagPlayer(bag, PlaybackOptions(fast=True, topics=tuple(inputs), clock_step_s=0.0),
                       message_filter=not_from(senders), node_name="replay_player", start_parameter_services=False)
    if transform is not None:  # what goes out instead of each recorded message
        publish = player.publish
        player.publish = lambda msg: publish(transform(msg))
    executor = SingleThreadedExecutor()
    for node in (player, probe, *nodes):
        executor.add_node(node)
    try:
        settle(executor)
        deadline = time.monotonic() + WAIT_FOR_S
        while not all(ready() for ready in wait_for):
            if time.monotonic() > deadline:
                raise TimeoutError(f"the replay's clients did not see their servers within {WAIT_FOR_S} s")
            time.sleep(0.01)
            settle(executor)
        if timer_ticks_s is not None:
            steps = timer_steps(player, sorted({int(round(t * NS)) for t in timer_ticks_s}), after_timer)
        else:
            steps = ticked_steps(player, sorted({int(round(t * NS)) for t in clock_ticks_s}))
        for _step in steps:
            settle(executor)
        for _ in range(3):
            settle(executor)
        return ReplayResult(probe, player.stats.messages, dict(player.stats.per_topic), player.all_problems())
    finally:
        executor.shutdown(timeout_sec=1.0)
        for node in (player, probe, *nodes):
            node.destroy_node()
