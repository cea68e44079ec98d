"""The store test-suite, run against SQLite and against a real PostgreSQL server (same tests)."""

from __future__ import annotations

import json
import math
import sqlite3
import threading
from pathlib import Path

import pytest

from agentchemist.record import (
    RecordInputError,
    RecordStore,
    StoreClosedError,
    UnknownExperimentError,
    open_store,
)
from agentchemist.record.schema import RECORD_TABLES

try:
    from pg_server import pg_server  # noqa: F401  (fixture)
except ImportError:  # tests/unit as a package
    from .pg_server import pg_server  # type: ignore[no-redef]  # noqa: F401

EXP = "exp-0001"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "runs" / EXP / "records.db")
    return request.getfixturevalue("pg_server").fresh_schema()


@pytest.fixture
def make_store(url: str, tmp_path: Path):
    stores = []

    def make(**kwargs):
        kwargs.setdefault("spill_path", tmp_path / "spill.jsonl")
        store = open_store(url, **kwargs)
        stores.append(store)
        return store

    yield make
    for store in stores:
        store.close()


def same(a, b) -> bool:
    """Equality where NaN equals NaN, recursively."""
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


TRANSITION = dict(stamp=1.0, from_state="initial", to_state="pipette_grasped", symbol="grasp_ok",
                  subtask_id="t5", agent="action_policy")
RAW = dict(stamp=2.0, channel="sensor", sensor="ph_meter", quantity="pH", value=float("nan"), unit="",
           confidence=1.7, fsm_state="titrating", subtask_id="t2", flags=["invalid_input:sensor"],
           payload={"self_check_ok": False, "noise": float("inf"), "raw": [1, 2]})
FUSED = dict(stamp=3.0, quantity="volume", unit="mL", value=0.0478125, confidence=0.85,
             channels=["statistical", "audio"], channel_values=[0.048, 0.046875], channel_confidences=[0.9, 0.8],
             fsm_state="titrating", subtask_id="t6", quality_flags=[])
ANOMALY = dict(stamp=4.0, source="audio_supervisor", kind="unexpected_drop", severity="warn",
               description="drop with no dispense", fsm_state="waiting_ph", subtask_id="t6", response="retry",
               resolved=True)
AUDIO = dict(stamp=5.0, event_id="ev-7", kind="droplet", classification="expected", start=4.9, end=4.95,
             snr_db=18.5, peak_frequency_hz=1240.0, quantity=0.046875, confidence=0.92)
ARTIFACT = dict(stamp=6.0, kind="snapshot", path="runs/exp-0001/snapshots/start.png", label="start")


def fill(store) -> None:
    store.start_experiment(EXP, now=0.0, instruction="titrate HCl with NaOH", metadata={"operator": "ana"})
    store.add_transition(EXP, **TRANSITION)
    store.add_raw(EXP, **RAW)
    store.add_fused(EXP, **FUSED)
    store.add_anomaly(EXP, **ANOMALY)
    store.add_audio_event(EXP, **AUDIO)
    store.add_artifact(EXP, **ARTIFACT)


def test_round_trip_every_record_kind_with_exact_fields(make_store) -> None:
    store = make_store()
    assert isinstance(store, RecordStore)
    fill(store)
    store.finish_experiment(EXP, now=9.0, status="completed")
    run = store.load_run(EXP)
    for key, expected in (("transitions", TRANSITION), ("raw_observations", RAW), ("fused_records", FUSED),
                          ("anomalies", ANOMALY), ("audio_events", AUDIO), ("artifacts", ARTIFACT)):
        assert len(run[key]) == 1, key
        assert same(run[key][0], expected), (key, run[key][0])
    exp = run["experiment"]
    assert (exp["experiment_id"], exp["instruction"], exp["started"], exp["finished"], exp["status"]) == (
        EXP, "titrate HCl with NaOH", 0.0, 9.0, "completed")
    assert exp["metadata"] == {"operator": "ana"} and exp["operator"] == "ana"


