"""The summarizer writes each report in a child process (`agentchemist report`): a run whose store cannot be
read gives a `report_failed` anomaly naming the child's error and a `report_failed` message to the
planner, and the node goes on serving (issue 11: a long run must not lose its graph to one bad report)."""
import json

import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.node import Node  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402

from agentchemist_interfaces.msg import AgentMessage, Anomaly  # noqa: E402
from agentchemist_ros.common import topics  # noqa: E402
from agentchemist_ros.common.qos import RELIABLE  # noqa: E402
from agentchemist_ros.tools.graph import ensure_init  # noqa: E402
from agentchemist_ros.summarizer_node import SummarizerNode  # noqa: E402
from tests.graph.harness import spinning, wait_for  # noqa: E402


class Peer(Node):
    def __init__(self):
        super().__init__("summarizer_test_peer")
        self.anomalies, self.messages = [], []
        self.pub = self.create_publisher(AgentMessage, topics.MESSAGES, RELIABLE)
        self.create_subscription(Anomaly, topics.ANOMALIES, self.anomalies.append, RELIABLE)
        self.create_subscription(AgentMessage, topics.MESSAGES,
                                 lambda m: self.messages.append(m) if m.sender == "summarizer" else None, RELIABLE)


def test_a_report_that_cannot_be_written_is_an_anomaly_and_the_node_goes_on(tmp_path):
    ensure_init()
    (tmp_path / "exp-broken").mkdir()
    (tmp_path / "exp-broken" / "records.db").write_bytes(b"this is not a database")
    summarizer = SummarizerNode(parameter_overrides=[Parameter("runs_dir", value=str(tmp_path))])
    peer = Peer()
    with spinning((summarizer, peer)):
        assert wait_for(lambda: peer.pub.get_subscription_count() >= 1, 10)
        for exp in ("exp-broken", "exp-missing"):
            peer.pub.publish(AgentMessage(experiment_id=exp, sender="recorder", receiver="summarizer",
                                          symbol="record_closed", payload_json=json.dumps({"status": "completed"})))
        assert wait_for(lambda: len(peer.messages) >= 2, 120), [m.symbol for m in peer.messages]
        failed = {m.experiment_id: m for m in peer.messages}
        assert {m.symbol for m in failed.values()} == {"report_failed"}
        assert json.loads(failed["exp-broken"].payload_json)["report"] == ""
        assert wait_for(lambda: len(peer.anomalies) >= 2, 10)
        kinds = {(a.experiment_id, a.kind, a.severity) for a in peer.anomalies}
        assert kinds == {("exp-broken", "report_failed", "warn"), ("exp-missing", "report_failed", "warn")}
        why = {a.experiment_id: a.description for a in peer.anomalies}  # the child's own last error line
        assert "not a readable SQLite database" in why["exp-broken"], why
        # A run folder that does not exist is said so, and never created with an empty database (issue 25).
        assert "no such run folder" in why["exp-missing"], why
        assert not (tmp_path / "exp-missing").exists()
        assert summarizer.children == {}  # no report process left behind
