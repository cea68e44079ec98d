"""A halt from another node while no experiment runs (an arm powered after the graph came up: the Piper
driver's feedback timeout) stops nothing and invents no "aborted" state; during an experiment the same halt
aborts it."""
import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.node import Node  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402

from agentchemist_interfaces.msg import Anomaly, ExperimentPlan, FsmState  # noqa: E402
from agentchemist_ros.common import topics  # noqa: E402
from agentchemist_ros.common.anomaly import make_anomaly  # noqa: E402
from agentchemist_ros.common.qos import FSM, LATCHED, RELIABLE  # noqa: E402
from agentchemist_ros.tools.graph import ensure_init  # noqa: E402
from agentchemist_ros.vision_supervisor_node import VisionSupervisorNode  # noqa: E402
from tests.conftest import REPO  # noqa: E402
from tests.factories import planned  # noqa: E402
from tests.graph.harness import before_marker, spinning, wait_for  # noqa: E402

SCENARIO = REPO / "tests" / "data" / "scenarios" / "hcl_short.yaml"


class Peer(Node):
    def __init__(self):
        super().__init__("idle_halt_peer")
        self.anomalies, self.states = [], []
        self.plan_pub = self.create_publisher(ExperimentPlan, topics.PLAN, LATCHED)
        self.anomaly_pub = self.create_publisher(Anomaly, topics.ANOMALIES, RELIABLE)
        self.create_subscription(Anomaly, topics.ANOMALIES, self.anomalies.append, RELIABLE)
        self.create_subscription(FsmState, topics.FSM_STATE, self.states.append, FSM)

    def halt(self, description="no complete feedback for 0.1 s"):
        self.anomaly_pub.publish(make_anomaly(
            now=0.0, experiment_id="", source="left_piper_driver", kind="piper_feedback_timeout", severity="halt",
            description=description, response="motion frames stopped"))

    def ours(self):
        return [a for a in self.anomalies if a.source == "vision_supervisor"]


def test_a_halt_with_no_experiment_running_stops_nothing_and_one_during_a_run_aborts_it(tmp_path):
    ensure_init()
    # agent_wait_s: no action policy runs; the halt must come long before the wait for its answer ends
    node = VisionSupervisorNode(parameter_overrides=[Parameter("runs_dir", value=str(tmp_path)),
                                                     Parameter("require_scene_check", value=False),
                                                     Parameter("agent_wait_s", value=120.0)])
    peer = Peer()
    with spinning((node, peer), threads=4):
        # the supervisor hears the peer's anomalies (the peer's own subscription is the other one)
        assert wait_for(lambda: peer.anomaly_pub.get_subscription_count() >= 2, 10.0)
        peer.halt("while idle")
        assert wait_for(lambda: any(a.source == "left_piper_driver" for a in peer.anomalies), 5.0)
        # an experiment starts; the same halt now aborts it (the action policy is absent, but its answer
        # is awaited for agent_wait_s: long enough for the halt to come first)
        plan = planned(SCENARIO)
        peer.plan_pub.publish(ExperimentPlan(experiment_id=plan.experiment_id, plan_json=plan.model_dump_json()))
        assert wait_for(lambda: any(s.experiment_id == plan.experiment_id for s in peer.states), 10.0)
        # The second halt is the marker: it reaches the supervisor after the first (same publisher, same
        # subscription), so what the supervisor said about the first is on its topics ahead of its answer.
        before = before_marker(peer.states, peer.halt, lambda s: s.state == "aborted")
        assert wait_for(peer.ours, 5.0)
    assert not [s for s in before if s.state == "aborted"], "nothing ran at the first halt: nothing to abort"
    ours = peer.ours()
    assert [(a.kind, a.severity, a.response) for a in ours] == [("piper_feedback_timeout", "halt", "abort")]
    assert "left_piper_driver reported piper_feedback_timeout" in ours[0].description
    assert "while idle" not in ours[0].description  # the answer is to the second halt; the first had none
