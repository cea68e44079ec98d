"""The throwaway PostgreSQL server (agentchemist.record.pg_local) as a session fixture for the store tests.

Tests that need it use the ``pg_server`` fixture, which skips (with the reason) only when no server
binaries are installed (or, as root, no user to run them as); any other failure to start is an error.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agentchemist.record.pg_local import PostgresServer, PostgresUnavailable, find_bindir

__all__ = ["PostgresServer", "pg_server"]


# Several test modules import the fixture; they share one server, stopped when the last one is done.
_shared: dict[str, object] = {"server": None, "users": 0}


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PostgresServer]:
    bindir = find_bindir()
    if bindir is None:
        pytest.skip("PostgreSQL server binaries (initdb, pg_ctl, postgres) not found; set PG_BINDIR")
    if _shared["server"] is None:
        try:
            server = PostgresServer(bindir)
        except PostgresUnavailable as exc:
            if "nobody" in str(exc):
                pytest.skip(str(exc))
            raise
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
