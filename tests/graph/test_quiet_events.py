"""common/quiet_events.py: the one-process graph's EventsExecutor resumes a waiting coroutine when the
Future it awaits completes, not in a busy loop (rclpy's own posts it straight back onto its queue: millions
of resumes in a titration). Counted in executor iterations, never in wall time."""
import time

import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.node import Node  # noqa: E402
from rclpy.task import Future  # noqa: E402

from agentchemist_ros.common.guarded import GuardedNode  # noqa: E402
from agentchemist_ros.common.quiet_events import awaited_future, quiet_events_executor  # noqa: E402
from agentchemist_ros.common.waiting import first_of, resolved_after  # noqa: E402


@pytest.fixture
def node():
    if not rclpy.ok():
        rclpy.init()
    n = GuardedNode("quiet_events_test")
    yield n
    n.destroy_node()
    rclpy.try_shutdown()


def spin_until(executor, done, limit_s=20.0):
    """Spin until done(); returns how many callbacks the executor ran meanwhile (one per spin_once)."""
    calls, end = 0, time.monotonic() + limit_s
    while not done() and time.monotonic() < end:
        executor.spin_once(timeout_sec=0.05)
        calls += 1
    return calls


def test_the_awaited_future_is_found_through_nested_awaits():
    inner = Future()

    async def leaf():
        return await first_of(inner)

    async def middle():
        return await leaf()

    coroutine = middle()
    coroutine.send(None)  # suspended inside first_of's Future
    found = awaited_future(coroutine)
    assert isinstance(found, Future) and found is not inner and found._pending()
    inner.set_result("x")  # first_of's combined future completes through its done callback
    assert not found._pending()
    coroutine.close()


def test_a_coroutine_that_awaits_sleeps_until_its_future_completes(node):
    executor = quiet_events_executor()
    if executor is None:
        pytest.skip("this rclpy has no EventsExecutor")
    executor.add_node(node)
    order = []

    async def job():
        for i in range(3):
            order.append(await first_of(resolved_after(node, 0.3, steady=True, value=i),
                                        resolved_after(node, 60.0, steady=True)))
        return "done"

    task = executor.create_task(job)
    calls = spin_until(executor, task.done)
    assert task.result() == "done" and order == [(0, 0), (0, 1), (0, 2)]
    # 0.9 s of waiting: a busy loop resumes the task tens of thousands of times; here a handful of
    # callbacks per await (the timer, the done callbacks, the resume) and the spin_once timeouts.
    assert calls < 200, f"{calls} executor callbacks for three awaits: the task is polled"


def test_a_future_completed_from_another_callback_resumes_the_task(node):
    executor = quiet_events_executor()
    if executor is None:
        pytest.skip("this rclpy has no EventsExecutor")
    executor.add_node(node)
    answer = Future()
    node.create_timer(0.2, lambda: answer.done() or answer.set_result(42))

    async def job():
        return await answer

    task = executor.create_task(job)
    spin_until(executor, task.done)
    assert task.result() == 42


def test_the_graph_executor_is_the_quiet_one():
    from agentchemist_ros.common.runner import make_executor
    if not rclpy.ok():
        rclpy.init()
    try:
        executor = make_executor()
        assert type(executor).__name__ in ("QuietEventsExecutor", "MultiThreadedExecutor")
        n = Node("quiet_events_owner")
        executor.add_node(n)
        assert n.executor is executor  # rclpy's action servers create their tasks through node.executor
        n.destroy_node()
    finally:
        rclpy.try_shutdown()
