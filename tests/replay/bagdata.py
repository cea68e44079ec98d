"""Small synthetic bags for the bag-tool tests (written with our BagWriter; no ROS needed)."""
from __future__ import annotations

import random
import string
from pathlib import Path

from rosbags.typesys import Stores, get_typestore

from agentchemist.bag import BagWriter, QosProfile, WriterOptions
from tests.conftest import REPO

REFERENCE = REPO.parent / "shared" / "fixtures" / "rosbag2_reference"
REFERENCE_START = 1586406456763032325
REFERENCE_DURATION = 151137181
_STORE = get_typestore(Stores.ROS2_JAZZY)
LATCHED = QosProfile(depth=1, reliability="reliable", durability="transient_local")
VOLATILE = QosProfile(depth=10, reliability="reliable", durability="volatile")


def string_cdr(text: str) -> bytes:
    cls = _STORE.types["std_msgs/msg/String"]
    return bytes(_STORE.serialize_cdr(cls(data=text), "std_msgs/msg/String"))


def decode_string(data: bytes) -> str:
    return _STORE.deserialize_cdr(data, "std_msgs/msg/String").data


def write_strings(path: Path, n: int = 50, *, storage: str = "mcap", size: int = 100, step_ns: int = 10_000_000,
                  start_ns: int = 1_000_000_000, topics=("/chatter",), latched=(), noise: bool = False,
                  **options) -> Path:
    """n String messages round-robin over `topics`, `step_ns` apart; text 'i:<index>:' padded to `size`
    with 'x' (compresses to nothing) or, with `noise`, seeded random letters (does not compress)."""
    rng = random.Random(7)
    with BagWriter(path, WriterOptions(storage=storage, **options)) as writer:
        for topic in topics:
            writer.add_topic(topic, "std_msgs/msg/String", [LATCHED if topic in latched else VOLATILE])
        for i in range(n):
            head = f"i:{i}:"
            pad = "".join(rng.choices(string.ascii_letters, k=size - len(head))) if noise else ""
            writer.write(topics[i % len(topics)], start_ns + i * step_ns, string_cdr((head + pad).ljust(size, "x")))
    return path


def index_of(data: bytes) -> int:
    return int(decode_string(data).split(":")[1])
