"""A throwaway local PostgreSQL server: initdb into a temporary folder, serve on a free loopback port.

For the tests of the PostgreSQL store (tests/unit/pg_server.py wraps it in a fixture), the fault campaign's
database faults (agentchemist_ros.tools.fault_campaign: crash it, stop it) and benchmarks. PostgreSQL
refuses to run as root, so as root the server runs as ``nobody`` through ``runuser``. The server binaries
come from the image (Debian's /usr/lib/postgresql/*/bin) or $PG_BINDIR.
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
from pathlib import Path


class PostgresUnavailable(RuntimeError):
    """No server can be run here (no binaries, no user to run it as, initdb or start failed)."""


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
                raise PostgresUnavailable("running as root and no 'nobody' user to run PostgreSQL as") from None
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
            raise PostgresUnavailable(f"{' '.join(argv)} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}\n{log}")

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

    def pids(self) -> list[int]:
        """The server's processes: the postmaster (postmaster.pid) and its children (from /proc)."""
        try:
            master = int((self.data / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return []
        pids = [master]
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[1]) == master:  # field 4 of /proc/PID/stat, after the command in parentheses
                pids.append(int(stat.parent.name))
        return pids

    def signal(self, signum: int) -> int:
        """Send `signum` to every server process (SIGSTOP: the server hangs, connections stay open;
        SIGCONT: it goes on); returns how many got it."""
        sent = 0
        for pid in self.pids():
            try:
                os.kill(pid, signum)
                sent += 1
            except ProcessLookupError:
                pass
        return sent

    def crash(self) -> None:
        """Stop the server at once, as a crash or a power cut does (pg_ctl stop -m immediate)."""
        self._run([str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "-t", "60", "stop"])

    def cleanup(self) -> None:
        if self.running():
            self.stop()
        shutil.rmtree(self.root, ignore_errors=True)
