"""Write a rosbag2 bag (MCAP or sqlite3) from serialized messages, split by size.

The rosbags library writes each storage file; this module adds what rosbag2's recorder does around it:
files named `<bag>_<n>.<ext>` split when the current one reaches `max_bytes`, one metadata.yaml over
all of them (written on close, as rosbag2 does), the offered QoS of every topic, and the embedded
message definitions and type hashes. While a file is open it lives in a staging folder `<bag>/<bag>_<n>/`;
if the recorder dies, the reader still finds it there (and reads it up to the damage).
"""
from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import yaml
from rosbags.rosbag2 import Writer as RbWriter
from rosbags.rosbag2 import WriterError as RbWriterError
from rosbags.rosbag2.enums import CompressionFormat, CompressionMode, StoragePlugin

from agentchemist.bag.errors import BagExistsError, BagOptionError, UnknownMessageTypeError
from agentchemist.bag.mcap_crc import seal_chunk_crcs
from agentchemist.bag.qos import QosProfile, profile_dicts, to_rosbags
from agentchemist.bag.reader import METADATA
from agentchemist.bag.typesys import MessageTypes

STORAGES = {"mcap": (StoragePlugin.MCAP, ".mcap"), "sqlite3": (StoragePlugin.SQLITE3, ".db3")}
COMPRESSIONS = ("none", "zstd")
RECORD_OVERHEAD = 31  # MCAP message record header bytes; a fair per-message estimate for sqlite3 too


@dataclass(frozen=True)
class WriterOptions:
    """storage: mcap | sqlite3. max_bytes: split when a file holds this many serialized bytes (0: never).
    compression: none | zstd (MCAP: compressed chunks; sqlite3: each message, rosbag2's 'message' mode).
    strictly_increasing: store timestamps so that no two are equal (+1 ns), keeping arrival order
    explicit for every reader even when a simulated clock ticks coarsely.
    commit_interval_s: sqlite3 commits its open transaction, MCAP closes its pending chunk, at least this
    often (wall s), as rosbag2's recorder does when it flushes its cache: a recording killed mid-run keeps
    all but the last interval. A closed MCAP file carries every chunk's CRC (bag/mcap_crc.py)."""

    storage: str = "mcap"
    max_bytes: int = 0
    compression: str = "none"
    strictly_increasing: bool = False
    commit_interval_s: float = 1.0
    version: int = 9
    ros_distro: str = ""
    custom_data: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.storage not in STORAGES:
            raise BagOptionError(f"unknown storage {self.storage!r}: use mcap or sqlite3")
        if self.compression not in COMPRESSIONS:
            raise BagOptionError(f"unknown compression {self.compression!r}: use none or zstd")
        if not isinstance(self.max_bytes, int) or self.max_bytes < 0:
            raise BagOptionError(f"max_bytes must be a non-negative integer, got {self.max_bytes!r}")
        if 0 < self.max_bytes < 4096:
            raise BagOptionError(f"max_bytes {self.max_bytes} is too small to hold a file's definitions (>= 4096)")
        if not (isinstance(self.commit_interval_s, (int, float)) and 0 < self.commit_interval_s <= 3600):
            raise BagOptionError(f"commit_interval_s must be within (0, 3600] s, got {self.commit_interval_s!r}")
        if self.version not in (8, 9):
            raise BagOptionError(f"metadata version must be 8 or 9, got {self.version}")
        for key, value in self.custom_data.items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise BagOptionError(f"custom_data must map strings to strings, got {key!r}: {value!r}")


@dataclass
class _Topic:
    name: str
    msgtype: str
    offered_qos: tuple[QosProfile, ...]
    msgdef: str
    type_hash: str
    count: int = 0


@dataclass
class WriterStats:
    """Progress: messages and serialized bytes written, per topic and in the current file."""

    messages: int = 0
    bytes: int = 0
    file_index: int = 0
    file_bytes: int = 0
    per_topic: dict = field(default_factory=dict)
    files: list = field(default_factory=list)


