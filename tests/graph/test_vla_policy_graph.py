"""The action policy's vla backend on the graph: lab_sim (hcl_naoh) and action_policy with backend:=vla and
a tiny policy trained here on twin demonstrations of the grasp, composed in one process on the sim clock.
The node executes the subtask from the cameras, contact audio and joint states; every trajectory point and
gripper command it sends is within the position limits and the URDF's velocity limits; a subtask the
policy was not trained on is refused with a reason on the anomaly topic."""
import json
import threading
import time

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.action import ActionClient  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.time_source import TimeSource  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402
from trajectory_msgs.msg import JointTrajectory  # noqa: E402

from agentchemist.policy.vla.serve import LOWER, UPPER, urdf_velocity_limits  # noqa: E402
from agentchemist.policy.vla.train import TrainOptions, train  # noqa: E402
from agentchemist.sim.vla_demos import record_twin_demos  # noqa: E402
from agentchemist_interfaces.action import ExecuteSubtask  # noqa: E402
from agentchemist_interfaces.msg import Anomaly  # noqa: E402
from agentchemist_ros.action_policy_node import ActionPolicyNode  # noqa: E402
from agentchemist_ros.common import topics  # noqa: E402
from agentchemist_ros.common.qos import RELIABLE  # noqa: E402
from agentchemist_ros.common.runner import make_executor  # noqa: E402
from agentchemist_ros.lab_sim_node import LabSimNode  # noqa: E402
from agentchemist_ros.tools.graph import ensure_init  # noqa: E402
from tests.conftest import REPO  # noqa: E402

SCENARIO = str(REPO / "config" / "scenarios" / "hcl_naoh.yaml")


def wait(predicate, timeout):
    end = time.monotonic() + timeout
    while not predicate() and time.monotonic() < end:
        time.sleep(0.02)
    return predicate()


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    demos = record_twin_demos(tmp_path_factory.mktemp("demos"), 2, seed=7, subtasks=("grasp_pipette",))
    out = tmp_path_factory.mktemp("train")
    train(demos, out, "tiny", TrainOptions(steps=200, batch_size=8, lr=3e-3, save_every=1000, progress=False,
                                           threads=1))
    return out / "checkpoints" / "last"


def test_vla_backend_executes_a_subtask_within_limits(checkpoint):
    ensure_init()
    lab = LabSimNode(parameter_overrides=[Parameter("scenario", value=SCENARIO),
                                          Parameter("real_time_factor", value=2.0),
                                          Parameter("cameras", value=list(topics.CAMERAS))])
    policy = ActionPolicyNode(parameter_overrides=[Parameter("backend", value="vla"),
                                                   Parameter("checkpoint", value=str(checkpoint)),
                                                   Parameter("max_duration_s", value=25.0)])
    clock_node = Node("sim_clock", parameter_overrides=[Parameter("use_sim_time", value=True)])
    time_source = TimeSource(node=clock_node)
    time_source.ros_time_is_active = True
    time_source.attach_clock(policy.get_clock())
    probe = Node("vla_probe")
    points, grips, anomalies = [], [], []
    for i, side in enumerate(topics.SIDES):
        probe.create_subscription(JointTrajectory, topics.arm_trajectory_topic(side),
                                  lambda m, i=i: points.append((i, list(m.points[0].positions))), 100)
        probe.create_subscription(Float64MultiArray, topics.gripper_command_topic(side),
                                  lambda m, i=i: grips.append((i, m.data[0])), 100)
    probe.create_subscription(Anomaly, topics.ANOMALIES, anomalies.append, RELIABLE)
    client = ActionClient(probe, ExecuteSubtask, topics.EXECUTE_SUBTASK)
    nodes = [lab, policy, clock_node, probe]
    executor = make_executor()
    for n in nodes:
        executor.add_node(n)
    stop = threading.Event()
    thread = threading.Thread(target=lambda: [executor.spin_once(timeout_sec=0.05) for _ in iter(stop.is_set, True)],
                              daemon=True)
    thread.start()

    def run(subtask, primitive, timeout=120.0):
        goal = ExecuteSubtask.Goal(experiment_id="vla_test", subtask_id=subtask, payload_json=json.dumps(
            {"primitive": primitive, "symbol": subtask + "_ok", "parameters": {}}))
        sent = client.send_goal_async(goal)
        assert wait(sent.done, 20) and sent.result().accepted
        result = sent.result().get_result_async()
        assert wait(result.done, timeout), f"{subtask} did not finish within {timeout} s"
        return result.result().result

    try:
        assert client.wait_for_server(timeout_sec=30)
        def ready():
            o = policy.vla.snapshot()
            return o.front is not None and all(w is not None for w in o.wrists) and o.audio is not None
        assert wait(ready, 30)
        done = run("grasp", "grasp_pipette")
        assert done.success and done.symbol == "grasp_ok", done.message
        assert '"success": true' in done.message and '"chunks"' in done.message
        assert len(points) >= 10
        vmax, dt = urdf_velocity_limits(), policy.vla.runner.dt
        last = {}
        for side, q in points:
            q = np.asarray(q)
            lo, hi = LOWER[7 * side:7 * side + 6], UPPER[7 * side:7 * side + 6]
            assert np.all(q >= lo - 1e-9) and np.all(q <= hi + 1e-9), q
            if side in last:  # consecutive commands of one arm: within the velocity limit over a period
                assert np.all(np.abs(q - last[side]) <= vmax[7 * side:7 * side + 6] * dt + 1e-6)
            last[side] = q
        assert all(0.0 <= g <= 0.07 for _, g in grips)
        # the right arm went toward the pipette pose (joint2 from 0 toward 1.2 rad)
        assert lab.twin.arms["right"].position[1] > 0.5, lab.twin.arms["right"].position

        refused = run("stir", "stir_vigorously")
        assert not refused.success and "not one the VLA policy was trained on" in refused.message
        assert wait(lambda: any(a.subtask_id == "stir" and a.kind == "subtask_failed" for a in anomalies), 10)
    finally:
        stop.set()
        thread.join(timeout=10)
        executor.shutdown(timeout_sec=2.0)
        for n in nodes:
            n.destroy_node()
        rclpy.try_shutdown()
