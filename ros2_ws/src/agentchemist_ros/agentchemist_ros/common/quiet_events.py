"""rclpy's EventsExecutor without its busy loop over waiting coroutines.

rclpy's EventsExecutor (Jazzy, rclpy.experimental) resumes a coroutine task that is not done by posting
it straight back onto its queue ("Task needs more iteration. Post back to the asio loop again"), so
every long action callback (a dispense goal awaiting its end, an experiment awaiting its report) is
resumed thousands of times a second while it waits: in a full HCl/NaOH titration 2.9 million resumes,
the largest single cost of the one-process graph, and a core kept busy while the graph has nothing to do.

Here a task that waits on an rclpy Future (what every node's coroutines await: common/waiting.py,
service calls, goal handles) is resumed once, when that Future completes; a task waiting on anything
else is iterated as rclpy does. The executor is otherwise rclpy's own (a subclass of its C++ class).
"""
from __future__ import annotations

from rclpy.task import Future, Task

_AWAIT_CODE = Future.__await__.__code__


def awaited_future(coroutine) -> Future | None:
    """The rclpy Future a suspended coroutine is waiting on (through nested awaits), or None."""
    obj = coroutine
    for _ in range(64):  # nested awaits: guarded callback -> execute -> first_of(...) -> Future
        inner = getattr(obj, "cr_await", None) or getattr(obj, "gi_yieldfrom", None)
        if inner is None:
            break
        obj = inner
    frame = getattr(obj, "gi_frame", None)
    if frame is None or frame.f_code is not _AWAIT_CODE:
        return None
    future = frame.f_locals.get("self")
    return future if isinstance(future, Future) else None


def quiet_events_executor(context=None):
    """An EventsExecutor whose waiting coroutines sleep until what they await is done (None without one)."""
    import rclpy
    try:
        from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
        base = _rclpy.EventsExecutor
    except (ImportError, AttributeError):
        return None

    class QuietEventsExecutor(base):
        def create_task(self, callback, *args, **kwargs):
            task = Task(callback, args, kwargs, executor=self)
            self._post(task)
            return task

        def _post(self, task: Task) -> None:
            # The C++ create_task of a plain function is "run this on the loop soon": it runs once.
            base.create_task(self, self._step, task)

        def _step(self, task: Task) -> None:
            task()
            if task.done() or task.cancelled():
                exc = task.exception() if task.done() else None
                if exc is not None:  # as rclpy's own executor: an exception in a task stops the spin
                    raise exc
                return
            future = awaited_future(task._handler)
            if future is None or not future._pending():
                self._post(task)  # waiting on something else (or done already): iterate as rclpy does
            else:
                future.add_done_callback(lambda _f: self._post(task))

    executor = QuietEventsExecutor(context or rclpy.get_default_context())
    (context or rclpy.get_default_context()).on_shutdown(executor.wake)
    return executor
