"""One rosbag2 storage file (.mcap or .db3): read through rosbags, salvaged when rosbags refuses it.

The indexed readers of the rosbags library handle intact files (and both storage plugins, all metadata
versions). A file they refuse or fail in the middle of (truncated recording, corrupt chunk or page) is
read again with forgiving code: MCAP by a linear record walk (mcap_scan), SQLite row by row. What was
lost is reported as a BagProblem naming the file; what was intact is still delivered, in time order.
"""
from __future__ import annotations

import heapq
import shutil
import sqlite3
import struct
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Collection, Iterator

from rosbags.rosbag2 import Reader as RbReader
from rosbags.rosbag2 import ReaderError as RbReaderError

from agentchemist.bag.errors import BagCorruptError, BagProblem, QosError
from agentchemist.bag.info import TopicInfo
from agentchemist.bag.sqlite_pages import scan_rows
from agentchemist.bag.mcap_scan import McapScanner
from agentchemist.bag.qos import from_rosbags, parse_offered_qos

if sys.version_info >= (3, 14):  # pragma: no cover
    from compression import zstd
else:
    from backports import zstd

STORAGE_SUFFIXES = {".mcap": "mcap", ".db3": "sqlite3"}
_MAX = 2**63 - 1


@dataclass(frozen=True)
class BagMessage:
    """One recorded message: its topic, type, receive time (ns since the epoch) and CDR bytes."""

    topic: str
    msgtype: str
    timestamp: int
    data: bytes


def storage_kind(path: Path) -> str:
    """'mcap' or 'sqlite3' from the file name (a '.zstd' file-compression suffix is looked through)."""
    name = path.name[:-5] if path.name.endswith(".zstd") else path.name
    suffix = Path(name).suffix
    if suffix not in STORAGE_SUFFIXES:
        raise BagCorruptError(path, f"unknown storage file type {suffix!r} (expected .mcap or .db3)")
    return STORAGE_SUFFIXES[suffix]