class BagWriter:
    """A bag being written. Use as a context manager (close() writes metadata.yaml), or call close()."""

    def __init__(self, path: str | Path, options: WriterOptions | None = None, types: MessageTypes | None = None):
        self.path = Path(path)
        self.options = options or WriterOptions()
        if self.path.exists():
            raise BagExistsError(self.path, "already exists; choose another output (a bag is never overwritten)")
        self.types = types or MessageTypes(origin=self.path)
        self.topics: dict[str, _Topic] = {}
        self.stats = WriterStats()
        self._parts: list[dict] = []
        self._writer: RbWriter | None = None
        self._conns: dict[str, object] = {}
        self._last_ts = -1
        self._next_commit = time.monotonic() + self.options.commit_interval_s
        self._closed = False
        self.path.mkdir(parents=True)

    # ------------------------------------------------------------------ topics
    def add_topic(self, topic: str, msgtype: str, offered_qos: Sequence[QosProfile] = (),
                  msgdef: str | None = None, type_hash: str | None = None) -> None:
        """Declare a topic. Without msgdef/type_hash they come from the installed .msg files."""
        if topic in self.topics:
            if self.topics[topic].msgtype != msgtype:
                raise BagOptionError(f"topic {topic} already recorded as {self.topics[topic].msgtype}, not {msgtype}")
            return
        if not topic.startswith("/"):
            raise BagOptionError(f"topic {topic!r} must be absolute")
        if msgdef is None or type_hash is None:
            try:
                found_def, found_hash = self.types.definition(msgtype)
            except UnknownMessageTypeError as exc:
                raise UnknownMessageTypeError(self.path, msgtype, topic, exc.problem) from None
            msgdef = found_def if msgdef is None else msgdef
            type_hash = found_hash if type_hash is None else type_hash
        self.topics[topic] = _Topic(topic, msgtype, tuple(offered_qos), msgdef, type_hash)
        self.stats.per_topic.setdefault(topic, 0)
        if self._writer is not None:
            self._connect(self.topics[topic])

    # ------------------------------------------------------------------ writing
    def write(self, topic: str, timestamp: int, data: bytes | memoryview) -> int:
        """Store one serialized message received at `timestamp` (ns). Returns the timestamp stored."""
        if self._closed:
            raise BagOptionError(f"{self.path}: the bag is closed")
        entry = self.topics.get(topic)
        if entry is None:
            raise BagOptionError(f"{self.path}: topic {topic} was not added before writing")
        if not isinstance(timestamp, int) or timestamp < 0:
            raise BagOptionError(f"{self.path}: timestamp must be a non-negative integer of ns, got {timestamp!r}")
        if self.options.strictly_increasing and timestamp <= self._last_ts:
            timestamp = self._last_ts + 1
        self._last_ts = max(self._last_ts, timestamp)
        size = len(data) + RECORD_OVERHEAD
        if self._writer is not None and self.options.max_bytes and \
                self.stats.file_bytes and self.stats.file_bytes + size > self.options.max_bytes:
            self._roll()
        if self._writer is None:
            self._start_part()
        self._writer.write(self._conns[topic], timestamp, bytes(data))
        if time.monotonic() >= self._next_commit:
            self.commit()
        entry.count += 1
        self.stats.messages += 1
        self.stats.bytes += size
        self.stats.file_bytes += size
        self.stats.per_topic[topic] += 1
        return timestamp

    def commit(self) -> None:
        """Put what was written so far into the current file: sqlite3 commits its transaction, MCAP closes
        its pending chunk (rosbags closes one only at 1 MiB: a killed recording lost 30-40 % of a short run)
        and hands it to the OS. Called every commit_interval_s, so a killed recording loses at most that."""
        self._next_commit = time.monotonic() + self.options.commit_interval_s
        storage = getattr(self._writer, "storage", None)
        conn = getattr(storage, "conn", None)
        if conn is not None:
            conn.commit()
        chunk = getattr(storage, "chunk", None)
        if chunk is not None and chunk.msgs:  # a chunk without messages would have no time range
            storage.close_chunk()
            storage.bio.flush()

    def _part_name(self, index: int) -> str:
        return f"{self.path.name}_{index}"

    def _start_part(self) -> None:
        plugin, _ext = STORAGES[self.options.storage]
        staging = self.path / self._part_name(self.stats.file_index)
        writer = RbWriter(staging, version=self.options.version, storage_plugin=plugin)
        if self.options.compression == "zstd":
            mode = CompressionMode.STORAGE if self.options.storage == "mcap" else CompressionMode.MESSAGE
            writer.set_compression(mode, CompressionFormat.ZSTD)
        for key, value in self.options.custom_data.items():
            writer.set_custom_data(key, value)
        writer.open()
        self._writer = writer
        self._conns = {}
        for entry in self.topics.values():
            self._connect(entry)

    def _connect(self, entry: _Topic) -> None:
        try:
            self._conns[entry.name] = self._writer.add_connection(
                entry.name, entry.msgtype, msgdef=entry.msgdef, rihs01=entry.type_hash,
                offered_qos_profiles=[to_rosbags(q) for q in entry.offered_qos])
        except RbWriterError as exc:
            raise BagOptionError(f"{self.path}: cannot add topic {entry.name}: {exc}") from None

    def _roll(self) -> None:
        """Close the current file and move it into the bag folder under its final name."""
        writer, self._writer = self._writer, None
        writer.close()
        staging = writer.path
        part_meta = yaml.safe_load((staging / METADATA).read_text())["rosbag2_bagfile_information"]
        for rel in part_meta["relative_file_paths"]:
            if self.options.storage == "mcap":
                seal_chunk_crcs(staging / rel)  # rosbags writes none: a flipped byte must not read as intact
            shutil.move(str(staging / rel), str(self.path / rel))
        shutil.rmtree(staging)
        self._parts.append(part_meta)
        self.stats.files.append(self.path / part_meta["relative_file_paths"][0])
        self.stats.file_index += 1
        self.stats.file_bytes = 0

    def close(self) -> Path:
        """Finish the current file and write metadata.yaml over all files. Returns the bag folder."""
        if self._closed:
            return self.path
        if self._writer is None and not self._parts:
            self._start_part()  # an empty bag is still a valid bag
        if self._writer is not None:
            self._roll()
        self._closed = True
        (self.path / METADATA).write_text(yaml.safe_dump(
            {"rosbag2_bagfile_information": self._metadata()}, sort_keys=False, default_flow_style=False))
        return self.path

    def abort(self) -> None:
        """Stop without metadata (the state a killed recorder leaves behind)."""
        if self._writer is not None:
            self._writer.abort()
            self._writer = None
        self._closed = True

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close()  # even after an error: what was recorded is kept, with its metadata
        return False

    def _metadata(self) -> dict:
        files, start, end, total = [], None, None, 0
        for part in self._parts:
            n = int(part["message_count"])
            p_start = int(part["starting_time"]["nanoseconds_since_epoch"])
            p_dur = int(part["duration"]["nanoseconds"])
            files.append({"path": part["relative_file_paths"][0],
                          "starting_time": {"nanoseconds_since_epoch": p_start if n else 0},
                          "duration": {"nanoseconds": p_dur if n else 0}, "message_count": n})
            if n:
                start = p_start if start is None else min(start, p_start)
                end = p_start + p_dur if end is None else max(end, p_start + p_dur)
            total += n
        first = self._parts[0]
        version = self.options.version
        return {
            "version": version,
            "storage_identifier": self.options.storage,
            "duration": {"nanoseconds": (end - start) if total else 0},
            "starting_time": {"nanoseconds_since_epoch": start if total else 0},
            "message_count": total,
            "topics_with_message_count": [{
                "topic_metadata": {
                    "name": t.name, "type": t.msgtype, "serialization_format": "cdr",
                    "offered_qos_profiles": profile_dicts(t.offered_qos, version) if version >= 9
                    else yaml.safe_dump(profile_dicts(t.offered_qos, version), sort_keys=False).strip(),
                    "type_description_hash": t.type_hash},
                "message_count": t.count} for t in self.topics.values()],
            "compression_format": first.get("compression_format", ""),
            "compression_mode": first.get("compression_mode", ""),
            "relative_file_paths": [f["path"] for f in files],
            "files": files,
            "custom_data": dict(self.options.custom_data) or None,
            "ros_distro": self.options.ros_distro or first.get("ros_distro", ""),
        }
