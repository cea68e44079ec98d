"""Replay test helpers: the fixture bags and what the tests read from them. The lock-step replay engine
(`replay`, `drain`, `Probe` ...) lives in agentchemist_ros.tools.bag.replay and is re-exported here."""
from __future__ import annotations

import json
from pathlib import Path

import rclpy
from rclpy.serialization import deserialize_message

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
