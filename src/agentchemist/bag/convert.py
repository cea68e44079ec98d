"""Copy part of a bag into a new one: some topics, a time window, another storage or compression.

Used to cut small test fixtures out of a long recording. A latched (transient-local) topic keeps its
last message from before the window, as a subscriber joining at the window start would have got it.
"""
from __future__ import annotations

from pathlib import Path
from typing import Collection

from agentchemist.bag.errors import BagOptionError
from agentchemist.bag.reader import BagReader
from agentchemist.bag.writer import BagWriter, WriterOptions


def copy_bag(src: str | Path, dst: str | Path, *, topics: Collection[str] | None = None,
             start_ns: int | None = None, stop_ns: int | None = None,
             options: WriterOptions | None = None, carry_latched: bool = True) -> Path:
    """Write the messages of `topics` (None: all) with start_ns <= t < stop_ns from `src` into `dst`.

    Definitions, type hashes and offered QoS are copied from the source. Returns the new bag folder.
    """
    if start_ns is not None and stop_ns is not None and stop_ns <= start_ns:
        raise BagOptionError(f"empty window: stop {stop_ns} <= start {start_ns}")
    with BagReader(src) as reader:
        infos = reader.topics()
        wanted = list(infos) if topics is None else list(topics)
        missing = [t for t in wanted if t not in infos]
        if missing:
            raise BagOptionError(f"{src}: no topic {', '.join(missing)} in the bag (has {', '.join(sorted(infos))})")
        with BagWriter(dst, options or WriterOptions(), types=reader.types) as writer:
            for name in wanted:
                info = infos[name]
                writer.add_topic(name, info.msgtype, info.offered_qos, msgdef=info.msgdef or None,
                                 type_hash=info.type_hash or None)
            if carry_latched and start_ns is not None:
                latched = [n for n in wanted if infos[n].latched]
                last = {}
                for msg in reader.messages(latched, None, start_ns):
                    last[msg.topic] = msg
                for msg in sorted(last.values(), key=lambda m: m.timestamp):
                    writer.write(msg.topic, msg.timestamp, msg.data)
            for msg in reader.messages(wanted, start_ns, stop_ns):
                writer.write(msg.topic, msg.timestamp, msg.data)
        return Path(dst)
