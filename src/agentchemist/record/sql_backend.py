"""SQL shared by the SQLite and PostgreSQL back ends: batched idempotent writes and filtered reads.

A back end owns one *writer* connection, used only by the store's writer thread, and opens its own
connections for reads. Subclasses supply the driver calls; the statements live here so both databases
run the same schema and the same logic.

Operations (the unit the store queues, spills and replays) are plain dicts:

* ``{"op": "insert", "table": t, "uid": u, "experiment_id": e, "row": {...}}`` (``"seq"`` for fused records)
* ``{"op": "start", "experiment_id": e, "now": s, "instruction": str, "metadata": dict}``
* ``{"op": "finish", "experiment_id": e, "now": s, "status": str, "reason": str}``

Row values are in their public Python form (lists, dicts, floats incl. NaN); encoding happens here.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from agentchemist.record import schema
from agentchemist.record.errors import StoreUnavailableError


class SqlBackend(ABC):
    """Dialect-neutral write/read logic over abstract driver primitives."""

    name = "sql"
    dialect = "sqlite"
    placeholder = "?"

    # ---- driver primitives (writer connection) -------------------------------------------------
    @abstractmethod
    def connect(self) -> None:
        """Open the writer connection and create the schema; raise on failure."""

    @abstractmethod
    def disconnect(self) -> None:
        """Close the writer connection (never raises)."""

    @abstractmethod
    def _begin(self) -> None: ...

    @abstractmethod
    def _commit(self) -> None: ...

    @abstractmethod
    def _rollback(self) -> None: ...

    @abstractmethod
    def _exec(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Execute on the writer connection; return fetched rows (empty for DML)."""

    @abstractmethod
    def _exec_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None: ...

    @abstractmethod
    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        """Execute a query on a read connection; rows as dicts keyed by column name."""

    @abstractmethod
    def classify(self, exc: BaseException) -> str:
        """Failure kind for the on_failure callback: "disk_full", "connection_lost" or "write_failed"."""

    # ---- writes -----------------------------------------------------------------------------------
    def _sql(self, text: str) -> str:
        return text.replace("?", self.placeholder)

    def write(self, ops: Sequence[dict[str, Any]]) -> None:
        """Apply ``ops`` in one transaction; idempotent for inserts (uid conflicts are ignored)."""
        self._begin()
        try:
            inserts: dict[str, list[tuple[Any, ...]]] = {}
            for op in ops:
                kind = op["op"]
                if kind == "insert":
                    inserts.setdefault(op["table"], []).append(self._insert_params(op))
                elif kind in ("start", "finish"):
                    # Experiment ops run in submission order; record inserts are batched per table below.
                    self._experiment_op(op)
                else:
                    raise ValueError(f"unknown store operation {kind!r}")
            for table, rows in inserts.items():
                columns = schema.storage_columns(table)
                sql = (
                    f"INSERT INTO {table} ({', '.join(schema.q(c) for c in columns)}) "
                    f"VALUES ({', '.join('?' for _ in columns)}) ON CONFLICT ({schema.q('uid')}) DO NOTHING"
                )
                self._exec_many(self._sql(sql), rows)
            self._commit()
        except BaseException:
            self._rollback()
            raise

    @staticmethod
    def _insert_params(op: dict[str, Any]) -> tuple[Any, ...]:
        table = schema.RECORD_TABLES[op["table"]]
        row = op["row"]
        head: tuple[Any, ...] = (op["uid"], op["experiment_id"])
        if table.name == "fused_records":
            head += (int(op["seq"]),)
        return head + tuple(schema.encode(c.kind, row[c.name]) for c in table.columns)

    def _experiment_op(self, op: dict[str, Any]) -> None:
        eid = op["experiment_id"]
        found = self._exec(self._sql('SELECT "metadata", "instruction" FROM experiments WHERE "experiment_id" = ?'), (eid,))
        if op["op"] == "start":
            if not found:
                self._exec(
                    self._sql(
                        'INSERT INTO experiments ("experiment_id", "instruction", "started", "finished", '
                        '"status", "reason", "metadata") VALUES (?, ?, ?, NULL, ?, \'\', ?)'
                    ),
                    (eid, op["instruction"], float(op["now"]), "running", schema.dumps(op["metadata"])),
                )
                return
            # Restarting an existing experiment (node restart, spill replay) merges metadata and keeps
            # its start time and status: replaying an old start must not undo a later finish.
            merged = {**json.loads(found[0][0] or "{}"), **op["metadata"]}
            instruction = op["instruction"] or found[0][1]
            self._exec(
                self._sql('UPDATE experiments SET "metadata" = ?, "instruction" = ? WHERE "experiment_id" = ?'),
                (schema.dumps(merged), instruction, eid),
            )
            return
        if not found:
            # A finish whose start was lost should not happen; keep the stop record anyway.
            self._exec(
                self._sql(
                    'INSERT INTO experiments ("experiment_id", "instruction", "started", "finished", '
                    '"status", "reason", "metadata") VALUES (?, \'\', ?, ?, ?, ?, \'{}\')'
                ),
                (eid, float(op["now"]), float(op["now"]), op["status"], op["reason"]),
            )
            return
        self._exec(
            self._sql('UPDATE experiments SET "finished" = ?, "status" = ?, "reason" = ? WHERE "experiment_id" = ?'),
            (float(op["now"]), op["status"], op["reason"], eid),
        )

    # ---- reads ------------------------------------------------------------------------------------
    def max_seq(self) -> int:
        rows = self._read('SELECT MAX("seq") AS m FROM fused_records')
        value = rows[0]["m"] if rows else None
        return int(value) if value is not None else 0

    def read_experiments(self, experiment_id: str | None = None) -> list[dict[str, Any]]:
        columns = ", ".join(schema.q(c) for c in schema.EXPERIMENTS.names)
        if experiment_id is None:
            rows = self._read(f'SELECT {columns} FROM experiments ORDER BY "started", "experiment_id"')
        else:
            rows = self._read(self._sql(f'SELECT {columns} FROM experiments WHERE "experiment_id" = ?'), (experiment_id,))
        return [schema.decode_experiment(r) for r in rows]

    def read_records(
        self,
        table: str,
        experiment_id: str,
        *,
        quantity: str | None = None,
        since: float | None = None,
        until: float | None = None,
        limit: int = 0,
    ) -> list[dict[str, Any]]:
        """Rows of ``table`` for one experiment ordered by (stamp, insertion), each decoded to its
        public dict plus "uid" (and "seq" for fused records)."""
        columns = schema.storage_columns(table)
        where = ['"experiment_id" = ?']
        params: list[Any] = [experiment_id]
        if quantity is not None:
            where.append('"quantity" = ?')
            params.append(quantity)
        if since is not None:
            where.append('"stamp" >= ?')
            params.append(float(since))
        if until is not None:
            where.append('"stamp" <= ?')
            params.append(float(until))
        sql = (
            f"SELECT {', '.join(schema.q(c) for c in columns)} FROM {table} WHERE {' AND '.join(where)} "
            f'ORDER BY "stamp", "id"'
        )
        if limit > 0:
            sql += f" LIMIT {int(limit)}"
        out = []
        for row in self._read(self._sql(sql), params):
            record = schema.decode_record(table, row)
            record["uid"] = row["uid"]
            if "seq" in row:
                record["seq"] = int(row["seq"])
            out.append(record)
        return out

    def experiment_ids(self) -> set[str]:
        return {r["experiment_id"] for r in self._read('SELECT "experiment_id" FROM experiments')}

    @staticmethod
    def unavailable(what: str, exc: BaseException) -> StoreUnavailableError:
        return StoreUnavailableError(f"{what}: {type(exc).__name__}: {exc}")
