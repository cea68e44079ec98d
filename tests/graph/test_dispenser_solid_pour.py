"""The dispenser_controller's solid_pour mode through the graph: lab_sim (nacl_weighing), the action
policy and the dispenser composed in one process on the sim clock (as agentchemist_ros.tools.graph does).

The action policy grasps the bottle as the plan's grasp_bottle subtask does (it ends at
`pour_over_beaker`), the balance is tared through /lab/balance/tare, then Dispense goals in solid_pour
mode: the dispenser tilts the bottle by the left wrist, lab_sim's bench effects turn the wrist into
the bottle's tilt, and the powder lands on the twin's balance. Graded on the twin's truth (what left the
bottle). Along the way: a "tap" to the vision supervisor per pour pulse, bad balance readings refused
as anomalies, a hold putting the bottle upright, a cancel, refused goals.
"""
import json
import math
import re
import time

import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.action import ActionClient  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.time_source import TimeSource  # noqa: E402
from std_msgs.msg import Header  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402

from agentchemist_interfaces.action import Dispense, ExecuteSubtask  # noqa: E402
from agentchemist_interfaces.msg import AgentMessage, Anomaly, ChemicalReading  # noqa: E402
from agentchemist_ros.action_policy_node import ActionPolicyNode  # noqa: E402
from agentchemist_ros.common import topics  # noqa: E402
from agentchemist_ros.common.qos import READINGS, RELIABLE  # noqa: E402
from agentchemist_ros.common.timeconv import to_msg, to_sec  # noqa: E402
from agentchemist_ros.dispenser_controller_node import DispenserControllerNode  # noqa: E402
from agentchemist_ros.tools.graph import ensure_init  # noqa: E402
from agentchemist_ros.lab_sim_node import LabSimNode  # noqa: E402
from tests.conftest import REPO  # noqa: E402
from tests.graph.harness import spinning  # noqa: E402

SCENARIO = str(REPO / "config" / "scenarios" / "nacl_weighing.yaml")
WALL_LIMIT_S = 240.0


def wait(predicate, timeout):
    end = time.monotonic() + timeout
    while not predicate() and time.monotonic() < end:
        time.sleep(0.02)
    return predicate()


class Client(Node):
    """Sends the goals, plays the vision supervisor's hold/release, hears taps and anomalies."""

    def __init__(self):
        super().__init__("solid_pour_test_client")
        self.taps, self.anomalies, self.feedback = [], [], []
        self.dispense = ActionClient(self, Dispense, topics.DISPENSE)
        self.subtask = ActionClient(self, ExecuteSubtask, topics.EXECUTE_SUBTASK)
        self.tare = self.create_client(Trigger, topics.BALANCE_TARE)
        self.msg_pub = self.create_publisher(AgentMessage, topics.MESSAGES, RELIABLE)
        self.balance_pub = self.create_publisher(ChemicalReading, topics.BALANCE_READING, READINGS)
        self.create_subscription(AgentMessage, topics.MESSAGES, self.on_message, RELIABLE)
        self.create_subscription(Anomaly, topics.ANOMALIES, self.anomalies.append, RELIABLE)

    def on_message(self, msg):
        if msg.symbol == "tap":
            self.taps.append(msg)

    def send(self, timeout=20.0, **fields):
        goal = Dispense.Goal(experiment_id="pour_test", subtask_id=fields.pop("subtask_id", "dose_solid"), **fields)
        sent = self.dispense.send_goal_async(goal, feedback_callback=lambda f: self.feedback.append(f.feedback))
        assert wait(sent.done, timeout) and sent.result().accepted
        return sent.result()

    def tell(self, symbol, reason):
        self.msg_pub.publish(AgentMessage(experiment_id="pour_test", sender="vision_supervisor",
                                          receiver="dispenser_controller", symbol=symbol,
                                          payload_json=json.dumps({"reason": reason})))

    def bad_reading(self, value, stamp):
        self.balance_pub.publish(ChemicalReading(header=Header(stamp=to_msg(stamp), frame_id="balance"),
                                                 sensor="balance", quantity="mass", value=value, unit="g",
                                                 self_check_ok=True, noise=0.002))


PLAN = dict(mode="solid_pour", target_mass_g=2.5, mass_tolerance_g=0.1, tilt_rate_deg_s=5.0, side="left",
            settle_each_drop=True, stable_window_s=2.0, wait_on_change_threshold=0.02)  # the plan's dose_solid


