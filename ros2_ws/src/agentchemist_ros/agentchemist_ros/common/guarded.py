"""Nodes that fail alone: an exception in one callback must not end the loop that spins every node.

In the one-process graph (demo, scenario runner, graph tests) one executor spins all nodes, and rclpy
re-raises a callback's exception out of ``spin_once``: one node's bug (or a storage error it did not
expect) would stop every node, the goal would hang and no anomaly would say why. In a node's own process
the same exception ends that node. So every node's subscriptions, timers and services go through
:class:`GuardedNode`, which catches the exception, logs it with the node's name and where it was raised,
and publishes a ``node_error`` anomaly (severity halt: the running experiment aborts cleanly, the other
nodes go on). One anomaly per failing callback and exception type while it keeps failing (a callback that
fails on every reading would otherwise flood the anomaly topic); the count goes in the log.

Action servers are not wrapped: rclpy already catches an exception in an execute callback, logs it and
aborts that goal.
"""
from __future__ import annotations

import functools
import inspect
import traceback

from rclpy.node import Node

from agentchemist_interfaces.msg import Anomaly
from agentchemist_ros.common import topics
from agentchemist_ros.common.admission import Admission
from agentchemist_ros.common.anomaly import make_anomaly
from agentchemist_ros.common.qos import RELIABLE
from agentchemist_ros.common.timeconv import node_now


def where(exc: BaseException) -> str:
    """'file.py:123 in function' of the innermost frame of `exc` (where it was raised)."""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return "?"
    f = frames[-1]
    return f"{f.filename.rsplit('/', 1)[-1]}:{f.lineno} in {f.name}"


class GuardedNode(Node):
    """A Node whose subscription, timer and service callbacks cannot take the executor down."""

    def __init__(self, node_name: str, **kwargs):
        super().__init__(node_name, **kwargs)
        self._failures: dict[tuple[str, str], int] = {}
        # Created now, not on the first failure: a publisher made at that moment could miss subscribers
        # that have not discovered it yet.
        self._error_pub = self.create_publisher(Anomaly, topics.ANOMALIES, RELIABLE)
        self._closers: list = []
        self._admission = Admission(self, self._error_pub)  # what a message must be to be taken in at all

    # ------------------------------------------------------------------ resources
    def close_with_node(self, closer) -> None:
        """Call ``closer()`` when the node is destroyed (the latest registered first), so that a port, a
        stream or a bus is released next to where it is opened; one that fails is logged, the rest still run."""
        self._closers.append(closer)

    def destroy_node(self):
        while self._closers:
            closer = self._closers.pop()
            try:
                closer()
            except Exception as exc:  # noqa: BLE001 - shutting down: say so and release the rest
                self.get_logger().error(f"while closing: {type(exc).__name__} at {where(exc)}: {exc}")
        super().destroy_node()

    # ------------------------------------------------------------------ wrapped factories
    def create_subscription(self, msg_type, topic, callback, qos_profile, **kwargs):
        admission = getattr(self, "_admission", None)  # None: rclpy's own /clock subscription, made in Node()
        admitted = admission.admit(msg_type, callback) if admission is not None else callback
        return super().create_subscription(msg_type, topic, self.guard(admitted, f"subscription {topic}"),
                                           qos_profile, **kwargs)

    def create_timer(self, timer_period_sec, callback, *args, **kwargs):
        return super().create_timer(timer_period_sec, self.guard(callback, "timer"), *args, **kwargs)

    def create_service(self, srv_type, srv_name, callback, **kwargs):
        def failed_response(request, response):
            # A service must answer: say it failed where the response has the usual fields.
            for name, value in (("success", False), ("message", f"{self.get_name()} failed; see its log")):
                if hasattr(response, name):
                    setattr(response, name, value)
            return response
        return super().create_service(srv_type, srv_name, self.guard(callback, f"service {srv_name}",
                                                                     fallback=failed_response), **kwargs)

    # ------------------------------------------------------------------ the guard
    def guard(self, callback, what: str, fallback=None):
        """`callback` that reports its exceptions instead of raising them (coroutines stay coroutines)."""
        if inspect.iscoroutinefunction(callback):
            @functools.wraps(callback)
            async def guarded_async(*args):
                try:
                    return await callback(*args)
                except Exception as exc:  # noqa: BLE001 - any bug in one node must not stop the others
                    self.callback_failed(what, exc)
                    return fallback(*args) if fallback else None
            return guarded_async

        @functools.wraps(callback)
        def guarded(*args):
            try:
                return callback(*args)
            except Exception as exc:  # noqa: BLE001 - any bug in one node must not stop the others
                self.callback_failed(what, exc)
                return fallback(*args) if fallback else None
        return guarded

    def callback_failed(self, what: str, exc: Exception) -> None:
        """Log it with this node's name and publish one node_error anomaly per episode; never raises."""
        key = (what, type(exc).__name__)
        count = self._failures.get(key, 0) + 1
        self._failures[key] = count
        text = f"{what} failed: {type(exc).__name__}: {exc} ({where(exc)})"
        try:
            if count == 1:
                self.get_logger().error(f"{text}; the node goes on")
                self.get_logger().debug("".join(traceback.format_exception(exc)))
                self.report_failure(text)
            elif count in (10, 100, 1000) or count % 10000 == 0:
                self.get_logger().error(f"{what} has failed {count} times ({type(exc).__name__})")
        except Exception:  # noqa: BLE001 - reporting itself failed (shutting down): nothing more to do
            pass

    def report_failure(self, text: str) -> None:
        """Publish the node_error anomaly (the supervisor aborts the running experiment on it)."""
        self._error_pub.publish(make_anomaly(
            now=node_now(self), experiment_id=getattr(self, "experiment_id", "") or "", source=self.get_name(),
            kind="node_error", severity="halt", description=f"{self.get_name()}: {text}", response="abort"))
