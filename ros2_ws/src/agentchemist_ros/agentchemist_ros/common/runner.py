"""main() of every node, and the executor choice.

Every node keeps its callbacks short and its long actions as coroutines, so it runs on any executor.
The default is rclpy's EventsExecutor where the installed rclpy has it (Jazzy: rclpy.experimental),
measured here at about twice the callback rate of the MultiThreadedExecutor; set
AGENTCHEMIST_EXECUTOR=multi to use the MultiThreadedExecutor instead.
"""
import os

import rclpy
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor


def make_executor(threads: int = 4):
    if os.environ.get("AGENTCHEMIST_EXECUTOR", "events") == "events":
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
        executor = make_executor()
        executor.add_node(node)
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
