"""What a bag holds (the `bag info` view): topics, types, counts, duration, storage, files, problems."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from agentchemist.bag.errors import BagProblem
from agentchemist.bag.qos import QosProfile


@dataclass(frozen=True)
class TopicInfo:
    """One topic of a bag. count: messages; offered_qos: what its publishers offered while recording."""

    name: str
    msgtype: str
    count: int
    serialization_format: str = "cdr"
    offered_qos: tuple[QosProfile, ...] = ()
    type_hash: str = ""
    msgdef: str = ""
    msgdef_encoding: str = ""

    @property
    def latched(self) -> bool:
        return bool(self.offered_qos) and all(p.latched for p in self.offered_qos)


@dataclass(frozen=True)
class FileInfo:
    """One storage file. start_ns/end_ns: first and last message time (ns); size_bytes on disk."""

    path: Path
    size_bytes: int
    count: int
    start_ns: int
    end_ns: int


@dataclass(frozen=True)
class BagInfo:
    """A bag: its folder (or single storage file), storage plugin, times in ns since the epoch."""

    path: Path
    storage: str
    version: int | None
    files: tuple[FileInfo, ...]
    topics: tuple[TopicInfo, ...]
    count: int
    start_ns: int
    end_ns: int
    compression_format: str = ""
    compression_mode: str = ""
    ros_distro: str = ""
    custom_data: dict = field(default_factory=dict)
    problems: tuple[BagProblem, ...] = ()
    from_metadata: bool = True

    @property
    def duration_ns(self) -> int:
        return max(0, self.end_ns - self.start_ns) if self.count else 0

    @property
    def size_bytes(self) -> int:
        return sum(f.size_bytes for f in self.files)

    def topic(self, name: str) -> TopicInfo:
        for topic in self.topics:
            if topic.name == name:
                return topic
        raise KeyError(f"{self.path}: no topic {name!r} (topics: {', '.join(t.name for t in self.topics)})")


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.1f} {unit}" if unit != "B" else f"{n} B"
        value /= 1024
    return f"{n} B"  # pragma: no cover


def _stamp(ns: int) -> str:
    when = datetime.fromtimestamp(ns / 1e9, tz=timezone.utc)
    return f"{when:%b %d %Y %H:%M:%S}.{ns % 1_000_000_000:09d} ({ns // 1_000_000_000}.{ns % 1_000_000_000:09d})"


def format_info(info: BagInfo, verbose: bool = False) -> str:
    """Plain text in the layout of `ros2 bag info`; with `verbose`, each topic's offered QoS."""
    files = ", ".join(f.path.name for f in info.files) or "-"
    lines = [
        f"Files:             {files}",
        f"Bag size:          {_size(info.size_bytes)}",
        f"Storage id:        {info.storage}" + (f" (metadata version {info.version})" if info.version else ""),
        f"ROS Distro:        {info.ros_distro or 'unknown'}",
        f"Duration:          {info.duration_ns / 1e9:.9f}s",
    ]
    if info.count:
        lines += [f"Start:             {_stamp(info.start_ns)}", f"End:               {_stamp(info.end_ns)}"]
    lines.append(f"Messages:          {info.count}")
    if info.compression_mode:
        lines.append(f"Compression:       {info.compression_format} ({info.compression_mode})")
    width = max((len(t.name) for t in info.topics), default=0)
    for i, topic in enumerate(sorted(info.topics, key=lambda t: t.name)):
        head = "Topic information: " if i == 0 else " " * 19
        latched = " | latched" if topic.latched else ""
        lines.append(f"{head}Topic: {topic.name:<{width}} | Type: {topic.msgtype} | Count: {topic.count} | "
                     f"Serialization Format: {topic.serialization_format}{latched}")
        if verbose:
            for p in topic.offered_qos:
                lines.append(" " * 26 + f"QoS: {p.history}({p.depth}), {p.reliability}, {p.durability}")
    if not info.topics:
        lines.append("Topic information: none")
    if not info.from_metadata:
        lines.append("Note:              no metadata.yaml: this was read from the storage files themselves")
    for problem in info.problems:
        lines.append(f"Problem:           {problem}")
    return "\n".join(lines)
