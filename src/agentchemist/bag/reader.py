"""Open a rosbag2 bag (a folder with metadata.yaml and storage files, or one storage file) and read it.

Reads what `ros2 bag record` writes (sqlite3 and MCAP, metadata versions 4-9, zstd file or message
compression) and what our recorder writes. Damage is contained: a missing metadata.yaml makes the
reader fall back to the storage files in the folder; a missing, truncated or corrupt storage file
costs only its own damaged part. Every such problem is listed in `problems` with the file it concerns.
"""
from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Collection, Iterator

import yaml

from agentchemist.bag.errors import (BagCorruptError, BagMetadataError, BagNotFoundError, BagProblem, QosError,
                                     UnknownMessageTypeError)
from agentchemist.bag.info import BagInfo, FileInfo, TopicInfo
from agentchemist.bag.mcap_scan import McapScanner
from agentchemist.bag.qos import parse_offered_qos
from agentchemist.bag.storage import STORAGE_SUFFIXES, BagMessage, StorageFile, merge_in_time
from agentchemist.bag.typesys import MessageTypes

METADATA = "metadata.yaml"
MAX_VERSION = 9


class BagReader:
    """A bag opened for reading. Use as a context manager, or call close().

    path: the bag folder, or a single .mcap/.db3 file. types: where decoding looks for definitions not
    embedded in the bag (default: the installed packages).
    """

    def __init__(self, path: str | Path, types: MessageTypes | None = None):
        self.path = Path(path)
        if not self.path.exists():
            raise BagNotFoundError(self.path, "no such bag folder or storage file")
        if not (self.path.is_dir() or self.path.is_file()):
            raise BagNotFoundError(self.path, "not a bag folder or a storage file (a device or a pipe?)")
        self.problems: list[BagProblem] = []
        self.metadata: dict | None = None
        self.files: list[StorageFile] = []
        self.types = types or MessageTypes(origin=self.path)
        self._embedded_registered = False
        self._load()

    # ------------------------------------------------------------------ opening
    def _load(self) -> None:
        if self.path.is_file():
            self._open_files([self.path], message_compression=False)
            return
        meta_path = self.path / METADATA
        if meta_path.is_file():
            self.metadata = _read_metadata(meta_path)
            names = [Path(p).name for p in self.metadata.get("relative_file_paths", [])]
            mode = (self.metadata.get("compression_mode") or "").lower()
            fmt = self.metadata.get("compression_format") or ""
            if mode not in ("", "none", "file", "message"):
                raise BagMetadataError(meta_path, f"unknown compression_mode {mode!r}")
            if mode in ("file", "message") and fmt != "zstd":
                raise BagMetadataError(meta_path, f"compression format {fmt!r} is not supported (only zstd)")
            paths = []
            for name in names:
                if (self.path / name).is_file():
                    paths.append(self.path / name)
                else:
                    self.problems.append(BagProblem(self.path / name, "listed in metadata.yaml but missing; "
                                                    "its messages cannot be played"))
            self._open_files(paths, message_compression=mode == "message")
            if not self.files:
                raise BagCorruptError(self.path, "none of the storage files listed in metadata.yaml can be read: "
                                      + "; ".join(str(p) for p in self.problems))
            return
        found = discover_storage_files(self.path)
        if not found:
            raise BagNotFoundError(meta_path, "missing, and the folder holds no .mcap or .db3 storage file: "
                                   "not a rosbag2 bag")
        self.problems.append(BagProblem(meta_path, f"missing (recording interrupted, or copied without it); "
                                        f"reading the {len(found)} storage file(s) found instead"))
        self._open_files(found, message_compression=False)

    def _open_files(self, paths: list[Path], message_compression: bool) -> None:
        for path in paths:
            try:
                self.files.append(StorageFile(path, message_compression=message_compression))
            except BagCorruptError as exc:
                self.problems.append(BagProblem(exc.path, exc.problem))
        if not self.files and self.path.is_file():
            raise BagCorruptError(self.path, "; ".join(p.problem for p in self.problems) or "unreadable")

    def close(self) -> None:
        for f in self.files:
            f.close()
        self.files = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    # ------------------------------------------------------------------ contents
    def all_problems(self) -> list[BagProblem]:
        seen, out = set(), []
        for problem in [*self.problems, *(p for f in self.files for p in f.problems)]:
            if problem not in seen:
                seen.add(problem)
                out.append(problem)
        return out

    def topics(self) -> dict[str, TopicInfo]:
        """Topics: metadata.yaml's names, types, counts and QoS, with definitions from the storage files."""
        from_files: dict[str, TopicInfo] = {}
        counts: dict[str, int] = {}
        for f in self.files:
            for name, t in f.topics().items():
                counts[name] = counts.get(name, 0) + t.count
                if name not in from_files or (not from_files[name].msgdef and t.msgdef):
                    from_files[name] = t
        if self.metadata is None:
            return {n: _replace_count(t, counts[n]) for n, t in from_files.items()}
        topics = {}
        for entry in self.metadata.get("topics_with_message_count", []):
            meta = entry.get("topic_metadata", {})
            name = meta.get("name")
            stored = from_files.get(name)
            try:
                qos = parse_offered_qos(meta.get("offered_qos_profiles", ""))
            except QosError as exc:
                self.problems.append(BagProblem(self.path / METADATA, f"topic {name}: {exc}"))
                qos = stored.offered_qos if stored else ()
            topics[name] = TopicInfo(
                name=name, msgtype=meta.get("type", ""), count=int(entry.get("message_count", 0)),
                serialization_format=meta.get("serialization_format", "cdr"), offered_qos=qos,
                type_hash=meta.get("type_description_hash", "") or (stored.type_hash if stored else ""),
                msgdef=stored.msgdef if stored else "", msgdef_encoding=stored.msgdef_encoding if stored else "")
        return topics

    def info(self) -> BagInfo:
        topics = self.topics()
        files = []
        for f in self.files:
            n, first, last = f.times()
            files.append(FileInfo(f.path, f.path.stat().st_size, n, first, last))
        meta = self.metadata or {}
        if self.metadata is not None:
            count = int(meta.get("message_count", 0))
            start = int(meta.get("starting_time", {}).get("nanoseconds_since_epoch", 0))
            end = start + int(meta.get("duration", {}).get("nanoseconds", 0))
        else:
            count = sum(f.count for f in files)
            starts = [f.start_ns for f in files if f.count]
            start, end = (min(starts), max(f.end_ns for f in files if f.count)) if starts else (0, 0)
        storage = meta.get("storage_identifier") or (self.files[0].kind if self.files else "unknown")
        return BagInfo(path=self.path, storage=storage, version=meta.get("version"), files=tuple(files),
                       topics=tuple(topics.values()), count=count, start_ns=start, end_ns=end,
                       compression_format=meta.get("compression_format") or "",
                       compression_mode=meta.get("compression_mode") or "",
                       ros_distro=meta.get("ros_distro") or "", custom_data=dict(meta.get("custom_data") or {}),
                       problems=tuple(self.all_problems()), from_metadata=self.metadata is not None)

    def verify(self) -> tuple[int, list[BagProblem]]:
        """Read every byte that holds messages and check it: MCAP records walked with their chunk CRCs and
        compression (mcap_scan), sqlite3 files through SQLite's own integrity check and every row. Returns
        the messages that read intact and every problem found (also those of opening the bag)."""
        readable, problems = 0, list(self.all_problems())
        for f in self.files:
            if f.kind == "mcap":
                scanner = McapScanner(f.readable)
                readable += sum(1 for _ in scanner.messages())
                problems += scanner.problems
                continue
            try:
                con = sqlite3.connect(f"file:{f.readable}?immutable=1", uri=True)
                verdict = [r[0] for r in con.execute("PRAGMA integrity_check(20)")]
                con.close()
            except sqlite3.DatabaseError as exc:
                verdict = [str(exc)]
            if verdict != ["ok"]:
                problems.append(BagProblem(f.path, "SQLite integrity check: " + "; ".join(verdict)))
            before = len(f.problems)
            readable += sum(1 for _ in f.messages())
            problems += f.problems[before:]
        if self.metadata is not None and (stated := _stated_count(self.metadata)) != readable:
            # a count that is not the files' (99999999999, or messages lost) is said, never taken on trust
            problems.append(BagProblem(self.path / METADATA, f"message_count says {stated} messages; the "
                                                             f"storage files hold {readable} readable"))
        unique = list(dict.fromkeys(problems))
        return readable, unique

    def messages(self, topics: Collection[str] | None = None, start: int | None = None,
                 stop: int | None = None) -> Iterator[BagMessage]:
        """Messages of `topics` (None: all) with start <= timestamp < stop (ns), in time order across files."""
        wanted = set(topics) if topics is not None else None
        return merge_in_time([f.messages(wanted, start, stop) for f in self.files])

    # ------------------------------------------------------------------ decoding
    def decoder(self) -> MessageTypes:
        """The bag's definitions registered (embedded ones first), ready for `decode`."""
        for topic in self.topics().values():
            if topic.msgdef:
                try:
                    self.types.add_embedded(topic.msgtype, topic.msgdef, topic.msgdef_encoding or "ros2msg")
                except UnknownMessageTypeError as exc:
                    self.problems.append(BagProblem(self.path, exc.problem))
        return self.types

    def decode(self, message: BagMessage) -> object:
        """A message as a rosbags object; UnknownMessageTypeError if its type has no definition anywhere."""
        if not self._embedded_registered:
            self.decoder()
            self._embedded_registered = True
        types = self.types
        try:
            return types.decode(message.data, message.msgtype, message.topic)
        except UnknownMessageTypeError:
            raise
        except Exception as exc:  # noqa: BLE001 - the bytes do not match the definition
            raise BagCorruptError(self.path, f"a {message.msgtype} message on {message.topic} at "
                                  f"{message.timestamp} ns does not decode: {exc}") from None


