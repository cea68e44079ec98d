"""main() of every node, and the executor choice.

Every node keeps its callbacks short and its long actions as coroutines, so it runs on any executor.
A node in its own process (ros2 run / launch) spins a MultiThreadedExecutor. The one-process graph
(graph.py: the demo and graph tests) uses rclpy's EventsExecutor where the installed rclpy has it
(Jazzy: rclpy.experimental), measured here at about twice the callback rate; in a separate process
spinning with EventsExecutor.spin() a node missed latched messages here, so it is not the default there.
AGENTCHEMIST_EXECUTOR=multi|events overrides the choice.
"""
import os

import rclpy
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor

from agentchemist_ros.common.heartbeats import start_heartbeat


def make_executor(threads: int = 4, default: str = "events"):
    if os.environ.get("AGENTCHEMIST_EXECUTOR", default) == "events":
        try:
            from rclpy.experimental import EventsExecutor
            return EventsExecutor()
        except ImportError:
            pass
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
