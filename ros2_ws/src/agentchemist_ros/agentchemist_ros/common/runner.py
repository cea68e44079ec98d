"""main() of every node, and the executor choice.

Every node keeps its callbacks short and its long actions as coroutines, so it runs on any executor.
A node in its own process (ros2 run / launch) spins a MultiThreadedExecutor. The one-process graph
(graph.py: the demo and graph tests) uses rclpy's EventsExecutor where the installed rclpy has it
(Jazzy: rclpy.experimental), measured here at about twice the callback rate, without its busy loop over
waiting coroutines (common/quiet_events.py); in a separate process
spinning with EventsExecutor.spin() a node missed latched messages here, so it is not the default there.
AGENTCHEMIST_EXECUTOR=multi|events|rclpy_events overrides the choice (rclpy_events: rclpy's own, busy loop
included, for comparisons).
"""
import os

import rclpy
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor

from agentchemist_ros.common.heartbeats import start_heartbeat


def make_executor(threads: int = 4, default: str = "events"):
    choice = os.environ.get("AGENTCHEMIST_EXECUTOR", default)
    if choice == "rclpy_events":
        from rclpy.experimental import EventsExecutor
        return EventsExecutor()
    if choice == "events":
        from agentchemist_ros.common.quiet_events import quiet_events_executor
        executor = quiet_events_executor()
        if executor is not None:
            return executor
    return MultiThreadedExecutor(num_threads=threads)


def spin_node(node_factory, args=None) -> None:
    rclpy.init(args=args)
    node = None
    try:
        node = node_factory()
        start_heartbeat(node)  # in its own process it can die alone: its peers watch for that
        executor = make_executor(default="multi")
        executor.add_node(node)
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
