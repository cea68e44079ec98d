"""SROS2 permissions made from the live graph (issue 38, tools/security_policy.py): the graph's own nodes give
a clean policy (one enclave each, default DENY); a participant that publishes plans is a breach and no
permissions are written for such a graph."""
import datetime as dt
import time
from xml.etree import ElementTree as ET

import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.node import Node  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from trajectory_msgs.msg import JointTrajectory  # noqa: E402

from agentchemist_interfaces.msg import ExperimentPlan  # noqa: E402
from agentchemist_ros.action_policy_node import ActionPolicyNode  # noqa: E402
from agentchemist_ros.common import topics  # noqa: E402
from agentchemist_ros.common.qos import LATCHED  # noqa: E402
from agentchemist_ros.planner_node import PlannerNode  # noqa: E402
from agentchemist_ros.recorder_node import RecorderNode  # noqa: E402
from agentchemist_ros.tools import security_policy as sp  # noqa: E402
from agentchemist_ros.tools.graph import ensure_init  # noqa: E402
from agentchemist_ros.vision_supervisor_node import VisionSupervisorNode  # noqa: E402
from tests.graph.harness import spinning  # noqa: E402


def test_the_policy_follows_the_graph_and_refuses_a_second_plan_publisher(tmp_path):
    ensure_init()
    runs = [Parameter("runs_dir", value=str(tmp_path / "runs"))]
    nodes = [VisionSupervisorNode(parameter_overrides=runs), RecorderNode(parameter_overrides=runs), PlannerNode(),
             ActionPolicyNode()]
    observer = Node("_security_policy")
    with spinning((*nodes, observer), threads=4) as executor:
        graph = sp.observe(observer, 3.0, time.sleep)
        assert {"vision_supervisor", "recorder", "planner", "action_policy"} <= set(graph)
        assert topics.PLAN in graph["planner"].publish and topics.DISPENSE in graph["vision_supervisor"].send
        assert topics.EXECUTE_SUBTASK in graph["action_policy"].execute
        assert sp.breaches(graph) == []
        written = sp.write(graph, tmp_path / "security", 0, dt.datetime(2026, 11, 28, tzinfo=dt.timezone.utc))

        intruder = Node("intruder")
        intruder.create_publisher(ExperimentPlan, topics.PLAN, LATCHED)
        intruder.create_publisher(JointTrajectory, topics.arm_trajectory_topic("left"), 10)
        executor.add_node(intruder)
        forged = sp.observe(observer, 2.0, time.sleep)
        executor.remove_node(intruder)
        intruder.destroy_node()
    assert sp.breaches(forged) == [
        f"intruder publishes plans on {topics.PLAN}: only planner may",
        f"intruder publishes left arm trajectories on {topics.arm_trajectory_topic('left')}: only action_policy, "
        "dispenser_controller may"]

    policy = ET.parse(tmp_path / "security" / "policy.xml").getroot()
    assert policy.tag == "policy" and policy.get("version") == "0.2.0"
    enclave = {e.get("path"): e for e in policy.iter("enclave")}
    vision = enclave["/agentchemist/vision_supervisor"]
    calls = [a.text for g in vision.iter("actions") if g.get("call") == "ALLOW" for a in g]
    assert topics.DISPENSE in calls and topics.EXECUTE_SUBTASK in calls
    published = {t.text for e in policy.iter("enclave") for g in e.iter("topics") if g.get("publish") for t in g}
    assert topics.PLAN in published
    plan_publishers = [p for p, e in enclave.items()
                       if topics.PLAN in {t.text for g in e.iter("topics") if g.get("publish") for t in g}]
    assert plan_publishers == ["/agentchemist/planner"]

    grant = ET.parse(tmp_path / "security" / "permissions" / "planner.xml").getroot().find("permissions/grant")
    assert grant.find("subject_name").text == "CN=/agentchemist/planner" and grant.find("default").text == "DENY"
    assert "rt/agentchemist/plan" in {t.text for t in grant.find("allow_rule/publish/topics")}
    vision_grant = ET.parse(tmp_path / "security" / "permissions" / "vision_supervisor.xml").getroot()
    assert "rt/agentchemist/plan" not in {t.text for t in vision_grant.find("permissions/grant/allow_rule/publish/topics")}
    assert "rq/agentchemist/dispense/_action/send_goalRequest" in {
        t.text for t in vision_grant.find("permissions/grant/allow_rule/publish/topics")}
    assert len(written) == 1 + len(graph)
