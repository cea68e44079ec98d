"""PostgreSQL specifics on a real server: dropped connections and a server outage spill and replay."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from agentchemist.record import StoreUnavailableError, open_store

try:
    from pg_server import PostgresServer, pg_server  # noqa: F401  (fixture)
except ImportError:
    from .pg_server import PostgresServer, pg_server  # type: ignore[no-redef]  # noqa: F401

pytestmark = pytest.mark.postgres
EXP = "exp-pg"


def fused(i: int) -> dict:
    return dict(stamp=float(i), quantity="volume", unit="mL", value=i * 0.046875, confidence=0.9,
                channels=["statistical", "audio"], channel_values=[i * 0.047, i * 0.046875],
                channel_confidences=[0.9, 0.9], fsm_state="titrating", subtask_id="t6", quality_flags=[])


def wait_until(predicate, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached")
        time.sleep(0.02)


def test_terminated_backend_spills_and_replays(pg_server: PostgresServer, tmp_path: Path) -> None:
    failures: list[tuple[str, str]] = []
    recoveries: list[str] = []
    store = open_store(pg_server.fresh_schema(), spill_path=tmp_path / "spill.jsonl", retry_interval_s=0.05,
                       on_failure=lambda k, d: failures.append((k, d)),
                       on_recovery=lambda k, d: recoveries.append(k))
    store.start_experiment(EXP, now=0.0)
    seqs = [store.add_fused(EXP, **fused(i)) for i in range(300)]
    store.flush()
    assert pg_server.terminate_backends() >= 1  # the writer's connection dies mid-stream
    seqs += [store.add_fused(EXP, **fused(i)) for i in range(300, 600)]
    store.flush()
    assert [k for k, _ in failures] == ["connection_lost"]
    wait_until(lambda: not store.degraded)
    assert recoveries == ["store_recovered"]
    rows = store.query_fused(EXP)
    assert [r["stamp"] for r in rows] == [float(i) for i in range(600)]
    assert [r["seq"] for r in rows] == seqs
    store.close()


def test_server_outage_buffers_then_replays_nothing_lost(pg_server: PostgresServer, tmp_path: Path) -> None:
    failures: list[str] = []
    url = pg_server.fresh_schema()
    store = open_store(url, spill_path=tmp_path / "spill.jsonl", retry_interval_s=0.1,
                       on_failure=lambda k, d: failures.append(k))
    store.start_experiment(EXP, now=0.0)
    for i in range(200):
        store.add_fused(EXP, **fused(i))
    store.flush()
    pg_server.stop()
    try:
        for i in range(200, 500):
            store.add_fused(EXP, **fused(i))
            store.add_anomaly(EXP, stamp=float(i), source="test", kind="probe", severity="info", description="")
        store.flush()  # durable in the spill file while the server is down
        assert failures == ["connection_lost"]
        assert store.degraded and len(store.spill.read()) == 600
        with pytest.raises(StoreUnavailableError):
            store.load_run(EXP)  # no partial answers while the database is unreachable
    finally:
        pg_server.start()
    wait_until(lambda: not store.degraded)
    run = store.load_run(EXP)
    assert [r["stamp"] for r in run["fused_records"]] == [float(i) for i in range(500)]
    assert len(run["anomalies"]) == 300
    store.close()


def test_server_down_at_open_spills_from_the_first_row_then_replays(pg_server: PostgresServer,
                                                                    tmp_path: Path) -> None:
    """PostgreSQL unreachable when the plan arrives is an outage like one mid-run, not an exception."""
    failures: list[tuple[str, str]] = []
    recoveries: list[str] = []
    url = pg_server.fresh_schema()
    pg_server.stop()
    try:
        store = open_store(url, spill_path=tmp_path / "spill.jsonl", retry_interval_s=0.1,
                           on_failure=lambda k, d: failures.append((k, d)),
                           on_recovery=lambda k, d: recoveries.append(k))
        assert store.degraded
        assert [k for k, _ in failures] == ["connection_lost"] and "from the first row" in failures[0][1]
        store.start_experiment(EXP, now=0.0)
        seqs = [store.add_fused(EXP, **fused(i)) for i in range(50)]
        store.flush()  # durable in the spill
        assert len(store.spill.read()) == 51
    finally:
        pg_server.start()
    wait_until(lambda: not store.degraded)
    assert recoveries == ["store_recovered"]
    rows = store.query_fused(EXP)
    assert [r["stamp"] for r in rows] == [float(i) for i in range(50)] and [r["seq"] for r in rows] == seqs
    store.close()


def test_unreachable_server_at_open_spills(tmp_path: Path) -> None:
    failures: list[str] = []
    store = open_store("postgresql://postgres@127.0.0.1:1/postgres", spill_path=tmp_path / "s.jsonl",
                       retry_interval_s=30.0, on_failure=lambda k, d: failures.append(d))
    store.start_experiment(EXP, now=0.0)
    store.flush()
    assert store.degraded and "cannot connect" in failures[0] and len(store.spill.read()) == 1
    with pytest.raises(StoreUnavailableError):
        store.load_run(EXP)  # no partial answers while the database is unreachable
    store.close()


def test_two_stores_share_one_server(pg_server: PostgresServer, tmp_path: Path) -> None:
    url = pg_server.fresh_schema()
    a = open_store(url, spill_path=tmp_path / "a.jsonl")
    b = open_store(url, spill_path=tmp_path / "b.jsonl")
    a.start_experiment("exp-a", now=0.0)
    b.start_experiment("exp-b", now=1.0)
    a.add_fused("exp-a", **fused(1))
    b.add_fused("exp-b", **fused(2))
    a.flush()
    b.flush()
    assert [e["experiment_id"] for e in a.experiments()] == ["exp-a", "exp-b"]
    # b sees an experiment another recorder started once it is in the database.
    b.add_fused("exp-a", **fused(3))
    b.flush()
    assert [r["stamp"] for r in a.query_fused("exp-a")] == [1.0, 3.0]
    a.close()
    b.close()
