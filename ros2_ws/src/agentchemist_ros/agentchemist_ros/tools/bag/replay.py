"""Lock-step replay: play a bag into nodes under test, one message at a time, with no twin running.

The player, the nodes under test and a probe that captures their outputs share one
SingleThreadedExecutor. Fast DDS delivers intra-process messages during publish(), so after each
published message (or /clock step) `drain` runs every callback that became ready, timers included,
before the next one goes out. The order the nodes see is the bag's order on every run: deterministic.
/clock moves with the messages (and every `clock_step_s` across gaps, or at given ticks: `ticked_steps`),
so sim-time stamps, timers and timeouts in the nodes see the live run's times.

Used by the replay regression tests (tests/replay/harness.py) and by bench/bag_timing.py.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from rclpy.event_handler import SubscriptionEventCallbacks
from rclpy.executors import SingleThreadedExecutor, TimeoutException
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.serialization import deserialize_message

from agentchemist.bag import BagMessage, PlaybackOptions
from agentchemist.bag.playback import NS, clock_steps
from agentchemist_interfaces.msg import AgentMessage, Anomaly
from agentchemist_ros.tools.bag.player import BagPlayer, Played

SIM_TIME = [Parameter("use_sim_time", value=True)]
#: keyword arguments for nodes under test: sim time, and no parameter services (six services per node
#: that nobody calls here, but that every executor wait would have to include).
NODE_KW = {"parameter_overrides": SIM_TIME, "start_parameter_services": False}


def drain(executor, limit: int = 100_000) -> int:
    """Run every ready callback until none is ready; returns how many ran.

    rclpy's executor hands out the callbacks of one wait set at a time and, with a zero timeout, raises
    TimeoutException once that set is used up, even when the callbacks it ran made new work ready (a
    node's output to the probe, an action request and its response). Only a wait that finds nothing
    right after a TimeoutException (a fresh wait set) means idle.
    """
    ran = 0
    progressed = False
    while ran < limit:
        try:
            handler, _entity, _node = executor.wait_for_ready_callbacks(timeout_sec=0.0)
        except TimeoutException:
            if not progressed:
                return ran
            progressed = False
            continue
        handler()
        if handler.exception() is not None:
            raise handler.exception()
        ran += 1
        progressed = True
    raise RuntimeError(f"the graph did not go idle after {limit} callbacks")


class Probe(Node):
    """Captures (topic, message) of every output topic, in arrival order."""

    def __init__(self, outputs: dict[str, tuple[type, object]]):
        super().__init__("replay_probe", start_parameter_services=False)
        self.received: list[tuple[str, object]] = []
        for topic, (cls, qos) in outputs.items():
            self.create_subscription(cls, topic, lambda m, t=topic: self.received.append((t, m)), qos,
                                     event_callbacks=SubscriptionEventCallbacks(use_default_callbacks=False))

    def on(self, topic: str) -> list:
        return [m for t, m in self.received if t == topic]


def not_from(senders: set[str]):
    """A player filter that drops agent messages and anomalies sent by the nodes under test (their live
    outputs are what the replay must reproduce, not inputs)."""
    def keep(msg: BagMessage) -> bool:
        if msg.topic == "/agentchemist/messages":
            return deserialize_message(msg.data, AgentMessage).sender not in senders
        if msg.topic == "/agentchemist/anomalies":
            return deserialize_message(msg.data, Anomaly).source not in senders
        return True
    return keep


@dataclass
class ReplayResult:
    probe: Probe
    published: int
    per_topic: dict = field(default_factory=dict)
    problems: list = field(default_factory=list)  # what the player reported (conversions, damage)


def ticked_steps(player: BagPlayer, ticks_ns) -> Iterator[Played | None]:
    """Like `player.steps()` (one pass, /clock before every message) with /clock also at each of `ticks_ns`
    (sorted bag times, also after the last message): when something outside the bag is due then, e.g. a
    recorded peer's answer or a node's timer."""
    ticks = list(ticks_ns)
    i = 0
    for msg in player.reader.messages(list(player.publishers_by_topic)):
        if player.message_filter is not None and not player.message_filter(msg):
            continue
        while i < len(ticks) and ticks[i] < msg.timestamp:
            if player.clock_ns is None or ticks[i] > player.clock_ns:
                player.publish_clock(ticks[i])
                yield None
            i += 1
        for ns in clock_steps(player.clock_ns, msg.timestamp, player.options.clock_step_s,
                              player.options.clock_resolution_s):
            player.publish_clock(ns)
            yield None
        played = player.publish(msg)
        if played is not None:
            yield played
    for tick in ticks[i:]:  # after the bag's last message: the clock runs on, as it did live
        if player.clock_ns is None or tick > player.clock_ns:
            player.publish_clock(tick)
            yield None


def replay(bag: Path, nodes: list[Node], inputs: list[str], outputs: dict[str, tuple[type, object]],
           senders: set[str], clock_step_s: float = 0.05, drain_on_clock: bool = True,
           clock_ticks_s=()) -> ReplayResult:
    """Play `inputs` of `bag` into `nodes` in lock step; capture `outputs`. Destroys the nodes after.

    clock_step_s: /clock ticks across gaps (for nodes with sim-time timers; 0: only at messages).
    drain_on_clock: run callbacks after each /clock step too; nodes without timers can skip it, since a
    node's /clock subscription (created first) is served before its other subscriptions in one pass.
    clock_ticks_s: further /clock values (sim seconds) to step to, wherever they fall.
    """
    probe = Probe(outputs)
    player = BagPlayer(bag, PlaybackOptions(fast=True, topics=tuple(inputs), clock_step_s=clock_step_s),
                       message_filter=not_from(senders), node_name="replay_player",
                       start_parameter_services=False)
    executor = SingleThreadedExecutor()
    for node in (player, probe, *nodes):
        executor.add_node(node)
    try:
        drain(executor)
        ticks = sorted({int(round(t * NS)) for t in clock_ticks_s})
        for step in (ticked_steps(player, ticks) if ticks else player.steps()):
            if step is not None or drain_on_clock:
                drain(executor)
        for _ in range(3):  # let late work (timers at the last clock value, services) settle
            drain(executor)
        return ReplayResult(probe, player.stats.messages, dict(player.stats.per_topic), player.all_problems())
    finally:
        executor.shutdown(timeout_sec=1.0)
        for node in (player, probe, *nodes):
            node.destroy_node()