def test_stop_record_on_abort_and_metadata_merge_on_restart(make_store) -> None:
    store = make_store()
    store.start_experiment(EXP, now=0.0, instruction="titrate", metadata={"operator": "ana", "batch": "A1"})
    store.start_experiment(EXP, now=50.0, metadata={"batch": "A2", "restart": 1})
    store.finish_experiment(EXP, now=60.0, status="aborted", reason="pH probe out of solution")
    (exp,) = store.experiments()
    assert exp["started"] == 0.0 and exp["instruction"] == "titrate"
    assert exp["metadata"] == {"operator": "ana", "batch": "A2", "restart": 1}
    assert (exp["status"], exp["reason"], exp["finished"]) == ("aborted", "pH probe out of solution", 60.0)


def test_running_experiment_has_no_stop_record(make_store) -> None:
    store = make_store()
    store.start_experiment(EXP, now=1.0)
    (exp,) = store.experiments()
    assert exp["status"] == "running" and exp["finished"] is None


def test_fused_seq_is_monotone_and_continues_after_reopen(make_store) -> None:
    store = make_store()
    fill(store)
    seqs = [store.add_fused(EXP, **{**FUSED, "stamp": 10.0 + i}) for i in range(5)]
    assert seqs == sorted(set(seqs)) and len(seqs) == 5
    store.close()
    again = make_store()
    assert again.add_fused(EXP, **FUSED) > seqs[-1]


def test_query_fused_filters_and_orders(make_store) -> None:
    store = make_store()
    fill(store)
    for i, stamp in enumerate([30.0, 10.0, 20.0, 40.0]):
        store.add_fused(EXP, **{**FUSED, "stamp": stamp, "value": float(i)})
    store.add_fused(EXP, **{**FUSED, "stamp": 25.0, "quantity": "temperature", "unit": "degC"})
    volume = store.query_fused(EXP, quantity="volume", since=10.0, until=30.0)
    assert [r["stamp"] for r in volume] == [10.0, 20.0, 30.0]
    assert set(volume[0]) == set(FUSED) | {"seq"}
    assert [r["stamp"] for r in store.query_fused(EXP, quantity="volume", limit=2)] == [3.0, 10.0]
    assert [r["quantity"] for r in store.query_fused(EXP, since=25.0, until=25.0)] == ["temperature"]
    assert store.query_fused("other-experiment") == []


def test_records_for_unknown_experiment_are_refused(make_store) -> None:
    store = make_store()
    with pytest.raises(UnknownExperimentError, match="exp-x"):
        store.add_raw("exp-x", **RAW)
    with pytest.raises(UnknownExperimentError):
        store.load_run("exp-x")


@pytest.mark.parametrize(
    ("method", "record", "field"),
    [
        ("add_raw", {**RAW, "stamp": float("nan")}, "stamp"),
        ("add_raw", {**RAW, "value": "7.0"}, "value"),
        ("add_raw", {**RAW, "payload": {"x": object()}}, "payload"),
        ("add_raw", {**RAW, "flags": "invalid"}, "flags"),
        ("add_fused", {**FUSED, "confidence": 1.2}, "confidence"),
        ("add_fused", {**FUSED, "channel_values": [1.0]}, "length"),
        ("add_anomaly", {**ANOMALY, "severity": "fatal"}, "severity"),
        ("add_audio_event", {**AUDIO, "end": 4.0}, "before start"),
        ("add_transition", {**TRANSITION, "to_state": ""}, "to_state"),
    ],
)
def test_bad_arguments_raise_typed_errors_naming_the_field(make_store, method, record, field) -> None:
    store = make_store()
    store.start_experiment(EXP, now=0.0)
    with pytest.raises(RecordInputError, match=field):
        getattr(store, method)(EXP, **record)
    assert store.load_run(EXP)[{"add_raw": "raw_observations", "add_fused": "fused_records",
                                "add_anomaly": "anomalies", "add_audio_event": "audio_events",
                                "add_transition": "transitions"}[method]] == []


def test_flush_makes_rows_visible_to_an_independent_reader(make_store, url) -> None:
    store = make_store()
    store.start_experiment(EXP, now=0.0)
    for i in range(250):
        store.add_raw(EXP, **{**RAW, "stamp": float(i), "value": float(i)})
    store.flush()
    count = _count_rows(url, "raw_observations")
    assert count == 250


