"""Nodes fail alone (common/guarded.py): an exception in one node's callback is logged with the node's
name, published once as a node_error anomaly, and the executor that spins every node goes on."""
import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.node import Node  # noqa: E402
from std_msgs.msg import String  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402

from agentchemist.record.recording import Recording  # noqa: E402
from agentchemist_interfaces.msg import Anomaly  # noqa: E402
from agentchemist_ros.common import topics  # noqa: E402
from agentchemist_ros.common.guarded import GuardedNode  # noqa: E402
from agentchemist_ros.common.qos import RELIABLE  # noqa: E402
from tests.conftest import REPO  # noqa: E402
from tests.graph.harness import run_experiment, spinning, wait_for  # noqa: E402

SCENARIO = REPO / "tests" / "data" / "scenarios" / "hcl_short.yaml"


class Fragile(GuardedNode):
    """Fails on every "bad" message and in its service; counts the good ones."""

    def __init__(self):
        super().__init__("fragile")
        self.experiment_id = "exp-fragile"
        self.good = []
        self.create_subscription(String, "/fragile/in", self.on_text, 10)
        self.create_service(Trigger, "/fragile/trigger", self.trigger)

    def on_text(self, msg):
        if msg.data == "bad":
            raise ValueError("cannot digest 'bad'")
        self.good.append(msg.data)

    def trigger(self, request, response):
        raise RuntimeError("the service broke")


@pytest.mark.parametrize("executor", ["events", "single", "multi"])
def test_a_failing_callback_is_an_anomaly_once_and_the_executor_goes_on(executor, monkeypatch):
    monkeypatch.setenv("AGENTCHEMIST_EXECUTOR", executor)
    rclpy.init()
    fragile, probe = Fragile(), Node("fail_probe")
    anomalies = []
    probe.create_subscription(Anomaly, topics.ANOMALIES, anomalies.append, RELIABLE)
    pub = probe.create_publisher(String, "/fragile/in", 10)
    client = probe.create_client(Trigger, "/fragile/trigger")
    with spinning([fragile, probe]):
        assert wait_for(lambda: pub.get_subscription_count() == 1 and client.service_is_ready(), 20)
        for text in ("bad", "bad", "bad", "good-1"):
            pub.publish(String(data=text))
        assert wait_for(lambda: fragile.good == ["good-1"], 20), "the executor stopped after the failures"
        future = client.call_async(Trigger.Request())
        assert wait_for(future.done, 20)
        assert not future.result().success and "failed" in future.result().message  # answered, not hung
        pub.publish(String(data="good-2"))  # and it still serves the topic
        assert wait_for(lambda: fragile.good == ["good-1", "good-2"], 20)
        assert wait_for(lambda: len(anomalies) == 2, 20)
    errors = sorted((a.kind, a.source, a.severity, a.experiment_id) for a in anomalies)
    assert errors == [("node_error", "fragile", "halt", "exp-fragile")] * 2  # one per callback, not per message
    assert any("ValueError: cannot digest 'bad'" in a.description and "/fragile/in" in a.description
               for a in anomalies)


def test_a_node_that_breaks_mid_run_aborts_that_run_and_the_graph_answers(tmp_path, monkeypatch):
    """The recorder breaks on a reading in the middle of a titration (one-process graph, as in the demo and
    the scenario runner): the run aborts with node_error naming it, and the result still comes back."""
    seen = {"n": 0}
    original = Recording.on_reading

    def breaks_after_a_while(self, msg):
        seen["n"] += 1
        if seen["n"] > 40:
            raise KeyError("a bug in the recorder")
        return original(self, msg)

    monkeypatch.setattr(Recording, "on_reading", breaks_after_a_while)
    run = run_experiment(SCENARIO, tmp_path / "runs", wall_limit_s=240.0,
                         probe=lambda: _AnomalyProbe())
    assert not run.result.success and run.result.outcome == "aborted"
    assert "node_error" in run.result.message and "recorder" in run.result.message
    kinds = [(a.kind, a.source) for a in run.probe.anomalies if a.severity == "halt"]
    assert kinds[0] == ("node_error", "recorder")


class _AnomalyProbe(Node):
    def __init__(self):
        super().__init__("fail_alone_probe")
        self.anomalies = []
        self.create_subscription(Anomaly, topics.ANOMALIES, self.anomalies.append, RELIABLE)
