"""Crash safety at the core level: SIGKILL a writer process in the middle of a burst; every row it had
acknowledged (flush() returned before it printed the ack) must be in the database, exactly once."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import agentchemist.record
from agentchemist.record import open_store

try:
    from pg_server import pg_server  # noqa: F401  (fixture)
except ImportError:
    from .pg_server import pg_server  # type: ignore[no-redef]  # noqa: F401

WRITER = textwrap.dedent(
    """
    import sys
    from agentchemist.record import open_store

    store = open_store(sys.argv[1], spill_path=sys.argv[2], batch_size=64)
    store.start_experiment("crash", now=0.0)
    store.flush()
    i = 0
    while True:
        for _ in range(1 + i % 7):  # bursts of 1..7 rows between acknowledgements
            store.add_raw("crash", stamp=float(i), channel="sensor", sensor="ph_meter", quantity="pH",
                          value=7.0 + i * 1e-4, unit="", confidence=1.0, payload={"i": i})
            i += 1
        store.flush()
        print(i - 1, flush=True)
    """
)
ACKS_BEFORE_KILL = 150


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "runs" / "crash" / "records.db")
    return request.getfixturevalue("pg_server").fresh_schema()


def test_sigkill_mid_burst_keeps_every_acknowledged_row(url: str, tmp_path: Path) -> None:
    src = Path(agentchemist.record.__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(src), os.environ.get("PYTHONPATH", "")])}
    spill = tmp_path / "spill.jsonl"
    child = subprocess.Popen([sys.executable, "-c", WRITER, url, str(spill)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env)
    acks = 0
    last_ack = -1
    try:
        assert child.stdout is not None
        for line in child.stdout:
            last_ack = int(line)
            acks += 1
            if acks == ACKS_BEFORE_KILL:
                child.send_signal(signal.SIGKILL)
                break
        # Acks printed before the kill landed are still in the pipe: they count too.
        rest, err = child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert acks == ACKS_BEFORE_KILL, f"writer died early: {err}"
    for line in rest.split():
        last_ack = int(line)
    assert child.returncode == -signal.SIGKILL

    stamps = _stamps(url)
    assert len(stamps) == len(set(stamps)), "a row was written twice"
    assert set(range(last_ack + 1)) <= {int(s) for s in stamps}, "an acknowledged row is missing"
    # The store opens cleanly on what the killed process left and keeps working.
    store = open_store(url, spill_path=spill)
    run = store.load_run("crash")
    assert len(run["raw_observations"]) == len(stamps)
    assert run["experiment"]["status"] == "running"  # killed: no stop record, and none invented
    store.finish_experiment("crash", now=1e6, status="aborted", reason="writer killed")
    store.close()


def _stamps(url: str) -> list[float]:
    if url.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(url) as conn:
            return [r[0] for r in conn.execute("SELECT stamp FROM raw_observations")]
    conn = sqlite3.connect(url)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return [r[0] for r in conn.execute("SELECT stamp FROM raw_observations")]
    finally:
        conn.close()