def _stated_count(meta: dict) -> int | None:
    """metadata.yaml's message_count as an integer (None when it is not one)."""
    try:
        return int(meta.get("message_count", 0))
    except (TypeError, ValueError):
        return None


def _replace_count(topic: TopicInfo, count: int) -> TopicInfo:
    return TopicInfo(topic.name, topic.msgtype, count, topic.serialization_format, topic.offered_qos,
                     topic.type_hash, topic.msgdef, topic.msgdef_encoding)


def _read_metadata(path: Path) -> dict:
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise BagMetadataError(path, f"is not valid YAML: {exc}") from None
    except OSError as exc:
        raise BagMetadataError(path, f"cannot be read: {exc.strerror or exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("rosbag2_bagfile_information"), dict):
        raise BagMetadataError(path, "has no rosbag2_bagfile_information mapping: not rosbag2 metadata")
    meta = data["rosbag2_bagfile_information"]
    for key in ("version", "storage_identifier", "relative_file_paths", "topics_with_message_count"):
        if key not in meta:
            raise BagMetadataError(path, f"lacks the key {key!r}")
    if not isinstance(meta["version"], int) or meta["version"] > MAX_VERSION:
        raise BagMetadataError(path, f"metadata version {meta['version']!r} is not supported (1..{MAX_VERSION})")
    if meta["storage_identifier"] not in STORAGE_SUFFIXES.values():
        raise BagMetadataError(path, f"storage plugin {meta['storage_identifier']!r} is not supported "
                               "(sqlite3 or mcap)")
    return meta


def discover_storage_files(folder: Path) -> list[Path]:
    """Storage files of a bag folder without metadata: `<name>_<n>.<ext>` in split order, then any others.

    Also looks one level down, where our recorder keeps the file it is writing until the split closes.
    """
    found = [p for p in folder.iterdir() if p.is_file() and _is_storage(p)]
    for sub in sorted(p for p in folder.iterdir() if p.is_dir()):
        found += [p for p in sub.iterdir() if p.is_file() and _is_storage(p)]
    return sorted(found, key=_split_key)


def _is_storage(path: Path) -> bool:
    name = path.name[:-5] if path.name.endswith(".zstd") else path.name
    return Path(name).suffix in STORAGE_SUFFIXES


def _split_key(path: Path):
    match = re.search(r"_(\d+)\.(mcap|db3)", path.name)
    return (int(match.group(1)) if match else 1 << 30, path.name)
