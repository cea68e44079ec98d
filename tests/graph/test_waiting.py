"""common/waiting.py: timeouts as Futures. A timeout that lost its race must take its timer with it at
once: a node serving goal after goal (a long run) would otherwise carry every one until it fires."""
import time

import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.task import Future  # noqa: E402

from agentchemist_ros.common.waiting import first_of, resolved_after  # noqa: E402


@pytest.fixture
def node():
    if not rclpy.ok():
        rclpy.init()
    n = Node("waiting_test")
    yield n
    n.destroy_node()
    rclpy.try_shutdown()


def test_a_timeout_fires_once_and_its_timer_is_gone(node):
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    future = resolved_after(node, 0.05, steady=True, value="late")
    assert len(list(node.timers)) == 1
    end = time.monotonic() + 5.0
    while not future.done() and time.monotonic() < end:
        executor.spin_once(timeout_sec=0.05)
    assert future.result() == "late"
    assert list(node.timers) == []


def test_a_cancelled_timeout_takes_its_timer_with_it(node):
    answer = Future()
    timeouts = [resolved_after(node, 120.0, steady=True) for _ in range(20)]
    races = [first_of(answer, t) for t in timeouts]
    answer.set_result("report")  # the answer wins every race ...
    assert all(r.result() == (0, "report") for r in races)
    assert len(list(node.timers)) == 20  # ... and the timeouts would live on for 120 s
    for t in timeouts:
        t.cancel()
    assert list(node.timers) == []
