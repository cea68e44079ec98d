"""A local, fsync'd JSON-lines file that holds store operations while the database cannot take them.

Each line is one operation (see :mod:`agentchemist.record.store`): an insert with its unique ``uid``, or an
experiment start/finish. ``append`` returns only after the bytes and the file size are on disk, so an
operation in the spill is as durable as a committed row. Replay is idempotent (inserts carry their uid and
the database ignores a uid it already has), so a crash between replaying and truncating loses nothing and
duplicates nothing. A torn final line (the process died inside ``append``) was never acknowledged and is
dropped on read; any other undecodable line raises :class:`SpillCorruptError`.

While rows sit in the spill, reads merge them with what the database returns (``merge_*`` below).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from agentchemist.record.errors import SpillCorruptError
from agentchemist.record.schema import dumps


class SpillFile:
    """Append-only JSON-lines file with fsync, read back in order, truncated after a successful replay."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def append(self, operations: Iterable[dict[str, Any]]) -> int:
        """Append operations and fsync; returns how many were written."""
        lines = [dumps(op) + "\n" for op in operations]
        if not lines:
            return 0
        new_file = not self.path.exists()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            start = os.lseek(fd, 0, os.SEEK_END)
            try:
                view = memoryview("".join(lines).encode("utf-8"))
                while view:
                    written = os.write(fd, view)
                    view = view[written:]
                os.fsync(fd)
            except OSError:
                # Leave no partial line behind: the next append would glue onto it and corrupt both.
                try:
                    os.ftruncate(fd, start)
                except OSError:
                    pass
                raise
        finally:
            os.close(fd)
        if new_file:
            # The directory entry of a new file must be durable too, or a crash can lose the file.
            _fsync_dir(self.path.parent)
        return len(lines)

    def read(self) -> list[dict[str, Any]]:
        """All complete operations in append order ([] when the file does not exist)."""
        return [op for chunk in self.chunks(4096) for op in chunk]

    def chunks(self, size: int) -> Iterator[list[dict[str, Any]]]:
        """Complete operations in append order, ``size`` at a time, read lazily: a replay that fails on
        its first chunk does not parse a spill that grew during a long outage."""
        try:
            handle = self.path.open("rb")
        except (FileNotFoundError, NotADirectoryError):
            return
        with handle:
            chunk: list[dict[str, Any]] = []
            for number, line in enumerate(handle, start=1):
                if not line.endswith(b"\n"):
                    break  # a torn final line: its append never returned, so it was never acknowledged
                if not line.strip():
                    continue
                try:
                    chunk.append(json.loads(line))
                except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                    raise SpillCorruptError(f"{self.path}: line {number} is not valid JSON ({exc})") from exc
                if len(chunk) >= size:
                    yield chunk
                    chunk = []
            if chunk:
                yield chunk

    def repair(self) -> bool:
        """Cut a torn final line left by a process killed inside ``append`` (it was never acknowledged),
        so later appends start on a line boundary. Returns True when something was cut."""
        try:
            with self.path.open("r+b") as handle:
                size = handle.seek(0, os.SEEK_END)
                if size == 0:
                    return False
                handle.seek(size - 1)
                if handle.read(1) == b"\n":
                    return False
                # Find the last newline, reading backwards in blocks.
                end = size
                keep = 0
                while end > 0:
                    begin = max(0, end - 65536)
                    handle.seek(begin)
                    block = handle.read(end - begin)
                    index = block.rfind(b"\n")
                    if index >= 0:
                        keep = begin + index + 1
                        break
                    end = begin
                handle.truncate(keep)
                handle.flush()
                os.fsync(handle.fileno())
                return True
        except (FileNotFoundError, NotADirectoryError):
            return False

    def exists(self) -> bool:
        """True when the file holds at least one byte (possibly a torn line)."""
        try:
            return self.path.stat().st_size > 0
        except (FileNotFoundError, NotADirectoryError):
            return False

    def clear(self) -> None:
        """Remove the file once its operations are committed to the database."""
        try:
            self.path.unlink()
        except (FileNotFoundError, NotADirectoryError):
            return
        _fsync_dir(self.path.parent)


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some filesystems refuse fsync on directories; the data fsync above still happened
    finally:
        os.close(fd)


# ---- reading the database and the spill together -------------------------------------------------------
def merge_experiments(
    rows: dict[str, dict[str, Any]], operations: Iterable[dict[str, Any]], experiment_id: str | None
) -> list[dict[str, Any]]:
    """Apply spilled start/finish operations to experiment rows read from the database (same rules as
    the SQL back end) and return them ordered by start time."""
    for op in operations:
        eid = op.get("experiment_id")
        if op["op"] not in ("start", "finish") or (experiment_id is not None and eid != experiment_id):
            continue
        current = rows.get(eid)
        if op["op"] == "start":
            if current is None:
                rows[eid] = {"experiment_id": eid, "instruction": op["instruction"], "started": op["now"],
                             "finished": None, "status": "running", "reason": "", "metadata": dict(op["metadata"])}
            else:
                current["metadata"] = {**current["metadata"], **op["metadata"]}
                current["instruction"] = op["instruction"] or current["instruction"]
        else:
            if current is None:
                current = rows[eid] = {"experiment_id": eid, "instruction": "", "started": op["now"], "metadata": {}}
            current.update(finished=op["now"], status=op["status"], reason=op["reason"])
    return sorted(rows.values(), key=lambda e: (e["started"], e["experiment_id"]))


def merge_records(
    rows: list[dict[str, Any]],
    operations: Iterable[dict[str, Any]],
    table: str,
    experiment_id: str,
    *,
    quantity: str | None = None,
    since: float | None = None,
    until: float | None = None,
) -> list[dict[str, Any]]:
    """Database rows (with "uid") plus matching spilled inserts not yet in the database, by stamp."""
    seen = {r["uid"] for r in rows}
    extra = []
    for op in operations:
        if op["op"] != "insert" or op["table"] != table or op["experiment_id"] != experiment_id:
            continue
        row = op["row"]
        if op["uid"] in seen or (quantity is not None and row.get("quantity") != quantity):
            continue
        if (since is not None and row["stamp"] < since) or (until is not None and row["stamp"] > until):
            continue
        extra.append({**row, "uid": op["uid"], **({"seq": op["seq"]} if "seq" in op else {})})
    if not extra:
        return rows
    return sorted(rows + extra, key=lambda r: r["stamp"])  # stable: database order kept on equal stamps
