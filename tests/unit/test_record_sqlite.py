"""SQLite specifics: WAL + synchronous=FULL, full disk -> spill -> recovery, spill failure, URLs."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from agentchemist.record import (
    RecordConfigError,
    StoreDurabilityError,
    RecordInputError,
    default_spill_path,
    open_store,
    run_database_path,
)

EXP = "exp-disk"


def raw(i: int) -> dict:
    return dict(stamp=float(i), channel="sensor", sensor="ph_meter", quantity="pH", value=7.0 + i * 1e-3,
                unit="", confidence=0.95, fsm_state="titrating", subtask_id="t2", flags=[],
                payload={"i": i, "note": "x" * 40})


def wait_until(predicate, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached")
        time.sleep(0.02)


def test_wal_and_full_synchronous(tmp_path: Path) -> None:
    db = tmp_path / "runs" / EXP / "records.db"
    store = open_store(f"sqlite:///{db}")
    store.start_experiment(EXP, now=0.0)
    store.flush()
    assert store.backend._writer().execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    store.close()
    assert not Path(str(db) + "-wal").exists() or Path(str(db) + "-wal").stat().st_size == 0
    assert default_spill_path(str(db)) == db.with_name("records.db.spill.jsonl")


def test_full_disk_spills_reports_and_replays_nothing_lost(tmp_path: Path) -> None:
    failures: list[tuple[str, str]] = []
    recoveries: list[tuple[str, str]] = []
    db = tmp_path / "records.db"
    store = open_store(db, max_pages=30, spill_path=tmp_path / "spill.jsonl", retry_interval_s=0.05,
                       on_failure=lambda k, d: failures.append((k, d)),
                       on_recovery=lambda k, d: recoveries.append((k, d)))
    store.start_experiment(EXP, now=0.0)
    n = 600
    for i in range(n):
        store.add_raw(EXP, **raw(i))
        if i % 50 == 49:
            store.flush()  # returns: durable in the DB or in the fsync'd spill
    store.flush()
    assert store.degraded
    assert [k for k, _ in failures] == ["disk_full"]  # reported once per outage, not per batch
    assert "full" in failures[0][1]
    spilled = store.spill.read()
    assert spilled, "rows must be in the spill file while the disk is full"
    # Reads see DB rows + spilled rows while degraded.
    assert [r["stamp"] for r in store.load_run(EXP)["raw_observations"]] == [float(i) for i in range(n)]

    store.backend.set_max_pages(None)  # space was freed
    wait_until(lambda: not store.degraded)
    assert [k for k, _ in recoveries] == ["store_recovered"]
    assert not store.spill.path.exists()
    store.add_raw(EXP, **raw(n))
    store.close()
    with sqlite3.connect(db) as conn:
        stamps = [r[0] for r in conn.execute("SELECT stamp FROM raw_observations ORDER BY id")]
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert stamps == [float(i) for i in range(n + 1)]  # all rows, in order, exactly once


def test_spill_left_by_a_dead_process_is_replayed_at_open(tmp_path: Path) -> None:
    db = tmp_path / "records.db"
    spill = tmp_path / "spill.jsonl"
    store = open_store(db, max_pages=30, spill_path=spill, retry_interval_s=60.0)
    store.start_experiment(EXP, now=0.0)
    for i in range(400):
        store.add_raw(EXP, **raw(i))
    store.close()  # still full: rows stay in the spill file
    assert spill.exists()
    recovered = []
    reopened = open_store(db, spill_path=spill, on_recovery=lambda k, d: recovered.append(k))
    assert recovered == ["spill_replayed"] and not spill.exists()
    assert len(reopened.load_run(EXP)["raw_observations"]) == 400
    reopened.close()


def test_database_and_spill_both_failing_is_never_acknowledged(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the spill directory should be")
    failures: list[str] = []
    store = open_store(tmp_path / "records.db", max_pages=30, spill_path=blocker / "spill.jsonl",
                       retry_interval_s=0.05, on_failure=lambda k, d: failures.append(k))
    store.start_experiment(EXP, now=0.0)
    with pytest.raises(StoreDurabilityError, match="held in memory"):
        for i in range(600):
            store.add_raw(EXP, **raw(i))
        store.flush()
    assert failures[:2] == ["disk_full", "spill_failed"]
    # The operator frees space: the rows held in memory are written and acknowledged.
    store.backend.set_max_pages(None)
    wait_until(lambda: not store.degraded)
    store.flush()
    assert len(store.load_run(EXP)["raw_observations"]) == 600
    store.close()


def test_urls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    store = open_store("sqlite:///rel/records.db")
    store.close()
    assert (tmp_path / "rel" / "records.db").exists()
    with pytest.raises(RecordConfigError, match="unsupported"):
        open_store("mysql://x")
    with pytest.raises(RecordConfigError):
        open_store("")


def test_run_database_path(tmp_path: Path) -> None:
    assert run_database_path(tmp_path / "runs", "exp-2024_01.a") == tmp_path / "runs" / "exp-2024_01.a" / "records.db"
    for bad in ("../x", "a/b", "..", "", "a b"):
        with pytest.raises(RecordInputError):
            run_database_path(tmp_path, bad)
