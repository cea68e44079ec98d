"""The record store: one interface over SQLite and PostgreSQL, with batching, durability and spill.

``add_*`` validates a record, gives it a unique id and puts it on a bounded queue; a writer thread drains
the queue in batches, one transaction per batch. ``flush()`` returns once everything submitted before it
is durable: committed to the database, or fsync'd to the spill file when the database cannot take it.
So a caller that acknowledges a record only after ``flush()`` never acknowledges a record it could lose.

When a write fails (full disk, dropped PostgreSQL connection) the store reports it once through
``on_failure(kind, description)``, appends every following batch to the spill file, and every
``retry_interval_s`` reconnects and replays the spill in order. Replay is idempotent (unique uids), so a
crash during replay duplicates nothing. ``on_recovery(kind, description)`` reports the way back.
The only clock read here is ``time.monotonic()`` for the retry back-off: it paces I/O, not experiment
logic, which always receives ``now``/``stamp`` from the caller.
"""

from __future__ import annotations

import hashlib
import logging
import os
import queue
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from agentchemist.record import schema
from agentchemist.record.errors import (
    RecordConfigError,
    StoreBackpressureError,
    StoreClosedError,
    StoreDurabilityError,
    StoreError,
)
from agentchemist.record.spill import SpillFile
from agentchemist.record.sql_backend import SqlBackend
from agentchemist.record import validate as v

log = logging.getLogger(__name__)

FailureCallback = Callable[[str, str], None]
_STOP = object()


@runtime_checkable
class RecordStore(Protocol):
    """What the recorder node needs from a store (see :class:`QueuedStore` for the semantics)."""

    def start_experiment(self, experiment_id: str, *, now: float, instruction: str = "", metadata: dict | None = None) -> None: ...
    def finish_experiment(self, experiment_id: str, *, now: float, status: str, reason: str = "") -> None: ...
    def add_transition(self, experiment_id: str, *, stamp: float, from_state: str, to_state: str, symbol: str, subtask_id: str = "", agent: str = "") -> None: ...
    def add_raw(self, experiment_id: str, *, stamp: float, channel: str, sensor: str, quantity: str, value: float, unit: str, confidence: float, fsm_state: str = "", subtask_id: str = "", flags: Sequence[str] = (), payload: Any = None) -> None: ...
    def add_fused(self, experiment_id: str, *, stamp: float, quantity: str, unit: str, value: float, confidence: float, channels: Sequence[str], channel_values: Sequence[float], channel_confidences: Sequence[float], fsm_state: str = "", subtask_id: str = "", quality_flags: Sequence[str] = ()) -> int: ...
    def add_anomaly(self, experiment_id: str, *, stamp: float, source: str, kind: str, severity: str, description: str, fsm_state: str = "", subtask_id: str = "", response: str = "", resolved: bool = False) -> None: ...
    def add_audio_event(self, experiment_id: str, *, stamp: float, event_id: str, kind: str, classification: str, start: float, end: float, snr_db: float, peak_frequency_hz: float, quantity: float, confidence: float) -> None: ...
    def add_artifact(self, experiment_id: str, *, stamp: float, kind: str, path: str, label: str = "") -> None: ...
    def flush(self) -> None: ...
    def close(self) -> None: ...
    def load_run(self, experiment_id: str) -> dict: ...
    def query_fused(self, experiment_id: str, *, quantity: str | None = None, since: float | None = None, until: float | None = None, limit: int = 0) -> list[dict]: ...
    def experiments(self) -> list[dict]: ...


