"""Teleoperation recording on real rclpy: lab_sim (the follower arms, cameras, audio) and a stand-in for the
leader arms publishing JointState; the recorder writes a LeRobot v3 episode whose actions are the leader's."""
import threading
import time

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.node import Node  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

from agentchemist.workcell.robot import JOINT_NAMES  # noqa: E402
from agentchemist.policy.vla.dataset import ACTION, STATE, Dataset  # noqa: E402
from agentchemist_ros.common import topics  # noqa: E402
from agentchemist_ros.common.runner import make_executor  # noqa: E402
from agentchemist_ros.lab_sim_node import LabSimNode  # noqa: E402
from agentchemist_ros.tools.graph import ensure_init  # noqa: E402
from agentchemist_ros.tools.teleop_record import TeleopRecorder, leader_topic  # noqa: E402
from tests.conftest import REPO  # noqa: E402


def test_teleop_recorder_writes_the_leader_as_action(tmp_path):
    ensure_init()
    lab = LabSimNode(parameter_overrides=[Parameter("scenario", value=str(REPO / "config/scenarios/hcl_naoh.yaml")),
                                          Parameter("real_time_factor", value=1.0),
                                          Parameter("cameras", value=list(topics.CAMERAS))])
    recorder = TeleopRecorder()
    leader = Node("leader_arms")
    pubs = {s: leader.create_publisher(JointState, leader_topic(s), 10) for s in topics.SIDES}
    names = {s: [n for n in JOINT_NAMES if n.startswith(s)] for s in topics.SIDES}
    leader.create_timer(0.05, lambda: [pubs[s].publish(JointState(name=names[s], position=[0.25] * 6 + [0.03]))
                                       for s in topics.SIDES])
    executor = make_executor()
    for n in (lab, recorder, leader):
        executor.add_node(n)
    stop = threading.Event()
    thread = threading.Thread(target=lambda: [executor.spin_once(timeout_sec=0.05) for _ in iter(stop.is_set, True)],
                              daemon=True)
    thread.start()
    try:
        ep = recorder.episode
        end = time.monotonic() + 60
        while time.monotonic() < end:
            try:
                if len(ep.frames()) >= 8 and ep._audio:
                    break
            except ValueError:
                pass
            time.sleep(0.1)
        stop.set()
        thread.join(timeout=10)
        n = recorder.write(str(tmp_path / "teleop"), "grasp pipette")
    finally:
        stop.set()
        executor.shutdown(timeout_sec=2.0)
        for node in (lab, recorder, leader):
            node.destroy_node()
        rclpy.try_shutdown()
    ds = Dataset(tmp_path / "teleop")
    assert len(ds) == n >= 8 and ds.episodes[0]["source"] == "teleop" and ds.tasks[0] == "grasp pipette"
    frame = ds.frame(n - 1)
    assert np.allclose(frame[ACTION], [0.25] * 6 + [0.03] + [0.25] * 6 + [0.03])
    assert frame[STATE].shape == (14,) and frame["observation.images.front"].ndim == 3
