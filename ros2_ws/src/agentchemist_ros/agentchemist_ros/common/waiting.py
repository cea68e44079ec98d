"""Waiting without blocking an executor thread: long action callbacks are coroutines that await
rclpy Futures, so every node runs on any executor (the fast single-threaded EventsExecutor included)."""
from rclpy.clock import Clock, ClockType
from rclpy.task import Future


def resolved_after(node, seconds: float, *, steady: bool = False, value=None) -> Future:
    """A Future that completes after `seconds` on the node's ROS clock (or the steady wall clock).

    Cancel it when it is no longer awaited (a timeout that lost the race): its timer goes at once instead
    of living on until it fires (nodes that serve goal after goal for hours would otherwise carry them)."""
    future = Future()
    clock = Clock(clock_type=ClockType.STEADY_TIME) if steady else None

    def fire():
        if not future.done():
            future.set_result(value)

    timer = node.create_timer(max(seconds, 1e-4), fire, clock=clock)

    def release(_):
        timer.cancel()
        node.destroy_timer(timer)  # a no-op when it is gone already

    future.add_done_callback(release)
    return future


def first_of(*futures: Future) -> Future:
    """A Future that completes with (index, result) of the first of `futures` to complete."""
    combined = Future()

    def done(index, fut):
        if not combined.done():
            combined.set_result((index, fut.result()))

    for i, fut in enumerate(futures):
        fut.add_done_callback(lambda f, i=i: done(i, f))
    return combined
