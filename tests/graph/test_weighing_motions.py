"""The weighing's robot motions through the graph: lab_sim (nacl_weighing), the vision supervisor (its
scene service) and the action policy composed in one process on the sim clock, as agentchemist_ros.tools.graph
does. ExecuteSubtask goals as the plan sends them: place the beaker on the balance (it stands there
already: no motion), grasp the solid bottle, tare, move the beaker to the stirrer, press the stirrer's
button. Graded on the twin's truth. Without the scene service the carry is refused (no blind motion).
"""
import json
import threading
import time

import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.action import ActionClient  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.time_source import TimeSource  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402

from agentchemist_interfaces.action import ExecuteSubtask  # noqa: E402
from agentchemist_ros.action_policy_node import ActionPolicyNode  # noqa: E402
from agentchemist_ros.common import topics  # noqa: E402
from agentchemist_ros.common.runner import make_executor  # noqa: E402
from agentchemist_ros.tools.graph import ensure_init  # noqa: E402
from agentchemist_ros.lab_sim_node import LabSimNode  # noqa: E402
from agentchemist_ros.vision_supervisor_node import VisionSupervisorNode  # noqa: E402
from tests.conftest import REPO  # noqa: E402

SCENARIO = str(REPO / "config" / "scenarios" / "nacl_weighing.yaml")


def wait(predicate, timeout):
    end = time.monotonic() + timeout
    while not predicate() and time.monotonic() < end:
        time.sleep(0.02)
    return predicate()


class Bench:
    """lab_sim + action_policy (+ vision_supervisor) spinning in a thread; a client node sends goals."""

    def __init__(self, tmp, with_vision=True, policy_params=()):
        ensure_init()
        self.lab = LabSimNode(parameter_overrides=[Parameter("scenario", value=SCENARIO),
                                                   Parameter("real_time_factor", value=50.0)])
        self.policy = ActionPolicyNode(parameter_overrides=[Parameter(k, value=v) for k, v in policy_params])
        agents = [self.policy]
        if with_vision:
            agents.append(VisionSupervisorNode(parameter_overrides=[Parameter("runs_dir", value=str(tmp))]))
        self.clock_node = Node("sim_clock", parameter_overrides=[Parameter("use_sim_time", value=True)])
        self.time_source = TimeSource(node=self.clock_node)
        self.time_source.ros_time_is_active = True
        for node in agents:
            self.time_source.attach_clock(node.get_clock())
        self.client_node = Node("weighing_motion_client")
        self.client = ActionClient(self.client_node, ExecuteSubtask, topics.EXECUTE_SUBTASK)
        self.tare = self.client_node.create_client(Trigger, topics.BALANCE_TARE)
        self.nodes = [self.lab, *agents, self.clock_node, self.client_node]
        self.executor = make_executor()
        for node in self.nodes:
            self.executor.add_node(node)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.spin, daemon=True)
        self.thread.start()

    def spin(self):
        while not self.stop.is_set():
            self.executor.spin_once(timeout_sec=0.05)

    def run(self, subtask, primitive, parameters, timeout=20.0):
        goal = ExecuteSubtask.Goal(experiment_id="weigh_test", subtask_id=subtask,
                                   payload_json=json.dumps({"primitive": primitive, "symbol": subtask + "_ok",
                                                            "parameters": parameters}))
        sent = self.client.send_goal_async(goal)
        assert wait(sent.done, 10) and sent.result().accepted, f"{subtask} not accepted"
        result = sent.result().get_result_async()
        assert wait(result.done, timeout), f"{subtask} did not finish within {timeout} s"
        return result.result().result

    def close(self):
        self.stop.set()
        self.thread.join(timeout=10)
        self.executor.shutdown(timeout_sec=2.0)
        for node in self.nodes:
            node.destroy_node()
        rclpy.try_shutdown()


def on(twin, item_id):
    return next(i.on for i in twin.layout if i.id == item_id)


def moved_events(twin):
    return [e for e in twin.truth()["events"] if e["kind"] == "moved"]


def test_the_weighing_subtasks_move_the_twins_bench(tmp_path):
    wall = time.monotonic()
    bench = Bench(tmp_path)
    twin = bench.lab.twin
    try:
        assert bench.client.wait_for_server(timeout_sec=20) and bench.tare.wait_for_service(timeout_sec=20)
        assert on(twin, "beaker_main") == "balance"

        placed = bench.run("place_beaker", "place", {"object": "beaker_main", "target": "balance"})
        assert placed.success and placed.symbol == "place_beaker_ok", placed.message
        assert "already on the balance" in placed.message
        assert on(twin, "beaker_main") == "balance" and moved_events(twin) == []
        assert twin.arms["right"].command == [0.0] * 6            # no motion was commanded

        grasped = bench.run("grasp_bottle", "grasp", {"object": "solid_bottle", "side": "left"})
        assert grasped.success, grasped.message
        assert twin.bottle_held and twin.bottle.tilt_deg == 0.0   # lifted upright

        tare = bench.tare.call_async(Trigger.Request())
        assert wait(tare.done, 10) and tare.result().success, tare.result().message
        sim_after_tare = bench.lab.t
        assert wait(lambda: bench.lab.t > sim_after_tare + 3.0, 10)
        assert abs(twin.read_balance(bench.lab.t).value) <= 0.02  # beaker + water tared away

        refused = bench.run("move_nowhere", "move_to", {"object": "beaker_main", "target": "hot_plate"})
        assert not refused.success and "unknown target 'hot_plate'" in refused.message

        moved = bench.run("move_to_stirrer", "move_to", {"object": "beaker_main", "target": "stirrer"})
        assert moved.success and moved.symbol == "move_to_stirrer_ok", moved.message
        assert on(twin, "beaker_main") == "stirrer" and not twin.stirrer_on

        pressed = bench.run("start_stirrer", "press", {"device": "stirrer", "speed_rpm": 400})
        assert pressed.success, pressed.message
        truth = twin.truth()
        assert truth["stirrer_on"] and on(twin, "beaker_main") == "stirrer"
        assert truth["weighing"]["bottle_held"] and truth["weighing"]["poured_g"] == 0.0
        assert [e["on"] for e in moved_events(twin)] == ["stirrer"]
        # the balance lost the beaker: it reads minus the tared load
        assert twin.read_balance(bench.lab.t + 3.0).value < -90.0
    finally:
        bench.close()
    assert time.monotonic() - wall < 60.0


def test_without_the_scene_the_beaker_is_not_carried_blind(tmp_path):
    bench = Bench(tmp_path, with_vision=False, policy_params=[("scene_timeout_s", 1.0)])
    twin = bench.lab.twin
    try:
        assert bench.client.wait_for_server(timeout_sec=20)
        result = bench.run("move_to_stirrer", "move_to", {"object": "beaker_main", "target": "stirrer"})
        assert not result.success and "does not move blind" in result.message, result.message
        assert on(twin, "beaker_main") == "balance" and twin.arms["right"].command == [0.0] * 6
    finally:
        bench.close()
