"""A throwaway PostgreSQL server for tests: initdb into a temp dir, serve on a free loopback port.

PostgreSQL refuses to run as root, so as root the server runs as ``nobody`` through ``runuser``.
Tests that need it use the ``pg_server`` fixture, which skips (with the reason) only when no server
binaries are installed; any other failure to start is an error, not a skip.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest


def find_bindir() -> Path | None:
    """Directory holding initdb/pg_ctl/postgres ($PG_BINDIR, Debian layout, or PATH)."""
    env = os.environ.get("PG_BINDIR")
    candidates = [Path(env)] if env else []
    candidates += [Path(p) for p in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)]
    which = shutil.which("initdb")
    if which:
        candidates.append(Path(which).parent)
    for directory in candidates:
        if all((directory / tool).exists() for tool in ("initdb", "pg_ctl", "postgres")):
            return directory
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PostgresServer:
    """initdb + pg_ctl wrapper; ``url()`` gives a psycopg URL, optionally pinned to a fresh schema."""

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.root = Path(tempfile.mkdtemp(prefix="agentchemist-pg-"))
        self.data = self.root / "data"
        self.sockets = self.root / "sock"
        self.log = self.root / "server.log"
        self.port = _free_port()
        self._prefix: list[str] = []
        if os.geteuid() == 0:
            try:
                user = pwd.getpwnam("nobody")
            except KeyError:
                pytest.skip("running as root and no 'nobody' user to run PostgreSQL as")
            os.chown(self.root, user.pw_uid, user.pw_gid)
            self._prefix = ["runuser", "-u", "nobody", "--"]
        self.sockets.mkdir()
        if self._prefix:
            os.chown(self.sockets, pwd.getpwnam("nobody").pw_uid, -1)
        self._run([str(bindir / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres",
                   "-E", "UTF8", "--no-sync"])

    def _run(self, argv: list[str]) -> None:
        result = subprocess.run(self._prefix + argv, capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            log = self.log.read_text() if self.log.exists() else ""
            raise RuntimeError(f"{' '.join(argv)} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}\n{log}")

    def start(self) -> None:
        options = f"-h 127.0.0.1 -p {self.port} -k {self.sockets} -c fsync=on -c max_connections=40"
        self._run([str(self.bindir / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-w",
                   "-t", "60", "-o", options, "start"])

    def stop(self) -> None:
        self._run([str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "-t", "60", "stop"])

    def running(self) -> bool:
        result = subprocess.run(self._prefix + [str(self.bindir / "pg_ctl"), "-D", str(self.data), "status"],
                                capture_output=True)
        return result.returncode == 0

    def url(self, schema: str | None = None) -> str:
        base = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        return base if schema is None else f"{base}?options=-csearch_path%3D{schema}"

    def fresh_schema(self) -> str:
        """Create an empty schema and return a URL whose connections use it (test isolation)."""
        import psycopg

        name = "t_" + uuid.uuid4().hex[:12]
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {name}")
        return self.url(name)

    def terminate_backends(self) -> int:
        """Kill every other client backend (what a network drop or an admin restart does to clients)."""
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            rows = conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE pid <> pg_backend_pid() AND backend_type = 'client backend'"
            ).fetchall()
        return len(rows)

    def cleanup(self) -> None:
        if self.running():
            self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


# Several test modules import the fixture; they share one server, stopped when the last one is done.
_shared: dict[str, object] = {"server": None, "users": 0}


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PostgresServer]:
    bindir = find_bindir()
    if bindir is None:
        pytest.skip("PostgreSQL server binaries (initdb, pg_ctl, postgres) not found; set PG_BINDIR")
    if _shared["server"] is None:
        server = PostgresServer(bindir)
        try:
            server.start()
        except BaseException:
            server.cleanup()
            raise
        _shared["server"] = server
    server = _shared["server"]
    assert isinstance(server, PostgresServer)
    _shared["users"] = int(_shared["users"]) + 1  # type: ignore[call-overload]
    try:
        if not server.running():  # a test that stopped it failed before restarting
            server.start()
        yield server
    finally:
        _shared["users"] = int(_shared["users"]) - 1  # type: ignore[call-overload]
        if _shared["users"] == 0:
            _shared["server"] = None
            server.cleanup()
