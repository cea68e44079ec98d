"""A forgiving linear reader of MCAP files, for files the indexed reader refuses.

A recording that was killed leaves an MCAP without its summary and footer; a disk error leaves a chunk
whose CRC does not match. The data section is still a sequence of length-prefixed records, so every
message before the damage (and every intact chunk after a corrupt one) can be recovered. This reader
walks the records in file order (MCAP spec: https://mcap.dev/spec), reports each problem as a
BagProblem, and yields what is intact. Messages inside a chunk come out in log-time order (stable).
"""
from __future__ import annotations

import struct
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from agentchemist.bag.errors import BagCorruptError, BagProblem

if sys.version_info >= (3, 14):  # pragma: no cover
    from compression import zstd
else:
    from backports import zstd

MAGIC = b"\x89MCAP0\r\n"
OP_HEADER, OP_FOOTER, OP_SCHEMA, OP_CHANNEL, OP_MESSAGE, OP_CHUNK = 0x01, 0x02, 0x03, 0x04, 0x05, 0x06
OP_DATA_END = 0x0F
RECORD_PREFIX = 9  # opcode (1) + length (8)


@dataclass(frozen=True)
class McapSchema:
    id: int
    name: str
    encoding: str
    data: str


@dataclass(frozen=True)
class McapChannel:
    id: int
    schema_id: int
    topic: str
    message_encoding: str
    metadata: dict


@dataclass(frozen=True)
class McapMessage:
    channel_id: int
    log_time: int
    data: bytes


class _Buf:
    """Little-endian field reader over one record body; running past the end raises ValueError."""

    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ValueError(f"record field runs past its record ({self.pos}+{n} > {len(self.data)})")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def u16(self) -> int:
        return struct.unpack("<H", self.take(2))[0]

    def u32(self) -> int:
        return struct.unpack("<I", self.take(4))[0]

    def u64(self) -> int:
        return struct.unpack("<Q", self.take(8))[0]

    def string(self) -> str:
        return self.take(self.u32()).decode("utf-8")

    def rest(self) -> bytes:
        out = self.data[self.pos:]
        self.pos = len(self.data)
        return out


def _decompress(data: bytes, compression: str, size: int) -> bytes:
    if compression == "":
        return data
    if compression == "zstd":
        return zstd.decompress(data)
    if compression == "lz4":
        import lz4.frame
        return lz4.frame.decompress(data)
    raise ValueError(f"unsupported chunk compression {compression!r}")


class McapScanner:
    """Walk one MCAP file; `problems` collects what was wrong, `schemas`/`channels` what was found."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.problems: list[BagProblem] = []
        self.schemas: dict[int, McapSchema] = {}
        self.channels: dict[int, McapChannel] = {}
        self.complete = False  # True when the walk reached DataEnd or the footer without damage

    def _problem(self, text: str) -> None:
        self.problems.append(BagProblem(self.path, text))

    def messages(self) -> Iterator[McapMessage]:
        """Every intact message, in file order (chunk by chunk; log-time order inside a chunk)."""
        try:
            data = self.path.read_bytes()
        except OSError as exc:
            raise BagCorruptError(self.path, f"cannot read: {exc.strerror or exc}") from None
        if not data.startswith(MAGIC):
            raise BagCorruptError(self.path, "not an MCAP file (bad magic at the start)")
        pos = len(MAGIC)
        count = 0
        in_summary = False
        while True:
            if pos == len(data) and in_summary:
                self._problem(f"the summary section ends at byte {pos} without a footer; {count} messages recovered")
                return
            if pos == len(data):
                self._problem(f"file ends at byte {pos} without a footer: truncated (recording interrupted?); "
                              f"{count} messages recovered")
                return
            if pos + RECORD_PREFIX > len(data):
                self._problem(f"truncated record header at byte {pos}; {count} messages recovered")
                return
            op = data[pos]
            (length,) = struct.unpack_from("<Q", data, pos + 1)
            body_start = pos + RECORD_PREFIX
            if body_start + length > len(data):
                self._problem(f"record 0x{op:02x} at byte {pos} claims {length} bytes but the file ends after "
                              f"{len(data) - body_start}: truncated; {count} messages recovered")
                return
            body = data[body_start:body_start + length]
            pos = body_start + length
            if op == OP_FOOTER:
                self.complete = not self.problems
                return
            if op == OP_DATA_END:
                # The summary section follows: it repeats every schema and channel, which rescues the
                # channels whose only other copy was in a corrupt chunk. It holds no messages.
                in_summary = True
                continue
            try:
                if op == OP_CHUNK:
                    for message in self._chunk(body, pos - length - RECORD_PREFIX):
                        count += 1
                        yield message
                else:
                    message = self._record(op, body)
                    if message is not None:
                        count += 1
                        yield message
            except (ValueError, UnicodeDecodeError, struct.error, zstd.ZstdError) as exc:
                self._problem(f"record 0x{op:02x} at byte {pos - length - RECORD_PREFIX} is corrupt ({exc}); skipped")

    def _record(self, op: int, body: bytes) -> McapMessage | None:
        buf = _Buf(body)
        if op == OP_SCHEMA:
            sid, name, encoding = buf.u16(), buf.string(), buf.string()
            self.schemas[sid] = McapSchema(sid, name, encoding, buf.take(buf.u32()).decode("utf-8"))
        elif op == OP_CHANNEL:
            cid, sid, topic, encoding = buf.u16(), buf.u16(), buf.string(), buf.string()
            meta_end = buf.u32() + buf.pos
            metadata = {}
            while buf.pos < meta_end:
                key = buf.string()
                metadata[key] = buf.string()
            self.channels[cid] = McapChannel(cid, sid, topic, encoding, metadata)
        elif op == OP_MESSAGE:
            cid, _seq, log_time, _pub = buf.u16(), buf.u32(), buf.u64(), buf.u64()
            return McapMessage(cid, log_time, buf.rest())
        return None  # header, indexes, statistics, metadata, attachments: not needed to recover messages

    def _chunk(self, body: bytes, offset: int) -> Iterator[McapMessage]:
        buf = _Buf(body)
        _start, _end, size, crc = buf.u64(), buf.u64(), buf.u64(), buf.u32()
        compression = buf.string()
        records = _decompress(buf.take(buf.u64()), compression, size)
        if len(records) != size:
            raise ValueError(f"chunk at byte {offset} decompresses to {len(records)} bytes, header says {size}")
        if crc and zlib.crc32(records) != crc:
            raise ValueError(f"chunk at byte {offset} fails its CRC check")
        inner, messages = 0, []
        while inner < len(records):
            if inner + RECORD_PREFIX > len(records):
                raise ValueError(f"chunk at byte {offset} ends inside a record header")
            op = records[inner]
            (length,) = struct.unpack_from("<Q", records, inner + 1)
            start = inner + RECORD_PREFIX
            if start + length > len(records):
                raise ValueError(f"chunk at byte {offset} holds a record longer than the chunk")
            message = self._record(op, records[start:start + length])
            if message is not None:
                messages.append(message)
            inner = start + length
        messages.sort(key=lambda m: m.log_time)
        yield from messages
