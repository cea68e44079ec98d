"""A plan whose experiment_id is a path (`../../escaped_dir`, from any node on the wire) is refused by the
supervisor (nothing moves) and by the recorder (nothing is written outside the runs folder), each with an
invalid_plan anomaly; a well-formed plan then runs and is recorded inside it."""
import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.node import Node  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402

from agentchemist_interfaces.msg import Anomaly, ExperimentPlan, FsmState  # noqa: E402
from agentchemist_ros.common import topics  # noqa: E402
from agentchemist_ros.common.qos import FSM, LATCHED, RELIABLE  # noqa: E402
from agentchemist_ros.recorder_node import RecorderNode  # noqa: E402
from agentchemist_ros.tools.graph import ensure_init  # noqa: E402
from agentchemist_ros.vision_supervisor_node import VisionSupervisorNode  # noqa: E402
from tests.conftest import REPO  # noqa: E402
from tests.factories import planned  # noqa: E402
from tests.graph.harness import spinning, wait_for  # noqa: E402

SCENARIO = REPO / "tests" / "data" / "scenarios" / "hcl_short.yaml"


class Peer(Node):
    def __init__(self):
        super().__init__("hostile_plan_peer")
        self.anomalies, self.states = [], []
        self.plan_pub = self.create_publisher(ExperimentPlan, topics.PLAN, LATCHED)
        self.create_subscription(Anomaly, topics.ANOMALIES, self.anomalies.append, RELIABLE)
        self.create_subscription(FsmState, topics.FSM_STATE, self.states.append, FSM)

    def refusals(self, source):
        return [a for a in self.anomalies if a.source == source and a.kind == "invalid_plan"]


def test_a_plan_id_that_is_a_path_is_refused_and_writes_nothing_outside_runs(tmp_path):
    ensure_init()
    runs = tmp_path / "a" / "b" / "runs"
    runs.mkdir(parents=True)
    params = [Parameter("runs_dir", value=str(runs))]
    supervisor = VisionSupervisorNode(parameter_overrides=[*params, Parameter("require_scene_check", value=False),
                                                           Parameter("agent_wait_s", value=120.0)])
    recorder = RecorderNode(parameter_overrides=params)
    peer = Peer()
    plan = planned(SCENARIO)
    with spinning((supervisor, recorder, peer), threads=4):
        assert wait_for(lambda: peer.plan_pub.get_subscription_count() >= 2, 10.0)
        # the message names a path; the plan inside is well formed (its own id passes the schema)
        peer.plan_pub.publish(ExperimentPlan(experiment_id="../../escaped_dir", plan_json=plan.model_dump_json()))
        assert wait_for(lambda: peer.refusals("vision_supervisor") and peer.refusals("recorder"), 10.0)
        assert peer.refusals("vision_supervisor")[0].severity == "halt"
        assert "not the plan's" in peer.refusals("vision_supervisor")[0].description
        assert "cannot name a run folder" in peer.refusals("recorder")[0].description
        assert [s.state for s in peer.states] == ["aborted"]  # nothing was dispatched
        assert supervisor.ex is None and recorder.recording is None

        # a well-formed plan afterwards: recorded inside runs/
        peer.plan_pub.publish(ExperimentPlan(experiment_id=plan.experiment_id, plan_json=plan.model_dump_json()))
        assert wait_for(lambda: (runs / plan.experiment_id / "records.db").exists(), 10.0)
    assert not (tmp_path / "a" / "escaped_dir").exists() and not (runs / ".." / ".." / "escaped_dir").exists()
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_dir()) == sorted(
        ["a", "b", "runs", plan.experiment_id])
    for node in (supervisor, recorder, peer):
        node.destroy_node()
