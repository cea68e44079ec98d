"""A missing pipette stops the run before any motion, with the planner's missing-equipment sentence."""
import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.node import Node  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402
from trajectory_msgs.msg import JointTrajectory  # noqa: E402

from agentchemist_ros.common import topics  # noqa: E402
from tests.conftest import REPO  # noqa: E402
from tests.graph.harness import run_experiment  # noqa: E402

SCENARIO = REPO / "config" / "scenarios" / "missing_pipette.yaml"


class MotionProbe(Node):
    """Every arm and gripper command anyone sends."""

    def __init__(self):
        super().__init__("motion_probe")
        self.commands = []
        for side in topics.SIDES:
            self.create_subscription(JointTrajectory, topics.arm_trajectory_topic(side), self.commands.append, 10)
            self.create_subscription(Float64MultiArray, topics.gripper_command_topic(side), self.commands.append, 10)


def test_refused_before_any_motion(tmp_path):
    graph_run = run_experiment(SCENARIO, tmp_path, probe=MotionProbe, wall_limit_s=60.0, settle_s=1.0)
    result = graph_run.result
    assert not result.success and result.outcome == "refused"
    assert "The current experimental scene lacks" in result.message and "pipette" in result.message
    assert graph_run.probe.commands == [], "nothing may move when the scene is incomplete"