class StorageFile:
    """One storage file. `message_compression`: rosbag2 'message' mode (each message zstd-compressed)."""

    def __init__(self, path: str | Path, message_compression: bool = False):
        self.path = Path(path)
        self.kind = storage_kind(self.path)
        self.message_compression = message_compression
        self.problems: list[BagProblem] = []
        self.salvaged = False
        self._tmp: tempfile.TemporaryDirectory | None = None
        self._reader: RbReader | None = None
        self._topics: dict[str, TopicInfo] | None = None
        self._times: tuple[int, int, int] | None = None  # count, start, end
        self._salvage_topics: dict[str, TopicInfo] = {}
        self._open()

    # ------------------------------------------------------------------ opening
    def _open(self) -> None:
        if not self.path.is_file():
            raise BagCorruptError(self.path, "storage file is missing")
        readable = self.path
        if self.path.name.endswith(".zstd"):  # rosbag2 'file' compression: the whole file is one zstd frame
            self._tmp = tempfile.TemporaryDirectory(prefix="agentchemist-bag-")
            readable = Path(self._tmp.name) / self.path.name[:-5]
            try:
                with self.path.open("rb") as src, zstd.open(src, "rb") as inp, readable.open("wb") as out:
                    shutil.copyfileobj(inp, out)
            except (OSError, zstd.ZstdError, EOFError) as exc:
                self._problem(f"zstd file compression is damaged ({exc}); reading what decompressed")
        self.readable = readable
        _check_magic(readable, self.kind)
        try:
            self._reader = RbReader(readable)
            self._reader.open()
        except Exception as exc:  # noqa: BLE001 - only damage is handled; anything else is re-raised
            if not _is_damage(exc):
                raise
            self._reader = None
            self._problem(f"{_describe(exc)}; recovering the intact messages")
            self.salvaged = True

    def _problem(self, text: str) -> None:
        self.problems.append(BagProblem(self.path, text))

    def close(self) -> None:
        if self._reader is not None:
            try:
                self._reader.close()
            except Exception:  # closing a half-broken file must not hide the real problem
                pass
            self._reader = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    # ------------------------------------------------------------------ contents
    def topics(self) -> dict[str, TopicInfo]:
        """Topics found in the file itself (definitions and QoS as stored there, counts as readable)."""
        if self._topics is None:
            if self._reader is not None:
                self._topics = {}
                for conn in self._reader.connections:
                    fmt = conn.msgdef.format.name.lower()
                    self._topics[conn.topic] = TopicInfo(
                        name=conn.topic, msgtype=conn.msgtype, count=conn.msgcount,
                        serialization_format=conn.ext.serialization_format,
                        offered_qos=tuple(from_rosbags(q) for q in conn.ext.offered_qos_profiles),
                        type_hash=conn.digest or "", msgdef=conn.msgdef.data or "",
                        msgdef_encoding={"msg": "ros2msg", "idl": "ros2idl"}.get(fmt, ""))
            else:
                self._scan_counts()
        return self._topics

    def times(self) -> tuple[int, int, int]:
        """(message count, first timestamp, last timestamp) in ns; (0, 0, 0) when empty."""
        if self._times is None:
            if self._reader is not None:
                n = self._reader.message_count
                self._times = (n, self._reader.start_time, self._reader.end_time - 1) if n else (0, 0, 0)
            else:
                self._scan_counts()
        return self._times

    def _scan_counts(self) -> None:
        counts: dict[str, int] = {}
        first, last, n = _MAX, 0, 0
        for msg in self._salvage_messages(None, None, None, record=False):
            counts[msg.topic] = counts.get(msg.topic, 0) + 1
            first, last, n = min(first, msg.timestamp), max(last, msg.timestamp), n + 1
        base = self._salvage_topics
        self._topics = {name: TopicInfo(name=t.name, msgtype=t.msgtype, count=counts.get(name, 0),
                                        serialization_format=t.serialization_format, offered_qos=t.offered_qos,
                                        type_hash=t.type_hash, msgdef=t.msgdef, msgdef_encoding=t.msgdef_encoding)
                        for name, t in base.items()}
        self._times = (n, first, last) if n else (0, 0, 0)

    def messages(self, topics: Collection[str] | None = None, start: int | None = None,
                 stop: int | None = None) -> Iterator[BagMessage]:
        """Messages of `topics` (None: all) with start <= timestamp < stop, in time order."""
        if self._reader is None:
            yield from self._salvage_messages(topics, start, stop)
            return
        conns = [c for c in self._reader.connections if topics is None or c.topic in topics]
        if not conns:
            return
        last_ts, same_ts = None, 0
        try:
            for conn, timestamp, data in self._reader.messages(conns, start=start, stop=stop):
                same_ts = same_ts + 1 if timestamp == last_ts else 1
                last_ts = timestamp
                yield BagMessage(conn.topic, conn.msgtype, timestamp, self._payload(data))
        except Exception as exc:  # noqa: BLE001 - only damage is handled; anything else is re-raised
            if not _is_damage(exc):
                raise
            # Damage in the middle: go on with the forgiving reader, after what was already delivered.
            where = f"after the message at {last_ts} ns" if last_ts is not None else "before the first message"
            self._problem(f"{_describe(exc)} {where}; recovering the rest")
            self.salvaged = True
            for msg in self._salvage_messages(topics, start, stop):
                if last_ts is not None and msg.timestamp <= last_ts:
                    if msg.timestamp == last_ts and same_ts <= 0:
                        yield msg
                    elif msg.timestamp == last_ts:
                        same_ts -= 1
                    continue
                yield msg

    def _payload(self, data) -> bytes:
        data = bytes(data)
        if self.message_compression:
            try:
                return zstd.decompress(data)
            except zstd.ZstdError as exc:
                raise BagCorruptError(self.path, f"a message does not zstd-decompress: {exc}") from None
        return data

    # ------------------------------------------------------------------ salvage
    def _salvage_messages(self, topics, start, stop, record: bool = True) -> Iterator[BagMessage]:
        source = self._salvage_mcap() if self.kind == "mcap" else self._salvage_sqlite()
        lo, hi = start if start is not None else 0, stop if stop is not None else _MAX
        for msg in source:
            if (topics is None or msg.topic in topics) and lo <= msg.timestamp < hi:
                yield msg

    def _salvage_mcap(self) -> Iterator[BagMessage]:
        scanner = McapScanner(self.readable)
        try:
            raw = list(scanner.messages())
        except BagCorruptError as exc:
            self._problem(f"{exc.problem}; nothing could be recovered")
            return
        for problem in scanner.problems:
            if problem not in self.problems:
                self.problems.append(problem)
        # Channels are resolved after the walk: the summary at the end may hold the only intact copy.
        self._salvage_topics = {}
        batch, unknown = [], 0
        for message in raw:
            channel = scanner.channels.get(message.channel_id)
            if channel is None:
                unknown += 1
                continue
            schema = scanner.schemas.get(channel.schema_id)
            msgtype = schema.name if schema else ""
            if channel.topic not in self._salvage_topics:
                self._salvage_topics[channel.topic] = TopicInfo(
                    name=channel.topic, msgtype=msgtype, count=0, serialization_format=channel.message_encoding,
                    offered_qos=_qos(channel.metadata.get("offered_qos_profiles", "")),
                    msgdef=schema.data if schema else "", msgdef_encoding=schema.encoding if schema else "")
            batch.append(BagMessage(channel.topic, msgtype, message.log_time, self._payload(message.data)))
        if unknown:
            self._problem(f"{unknown} messages on channels whose definition was lost were skipped")
        # Chunks of one writer are sequential in time, but a sort costs little and guarantees order.
        batch.sort(key=lambda m: m.timestamp)
        yield from batch

    def _salvage_sqlite_pages(self, exc: Exception) -> Iterator[BagMessage]:
        """SQLite refuses the file (a cut or damaged header): read the rows from its pages instead."""
        try:
            data = Path(self.readable).read_bytes()
        except OSError as err:
            self._problem(f"the database cannot be read ({err}); nothing could be recovered")
            return
        topics, messages, defs = _rosbag2_rows(scan_rows(data))
        by_id = {rowid: TopicInfo(name=v[1], msgtype=v[2], count=0, serialization_format=v[3] or "cdr",
                                  offered_qos=_qos(v[4] or ""), type_hash=(v[5] if len(v) > 5 else "") or "",
                                  msgdef=defs.get(v[2], ("", ""))[0], msgdef_encoding=defs.get(v[2], ("", ""))[1])
                 for rowid, v in topics.items()}
        self._salvage_topics = {t.name: t for t in by_id.values()}
        rows = sorted(((v[1], v[2], v[3]) for v in messages.values()), key=lambda r: r[1])
        kept = [r for r in rows if r[0] in by_id]
        self._problem(f"SQLite refuses the database ({exc}): truncated or damaged; {len(kept)} messages on "
                      f"{len(by_id)} topics recovered from its intact pages")
        for topic_id, ts, data in kept:
            info = by_id[topic_id]
            yield BagMessage(info.name, info.msgtype, int(ts), self._payload(data))

    def _salvage_sqlite(self) -> Iterator[BagMessage]:
        self._salvage_topics = {}
        try:
            con = sqlite3.connect(f"file:{self.readable}?immutable=1", uri=True)
            topic_rows = con.execute("SELECT * FROM topics").fetchall()
            names = [d[0] for d in con.execute("SELECT * FROM topics").description]
        except sqlite3.DatabaseError as exc:
            yield from self._salvage_sqlite_pages(exc)
            return
        defs = {}
        try:
            defs = {r[0]: (r[2], r[1]) for r in con.execute(
                "SELECT topic_type, encoding, encoded_message_definition FROM message_definitions")}
        except sqlite3.DatabaseError:
            pass
        by_id = {}
        for row in topic_rows:
            rec = dict(zip(names, row))
            msgdef, encoding = defs.get(rec["type"], ("", ""))
            by_id[rec["id"]] = TopicInfo(name=rec["name"], msgtype=rec["type"], count=0,
                                         serialization_format=rec.get("serialization_format", "cdr"),
                                         offered_qos=_qos(rec.get("offered_qos_profiles", "")),
                                         type_hash=rec.get("type_description_hash", "") or "",
                                         msgdef=msgdef, msgdef_encoding=encoding)
        self._salvage_topics = {t.name: t for t in by_id.values()}
        try:  # the timestamp index usually survives damage to the table pages
            keys = con.execute("SELECT id, timestamp FROM messages ORDER BY timestamp, id").fetchall()
        except sqlite3.DatabaseError:
            keys = None
        lost = 0
        rows = []
        if keys is not None:
            for mid, _ts in keys:
                try:
                    row = con.execute("SELECT topic_id, timestamp, data FROM messages WHERE id = ?", (mid,)).fetchone()
                except sqlite3.DatabaseError:
                    lost += 1
                    continue
                if row is not None:
                    rows.append(row)
        else:
            try:
                for row in con.execute("SELECT topic_id, timestamp, data FROM messages"):
                    rows.append(row)
            except sqlite3.DatabaseError as exc:
                self._problem(f"message table damaged after {len(rows)} rows ({exc})")
        con.close()
        if lost:
            self._problem(f"{lost} messages are on damaged pages and were skipped")
        rows.sort(key=lambda r: r[1])
        unknown = 0
        for topic_id, ts, data in rows:
            info = by_id.get(topic_id)
            if info is None:
                unknown += 1
                continue
            yield BagMessage(info.name, info.msgtype, int(ts), self._payload(data))
        if unknown:
            self._problem(f"{unknown} messages name a topic id missing from the topics table and were skipped")


