"""Lock-step replay: play a bag into nodes under test, one message at a time, with no twin running.

The player, the nodes under test and a probe that captures their outputs share one
SingleThreadedExecutor. Fast DDS delivers intra-process messages during publish(), so after each
published message (or /clock step) `drain` runs every callback that became ready, timers included,
before the next one goes out. The order the nodes see is the bag's order on every run: deterministic.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import rclpy
from rclpy.event_handler import SubscriptionEventCallbacks
from rclpy.executors import SingleThreadedExecutor, TimeoutException
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.serialization import deserialize_message

from agentchemist.bag import BagMessage, PlaybackOptions
from agentchemist_interfaces.msg import AgentMessage, Anomaly
from agentchemist_ros.bag.player import BagPlayer
from agentchemist_ros.common.timeconv import to_sec
from tests.conftest import REPO

FIXTURES = REPO / "tests" / "fixtures" / "bags"
LIVE = FIXTURES / "hcl_short_live.json"
SIM_TIME = [Parameter("use_sim_time", value=True)]
#: keyword arguments for nodes under test: sim time, and no parameter services (six services per node
#: that nobody calls here, but that every executor wait would have to include).
NODE_KW = {"parameter_overrides": SIM_TIME, "start_parameter_services": False}


def drain(executor, limit: int = 100_000) -> int:
    """Run every ready callback until none is ready; returns how many ran."""
    ran = 0
    while ran < limit:
        try:
            handler, _entity, _node = executor.wait_for_ready_callbacks(timeout_sec=0.0)
        except TimeoutException:
            return ran
        handler()
        if handler.exception() is not None:
            raise handler.exception()
        ran += 1
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


def replay(bag: Path, nodes: list[Node], inputs: list[str], outputs: dict[str, tuple[type, object]],
           senders: set[str], clock_step_s: float = 0.05, drain_on_clock: bool = True) -> ReplayResult:
    """Play `inputs` of `bag` into `nodes` in lock step; capture `outputs`. Destroys the nodes after.

    clock_step_s: /clock ticks across gaps (for nodes with sim-time timers; 0: only at messages).
    drain_on_clock: run callbacks after each /clock step too; nodes without timers can skip it, since a
    node's /clock subscription (created first) is served before its other subscriptions in one pass.
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
        for step in player.steps():
            if step is not None or drain_on_clock:
                drain(executor)
        for _ in range(3):  # let late work (timers at the last clock value, services) settle
            drain(executor)
        return ReplayResult(probe, player.stats.messages, dict(player.stats.per_topic), player.all_problems())
    finally:
        executor.shutdown(timeout_sec=1.0)
        for node in (player, probe, *nodes):
            node.destroy_node()


def recorded(bag: Path, topic: str, cls) -> list:
    """Every message of `topic` in `bag`, deserialized with the rclpy class `cls` (the live outputs)."""
    from agentchemist.bag import BagReader
    with BagReader(bag) as reader:
        return [deserialize_message(m.data, cls) for m in reader.messages([topic])]


def live_summary() -> dict:
    return json.loads(LIVE.read_text())


def ensure_rclpy():
    if not rclpy.ok():
        rclpy.init()


def stamp(msg) -> float:
    return to_sec(msg.stamp)
