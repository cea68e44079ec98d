"""main() of every node: spin on a MultiThreadedExecutor and shut down cleanly."""
import rclpy
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor


def spin_node(node_factory, args=None) -> None:
    rclpy.init(args=args)
    node = None
    try:
        node = node_factory()
        executor = MultiThreadedExecutor()
        executor.add_node(node)
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
