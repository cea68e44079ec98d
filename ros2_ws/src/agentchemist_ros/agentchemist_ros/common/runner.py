"""main() of every node, and the executor choice.

Every node keeps its callbacks short and its long actions as coroutines, so it runs on any executor.
A node in its own process (ros2 run / launch) spins rclpy's SingleThreadedExecutor. It spun a
MultiThreadedExecutor before, whose loop rebuilds the wait set each time a worker thread finishes a
callback: fed 10 ms audio chunks the audio supervisor took 60-100 % of a core and missed 9-43 of 60 drops
(single-threaded: 6 %, none missed), and the dispenser's pH -> hold had 1.4-2.8 s outliers and goals that
never started (single-threaded: p99 10.6 ms, no failures; bench/latency.py, quiet machine, side by side).
`tests/graph/test_process_executor.py` checks the audio supervisor's CPU per second of 10 ms chunks.
The one-process graph (graph.py: the demo and graph tests) uses rclpy's EventsExecutor where the installed
rclpy has it (Jazzy: rclpy.experimental), measured here at about twice the callback rate, without its busy
loop over waiting coroutines (common/quiet_events.py); in a separate process spinning with
EventsExecutor.spin() a node missed latched messages here, so it is not the default there.
AGENTCHEMIST_EXECUTOR=single|multi|events|rclpy_events overrides the choice (rclpy_events: rclpy's own, busy
loop included, for comparisons).
"""
import gc
import os
import signal

import rclpy
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor, SingleThreadedExecutor

from agentchemist_ros.common.heartbeats import start_heartbeat


def make_executor(threads: int = 4, default: str = "events"):
    choice = os.environ.get("AGENTCHEMIST_EXECUTOR", default)
    if choice == "single":
        return SingleThreadedExecutor()
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
        executor = make_executor(default="single")
        executor.add_node(node)
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except RuntimeError:
        # Ctrl-C shuts the context down from rclpy's signal handler: a message taken in that instant fails in
        # rcl ("Unable to convert call argument") instead of raising ExternalShutdownException (a fresh-clone
        # make test saw two nodes exit 1 so). Only a shut-down context makes it a clean exit.
        if rclpy.ok():
            raise
    finally:
        # Ctrl-C on `ros2 launch` reaches every node twice: the terminal's SIGINT to the process group, then
        # launch's own. The second one, arriving while the node closes its stores and ports, interrupted that
        # (KeyboardInterrupt tracebacks, exit -2). Closing is short; launch's SIGTERM still ends a stuck one.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
        # Everything the node holds is released above. The interpreter's last full garbage collection then
        # walked the whole heap (py-spy: gc_collect_main, no Python frame): beside 7 other nodes on a loaded
        # machine that took over 10 s and launch escalated to SIGKILL. Frozen objects are not walked.
        gc.freeze()
