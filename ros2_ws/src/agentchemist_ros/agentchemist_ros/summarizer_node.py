"""summarizer: at a terminal FSM state, once the recorder has closed the run, write the report
(agentchemist.report) into runs/<experiment_id>/ and announce its path."""
import json
import threading
from pathlib import Path

from rclpy.node import Node

from agentchemist.report.from_store import regenerate_report
from agentchemist_interfaces.msg import AgentMessage, Anomaly
from agentchemist_ros.common import topics
from agentchemist_ros.common.anomaly import make_anomaly
from agentchemist_ros.common.params import declare
from agentchemist_ros.common.qos import RELIABLE
from agentchemist_ros.common.runner import spin_node
from agentchemist_ros.common.timeconv import node_now, to_msg


class SummarizerNode(Node):
    def __init__(self, **kwargs):
        super().__init__("summarizer", **kwargs)
        self.runs_dir = Path(declare(self, "runs_dir", "runs", "Folder of the experiment run folders"))
        self.lock = threading.Lock()
        self.done = set()
        self.msg_pub = self.create_publisher(AgentMessage, topics.MESSAGES, RELIABLE)
        self.anomaly_pub = self.create_publisher(Anomaly, topics.ANOMALIES, RELIABLE)
        self.create_subscription(AgentMessage, topics.MESSAGES, self.on_message, RELIABLE)

    def on_message(self, msg):
        if msg.receiver != self.get_name() or msg.symbol != "record_closed":
            return
        with self.lock:
            if msg.experiment_id in self.done:
                return
            self.done.add(msg.experiment_id)
        payload = json.loads(msg.payload_json or "{}")
        run_dir = self.runs_dir / msg.experiment_id
        try:
            paths = regenerate_report(run_dir, payload.get("store"), msg.experiment_id)
        except Exception as exc:  # the report must never take the graph down; say why it failed
            self.get_logger().error(f"report for {msg.experiment_id} failed: {exc!r}")
            self.anomaly_pub.publish(make_anomaly(now=node_now(self), experiment_id=msg.experiment_id,
                                                  source=self.get_name(), kind="report_failed", severity="warn",
                                                  description=repr(exc)))
            paths = None
        report = str(paths.markdown.resolve()) if paths else ""
        self.get_logger().info(f"report written: {report}")
        self.msg_pub.publish(AgentMessage(
            stamp=to_msg(node_now(self)), experiment_id=msg.experiment_id, sender=self.get_name(),
            receiver="planner", symbol="report_written" if paths else "report_failed",
            payload_json=json.dumps({"report": report, "html": str(paths.html.resolve()) if paths else "",
                                     "json": str(paths.json.resolve()) if paths else "",
                                     "status": payload.get("status", "")})))


def main(args=None):
    spin_node(SummarizerNode, args)


if __name__ == "__main__":
    main()
