"""Graph tests stand alone: each test module runs in its own ROS 2 domain.

A latched message or a process one module leaves behind (a plan, a recorder that was slow to die) would
otherwise reach the next module's graph: same process, same domain. Each module claims a free domain id
(a lock file, so concurrent test sessions and the scenario runner never share one), sets ROS_DOMAIN_ID
for itself and the processes it starts, and starts from a fresh rclpy context; the context is shut down
when the module ends. Modules may run in any order (`make test-random`) or alone (`make test-alone`).
"""
from __future__ import annotations

import fcntl
import itertools
import os
import tempfile
from pathlib import Path

import pytest

# 1..100: the scenario runner claims 101..232 from the same lock folder.
DOMAIN_RANGE = range(1, 101)
DOMAIN_LOCKS = Path(tempfile.gettempdir()) / "agentchemist-ros-domains"


_claims = itertools.count()  # modules claimed so far in this session


def _claim_domain():
    DOMAIN_LOCKS.mkdir(parents=True, exist_ok=True)
    # Sessions start their search at different ids, and each module of a session one id further than the
    # last: the lock is free once a module ends, but a process it left behind may still be on its domain.
    start = (os.getpid() + next(_claims)) % len(DOMAIN_RANGE)
    for k in range(len(DOMAIN_RANGE)):
        domain = DOMAIN_RANGE[(start + k) % len(DOMAIN_RANGE)]
        lock = open(DOMAIN_LOCKS / f"{domain}.lock", "w")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            lock.close()
            continue
        return domain, lock
    raise RuntimeError(f"no free ROS domain id in {DOMAIN_RANGE.start}..{DOMAIN_RANGE.stop - 1} ({DOMAIN_LOCKS})")


def _shutdown_rclpy() -> None:
    try:
        import rclpy
    except ImportError:
        return
    rclpy.try_shutdown()


@pytest.fixture(scope="module", autouse=True)
def own_ros_domain():
    """This module's ROS domain id (set in the environment; rclpy is (re)initialised by the tests)."""
    domain, lock = _claim_domain()
    previous = os.environ.get("ROS_DOMAIN_ID")
    _shutdown_rclpy()  # a context from another module would still be on its domain
    os.environ["ROS_DOMAIN_ID"] = str(domain)
    try:
        yield domain
    finally:
        _shutdown_rclpy()
        if previous is None:
            os.environ.pop("ROS_DOMAIN_ID", None)
        else:
            os.environ["ROS_DOMAIN_ID"] = previous
        lock.close()
