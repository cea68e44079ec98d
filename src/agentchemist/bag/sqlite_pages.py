"""Rows read straight from the pages of a damaged SQLite file, for a rosbag2 .db3 that SQLite refuses.

A recording cut in the middle of a file (a full disk, a copy interrupted, a half-truncated file) leaves a
database whose header names pages that are gone: SQLite then refuses the whole file ("database disk image
is malformed"), although most table pages are intact. Like the sqlite3 shell's ``.recover``, this walks
every page, keeps the table leaf pages (type 0x0D) and decodes their cells (the record format of
https://www.sqlite.org/fileformat.html: varint header, serial types, overflow chains for large payloads).
A cell whose overflow chain runs into the missing part is dropped. Rows carry no table name; rosbag2's
tables are told apart by their columns (see storage.py).
"""
from __future__ import annotations

import struct
from collections.abc import Iterator

HEADER = b"SQLite format 3\x00"
LEAF_TABLE = 0x0D


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    """SQLite's big-endian varint at `pos`: (value, next position)."""
    value = 0
    for i in range(8):
        byte = buf[pos + i]
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value, pos + i + 1
    return (value << 8) | buf[pos + 8], pos + 9


def _value(serial: int, buf: bytes, pos: int):
    """(value, size) of one column of serial type `serial` at `pos`."""
    sizes = {0: 0, 1: 1, 2: 2, 3: 3, 4: 4, 5: 6, 6: 8, 7: 8, 8: 0, 9: 0}
    if serial in sizes:
        n = sizes[serial]
        if serial == 0:
            return None, 0
        if serial in (8, 9):
            return serial - 8, 0
        if serial == 7:
            return struct.unpack(">d", buf[pos:pos + 8])[0], 8
        return int.from_bytes(buf[pos:pos + n], "big", signed=True), n
    if serial >= 12:
        n = (serial - 12) // 2
        raw = bytes(buf[pos:pos + n])
        if len(raw) < n:
            raise ValueError("value runs past the payload")
        return (raw if serial % 2 == 0 else raw.decode("utf-8", "replace")), n
    raise ValueError(f"reserved serial type {serial}")


def _record(payload: bytes) -> list:
    header_size, pos = _varint(payload, 0)
    serials = []
    while pos < header_size:
        serial, pos = _varint(payload, pos)
        serials.append(serial)
    values, pos = [], header_size
    for serial in serials:
        value, size = _value(serial, payload, pos)
        values.append(value)
        pos += size
    return values


def scan_rows(data: bytes) -> Iterator[tuple[int, list]]:
    """(rowid, column values) of every intact table row in the pages of `data` (a whole or cut .db3)."""
    if not data.startswith(HEADER) or len(data) < 100:
        return
    page_size = int.from_bytes(data[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    if page_size < 512 or page_size & (page_size - 1):
        return
    usable = page_size - data[20]
    pages = len(data) // page_size
    max_local = usable - 35
    min_local = (usable - 12) * 32 // 255 - 23

    def page(n: int) -> bytes | None:
        return data[(n - 1) * page_size:n * page_size] if 1 <= n <= pages else None

    for number in range(1, pages + 1):
        buf = page(number)
        base = 100 if number == 1 else 0
        if buf[base] != LEAF_TABLE:
            continue
        cells = int.from_bytes(buf[base + 3:base + 5], "big")
        for i in range(cells):
            try:
                ptr = int.from_bytes(buf[base + 8 + 2 * i:base + 10 + 2 * i], "big")
                size, pos = _varint(buf, ptr)
                rowid, pos = _varint(buf, pos)
                if size > len(data):
                    continue  # a torn cell's length
                if size <= max_local:
                    payload = buf[pos:pos + size]
                else:
                    local = min_local + (size - min_local) % (usable - 4)
                    local = local if local <= max_local else min_local
                    parts = [buf[pos:pos + local]]
                    got, nxt = local, int.from_bytes(buf[pos + local:pos + local + 4], "big")
                    while got < size:
                        over = page(nxt)
                        if over is None:
                            raise ValueError("overflow chain runs past the end of the file")
                        chunk = over[4:4 + min(usable - 4, size - got)]
                        parts.append(chunk)
                        got += len(chunk)
                        nxt = int.from_bytes(over[:4], "big")
                    payload = b"".join(parts)
                yield rowid, _record(payload)
            except (ValueError, IndexError, struct.error):
                continue  # a torn cell: the rows next to it are still good
