"""The store's write path: a bounded queue drained by one writer thread, with spill and recovery.

Operations are numbered as they are submitted; the writer thread takes up to ``batch_size`` at a time,
writes them in one transaction, and advances the "durable" counter. ``wait_durable`` blocks a caller
until the counter passes what it had submitted. When the database refuses a batch the writer reports it
once through ``on_failure``, appends that batch and every later one to the fsync'd spill file (so they
count as durable), and every ``retry_interval_s`` reconnects and replays the spill in order, then
resumes direct writes. If even the spill cannot be written, the batch stays in memory, ``wait_durable``
raises :class:`StoreDurabilityError`, and producers eventually block on the full queue.

The only clock read is ``time.monotonic()``, to pace reconnect attempts and bound ``wait_durable``
(I/O pacing, not experiment logic: record times always come from the caller).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from agentchemist.record.errors import (
    RecordConfigError,
    StoreBackpressureError,
    StoreClosedError,
    StoreDurabilityError,
    StoreError,
)
from agentchemist.record.spill import SpillFile
from agentchemist.record.sql_backend import SqlBackend

log = logging.getLogger(__name__)

FailureCallback = Callable[[str, str], None]
_STOP = object()


class BatchWriter:
    """Owns the queue, the writer thread, the spill file and the durability counters of one store."""

    def __init__(
        self,
        backend: SqlBackend,
        spill: SpillFile,
        *,
        on_failure: FailureCallback | None,
        on_recovery: FailureCallback | None,
        queue_size: int,
        batch_size: int,
        retry_interval_s: float,
        put_timeout_s: float,
        first_seq: int,
        unavailable: Exception | None = None,
    ) -> None:
        if queue_size < 1 or batch_size < 1:
            raise RecordConfigError(f"queue_size and batch_size must be >= 1, got {queue_size}, {batch_size}")
        if not (retry_interval_s > 0 and put_timeout_s > 0):
            raise RecordConfigError(
                f"retry_interval_s and put_timeout_s must be > 0 s, got {retry_interval_s}, {put_timeout_s}"
            )
        self.backend = backend
        self.spill = spill
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
        self._error: str | None = None  # set while a batch is held only in memory
        self._closed = False
        self._token = uuid.uuid4().hex[:12]
        self._counter = 0
        self._seq = first_seq
        self.degraded = False
        self._next_retry = 0.0
        self.failures: list[tuple[str, str]] = []
        spill.repair()
        if unavailable is not None:
            self.degraded = True
            self._next_retry = time.monotonic() + self._retry_interval_s
            self._report(backend.classify(unavailable),
                         f"{backend.name} unavailable at the start ({unavailable}); recording to {spill.path} "
                         f"from the first row and retrying every {retry_interval_s} s")
        elif spill.exists():
            # Left over from a process that lost its database: replay before anything new.
            self.degraded = True
            self._try_recover(kind="spill_replayed")
        self._thread = threading.Thread(target=self._run, name=f"record-writer-{backend.name}", daemon=True)
        self._thread.start()

    # ---- producer side ----------------------------------------------------------------------------
    def submit(self, op: dict[str, Any], *, with_seq: bool = False) -> int:
        """Queue one operation (gives it a uid and, for fused records, the next seq); returns the seq."""
        with self._submit_lock:
            if self._closed:
                raise StoreClosedError("the record store is closed")
            self._counter += 1
            op["uid"] = f"{self._token}-{self._counter}"
            seq = self._seq + 1 if with_seq else 0
            if with_seq:
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
            self._submitted += 1
        return seq

    @property
    def closed(self) -> bool:
        return self._closed

    def wait_durable(self, timeout: float | None = None) -> None:
        """Block until everything submitted before the call is committed or in the fsync'd spill."""
        with self._submit_lock:
            target = self._submitted
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._durable < target:
                if self._error is not None:
                    raise StoreDurabilityError(self._error)
                if not self._thread.is_alive():
                    raise StoreError("record writer thread stopped; rows after the last flush are not durable")
                wait = 0.5 if deadline is None else min(0.5, deadline - time.monotonic())
                if wait <= 0:
                    raise StoreDurabilityError(f"records not durable within {timeout} s")
                self._cond.wait(wait)

    def close(self) -> None:
        """Drain the queue, stop the thread; raises if some records could not be made durable."""
        with self._submit_lock:
            if self._closed:
                return
            self._closed = True
            self._queue.put(_STOP)
        self._thread.join()
        if self._durable < self._submitted:
            raise StoreDurabilityError(
                f"{self._submitted - self._durable} records could not be made durable before close: {self._error}"
            )

    # ---- writer thread ------------------------------------------------------------------------------
    def _run(self) -> None:
        pending: list[dict[str, Any]] = []
        stopping = False
        while True:
            if not pending and not stopping:
                timeout = max(0.0, self._next_retry - time.monotonic()) if self.degraded else None
                try:
                    item = self._queue.get(timeout=timeout)
                except queue.Empty:
                    item = None
                stopping = self._take(item, pending)
                while not stopping and len(pending) < self._batch_size:
                    try:
                        item = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    stopping = self._take(item, pending)
            if self.degraded and (stopping or time.monotonic() >= self._next_retry):
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
        if not self.degraded:
            try:
                self.backend.write(ops)
                self._set_error(None)
                return True
            except Exception as exc:  # whatever went wrong, the rows must not be lost: spill them
                self.degraded = True
                self._next_retry = time.monotonic() + self._retry_interval_s
                self._report(self.backend.classify(exc),
                             f"{self.backend.name} write failed ({type(exc).__name__}: {exc}); buffering "
                             f"records to {self.spill.path} and retrying every {self._retry_interval_s} s")
                self.backend.disconnect()
        try:
            self.spill.append(ops)
        except OSError as exc:
            message = (f"{len(ops)} records could not be written to the database or the spill file "
                       f"{self.spill.path} ({exc}); held in memory and retried")
            if self._error is None:
                self._report("spill_failed", message)
            self._set_error(message)
            return False
        self._set_error(None)
        return True

    def _try_recover(self, kind: str) -> None:
        self._next_retry = time.monotonic() + self._retry_interval_s
        try:
            self.backend.connect()
            replayed = 0
            for chunk in self.spill.chunks(self._batch_size):
                self.backend.write(chunk)
                replayed += len(chunk)
            self.spill.clear()
        except Exception as exc:
            log.debug("record store still unavailable: %s", exc)
            self.backend.disconnect()
            return
        self.degraded = False
        self._set_error(None)  # a batch held in memory goes to the database next
        if self._on_recovery is not None:
            try:
                self._on_recovery(kind, f"{self.backend.name} writable again; replayed {replayed} "
                                        f"spilled records from {self.spill.path}")
            except Exception:
                log.exception("on_recovery callback failed")

    def _set_error(self, message: str | None) -> None:
        if self._error != message:
            with self._cond:
                self._error = message
                self._cond.notify_all()

    def _mark_durable(self, count: int) -> None:
        with self._cond:
            self._durable += count
            self._cond.notify_all()

    def _report(self, kind: str, description: str) -> None:
        self.failures.append((kind, description))
        log.warning("record store %s: %s", kind, description)
        if self._on_failure is not None:
            try:
                self._on_failure(kind, description)
            except Exception:
                log.exception("on_failure callback failed")