@pytest.fixture(scope="module")
def session():
    ensure_init()
    lab = LabSimNode(parameter_overrides=[Parameter("scenario", value=SCENARIO),
                                          Parameter("real_time_factor", value=25.0)])
    policy = ActionPolicyNode()
    dispenser = DispenserControllerNode()
    clock_node = Node("sim_clock", parameter_overrides=[Parameter("use_sim_time", value=True)])
    time_source = TimeSource(node=clock_node)
    time_source.ros_time_is_active = True
    for node in (policy, dispenser):
        time_source.attach_clock(node.get_clock())
    client = Client()
    nodes = [lab, policy, dispenser, clock_node, client]
    started = time.monotonic()
    twin = lab.twin
    out = {"lab": lab}
    with spinning(nodes):
        assert client.dispense.wait_for_server(timeout_sec=20) and client.subtask.wait_for_server(timeout_sec=20)
        assert client.tare.wait_for_service(timeout_sec=20)
        # Refused goals move nothing: an unknown mode, a target that is not a number, before the grasp.
        for name, fields in (("unknown_mode", {**PLAN, "mode": "spoon"}),
                             ("nan_target", {**PLAN, "target_mass_g": float("nan")})):
            goal = client.send(**fields)
            res = goal.get_result_async()
            assert wait(res.done, 20)
            out[name] = res.result().result

        # grasp_bottle as the plan sends it; the action policy leaves the bottle upright over the beaker
        goal = ExecuteSubtask.Goal(experiment_id="pour_test", subtask_id="grasp_bottle", payload_json=json.dumps(
            {"primitive": "grasp", "symbol": "grasp_ok", "parameters": {"object": "solid_bottle", "side": "left"}}))
        sent = client.subtask.send_goal_async(goal)
        assert wait(sent.done, 20) and sent.result().accepted
        grasped = sent.result().get_result_async()
        assert wait(grasped.done, 60) and grasped.result().result.success, "the bottle was not grasped"
        assert twin.bottle_held
        tared = client.tare.call_async(Trigger.Request())
        assert wait(tared.done, 20) and tared.result().success, tared.result().message
        assert wait(lambda: dispenser.arm_positions.get("left") is not None, 20)

        # 1. The plan's pour, with two bad readings slipped onto the balance topic half way through.
        poured0, t0 = twin.bottle.poured_g, lab.t
        goal = client.send(**PLAN)
        assert wait(lambda: any(f.controller_state == "PULSE" for f in client.feedback), 60)
        client.bad_reading(float("nan"), lab.t)
        client.bad_reading(-7.5, lab.t)
        res = goal.get_result_async()
        assert wait(res.done, WALL_LIMIT_S - (time.monotonic() - started)), "the pour did not finish"
        out["pour"] = res.result().result
        out["pour_sim_s"] = lab.t - t0
        out["pour_truth_g"] = twin.bottle.poured_g - poured0
        out["pour_taps"] = list(client.taps)
        out["pour_anomalies"] = list(client.anomalies)
        out["pour_feedback"] = list(client.feedback)
        assert wait(lambda: twin.bottle.tilt_deg == 0.0, 10)
        out["upright_after_pour"] = twin.bottle.tilt_deg

        # 2. Another gram: held during its first pulse (bottle upright at once), then canceled while held.
        client.feedback.clear()
        goal = client.send(**{**PLAN, "target_mass_g": 1.0, "subtask_id": "dose_more"})
        assert wait(lambda: any(f.controller_state == "PULSE" for f in client.feedback), 60)
        client.tell("hold", "beaker_moved")
        held_at = lab.t
        assert wait(lambda: any(f.controller_state == "HELD" for f in client.feedback), 20)
        assert wait(lambda: lab.t > held_at + 2.0, 20)
        out["tilt_while_held"] = twin.bottle.tilt_deg
        poured_held = twin.bottle.poured_g
        assert wait(lambda: lab.t > held_at + 4.0, 20)
        out["poured_while_held"] = twin.bottle.poured_g - poured_held
        cancel = goal.cancel_goal_async()
        assert wait(cancel.done, 20)
        res = goal.get_result_async()
        assert wait(res.done, 20)
        out["canceled"] = res.result().result
        client.tell("release", "beaker_moved")
        out["wall_s"] = time.monotonic() - started
    return out


def test_refused_goals(session):
    for name, words in (("unknown_mode", "unknown dispensing mode"), ("nan_target", "not a number")):
        result = session[name]
        assert not result.success and result.stop_reason == "rejected" and words in result.message, result.message


def test_pours_the_plans_mass_through_the_graph(session):
    result = session["pour"]
    assert result.success and result.stop_reason == "target_mass", result.message
    assert abs(session["pour_truth_g"] - 2.5) <= 0.03, session["pour_truth_g"]
    assert result.dispensed_g == pytest.approx(session["pour_truth_g"], abs=0.012)
    assert math.isfinite(result.final_mass_g) and result.final_mass_g == pytest.approx(result.dispensed_g, abs=0.02)
    assert session["pour_sim_s"] < 90.0
    assert session["upright_after_pour"] == 0.0
    states = {f.controller_state for f in session["pour_feedback"]}
    assert {"SEEK", "SETTLE", "PULSE"} <= states
    assert any(math.isfinite(f.mass_g) and f.mass_g > 1.0 for f in session["pour_feedback"])


def test_each_pour_pulse_is_a_tap_to_the_vision_supervisor(session):
    taps, result = session["pour_taps"], session["pour"]
    assert len(taps) == result.drops >= 3
    assert all(t.receiver == "vision_supervisor" and t.sender == "dispenser_controller"
               and t.subtask_id == "dose_solid" and t.experiment_id == "pour_test" for t in taps)
    kinds = [json.loads(t.payload_json)["kind"] for t in taps]
    assert kinds[0] == "search" and set(kinds[1:]) == {"pulse"}
    stamps = [to_sec(t.stamp) for t in taps]
    assert all(b > a for a, b in zip(stamps, stamps[1:]))


def test_bad_readings_are_anomalies_and_change_nothing(session):
    bad = [a for a in session["pour_anomalies"] if a.kind == "bad_reading"]
    assert bad and all(a.source == "dispenser_controller" and a.subtask_id == "dose_solid" for a in bad)
    # Once per episode (fsm/episodes.py): a warn at the first refusal, an info with the next valid reading
    # that counts the refused ones; the NaN and the negative mass were both refused.
    warns, infos = [a for a in bad if not a.resolved], [a for a in bad if a.resolved]
    assert "not a number" in warns[0].description and len(warns) == len(infos)
    assert sum(int(re.search(r"(\d+) refused", a.description).group(1)) for a in infos) == 2
    assert session["pour"].success  # the pour went on with the good readings


def test_hold_puts_the_bottle_upright_and_cancel_ends_the_goal(session):
    assert session["tilt_while_held"] == 0.0
    assert session["poured_while_held"] < 0.02  # what was in the air when the hold came, at most
    result = session["canceled"]
    assert not result.success and result.stop_reason == "canceled"
