"""Chunk CRCs for the MCAP files the bag writer closes.

The rosbags library writes every chunk's ``uncompressed_crc`` as 0, which the MCAP spec reads as "not
computed": a flipped byte in such a chunk reads back as intact data (found by the issue 38 probe: 0 CRCs in
every file, a damaged bag replayed with rc 0). When a file is complete the writer seals it here: each
chunk's CRC-32 of its uncompressed records is written into its field in place (the file's size and every
offset in its indexes stay as they are). Readers then check it: rosbags' indexed reader and mcap_scan
refuse a chunk whose records do not match.
"""
from __future__ import annotations

import struct
import zlib
from pathlib import Path

from agentchemist.bag.errors import BagCorruptError
from agentchemist.bag.mcap_scan import MAGIC, OP_CHUNK, OP_DATA_END, OP_FOOTER, RECORD_PREFIX, _decompress

__all__ = ["chunk_crcs", "seal_chunk_crcs"]

#: within a chunk record's body: message start (8), message end (8), uncompressed size (8), then the CRC (4)
CRC_AT = 24


def _chunks(data: bytes):
    """(body offset, uncompressed size, crc, records) of each chunk in the data section."""
    pos = len(MAGIC)
    while pos + RECORD_PREFIX <= len(data):
        op = data[pos]
        (length,) = struct.unpack_from("<Q", data, pos + 1)
        body = pos + RECORD_PREFIX
        if op in (OP_DATA_END, OP_FOOTER) or body + length > len(data):
            return
        if op == OP_CHUNK:
            size, crc = struct.unpack_from("<QI", data, body + 16)
            (name_len,) = struct.unpack_from("<I", data, body + CRC_AT + 4)
            name_end = body + CRC_AT + 8 + name_len
            compression = data[body + CRC_AT + 8:name_end].decode("utf-8")
            (records_len,) = struct.unpack_from("<Q", data, name_end)
            records = data[name_end + 8:name_end + 8 + records_len]
            yield body, size, crc, _decompress(records, compression, size)
        pos = body + length


def chunk_crcs(path: str | Path) -> list[int]:
    """The CRC field of every chunk of an MCAP file (0: none written)."""
    data = Path(path).read_bytes()
    return [crc for _, _, crc, _ in _chunks(data)]


def seal_chunk_crcs(path: str | Path) -> int:
    """Write the CRC of every chunk of a complete MCAP file that has none; returns how many were written.
    BagCorruptError when a chunk does not decompress to its stated size (nothing is written then)."""
    path = Path(path)
    data = path.read_bytes()
    if not data.startswith(MAGIC):
        raise BagCorruptError(path, "not an MCAP file (bad magic at the start)")
    fields = []
    for body, size, crc, records in _chunks(data):
        if len(records) != size:
            raise BagCorruptError(path, f"chunk at byte {body - RECORD_PREFIX} decompresses to {len(records)} "
                                  f"bytes, its header says {size}")
        if crc == 0:
            fields.append((body + CRC_AT, zlib.crc32(records)))
    if fields:
        with open(path, "r+b") as fh:
            for at, crc in fields:
                fh.seek(at)
                fh.write(struct.pack("<I", crc))
            fh.flush()
    return len(fields)
