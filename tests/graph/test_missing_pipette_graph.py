"""A missing pipette stops the run before any motion, with the planner's missing-equipment sentence."""
import threading
import time

import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.action import ActionClient  # noqa: E402
from rclpy.node import Node  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402
from trajectory_msgs.msg import JointTrajectory  # noqa: E402

from agentchemist.sim.scenario import load_scenario  # noqa: E402
from agentchemist_interfaces.action import RunExperiment  # noqa: E402
from agentchemist_ros.common import topics  # noqa: E402
from agentchemist_ros.graph import Graph, ensure_init  # noqa: E402
from tests.conftest import REPO  # noqa: E402

SCENARIO = REPO / "config" / "scenarios" / "missing_pipette.yaml"


def test_refused_before_any_motion(tmp_path):
    ensure_init()
    graph = Graph(SCENARIO, tmp_path)
    probe = Node("motion_probe")
    commands = []
    for side in topics.SIDES:
        probe.create_subscription(JointTrajectory, topics.arm_trajectory_topic(side), commands.append, 10)
        probe.create_subscription(Float64MultiArray, topics.gripper_command_topic(side), commands.append, 10)
    client = ActionClient(probe, RunExperiment, topics.RUN_EXPERIMENT)
    graph.executor.add_node(probe)
    stop = threading.Event()
    thread = threading.Thread(target=lambda: [graph.spin_once(0.05) for _ in iter(stop.is_set, True)], daemon=True)
    thread.start()
    try:
        assert client.wait_for_server(timeout_sec=30)
        sent = client.send_goal_async(RunExperiment.Goal(instruction=load_scenario(SCENARIO).instruction))
        end = time.monotonic() + 60
        while not sent.done() and time.monotonic() < end:
            time.sleep(0.05)
        result_future = sent.result().get_result_async()
        while not result_future.done() and time.monotonic() < end:
            time.sleep(0.05)
        time.sleep(1.0)
        result = result_future.result().result
    finally:
        stop.set()
        thread.join(timeout=10)
        graph.shutdown()
        probe.destroy_node()
        rclpy.try_shutdown()
    assert not result.success and result.outcome == "refused"
    assert "The current experimental scene lacks" in result.message and "pipette" in result.message
    assert commands == [], "nothing may move when the scene is incomplete"
