"""SQLite back end: one database file per run (``runs/<experiment_id>/records.db`` by convention).

Durability choice: WAL journal with ``synchronous=FULL``. In WAL mode FULL fsyncs the write-ahead log at
every COMMIT, so a batch is on disk (surviving a power cut, not only a process crash) when ``flush()``
returns. ``synchronous=NORMAL`` would sync only at checkpoints: committed batches could roll back on
power loss, which breaks "durable before acknowledged". The cost is one fsync per batch, which the
store's writer thread amortises over up to ``batch_size`` rows. Readers use their own connections and
are not blocked by the writer (WAL). On close the WAL is checkpointed into the main file, so the run
folder holds one self-contained ``.db``.

``max_pages`` caps the database size (``PRAGMA max_page_count``; pages are 4 KiB): a quota for small robot
disks, and the way tests make SQLite report "database or disk is full". It is applied at every (re)connect;
``set_max_pages`` changes it for the next reconnect, e.g. after space was freed.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentchemist.record import schema
from agentchemist.record.errors import RecordConfigError, StoreDamagedError, StoreUnavailableError
from agentchemist.record.sql_backend import SqlBackend


class SQLiteBackend(SqlBackend):
    """SQLite (WAL, synchronous=FULL) writer + per-call read connections."""

    name = "sqlite"
    dialect = "sqlite"
    placeholder = "?"

    def __init__(self, path: str | Path, *, max_pages: int | None = None, busy_timeout_s: float = 10.0) -> None:
        self.path = Path(path)
        if max_pages is not None and max_pages < 1:
            raise RecordConfigError(f"max_pages must be None or >= 1, got {max_pages}")
        if busy_timeout_s <= 0:
            raise RecordConfigError(f"busy_timeout_s must be > 0, got {busy_timeout_s}")
        self._max_pages = max_pages
        self._busy_timeout_s = busy_timeout_s
        self._conn: sqlite3.Connection | None = None

    def set_max_pages(self, max_pages: int | None) -> None:
        """Change the page cap used from the next (re)connect on (None = SQLite's default)."""
        if max_pages is not None and max_pages < 1:
            raise RecordConfigError(f"max_pages must be None or >= 1, got {max_pages}")
        self._max_pages = max_pages

    def connect(self) -> None:
        self.disconnect()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # The writer thread owns the connection after construction; access is never concurrent.
            conn = sqlite3.connect(
                self.path, isolation_level=None, check_same_thread=False, timeout=self._busy_timeout_s
            )
        except (sqlite3.Error, OSError) as exc:
            raise self.unavailable(f"cannot open SQLite database {self.path}", exc) from exc
        try:
            damage = self.damage(conn)
            if damage:
                raise StoreDamagedError(f"{self.path}: the database is damaged (PRAGMA quick_check: {damage}); "
                                        "it is not written to: move it aside to record a new run")
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise StoreUnavailableError(f"{self.path}: SQLite refused WAL mode (journal_mode={mode})")
            conn.execute("PRAGMA synchronous=FULL")
            if self._max_pages is not None:
                conn.execute(f"PRAGMA max_page_count={int(self._max_pages)}")
            conn.execute("BEGIN IMMEDIATE")
            for statement in schema.ddl("sqlite"):
                conn.execute(statement)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            conn.close()
            raise
        self._conn = conn

    @staticmethod
    def damage(conn: sqlite3.Connection) -> str:
        """'' for a database that passes SQLite's quick check (a new, empty file does), else what it found:
        each open checks the whole file once (a run's database: a few MB, some ms)."""
        try:
            rows = [str(r[0]) for r in conn.execute("PRAGMA quick_check(5)").fetchall()]
        except sqlite3.DatabaseError as exc:  # not a database at all, or its header is gone
            return str(exc)
        return "" if rows == ["ok"] else " ".join("; ".join(rows).split())[:300]  # one line

    def disconnect(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        try:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.Error:
            pass  # a full disk can refuse the checkpoint; the WAL stays and is still valid
        finally:
            conn.close()

    def _writer(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreUnavailableError(f"{self.path}: writer connection is closed")
        return self._conn

    def _begin(self) -> None:
        self._writer().execute("BEGIN IMMEDIATE")

    def _commit(self) -> None:
        self._writer().execute("COMMIT")

    def _rollback(self) -> None:
        conn = self._conn
        if conn is not None and conn.in_transaction:
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass

    def _exec(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._writer().execute(sql, tuple(params)).fetchall()

    def _exec_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self._writer().executemany(sql, rows)

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        try:
            conn = sqlite3.connect(self.path, timeout=self._busy_timeout_s)
        except sqlite3.Error as exc:
            raise self.unavailable(f"cannot read {self.path}", exc) from exc
        try:
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA query_only=ON")
            return [dict(r) for r in conn.execute(sql, tuple(params)).fetchall()]
        except sqlite3.Error as exc:
            raise self.unavailable(f"cannot read {self.path}", exc) from exc
        finally:
            conn.close()

    def classify(self, exc: BaseException) -> str:
        text = str(exc).lower()
        if isinstance(exc, sqlite3.Error) and ("full" in text or "no space" in text):
            return "disk_full"
        if isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text):
            return "database_locked"
        if isinstance(exc, sqlite3.OperationalError) and "i/o" in text:
            return "io_error"
        return "write_failed"