def _rosbag2_rows(rows) -> tuple[dict, dict, dict]:
    """rosbag2's topics and messages among rows read from pages (sqlite_pages), told apart by their
    columns: topics (id, name, type, serialization_format, offered_qos_profiles[, type_description_hash])
    and messages (id, topic_id, timestamp, data)."""
    topics, messages, definitions = {}, {}, {}
    for rowid, values in rows:
        if len(values) in (5, 6) and all(isinstance(v, str) for v in values[1:4]) and values[1].startswith("/"):
            topics[rowid] = values
        elif len(values) == 5 and all(isinstance(v, str) for v in values[1:4]) and values[2] in ("ros2msg", "ros2idl"):
            definitions[values[1]] = (values[3], values[2])  # topic_type -> (definition, encoding)
        elif len(values) == 4 and isinstance(values[1], int) and isinstance(values[2], int) \
                and isinstance(values[3], bytes):
            messages[rowid] = values
    return topics, messages, definitions


def _qos(text: str):
    try:
        return parse_offered_qos(text)
    except QosError:
        return ()


_MAGIC = {"mcap": b"\x89MCAP0\r\n", "sqlite3": b"SQLite format 3\x00"}


def _check_magic(path: Path, kind: str) -> None:
    """A file that does not even start like its storage format is not a damaged bag: refuse it outright."""
    try:
        with path.open("rb") as f:
            head = f.read(len(_MAGIC[kind]))
    except OSError as exc:
        raise BagCorruptError(path, f"cannot be read: {exc.strerror or exc}") from None
    if not head:
        raise BagCorruptError(path, "is empty")
    if head != _MAGIC[kind]:
        what = "an MCAP file" if kind == "mcap" else "an SQLite database"
        raise BagCorruptError(path, f"is not {what} (bad magic bytes at the start)")


def _is_damage(exc: BaseException) -> bool:
    """Errors a damaged file produces in rosbags, sqlite (apsw) or decompression, as opposed to bugs."""
    if isinstance(exc, (RbReaderError, OSError, ValueError, KeyError, AssertionError, IndexError, EOFError,
                        zstd.ZstdError, struct.error)):
        return True
    if isinstance(exc, TypeError) and "ord()" in str(exc):  # rosbags reading past the end of a cut file
        return True
    return type(exc).__module__.split(".")[0] == "apsw"


def _describe(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    if isinstance(exc, RbReaderError):
        return f"unreadable as written ({text})"
    return f"{type(exc).__name__}: {text}"


def merge_in_time(sources: list[Iterator[BagMessage]]) -> Iterator[BagMessage]:
    """Merge per-file streams by timestamp; ties keep file order (split files are sequential)."""
    return heapq.merge(*sources, key=lambda m: m.timestamp)
