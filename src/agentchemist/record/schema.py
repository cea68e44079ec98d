"""The recorder's relational schema, shared by the SQLite and PostgreSQL back ends and by export.

One table per record kind. Every row carries a ``uid`` chosen by the writing store (unique, so replaying
a spill file after a crash inserts nothing twice) and an auto-increment ``id`` that keeps insertion order
for rows with equal stamps. Lists and dicts are stored as JSON text in both back ends: Python's JSON keeps
NaN and infinities, which PostgreSQL's jsonb would reject, and text keeps the two schemas identical.
Column names are always quoted because ``end`` is an SQL keyword.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

# Column kinds: how a value is stored and decoded.
TEXT, REAL, INT, BOOL, STR_LIST, REAL_LIST, JSON_OBJ = "text", "real", "int", "bool", "str_list", "real_list", "json"


@dataclass(frozen=True)
class Column:
    name: str
    kind: str
    nullable: bool = False


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[Column, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)


EXPERIMENTS = Table(
    "experiments",
    (
        Column("experiment_id", TEXT),
        Column("instruction", TEXT),
        Column("started", REAL),
        Column("finished", REAL, nullable=True),
        Column("status", TEXT),
        Column("reason", TEXT),
        Column("metadata", JSON_OBJ),
    ),
)

# Record tables: the columns after (uid, experiment_id) are exactly the add_* keyword names.
RECORD_TABLES: dict[str, Table] = {
    t.name: t
    for t in (
        Table(
            "fsm_transitions",
            (
                Column("stamp", REAL),
                Column("from_state", TEXT),
                Column("to_state", TEXT),
                Column("symbol", TEXT),
                Column("subtask_id", TEXT),
                Column("agent", TEXT),
            ),
        ),
        Table(
            "raw_observations",
            (
                Column("stamp", REAL),
                Column("channel", TEXT),
                Column("sensor", TEXT),
                Column("quantity", TEXT),
                Column("value", REAL),
                Column("unit", TEXT),
                Column("confidence", REAL),
                Column("fsm_state", TEXT),
                Column("subtask_id", TEXT),
                Column("flags", STR_LIST),
                Column("payload", JSON_OBJ, nullable=True),
            ),
        ),
        Table(
            "fused_records",
            (
                Column("stamp", REAL),
                Column("quantity", TEXT),
                Column("unit", TEXT),
                Column("value", REAL),
                Column("confidence", REAL),
                Column("channels", STR_LIST),
                Column("channel_values", REAL_LIST),
                Column("channel_confidences", REAL_LIST),
                Column("fsm_state", TEXT),
                Column("subtask_id", TEXT),
                Column("quality_flags", STR_LIST),
            ),
        ),
        Table(
            "anomalies",
            (
                Column("stamp", REAL),
                Column("source", TEXT),
                Column("kind", TEXT),
                Column("severity", TEXT),
                Column("description", TEXT),
                Column("fsm_state", TEXT),
                Column("subtask_id", TEXT),
                Column("response", TEXT),
                Column("resolved", BOOL),
            ),
        ),
        Table(
            "audio_events",
            (
                Column("stamp", REAL),
                Column("event_id", TEXT),
                Column("kind", TEXT),
                Column("classification", TEXT),
                Column("start", REAL),
                Column("end", REAL),
                Column("snr_db", REAL),
                Column("peak_frequency_hz", REAL),
                Column("quantity", REAL),
                Column("confidence", REAL),
            ),
        ),
        Table(
            "artifacts",
            (
                Column("stamp", REAL),
                Column("kind", TEXT),
                Column("path", TEXT),
                Column("label", TEXT),
            ),
        ),
    )
}

# Keys of the dict returned by RecordStore.load_run -> table names.
RUN_KEYS: dict[str, str] = {
    "transitions": "fsm_transitions",
    "raw_observations": "raw_observations",
    "fused_records": "fused_records",
    "anomalies": "anomalies",
    "audio_events": "audio_events",
    "artifacts": "artifacts",
}

# fused_records also stores the per-store sequence number returned by add_fused.
SEQ_COLUMN = "seq"

_SQL_TYPES = {
    "sqlite": {TEXT: "TEXT", REAL: "REAL", INT: "INTEGER", BOOL: "INTEGER", STR_LIST: "TEXT",
               REAL_LIST: "TEXT", JSON_OBJ: "TEXT"},
    "postgres": {TEXT: "TEXT", REAL: "DOUBLE PRECISION", INT: "BIGINT", BOOL: "BOOLEAN", STR_LIST: "TEXT",
                 REAL_LIST: "TEXT", JSON_OBJ: "TEXT"},
}


def q(name: str) -> str:
    """Quote an identifier (all ours are plain lowercase words)."""
    return f'"{name}"'


def storage_columns(table: str) -> tuple[str, ...]:
    """Columns written by an insert, in order (uid, experiment_id, [seq,] then the record fields)."""
    extra = (SEQ_COLUMN,) if table == "fused_records" else ()
    return ("uid", "experiment_id", *extra, *RECORD_TABLES[table].names)


def ddl(dialect: str) -> list[str]:
    """CREATE statements (idempotent) for ``dialect`` "sqlite" or "postgres"."""
    types = _SQL_TYPES[dialect]
    id_col = "INTEGER PRIMARY KEY" if dialect == "sqlite" else "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY"
    statements = [
        "CREATE TABLE IF NOT EXISTS experiments ("
        + ", ".join(
            f"{q(c.name)} {types[c.kind]}{'' if c.nullable else ' NOT NULL'}"
            + (" PRIMARY KEY" if c.name == "experiment_id" else "")
            for c in EXPERIMENTS.columns
        )
        + ")"
    ]
    for table in RECORD_TABLES.values():
        cols = [f"{q('id')} {id_col}", f"{q('uid')} TEXT NOT NULL UNIQUE", f"{q('experiment_id')} TEXT NOT NULL"]
        if table.name == "fused_records":
            cols.append(f"{q(SEQ_COLUMN)} {types[INT]} NOT NULL")
        # Non-finite floats are legal data (bad input is stored raw); SQLite stores NaN as NULL, so
        # REAL columns are nullable there and NULL decodes back to NaN.
        for c in table.columns:
            nullable = c.nullable or (dialect == "sqlite" and c.kind == REAL)
            cols.append(f"{q(c.name)} {types[c.kind]}{'' if nullable else ' NOT NULL'}")
        statements.append(f"CREATE TABLE IF NOT EXISTS {table.name} ({', '.join(cols)})")
        statements.append(
            f"CREATE INDEX IF NOT EXISTS {table.name}_exp_stamp ON {table.name} ({q('experiment_id')}, {q('stamp')})"
        )
    statements.append(
        f"CREATE INDEX IF NOT EXISTS fused_records_exp_quantity_stamp ON fused_records "
        f"({q('experiment_id')}, {q('quantity')}, {q('stamp')})"
    )
    return statements


def dumps(value: Any) -> str:
    """JSON text that keeps NaN/inf (Python's JSON extension) and sorts keys for stable files."""
    return json.dumps(value, allow_nan=True, sort_keys=True, separators=(",", ":"))


def encode(kind: str, value: Any) -> Any:
    """Python value -> database parameter."""
    if value is None:
        return None
    if kind in (STR_LIST, REAL_LIST, JSON_OBJ):
        return dumps(value)
    if kind == BOOL:
        return bool(value)
    return value


def decode(kind: str, value: Any, nullable: bool = False) -> Any:
    """Database value -> Python value (NULL in a non-nullable REAL is a NaN SQLite could not store)."""
    if value is None:
        if kind == REAL and not nullable:
            return math.nan
        return None
    if kind in (STR_LIST, REAL_LIST, JSON_OBJ):
        decoded = json.loads(value) if isinstance(value, str) else value
        if kind == REAL_LIST:
            return [float(v) for v in decoded]
        return decoded
    if kind == BOOL:
        return bool(value)
    if kind == REAL:
        return float(value)
    return value


def decode_record(table: str, row: dict[str, Any]) -> dict[str, Any]:
    """Storage row -> the public dict (exactly the add_* field names)."""
    return {c.name: decode(c.kind, row[c.name], c.nullable) for c in RECORD_TABLES[table].columns}


def decode_experiment(row: dict[str, Any]) -> dict[str, Any]:
    """Storage row -> experiment dict (metadata decoded to a dict)."""
    out = {c.name: decode(c.kind, row[c.name], c.nullable) for c in EXPERIMENTS.columns}
    if out["metadata"] is None:
        out["metadata"] = {}
    return out
