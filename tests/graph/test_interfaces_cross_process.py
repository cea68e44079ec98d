"""Two OS processes exchange one instance of every custom message type over DDS, call the
DescribeScene service, and complete a Dispense action goal with feedback."""
import subprocess
import sys
import time

import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.action import ActionClient  # noqa: E402
from rclpy.node import Node  # noqa: E402

from agentchemist_interfaces.action import Dispense  # noqa: E402
from agentchemist_interfaces.srv import DescribeScene  # noqa: E402
from agentchemist_ros.common.qos import LATCHED  # noqa: E402
from tests.conftest import REPO  # noqa: E402
from tests.graph.interface_samples import same, samples  # noqa: E402


@pytest.fixture
def peer():
    proc = subprocess.Popen([sys.executable, "-m", "tests.graph.interface_peer", "--seconds", "90"], cwd=REPO)
    yield proc
    proc.terminate()
    proc.wait(timeout=10)


def spin_until(node, predicate, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end and not predicate():
        rclpy.spin_once(node, timeout_sec=0.05)
    return predicate()


def test_every_message_service_and_dispense_action_across_processes(peer):
    rclpy.init()
    try:
        node = Node("interface_checker")
        expected = samples()
        received = {}
        for name, msg in expected.items():
            if name == "SceneObject":
                continue
            node.create_subscription(type(msg), f"/itest/{name}",
                                     lambda m, n=name: received.setdefault(n, m), LATCHED)
        assert spin_until(node, lambda: len(received) == len(expected) - 1, 30), \
            f"missing messages: {sorted(set(expected) - set(received) - {'SceneObject'})}"
        for name, msg in received.items():
            assert same(expected[name], msg) == [], name

        client = node.create_client(DescribeScene, "/itest/describe_scene")
        assert client.wait_for_service(timeout_sec=20)
        future = client.call_async(DescribeScene.Request(camera="front"))
        assert spin_until(node, future.done, 20)
        response = future.result()
        assert response.success and response.message == "camera front"
        assert same(expected["SceneObject"], response.objects[0]) == []

        action = ActionClient(node, Dispense, "/itest/dispense")
        assert action.wait_for_server(timeout_sec=20)
        feedback = []
        goal = Dispense.Goal(experiment_id="exp-1", subtask_id="t4", target_volume_ml=0.234375, rate_mm_s=0.2)
        send = action.send_goal_async(goal, feedback_callback=lambda f: feedback.append(f.feedback))
        assert spin_until(node, send.done, 20)
        handle = send.result()
        assert handle.accepted
        result_future = handle.get_result_async()
        assert spin_until(node, result_future.done, 20)
        result = result_future.result().result
        assert result.success and result.stop_reason == "target_volume" and result.drops == 5
        assert result.message == "dispensed for exp-1"
        assert abs(result.dispensed_ml - 0.234375) < 1e-12
        assert [f.drops for f in feedback] == [1, 2, 3, 4, 5]
        assert feedback[-1].controller_state == "WAIT"
        node.destroy_node()
    finally:
        rclpy.try_shutdown()
