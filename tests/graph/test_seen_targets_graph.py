"""The scripted backend's camera targets on the graph: lab_sim (hcl_naoh, the kinematic twin) and
action_policy composed in one process on the sim clock, with a scene peer serving DescribeScene as the
vision supervisor's contract has it (SceneObject.pose: the tag's pose in the front camera's optical frame,
header.frame_id front_color_optical_frame; the twin's own vision supervisor reports no 3-D poses, so this peer plays
a calibrated camera's). A seen pipette: the arm goes by IK to its bulb; a NaN pose: the goal is aborted
with a reason on the anomaly topic and the arm is not commanded; no pose: the named pose, as before."""
import json
import math
import threading
import time

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")
pytest.importorskip("pinocchio")

from geometry_msgs.msg import Point, Pose, Quaternion  # noqa: E402
from rclpy.action import ActionClient, get_action_server_names_and_types_by_node  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.time_source import TimeSource  # noqa: E402
from trajectory_msgs.msg import JointTrajectory  # noqa: E402

from agentchemist.policy.primitives import load_poses  # noqa: E402
from agentchemist.policy.seen_targets import SeenTargets  # noqa: E402
from agentchemist_interfaces.action import ExecuteSubtask  # noqa: E402
from agentchemist_interfaces.msg import Anomaly, SceneObject  # noqa: E402
from agentchemist_interfaces.srv import DescribeScene  # noqa: E402
from agentchemist_ros.action_policy_node import ActionPolicyNode  # noqa: E402
from agentchemist_ros.common import topics  # noqa: E402
from agentchemist_ros.common.qos import RELIABLE  # noqa: E402
from agentchemist_ros.common.runner import make_executor  # noqa: E402
from agentchemist_ros.common.timeconv import to_msg  # noqa: E402
from agentchemist_ros.lab_sim_node import LabSimNode  # noqa: E402
from agentchemist_ros.tools.graph import ensure_init  # noqa: E402
from tests.conftest import REPO  # noqa: E402
from tests.unit.test_policy_seen_targets import BULB, in_camera  # noqa: E402

SCENARIO = str(REPO / "config" / "scenarios" / "hcl_naoh.yaml")


def wait(predicate, timeout):
    end = time.monotonic() + timeout
    while not predicate() and time.monotonic() < end:
        time.sleep(0.02)
    return predicate()


class ScenePeer(Node):
    """DescribeScene with the pipette at a pose the test sets (None: the default, never-set pose)."""

    def __init__(self):
        super().__init__("scene_peer")
        self.pose = None
        self.create_service(DescribeScene, topics.DESCRIBE_SCENE, self.describe)

    def describe(self, request, response):
        now = self.get_clock().now().nanoseconds * 1e-9
        response.header.stamp, response.header.frame_id = to_msg(now), "front_color_optical_frame"
        obj = SceneObject(id="pipette", kind="pipette", u=170.0, v=150.0, confidence=1.0)
        if self.pose is not None:
            p, q = self.pose
            obj.pose = Pose(position=Point(x=p[0], y=p[1], z=p[2]), orientation=Quaternion(x=q[0], y=q[1], z=q[2],
                                                                                             w=q[3]))
        response.objects = [obj]
        response.success, response.message = True, "scene peer"
        return response


def test_grasp_goes_by_ik_to_the_seen_pipette_refuses_a_nan_pose_and_keeps_the_named_pose_unseen():
    wall = time.monotonic()
    ensure_init()
    lab = LabSimNode(parameter_overrides=[Parameter("scenario", value=SCENARIO),
                                          Parameter("real_time_factor", value=50.0)])
    policy = ActionPolicyNode()
    scene = ScenePeer()
    clock_node = Node("sim_clock", parameter_overrides=[Parameter("use_sim_time", value=True)])
    time_source = TimeSource(node=clock_node)
    time_source.ros_time_is_active = True
    for node in (policy, scene):
        time_source.attach_clock(node.get_clock())
    probe = Node("seen_targets_probe")
    sent, anomalies = [], []
    probe.create_subscription(JointTrajectory, topics.arm_trajectory_topic("right"),
                              lambda m: sent.append(tuple(m.points[0].positions)), 100)
    probe.create_subscription(Anomaly, topics.ANOMALIES, anomalies.append, RELIABLE)
    client = ActionClient(probe, ExecuteSubtask, topics.EXECUTE_SUBTASK)
    nodes = [lab, policy, scene, clock_node, probe]
    executor = make_executor()
    for n in nodes:
        executor.add_node(n)
    stop = threading.Event()
    thread = threading.Thread(target=lambda: [executor.spin_once(timeout_sec=0.05) for _ in iter(stop.is_set, True)],
                              daemon=True)
    thread.start()

    def run(subtask, primitive, parameters, timeout=60.0):
        goal = ExecuteSubtask.Goal(experiment_id="seen_test", subtask_id=subtask, payload_json=json.dumps(
            {"primitive": primitive, "symbol": subtask + "_ok", "parameters": parameters}))
        handle = client.send_goal_async(goal)
        assert wait(handle.done, 20) and handle.result().accepted
        result = handle.result().get_result_async()
        assert wait(result.done, timeout), f"{subtask} did not finish within {timeout} s"
        return result.result().result

    poses = load_poses()
    seen = SeenTargets(poses)
    twin_arm = lambda: lab.twin.arms["right"].position  # noqa: E731
    try:
        # what the graph showed, if the server was not found (once in a full suite run, 2026-11-26)
        assert client.wait_for_server(timeout_sec=30), (
            f"no {topics.EXECUTE_SUBTASK} server; spinner alive: {thread.is_alive()}; nodes: "
            f"{probe.get_node_names()}; action servers: "
            f"{get_action_server_names_and_types_by_node(probe, 'action_policy', '/')}")
        bulb = BULB + np.array([0.01, 0.01, 0.0])
        obj = in_camera(seen, "pipette", "pipette", bulb)
        scene.pose = (obj.position, obj.orientation)
        done = run("grasp", "grasp", {"object": "pipette", "location": "beaker_main"})
        assert done.success and done.symbol == "grasp_ok", done.message
        approach, reach = sent[-2:]
        assert len(sent) == 2
        assert np.linalg.norm(seen.ik("right").fk(reach) - bulb) <= 0.005        # the arm went to the bulb
        assert max(abs(a - b) for a, b in zip(twin_arm(), reach)) <= poses.tolerance_rad
        assert max(abs(a - b) for a, b in zip(reach, poses.pose("right", "pipette"))) > 0.1  # not the taught pose

        back = run("release", "release", {})                                   # put back where it was taken
        assert back.success, back.message
        assert sent[-2] == reach and sent[-1] == poses.pose("right", "home")

        scene.pose = ((math.nan, 0.1, 0.5), obj.orientation)
        count = len(sent)
        refused = run("grasp_nan", "grasp", {"object": "pipette"})
        assert not refused.success and "not finite" in refused.message, refused.message
        assert wait(lambda: any(a.subtask_id == "grasp_nan" and a.kind == "subtask_failed" for a in anomalies), 10)
        assert len(sent) == count                                              # the arm was not commanded

        scene.pose = None                                                      # the twin's scene: no 3-D poses
        named = run("grasp_named", "grasp", {"object": "pipette"})
        assert named.success, named.message
        assert sent[-1] == poses.pose("right", "pipette")
    finally:
        stop.set()
        thread.join(timeout=10)
        executor.shutdown(timeout_sec=2.0)
        for n in nodes:
            n.destroy_node()
        rclpy.try_shutdown()
    assert time.monotonic() - wall < 120.0
