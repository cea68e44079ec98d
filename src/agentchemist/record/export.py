"""Export one run to CSV and Parquet, and read such an export back (for the round-trip check and for
tools that want the data without a database).

Layout in ``out_dir``: ``experiment.<ext>`` (one row; metadata as JSON text) and one file per record
kind, named like the keys of ``load_run`` (``fused_records.csv``, ``raw_observations.parquet`` ...).
CSV: lists and dicts as JSON text, floats written with ``repr`` so they read back bit-exact (``nan`` and
``inf`` included), booleans as ``true``/``false``, a missing value as an empty field. Parquet: native
types (float64, bool, list<string>, list<float64>); dicts as JSON text.
"""

from __future__ import annotations

import csv
import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from agentchemist.record import schema
from agentchemist.record.errors import RecordInputError

FORMATS = ("csv", "parquet")

_ARROW_TYPES = {
    schema.TEXT: pa.string(),
    schema.REAL: pa.float64(),
    schema.INT: pa.int64(),
    schema.BOOL: pa.bool_(),
    schema.STR_LIST: pa.list_(pa.string()),
    schema.REAL_LIST: pa.list_(pa.float64()),
    schema.JSON_OBJ: pa.string(),
}


def _tables() -> dict[str, schema.Table]:
    """File stem -> table definition (experiment first)."""
    out = {"experiment": schema.EXPERIMENTS}
    out.update({key: schema.RECORD_TABLES[table] for key, table in schema.RUN_KEYS.items()})
    return out


def _rows(run: dict[str, Any], stem: str, table: schema.Table) -> list[dict[str, Any]]:
    if stem == "experiment":
        return [{c.name: run["experiment"][c.name] for c in table.columns}]
    return run[stem]


def export_run(
    store: Any, experiment_id: str, out_dir: str | os.PathLike[str], formats: Sequence[str] = FORMATS
) -> dict[str, list[Path]]:
    """Write the run to ``out_dir`` in each format; returns format -> files written."""
    unknown = [f for f in formats if f not in FORMATS]
    if unknown or not formats:
        raise RecordInputError(f"export formats must be a non-empty subset of {FORMATS}, got {list(formats)}")
    run = store.load_run(experiment_id)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: dict[str, list[Path]] = {f: [] for f in formats}
    for stem, table in _tables().items():
        rows = _rows(run, stem, table)
        if "csv" in formats:
            path = out / f"{stem}.csv"
            _write_csv(path, table, rows)
            written["csv"].append(path)
        if "parquet" in formats:
            path = out / f"{stem}.parquet"
            _write_parquet(path, table, rows)
            written["parquet"].append(path)
    return written


def read_export(out_dir: str | os.PathLike[str], fmt: str = "csv") -> dict[str, Any]:
    """Read an export back into the ``load_run`` shape (experiment metadata merged at top level)."""
    if fmt not in FORMATS:
        raise RecordInputError(f"format must be one of {FORMATS}, got {fmt!r}")
    base = Path(out_dir)
    run: dict[str, Any] = {}
    for stem, table in _tables().items():
        path = base / f"{stem}.{fmt}"
        if not path.exists():
            raise RecordInputError(f"export is missing {path}")
        rows = _read_csv(path, table) if fmt == "csv" else _read_parquet(path, table)
        if stem == "experiment":
            if len(rows) != 1:
                raise RecordInputError(f"{path} must hold exactly one experiment row, found {len(rows)}")
            experiment = rows[0]
            experiment["metadata"] = experiment["metadata"] or {}
            for key, value in experiment["metadata"].items():
                experiment.setdefault(key, value)
            run["experiment"] = experiment
        else:
            run[stem] = rows
    return run


# ---- CSV ----------------------------------------------------------------------------------------------
def _csv_cell(kind: str, value: Any) -> str:
    if value is None:
        return ""
    if kind in (schema.STR_LIST, schema.REAL_LIST, schema.JSON_OBJ):
        return schema.dumps(value)
    if kind == schema.BOOL:
        return "true" if value else "false"
    if kind == schema.REAL:
        return repr(float(value))
    return str(value)


def _csv_value(kind: str, text: str, nullable: bool) -> Any:
    if kind == schema.TEXT:
        return text
    if text == "" and (nullable or kind == schema.JSON_OBJ):
        return None
    if kind in (schema.STR_LIST, schema.REAL_LIST, schema.JSON_OBJ):
        value = json.loads(text)
        return [float(x) for x in value] if kind == schema.REAL_LIST else value
    if kind == schema.BOOL:
        if text not in ("true", "false"):
            raise RecordInputError(f"boolean cell must be true/false, got {text!r}")
        return text == "true"
    if kind == schema.REAL:
        return float(text)
    return int(text)


def _write_csv(path: Path, table: schema.Table, rows: list[dict[str, Any]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(table.names)
        for row in rows:
            writer.writerow([_csv_cell(c.kind, row[c.name]) for c in table.columns])


def _read_csv(path: Path, table: schema.Table) -> list[dict[str, Any]]:
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        if header != list(table.names):
            raise RecordInputError(f"{path}: header {header} does not match {list(table.names)}")
        return [
            {c.name: _csv_value(c.kind, cell, c.nullable) for c, cell in zip(table.columns, cells)}
            for cells in reader
        ]


# ---- Parquet ------------------------------------------------------------------------------------------
def _arrow_schema(table: schema.Table) -> pa.Schema:
    return pa.schema(
        [pa.field(c.name, _ARROW_TYPES[c.kind], nullable=c.nullable or c.kind == schema.JSON_OBJ) for c in table.columns]
    )


def _write_parquet(path: Path, table: schema.Table, rows: list[dict[str, Any]]) -> None:
    columns = {}
    for c in table.columns:
        values = [row[c.name] for row in rows]
        if c.kind == schema.JSON_OBJ:
            values = [None if x is None else schema.dumps(x) for x in values]
        columns[c.name] = values
    pq.write_table(pa.table(columns, schema=_arrow_schema(table)), path)


def _read_parquet(path: Path, table: schema.Table) -> list[dict[str, Any]]:
    data = pq.read_table(path)
    if data.schema.names != list(table.names):
        raise RecordInputError(f"{path}: columns {data.schema.names} do not match {list(table.names)}")
    rows = data.to_pylist()
    for row in rows:
        for c in table.columns:
            if c.kind == schema.JSON_OBJ and row[c.name] is not None:
                row[c.name] = json.loads(row[c.name])
            elif c.kind == schema.REAL and row[c.name] is None and not c.nullable:
                row[c.name] = math.nan
    return rows
