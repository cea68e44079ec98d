"""PostgreSQL back end (psycopg 3) for fleet-scale storage: the same schema as SQLite.

The writer connection runs each batch in one transaction (``executemany`` is pipelined by psycopg 3, so a
batch costs about one round trip) and commits; PostgreSQL's own WAL makes a commit durable. Schema
creation holds an advisory lock so several recorders starting together do not race on CREATE TABLE.
A dropped connection surfaces as ``psycopg.OperationalError``; the store then spills and later calls
``connect`` again, which opens a fresh connection.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg.rows import dict_row

from agentchemist.record import schema
from agentchemist.record.errors import RecordConfigError, StoreUnavailableError
from agentchemist.record.sql_backend import SqlBackend

_SCHEMA_LOCK_KEY = 0x4167_6E74_4368_656D & 0x7FFF_FFFF_FFFF_FFFF  # "AgntChem": arbitrary, fixed


def redact(url: str) -> str:
    """The URL with any password replaced, for messages and spill file names."""
    try:
        info = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "<unparsable postgresql url>"
    if "password" in info:
        info["password"] = "***"
    return psycopg.conninfo.make_conninfo(**{k: str(v) for k, v in info.items()})


class PostgresBackend(SqlBackend):
    """psycopg 3 writer connection + a lock-protected read connection."""

    name = "postgresql"
    dialect = "postgres"
    placeholder = "%s"

    def __init__(self, url: str, *, connect_timeout_s: float = 5.0) -> None:
        if not isinstance(url, str) or not url.startswith(("postgresql://", "postgres://")):
            raise RecordConfigError(f"PostgreSQL URL must start with postgresql://, got {url!r}")
        if connect_timeout_s <= 0:
            raise RecordConfigError(f"connect_timeout_s must be > 0, got {connect_timeout_s}")
        self.url = url
        self._kwargs: dict[str, Any] = {
            "connect_timeout": max(1, round(connect_timeout_s)),
            # Keepalives turn a silently vanished server into an error within seconds instead of hours.
            "keepalives": 1,
            "keepalives_idle": 5,
            "keepalives_interval": 2,
            "keepalives_count": 3,
        }
        self._conn: psycopg.Connection[Any] | None = None
        self._reader: psycopg.Connection[Any] | None = None
        self._read_lock = threading.Lock()

    def connect(self) -> None:
        self.disconnect()
        try:
            conn = psycopg.connect(self.url, autocommit=False, **self._kwargs)
        except psycopg.Error as exc:
            raise self.unavailable(f"cannot connect to {redact(self.url)}", exc) from exc
        try:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK_KEY,))
            for statement in schema.ddl("postgres"):
                conn.execute(statement)
            conn.commit()
        except BaseException:
            conn.close()
            raise
        self._conn = conn

    def disconnect(self) -> None:
        conn, self._conn = self._conn, None
        _close_quietly(conn)

    def close_reader(self) -> None:
        with self._read_lock:
            reader, self._reader = self._reader, None
            _close_quietly(reader)

    def _writer(self) -> psycopg.Connection[Any]:
        if self._conn is None or self._conn.closed:
            raise StoreUnavailableError(f"{redact(self.url)}: writer connection is closed")
        return self._conn

    def _begin(self) -> None:
        self._writer()  # psycopg opens the transaction implicitly with the first statement

    def _commit(self) -> None:
        self._writer().commit()

    def _rollback(self) -> None:
        conn = self._conn
        if conn is not None and not conn.closed:
            try:
                conn.rollback()
            except psycopg.Error:
                pass

    def _exec(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        cursor = self._writer().execute(sql, tuple(params))
        return cursor.fetchall() if cursor.description else []

    def _exec_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with self._writer().cursor() as cursor:
            cursor.executemany(sql, rows)

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        with self._read_lock:
            # One retry with a fresh connection: the cached one may have died with the server.
            for attempt in (1, 2):
                try:
                    if self._reader is None or self._reader.closed:
                        self._reader = psycopg.connect(self.url, autocommit=True, row_factory=dict_row, **self._kwargs)
                    return list(self._reader.execute(sql, tuple(params)).fetchall())
                except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
                    if self._reader is not None:
                        try:
                            self._reader.close()
                        except psycopg.Error:
                            pass
                    self._reader = None
                    if attempt == 2:
                        raise self.unavailable(f"cannot read from {redact(self.url)}", exc) from exc
        raise AssertionError("unreachable")

    def classify(self, exc: BaseException) -> str:
        if isinstance(exc, psycopg.errors.DiskFull):
            return "disk_full"
        if isinstance(exc, (psycopg.OperationalError, psycopg.InterfaceError, StoreUnavailableError)):
            return "connection_lost"
        return "write_failed"


def _close_quietly(conn: psycopg.Connection[Any] | None) -> None:
    """Close a connection we are giving up on: one already broken may fail to close, and that is fine."""
    if conn is not None:
        try:
            conn.close()
        except psycopg.Error:
            pass
