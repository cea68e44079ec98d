"""Sustained write rate of a record store (fused records, the widest row).

Usage::

    python -m agentchemist.record.benchmark runs/bench/records.db --rows 50000 --flush-every 100
    python -m agentchemist.record.benchmark postgresql://user@host/db --rows 50000

``flush_every`` = 0 measures pure batched throughput (one flush at the end); a value k > 0 measures the
rate when every k-th record must be acknowledged as durable, as the recorder node does.
The wall clock is read here only to time the run, never inside the store.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from agentchemist.record.errors import RecordConfigError
from agentchemist.record.store import QueuedStore, open_store


@dataclass(frozen=True)
class WriteRate:
    rows: int
    seconds: float
    flush_every: int

    @property
    def rows_per_s(self) -> float:
        return self.rows / self.seconds


def measure_write_rate(store: QueuedStore, *, rows: int = 20_000, flush_every: int = 0,
                       experiment_id: str = "bench") -> WriteRate:
    """Write ``rows`` fused records (flushing every ``flush_every``) and time until they are durable."""
    if rows < 1 or flush_every < 0:
        raise RecordConfigError(f"rows must be >= 1 and flush_every >= 0, got {rows}, {flush_every}")
    store.start_experiment(experiment_id, now=0.0, metadata={"benchmark": True})
    store.flush()
    start = time.perf_counter()
    for i in range(rows):
        store.add_fused(experiment_id, stamp=float(i), quantity="volume", unit="mL", value=0.046875 * i,
                        confidence=0.9, channels=["statistical", "audio"],
                        channel_values=[0.047 * i, 0.046875 * i], channel_confidences=[0.92, 0.88],
                        fsm_state="titrating", subtask_id="t6", quality_flags=[])
        if flush_every and (i + 1) % flush_every == 0:
            store.flush()
    store.flush()
    return WriteRate(rows, time.perf_counter() - start, flush_every)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url", nargs="?", help="store path or URL (default: a temporary SQLite file)")
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--flush-every", type=int, default=0)
    parser.add_argument("--batch-size", type=int, default=1_000)
    args = parser.parse_args(argv)
    url = args.url or str(Path(tempfile.mkdtemp(prefix="record-bench-")) / "records.db")
    spill = Path(tempfile.mkdtemp(prefix="record-bench-spill-")) / "spill.jsonl"
    with open_store(url, spill_path=spill, batch_size=args.batch_size) as store:
        rate = measure_write_rate(store, rows=args.rows, flush_every=args.flush_every,
                                  experiment_id=f"bench-{uuid.uuid4().hex[:8]}")
    print(f"{store.backend.name}: {rate.rows} rows in {rate.seconds:.2f} s = {rate.rows_per_s:,.0f} rows/s "
          f"(flush every {rate.flush_every or 'end'})")


if __name__ == "__main__":
    main()