def test_reopen_keeps_everything(make_store) -> None:
    store = make_store()
    fill(store)
    store.close()
    store.close()  # idempotent
    with pytest.raises(StoreClosedError):
        store.add_raw(EXP, **RAW)
    run = make_store().load_run(EXP)
    assert sum(len(run[k]) for k in run if k != "experiment") == 6


def test_concurrent_producers_lose_nothing(make_store) -> None:
    store = make_store(queue_size=64, batch_size=50)
    store.start_experiment(EXP, now=0.0)
    seqs: list[int] = []
    lock = threading.Lock()

    def produce(worker: int) -> None:
        for i in range(150):
            seq = store.add_fused(EXP, **{**FUSED, "stamp": worker * 1000.0 + i})
            store.add_raw(EXP, **{**RAW, "stamp": worker * 1000.0 + i})
            with lock:
                seqs.append(seq)

    threads = [threading.Thread(target=produce, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    run = store.load_run(EXP)
    assert len(run["fused_records"]) == 600 and len(run["raw_observations"]) == 600
    assert len(set(seqs)) == 600
    assert sorted(r["seq"] for r in store.query_fused(EXP)) == sorted(seqs)


def test_schema_has_tables_and_experiment_stamp_indexes(make_store, url) -> None:
    make_store().start_experiment(EXP, now=0.0)
    indexes = _index_columns(url)
    for table in RECORD_TABLES:
        assert ("experiment_id", "stamp") in indexes[table], table


def test_spill_replay_is_idempotent(make_store, tmp_path: Path) -> None:
    """A crash between committing a replay and deleting the spill file must not duplicate rows."""
    spill = tmp_path / "left-over.jsonl"
    ops = [{"op": "start", "experiment_id": EXP, "now": 0.0, "instruction": "", "metadata": {}, "uid": "old-1"}]
    ops += [{"op": "insert", "table": "raw_observations", "experiment_id": EXP, "uid": f"old-{i + 2}",
             "row": {**RAW, "stamp": float(i)}} for i in range(20)]
    text = "".join(json.dumps(op) + "\n" for op in ops)
    recovered: list[tuple[str, str]] = []
    for _ in range(2):
        spill.write_text(text + '{"op": "insert", "tab')  # plus a torn last line, never acknowledged
        store = make_store(spill_path=spill, on_recovery=lambda k, d: recovered.append((k, d)))
        assert not spill.exists()
        store.close()
    run = make_store().load_run(EXP)
    assert len(run["raw_observations"]) == 20
    assert [k for k, _ in recovered] == ["spill_replayed", "spill_replayed"]


# ---- helpers reading the database directly ---------------------------------------------------------------
def _count_rows(url: str, table: str) -> int:
    if url.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(url) as conn:
            return conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
    with sqlite3.connect(url) as conn:
        return conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]


def _index_columns(url: str) -> dict[str, set[tuple[str, ...]]]:
    out: dict[str, set[tuple[str, ...]]] = {t: set() for t in RECORD_TABLES}
    if url.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(url) as conn:
            rows = conn.execute(
                "SELECT t.relname, array_agg(a.attname ORDER BY k.ord) FROM pg_index x "
                "JOIN pg_class t ON t.oid = x.indrelid JOIN pg_namespace n ON n.oid = t.relnamespace "
                "CROSS JOIN LATERAL unnest(x.indkey) WITH ORDINALITY AS k(attnum, ord) "
                "JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum "
                "WHERE n.nspname = current_schema() GROUP BY t.relname, x.indexrelid"
            ).fetchall()
        for table, cols in rows:
            if table in out:
                out[table].add(tuple(cols))
        return out
    with sqlite3.connect(url) as conn:
        for table in RECORD_TABLES:
            for (_, name, *_rest) in conn.execute(f"PRAGMA index_list({table})").fetchall():
                cols = tuple(r[2] for r in conn.execute(f"PRAGMA index_info({name})").fetchall())
                out[table].add(cols)
    return out