class QueuedStore:
    """A :class:`RecordStore` over any :class:`SqlBackend`.

    Args:
        backend: the database back end (connected here; raises StoreUnavailableError when it cannot be).
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
        if queue_size < 1 or batch_size < 1:
            raise RecordConfigError(f"queue_size and batch_size must be >= 1, got {queue_size}, {batch_size}")
        if not (retry_interval_s > 0 and put_timeout_s > 0):
            raise RecordConfigError("retry_interval_s and put_timeout_s must be > 0 s")
        self.backend = backend
        self.spill = SpillFile(spill_path)
        self._on_failure = on_failure
        self._on_recovery = on_recovery
        self._batch_size = batch_size
        self._retry_interval_s = retry_interval_s
        self._put_timeout_s = put_timeout_s
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=queue_size)
        self._submit_lock = threading.Lock()
        self._cond = threading.Condition()
        self._submitted = 0
        self._durable = 0
        self._error: str | None = None  # set while rows are held only in memory
        self._closed = False
        self._token = uuid.uuid4().hex[:12]
        self._counter = 0
        self._degraded = False
        self._next_retry = 0.0
        self._failures: list[tuple[str, str]] = []

        backend.connect()
        spilled = self.spill.read()
        self._known = backend.experiment_ids() | {op["experiment_id"] for op in spilled}
        self._seq = max([backend.max_seq(), *(int(op.get("seq", 0)) for op in spilled)])
        if spilled or self.spill.exists():
            # Left over from a previous process that lost its database: replay before anything new.
            self._degraded = True
            self._try_recover(kind="spill_replayed")
        self._writer = threading.Thread(target=self._run, name=f"record-writer-{backend.name}", daemon=True)
        self._writer.start()

    # ---- status ---------------------------------------------------------------------------------
    @property
    def degraded(self) -> bool:
        """True while rows go to the spill file instead of the database."""
        return self._degraded

    @property
    def failures(self) -> list[tuple[str, str]]:
        """Every (kind, description) reported through on_failure so far."""
        return list(self._failures)

    # ---- experiment lifecycle -------------------------------------------------------------------
    def start_experiment(self, experiment_id: str, *, now: float, instruction: str = "", metadata: dict | None = None) -> None:
        """Start record (or, for an existing id, merge metadata/instruction into it)."""
        v.name("experiment_id", experiment_id)
        op = {
            "op": "start",
            "experiment_id": experiment_id,
            "now": v.stamp("now", now),
            "instruction": v.text("instruction", instruction),
            "metadata": v.json_dict("metadata", metadata),
        }
        self._submit(op, register=experiment_id)

    def finish_experiment(self, experiment_id: str, *, now: float, status: str, reason: str = "") -> None:
        """Stop record; call it on success *and* on abort/failure, with the reason."""
        op = {
            "op": "finish",
            "experiment_id": self._check_experiment(experiment_id),
            "now": v.stamp("now", now),
            "status": v.name("status", status),
            "reason": v.text("reason", reason),
        }
        self._submit(op)

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
        with self._submit_lock:
            target = self._submitted
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._durable < target:
                if self._error is not None:
                    raise StoreDurabilityError(self._error)
                if not self._writer.is_alive():
                    raise StoreError("record writer thread stopped; rows after the last flush are not durable")
                wait = 0.5 if deadline is None else min(0.5, deadline - time.monotonic())
                if wait <= 0:
                    raise StoreDurabilityError(f"records not durable within {timeout} s")
                self._cond.wait(wait)

    def close(self) -> None:
        """Write out everything queued, checkpoint and close. Idempotent."""
        with self._submit_lock:
            if self._closed:
                return
            self._closed = True
            self._queue.put(_STOP)
        self._writer.join()
        self.backend.disconnect()
        closer = getattr(self.backend, "close_reader", None)
        if closer is not None:
            closer()
        if self._durable < self._submitted:
            raise StoreDurabilityError(
                f"{self._submitted - self._durable} records could not be made durable before close: {self._error}"
            )

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
        experiments = self._merged_experiments(experiment_id)
        if not experiments:
            raise v.UnknownExperimentError(f"no experiment {experiment_id!r} in this store")
        run: dict[str, Any] = {"experiment": _with_metadata(experiments[0])}
        for key, table in schema.RUN_KEYS.items():
            rows = self._merged_records(table, experiment_id)
            run[key] = [{k: r[k] for k in schema.RECORD_TABLES[table].names} for r in rows]
        return run

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
        rows = self._merged_records("fused_records", experiment_id, quantity=quantity, since=since, until=until)
        if limit:
            rows = rows[:limit]
        names = (*schema.RECORD_TABLES["fused_records"].names, "seq")
        return [{k: r[k] for k in names} for r in rows]

    def experiments(self) -> list[dict[str, Any]]:
        """All experiments in the store (same dict shape as ``load_run()["experiment"]``)."""
        self._check_open()
        self.flush()
        return [_with_metadata(e) for e in self._merged_experiments(None)]

    # ---- internals: submission ---------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosedError("the record store is closed")

    def _check_experiment(self, experiment_id: str) -> str:
        v.name("experiment_id", experiment_id)
        if experiment_id not in self._known:
            try:  # another process may have started it on a shared PostgreSQL
                self._known |= self.backend.experiment_ids()
            except StoreError:
                pass
        if experiment_id not in self._known:
            raise v.UnknownExperimentError(
                f"experiment {experiment_id!r} was not started; call start_experiment first"
            )
        return experiment_id

    def _insert(self, table: str, experiment_id: str, row: dict[str, Any], with_seq: bool = False) -> int:
        op = {"op": "insert", "table": table, "experiment_id": self._check_experiment(experiment_id), "row": row}
        return self._submit(op, with_seq=with_seq)

    def _submit(self, op: dict[str, Any], *, with_seq: bool = False, register: str | None = None) -> int:
        with self._submit_lock:
            self._check_open()
            self._counter += 1
            op["uid"] = f"{self._token}-{self._counter}"
            seq = 0
            if with_seq:
                seq = self._seq + 1
                op["seq"] = seq
            try:
                self._queue.put(op, timeout=self._put_timeout_s)
            except queue.Full:
                self._counter -= 1
                raise StoreBackpressureError(
                    f"record queue full for {self._put_timeout_s} s (database too slow or stuck)"
                ) from None
            if with_seq:
                self._seq = seq
            if register is not None:
                self._known.add(register)
            self._submitted += 1
        return seq

    # ---- internals: writer thread ---------------------------------------------------------------------
    def _run(self) -> None:
        pending: list[dict[str, Any]] = []
        stopping = False
        while True:
            if not pending and not stopping:
                timeout = None
                if self._degraded:
                    timeout = max(0.0, self._next_retry - time.monotonic())
                try:
                    item = self._queue.get(timeout=timeout)
                except queue.Empty:
                    item = None
                stopping = self._take(item, pending) or stopping
                while not stopping and len(pending) < self._batch_size:
                    try:
                        item = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    stopping = self._take(item, pending)
            if self._degraded and (stopping or time.monotonic() >= self._next_retry):
                self._try_recover(kind="store_recovered")
            if pending:
                if self._persist(pending):
                    self._mark_durable(len(pending))
                    pending = []
                elif stopping:
                    return  # close() reports the records held in memory
                else:
                    time.sleep(self._retry_interval_s)
                    continue
            if stopping and self._queue.empty():
                return

    @staticmethod
    def _take(item: Any, pending: list[dict[str, Any]]) -> bool:
        if item is _STOP:
            return True
        if item is not None:
            pending.append(item)
        return False

    def _persist(self, ops: list[dict[str, Any]]) -> bool:
        if not self._degraded:
            try:
                self.backend.write(ops)
                self._clear_error()
                return True
            except Exception as exc:  # any failure: the rows must not be lost, so spill them
                kind = self.backend.classify(exc)
                self._degraded = True
                self._next_retry = time.monotonic() + self._retry_interval_s
                self._report(kind, f"{self.backend.name} write failed ({type(exc).__name__}: {exc}); "
                                   f"buffering records to {self.spill.path} and retrying every "
                                   f"{self._retry_interval_s} s")
                self.backend.disconnect()
        try:
            self.spill.append(ops)
        except OSError as exc:
            message = (f"{len(ops)} records could not be written to the database or the spill file "
                       f"{self.spill.path} ({exc}); held in memory and retried")
            if self._error is None:
                self._report("spill_failed", message)
            with self._cond:
                self._error = message
                self._cond.notify_all()
            return False
        self._clear_error()
        return True

    def _clear_error(self) -> None:
        if self._error is not None:
            with self._cond:
                self._error = None

    def _try_recover(self, kind: str) -> None:
        self._next_retry = time.monotonic() + self._retry_interval_s
        try:
            self.backend.connect()
            operations = self.spill.read()
            for start in range(0, len(operations), self._batch_size):
                self.backend.write(operations[start : start + self._batch_size])
            self.spill.clear()
        except Exception as exc:
            log.debug("record store still unavailable: %s", exc)
            self.backend.disconnect()
            return
        self._degraded = False
        self._clear_error()  # rows held in memory go to the database next
        if self._on_recovery is not None:
            try:
                self._on_recovery(kind, f"{self.backend.name} writable again; replayed {len(operations)} "
                                        f"spilled records from {self.spill.path}")
            except Exception:
                log.exception("on_recovery callback failed")

    def _mark_durable(self, count: int) -> None:
        with self._cond:
            self._durable += count
            self._cond.notify_all()

    def _report(self, kind: str, description: str) -> None:
        self._failures.append((kind, description))
        log.warning("record store %s: %s", kind, description)
        if self._on_failure is not None:
            try:
                self._on_failure(kind, description)
            except Exception:
                log.exception("on_failure callback failed")

    # ---- internals: reads merged with the spill ------------------------------------------------------
    def _spilled(self) -> list[dict[str, Any]]:
        return self.spill.read() if self.spill.exists() else []

    def _merged_experiments(self, experiment_id: str | None) -> list[dict[str, Any]]:
        # An unreadable database raises (StoreUnavailableError): a partial answer would look complete.
        spilled = [op for op in self._spilled() if op["op"] in ("start", "finish")]
        rows = {e["experiment_id"]: e for e in self.backend.read_experiments(experiment_id)}
        for op in spilled:
            eid = op["experiment_id"]
            if experiment_id is not None and eid != experiment_id:
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
                    current = rows[eid] = {"experiment_id": eid, "instruction": "", "started": op["now"],
                                           "metadata": {}}
                current.update(finished=op["now"], status=op["status"], reason=op["reason"])
        return sorted(rows.values(), key=lambda e: (e["started"], e["experiment_id"]))

    def _merged_records(self, table: str, experiment_id: str, *, quantity: str | None = None,
                        since: float | None = None, until: float | None = None) -> list[dict[str, Any]]:
        spilled = self._spilled()
        rows = self.backend.read_records(table, experiment_id, quantity=quantity, since=since, until=until)
        seen = {r["uid"] for r in rows}
        extra = []
        for op in spilled:
            if op["op"] != "insert" or op["table"] != table or op["experiment_id"] != experiment_id:
                continue
            row = op["row"]
            if op["uid"] in seen or (quantity is not None and row.get("quantity") != quantity):
                continue
            if (since is not None and row["stamp"] < since) or (until is not None and row["stamp"] > until):
                continue
            extra.append({**row, "uid": op["uid"], **({"seq": op["seq"]} if "seq" in op else {})})
        if extra:
            rows = sorted(rows + extra, key=lambda r: r["stamp"])  # stable: DB order kept on ties
        return rows


def _with_metadata(experiment: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(experiment)
    for key, value in experiment.get("metadata", {}).items():
        out.setdefault(key, value)
    return out


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


