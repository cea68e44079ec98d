"""The record store: one interface over SQLite and PostgreSQL, with batching, durability and spill.

``add_*`` validates a record, gives it a unique id and puts it on a bounded queue; a writer thread drains
the queue in batches, one transaction per batch. ``flush()`` returns once everything submitted before it
is durable: committed to the database, or fsync'd to the spill file when the database cannot take it.
So a caller that acknowledges a record only after ``flush()`` never acknowledges a record it could lose.

When a write fails (full disk, dropped PostgreSQL connection) the store reports it once through
``on_failure(kind, description)``, appends every following batch to the spill file, and every
``retry_interval_s`` reconnects and replays the spill in order. Replay is idempotent (unique uids), so a
crash during replay duplicates nothing. ``on_recovery(kind, description)`` reports the way back.
The queue, thread and spill logic live in :mod:`agentchemist.record.writer`, the reads (database and
spill merged) in :mod:`agentchemist.record.store_reads`, the started experiments in
:mod:`agentchemist.record.known_experiments`; this module validates records and picks the back end from
a URL.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from agentchemist.record import validate as v
from agentchemist.record.errors import RecordConfigError, StoreClosedError, StoreUnavailableError
from agentchemist.record.known_experiments import KnownExperiments
from agentchemist.record.spill import SpillFile
from agentchemist.record.sql_backend import SqlBackend
from agentchemist.record.store_reads import StoreReads
from agentchemist.record.writer import BatchWriter, FailureCallback


@runtime_checkable
class RecordStore(Protocol):
    """What the recorder node needs from a store (see :class:`QueuedStore` for the semantics).

    Times (``now``, ``stamp``, ``start``, ``end``) are seconds on the ROS clock; values are in the unit
    named next to them. Record dicts returned by reads use exactly the add_* keyword names.
    """

    def start_experiment(
        self, experiment_id: str, *, now: float, instruction: str = "", metadata: dict | None = None
    ) -> None: ...

    def finish_experiment(self, experiment_id: str, *, now: float, status: str, reason: str = "") -> None: ...

    def add_transition(
        self, experiment_id: str, *, stamp: float, from_state: str, to_state: str, symbol: str,
        subtask_id: str = "", agent: str = "",
    ) -> None: ...

    def add_raw(
        self, experiment_id: str, *, stamp: float, channel: str, sensor: str, quantity: str, value: float,
        unit: str, confidence: float, fsm_state: str = "", subtask_id: str = "", flags: Sequence[str] = (),
        payload: Any = None,
    ) -> None: ...

    def add_fused(
        self, experiment_id: str, *, stamp: float, quantity: str, unit: str, value: float, confidence: float,
        channels: Sequence[str], channel_values: Sequence[float], channel_confidences: Sequence[float],
        fsm_state: str = "", subtask_id: str = "", quality_flags: Sequence[str] = (),
    ) -> int: ...

    def add_anomaly(
        self, experiment_id: str, *, stamp: float, source: str, kind: str, severity: str, description: str,
        fsm_state: str = "", subtask_id: str = "", response: str = "", resolved: bool = False,
    ) -> None: ...

    def add_audio_event(
        self, experiment_id: str, *, stamp: float, event_id: str, kind: str, classification: str,
        start: float, end: float, snr_db: float, peak_frequency_hz: float, quantity: float, confidence: float,
    ) -> None: ...

    def add_artifact(self, experiment_id: str, *, stamp: float, kind: str, path: str, label: str = "") -> None: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...

    def load_run(self, experiment_id: str) -> dict: ...

    def query_fused(
        self, experiment_id: str, *, quantity: str | None = None, since: float | None = None,
        until: float | None = None, limit: int = 0,
    ) -> list[dict]: ...

    def experiments(self) -> list[dict]: ...


class QueuedStore:
    """A :class:`RecordStore` over any :class:`SqlBackend` (see the module docstring).

    Args:
        backend: the database back end (connected here; when it cannot be, the store opens degraded).
        spill_path: JSON-lines file for rows the database cannot take; keep it on a different disk from
            the database if "disk full" must be survivable (the same disk works for connection loss).
        on_failure: called (from the writer thread) once per outage with (kind, description); kind is
            "disk_full", "connection_lost", "database_locked", "io_error", "write_failed" or "spill_failed".
        on_recovery: called with ("store_recovered" | "spill_replayed", description) when rows flow again.
        queue_size: bound of the write queue (records); producers block when it is full.
        batch_size: most operations per transaction.
        retry_interval_s: seconds between reconnect attempts while degraded.
        put_timeout_s: how long ``add_*`` may block on a full queue before StoreBackpressureError.
    """

    def __init__(
        self,
        backend: SqlBackend,
        *,
        spill_path: str | os.PathLike[str],
        on_failure: FailureCallback | None = None,
        on_recovery: FailureCallback | None = None,
        queue_size: int = 10_000,
        batch_size: int = 1_000,
        retry_interval_s: float = 1.0,
        put_timeout_s: float = 30.0,
    ) -> None:
        self.backend = backend
        self.spill = SpillFile(spill_path)
        # A database that cannot be reached at the start is an outage like one mid-run: the store opens
        # degraded and spills from the first row (the robot's run must not wait on a database server).
        # Sequence numbers then start after the spill's; the database's are not known yet.
        unavailable: StoreUnavailableError | None = None
        try:
            backend.connect()
            db_ids, db_seq = backend.experiment_ids(), backend.max_seq()
        except StoreUnavailableError as exc:
            backend.disconnect()
            unavailable, db_ids, db_seq = exc, set(), 0
        spilled = self.spill.read()
        self._known = KnownExperiments(backend, db_ids | {op["experiment_id"] for op in spilled})
        self._reads = StoreReads(backend, self.spill)
        first_seq = max([db_seq, *(int(op.get("seq", 0)) for op in spilled)])
        self._writer = BatchWriter(
            backend, self.spill, on_failure=on_failure, on_recovery=on_recovery, queue_size=queue_size,
            batch_size=batch_size, retry_interval_s=retry_interval_s, put_timeout_s=put_timeout_s,
            first_seq=first_seq, unavailable=unavailable,
        )

    def knows(self, experiment_id: str) -> bool:
        """True when the experiment was started in this store before (database or spill)."""
        return experiment_id in self._known

    @property
    def closed(self) -> bool:
        return self._writer.closed

    @property
    def degraded(self) -> bool:
        """True while rows go to the spill file instead of the database."""
        return self._writer.degraded

    @property
    def failures(self) -> list[tuple[str, str]]:
        """Every (kind, description) reported through on_failure so far."""
        return list(self._writer.failures)

    # ---- experiment lifecycle -------------------------------------------------------------------
    def start_experiment(
        self, experiment_id: str, *, now: float, instruction: str = "", metadata: dict | None = None
    ) -> None:
        """Start record (or, for an existing id, merge metadata/instruction into it)."""
        v.name("experiment_id", experiment_id)
        op = {
            "op": "start",
            "experiment_id": experiment_id,
            "now": v.stamp("now", now),
            "instruction": v.text("instruction", instruction),
            "metadata": v.json_dict("metadata", metadata),
        }
        self._writer.submit(op)
        self._known.add(experiment_id)

    def finish_experiment(self, experiment_id: str, *, now: float, status: str, reason: str = "") -> None:
        """Stop record; call it on success *and* on abort/failure, with the reason."""
        op = {
            "op": "finish",
            "experiment_id": self._known.check(experiment_id),
            "now": v.stamp("now", now),
            "status": v.name("status", status),
            "reason": v.text("reason", reason),
        }
        self._writer.submit(op)

    # ---- records ----------------------------------------------------------------------------------
    def add_transition(self, experiment_id: str, *, stamp: float, from_state: str, to_state: str, symbol: str,
                       subtask_id: str = "", agent: str = "") -> None:
        self._insert("fsm_transitions", experiment_id, {
            "stamp": v.stamp("stamp", stamp), "from_state": v.text("from_state", from_state),
            "to_state": v.name("to_state", to_state), "symbol": v.text("symbol", symbol),
            "subtask_id": v.text("subtask_id", subtask_id), "agent": v.text("agent", agent),
        })

    def add_raw(self, experiment_id: str, *, stamp: float, channel: str, sensor: str, quantity: str, value: float,
                unit: str, confidence: float, fsm_state: str = "", subtask_id: str = "",
                flags: Sequence[str] = (), payload: Any = None) -> None:
        """Keep a raw observation exactly as received: NaN/inf values and out-of-range confidences are
        legal here (bad input is stored and flagged, never dropped)."""
        self._insert("raw_observations", experiment_id, {
            "stamp": v.stamp("stamp", stamp), "channel": v.text("channel", channel),
            "sensor": v.text("sensor", sensor), "quantity": v.name("quantity", quantity),
            "value": v.any_float("value", value), "unit": v.text("unit", unit),
            "confidence": v.any_float("confidence", confidence), "fsm_state": v.text("fsm_state", fsm_state),
            "subtask_id": v.text("subtask_id", subtask_id), "flags": v.str_list("flags", flags),
            "payload": v.json_value("payload", payload),
        })

    def add_fused(self, experiment_id: str, *, stamp: float, quantity: str, unit: str, value: float,
                  confidence: float, channels: Sequence[str], channel_values: Sequence[float],
                  channel_confidences: Sequence[float], fsm_state: str = "", subtask_id: str = "",
                  quality_flags: Sequence[str] = ()) -> int:
        """Store a fused record; returns its sequence number (strictly increasing per store)."""
        row = {
            "stamp": v.stamp("stamp", stamp), "quantity": v.name("quantity", quantity),
            "unit": v.text("unit", unit), "value": v.any_float("value", value),
            "confidence": v.unit_interval("confidence", confidence),
            "channels": v.str_list("channels", channels),
            "channel_values": v.float_list("channel_values", channel_values),
            "channel_confidences": v.float_list("channel_confidences", channel_confidences),
            "fsm_state": v.text("fsm_state", fsm_state), "subtask_id": v.text("subtask_id", subtask_id),
            "quality_flags": v.str_list("quality_flags", quality_flags),
        }
        v.same_length(channels=row["channels"], channel_values=row["channel_values"],
                      channel_confidences=row["channel_confidences"])
        return self._insert("fused_records", experiment_id, row, with_seq=True)

    def add_anomaly(self, experiment_id: str, *, stamp: float, source: str, kind: str, severity: str,
                    description: str, fsm_state: str = "", subtask_id: str = "", response: str = "",
                    resolved: bool = False) -> None:
        self._insert("anomalies", experiment_id, {
            "stamp": v.stamp("stamp", stamp), "source": v.text("source", source), "kind": v.name("kind", kind),
            "severity": v.choice("severity", severity, ("info", "warn", "halt")),
            "description": v.text("description", description), "fsm_state": v.text("fsm_state", fsm_state),
            "subtask_id": v.text("subtask_id", subtask_id), "response": v.text("response", response),
            "resolved": v.boolean("resolved", resolved),
        })

    def add_audio_event(self, experiment_id: str, *, stamp: float, event_id: str, kind: str, classification: str,
                        start: float, end: float, snr_db: float, peak_frequency_hz: float, quantity: float,
                        confidence: float) -> None:
        start_s, end_s = v.stamp("start", start), v.stamp("end", end)
        if end_s < start_s:
            raise v.RecordInputError(f"audio event {event_id!r}: end {end_s} s is before start {start_s} s")
        self._insert("audio_events", experiment_id, {
            "stamp": v.stamp("stamp", stamp), "event_id": v.text("event_id", event_id),
            "kind": v.name("kind", kind), "classification": v.text("classification", classification),
            "start": start_s, "end": end_s, "snr_db": v.any_float("snr_db", snr_db),
            "peak_frequency_hz": v.any_float("peak_frequency_hz", peak_frequency_hz),
            "quantity": v.any_float("quantity", quantity), "confidence": v.any_float("confidence", confidence),
        })

    def add_artifact(self, experiment_id: str, *, stamp: float, kind: str, path: str, label: str = "") -> None:
        self._insert("artifacts", experiment_id, {
            "stamp": v.stamp("stamp", stamp), "kind": v.name("kind", kind),
            "path": v.name("path", os.fspath(path) if isinstance(path, os.PathLike) else path),
            "label": v.text("label", label),
        })

    # ---- durability -------------------------------------------------------------------------------
    def flush(self, timeout: float | None = None) -> None:
        """Block until every record submitted before this call is committed or fsync'd to the spill.

        Raises StoreDurabilityError when neither the database nor the spill file can take the rows
        (they stay queued in memory and are retried) or when ``timeout`` seconds pass first.
        """
        self._writer.wait_durable(timeout)

    def close(self) -> None:
        """Write out everything queued, checkpoint and close. Idempotent."""
        try:
            self._writer.close()
        finally:
            self.backend.disconnect()
            closer = getattr(self.backend, "close_reader", None)
            if closer is not None:
                closer()

    def __enter__(self) -> QueuedStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- reads --------------------------------------------------------------------------------------
    def load_run(self, experiment_id: str) -> dict[str, Any]:
        """Everything recorded for one experiment (flushes first).

        Returns a dict with ``experiment`` (experiment_id, instruction, started, finished, status, reason,
        metadata, and the metadata keys also merged at top level where they do not collide) and lists of
        record dicts ``transitions``, ``raw_observations``, ``fused_records``, ``anomalies``,
        ``audio_events``, ``artifacts`` whose keys are exactly the add_* keyword names, in stamp order.
        Rows still waiting in the spill file are included.
        """
        self._check_open()
        self.flush()
        return self._reads.run(experiment_id)

    def query_fused(self, experiment_id: str, *, quantity: str | None = None, since: float | None = None,
                    until: float | None = None, limit: int = 0) -> list[dict[str, Any]]:
        """Fused records with since <= stamp <= until, oldest first, at most ``limit`` (0 = all).
        Each dict has the add_fused fields plus ``seq``."""
        self._check_open()
        if since is not None:
            since = v.stamp("since", since)
        if until is not None:
            until = v.stamp("until", until)
        if not isinstance(limit, int) or limit < 0:
            raise v.RecordInputError(f"limit must be an int >= 0, got {limit!r}")
        self.flush()
        return self._reads.fused(experiment_id, quantity=quantity, since=since, until=until, limit=limit)

    def experiments(self) -> list[dict[str, Any]]:
        """All experiments in the store (same dict shape as ``load_run()["experiment"]``)."""
        self._check_open()
        self.flush()
        return self._reads.experiments()

    # ---- internals ----------------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._writer.closed:
            raise StoreClosedError("the record store is closed")

    def _insert(self, table: str, experiment_id: str, row: dict[str, Any], with_seq: bool = False) -> int:
        op = {"op": "insert", "table": table, "experiment_id": self._known.check(experiment_id), "row": row}
        return self._writer.submit(op, with_seq=with_seq)


def run_folder(runs_dir: str | os.PathLike[str], experiment_id: str) -> Path:
    """``<runs_dir>/<experiment_id>``: one run's folder. Every path made from an experiment id comes from
    here, since the id arrives over the wire (a plan message): it must be a single safe path component
    (ASCII letters, digits, ``-``, ``_``, ``.``; not ``.``/``..``), else RecordInputError."""
    v.name("experiment_id", experiment_id)
    if experiment_id in (".", "..") or not all(ch.isascii() and (ch.isalnum() or ch in "-_.")
                                                for ch in experiment_id):
        raise v.RecordInputError(
            f"experiment_id {experiment_id!r} cannot name a run folder: use letters, digits, '-', '_', '.'"
        )
    return Path(runs_dir) / experiment_id


def confined_store(store: str, runs_dir: str | os.PathLike[str]) -> str:
    """``store`` (a record_closed note's store URL, from the wire) when it may be read: '' (the run folder's
    own), a PostgreSQL URL, or a SQLite file inside ``runs_dir`` reached without a symbolic link; else
    RecordInputError. A forged note must not have the report open, or create, a database elsewhere."""
    if not store:
        return store
    path = sqlite_file(store)
    if path is None:
        return store
    file = Path(os.path.abspath(path))  # a relative path is the recorder's, from the same working folder
    if file.is_symlink() or not file.resolve().is_relative_to(Path(runs_dir).resolve()):
        raise v.RecordInputError(f"store {store[:120]!r} is not a database inside the runs folder {runs_dir}")
    return store


def run_database_path(runs_dir: str | os.PathLike[str], experiment_id: str) -> Path:
    """``<runs_dir>/<experiment_id>/records.db``: the default SQLite file of one run (see run_folder)."""
    return run_folder(runs_dir, experiment_id) / "records.db"


def default_spill_path(url_or_path: str) -> Path:
    """Where a store keeps its spill file unless told otherwise.

    SQLite: next to the database (``records.db`` -> ``records.db.spill.jsonl``). PostgreSQL: under
    ``$AGENTCHEMIST_SPILL_DIR`` or ``~/.local/state/agentchemist/spill``, named by a hash of the URL.
    """
    if url_or_path.startswith(("postgresql://", "postgres://")):
        from agentchemist.record.postgres_store import redact

        base = Path(os.environ.get("AGENTCHEMIST_SPILL_DIR", Path.home() / ".local/state/agentchemist/spill"))
        digest = hashlib.sha256(redact(url_or_path).encode()).hexdigest()[:16]
        return base / f"postgres-{digest}.spill.jsonl"
    path = _sqlite_path(url_or_path)
    return path.with_name(path.name + ".spill.jsonl")


def sqlite_file(url_or_path: str) -> Path | None:
    """The SQLite file a store URL or path names (None for PostgreSQL); RecordConfigError for another scheme."""
    if url_or_path.startswith(("postgresql://", "postgres://")):
        return None
    return _sqlite_path(url_or_path)


def _sqlite_path(url_or_path: str) -> Path:
    if url_or_path.startswith("sqlite:///"):
        # SQLAlchemy convention: sqlite:///rel.db is relative, sqlite:////abs/rel.db is absolute.
        return Path(url_or_path[len("sqlite:///"):])
    if "://" in url_or_path:
        raise RecordConfigError(f"unsupported store URL {url_or_path!r}: use a path, sqlite:///path or postgresql://")
    return Path(url_or_path)


def open_store(
    url_or_path: str | os.PathLike[str],
    *,
    spill_path: str | os.PathLike[str] | None = None,
    on_failure: FailureCallback | None = None,
    on_recovery: FailureCallback | None = None,
    max_pages: int | None = None,
    **options: Any,
) -> QueuedStore:
    """Open a store: a plain path or ``sqlite:///path.db`` -> SQLite; ``postgresql://...`` -> PostgreSQL.

    ``max_pages`` applies to SQLite only; other keyword options go to :class:`QueuedStore`.

    Example:
        >>> import tempfile, pathlib
        >>> store = open_store(pathlib.Path(tempfile.mkdtemp()) / "runs" / "exp-1" / "records.db")
        >>> store.start_experiment("exp-1", now=0.0, instruction="titrate")
        >>> store.add_fused("exp-1", stamp=1.0, quantity="volume", unit="mL", value=0.05, confidence=0.9,
        ...                 channels=["statistical"], channel_values=[0.05], channel_confidences=[0.9])
        1
        >>> store.close()
    """
    text = os.fspath(url_or_path)
    if not text:
        raise RecordConfigError("store URL or path is empty")
    spill = Path(spill_path) if spill_path is not None else default_spill_path(text)
    backend: SqlBackend
    if text.startswith(("postgresql://", "postgres://")):
        from agentchemist.record.postgres_store import PostgresBackend

        if max_pages is not None:
            raise RecordConfigError("max_pages applies to SQLite stores only")
        backend = PostgresBackend(text)
    else:
        from agentchemist.record.sqlite_store import SQLiteBackend

        backend = SQLiteBackend(_sqlite_path(text), max_pages=max_pages)
    return QueuedStore(backend, spill_path=spill, on_failure=on_failure, on_recovery=on_recovery, **options)


