"""lab_sim with arm_backend mujoco on the graph: a JointTrajectory is followed in physics (/joint_states from
the simulation), and every camera publishes colour, aligned 16UC1 depth and CameraInfo with one stamp."""
import time

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")

from builtin_interfaces.msg import Duration  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from sensor_msgs.msg import CameraInfo, Image, JointState  # noqa: E402
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint  # noqa: E402

from agentchemist_ros.common import topics  # noqa: E402
from agentchemist_ros.common.qos import SENSOR  # noqa: E402
from agentchemist_ros.common.runner import make_executor  # noqa: E402
from agentchemist_ros.lab_sim_node import LabSimNode  # noqa: E402
from agentchemist.sim.mujoco_gl import NO_GL_REASON, select_gl  # noqa: E402
from agentchemist.sim.mjcf_scene import CAMERA_SIZE  # noqa: E402
from tests.conftest import REPO  # noqa: E402

REQUIRES_GL = pytest.mark.skipif(not select_gl(), reason=NO_GL_REASON)

SCENARIO = str(REPO / "config" / "scenarios" / "hcl_naoh.yaml")
GOAL = [0.25, 0.9, -1.0, 0.0, 0.5, 0.1]


def spin_until(executor, condition, seconds):
    end = time.monotonic() + seconds
    while not condition() and time.monotonic() < end:
        executor.spin_once(timeout_sec=0.02)
    return bool(condition())


@pytest.fixture
def ros(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # the scene's textures
    rclpy.init()
    yield
    rclpy.try_shutdown()


@REQUIRES_GL
def test_mujoco_backend_follows_a_trajectory_and_publishes_rgbd(ros):
    cameras = list(topics.CAMERAS)
    sim = LabSimNode(parameter_overrides=[Parameter("scenario", value=SCENARIO),
                                          Parameter("arm_backend", value="mujoco"),
                                          Parameter("real_time_factor", value=5.0),
                                          Parameter("camera_rate_hz", value=2.0),
                                          Parameter("cameras", value=cameras)])
    probe = Node("mujoco_probe")
    joints, frames = [], {}
    probe.create_subscription(JointState, topics.JOINT_STATES, joints.append, 10)
    for c in cameras:
        for kind, msg_type, topic in (("rgb", Image, topics.camera_topic(c)), ("depth", Image, topics.depth_topic(c)),
                                      ("info", CameraInfo, topics.camera_info_topic(c))):
            probe.create_subscription(msg_type, topic, lambda m, key=(c, kind): frames.setdefault(key, m), SENSOR)
    pub = probe.create_publisher(JointTrajectory, topics.arm_trajectory_topic("right"), 10)
    executor = make_executor()
    executor.add_node(sim)
    executor.add_node(probe)
    assert spin_until(executor, lambda: joints, 20.0)
    start = sim.t
    pub.publish(JointTrajectory(joint_names=[f"right_joint{i}" for i in range(1, 7)], points=[
        JointTrajectoryPoint(positions=GOAL, time_from_start=Duration(sec=1))]))

    def arrived():
        if not joints or sim.t < start + 1.5:
            return False
        last = dict(zip(joints[-1].name, joints[-1].position))
        return all(abs(last[f"right_joint{i}"] - g) < 0.01 for i, g in enumerate(GOAL, start=1))

    assert spin_until(executor, arrived, 60.0), joints[-1].position if joints else None
    assert spin_until(executor, lambda: len(frames) == 3 * len(cameras), 60.0), sorted(frames)
    for c in cameras:
        rgb, depth, info = frames[(c, "rgb")], frames[(c, "depth")], frames[(c, "info")]
        assert (rgb.width, rgb.height, depth.width, depth.height) == (*CAMERA_SIZE, *CAMERA_SIZE)  # the robot's
        assert depth.encoding == "16UC1" and depth.header.frame_id == rgb.header.frame_id == f"{c}_color_optical_frame"
        assert info.k[0] > 100 and info.k[2] == pytest.approx(CAMERA_SIZE[0] / 2.0)
        values = np.frombuffer(bytes(depth.data), dtype=np.uint16)
        assert (values > 0).mean() > 0.3 and values[values > 0].min() > 10  # metres of scene, in mm
    for n in (sim, probe):
        n.destroy_node()
