"""summarizer: at a terminal FSM state, once the recorder has closed the run, write the report
(agentchemist.report) into runs/<experiment_id>/ and announce its path.

The report is written by a child process (`agentchemist report RUN_DIR`, the same code) by default. A
report loads the whole run from the store: for the 25 mL worked example some 28 000 raw observations
as Python rows, about 60 MB at its peak. In the one-process graph of a long run (issue 11) that peak came
back after every experiment and was never given back to the system (the heap stays fragmented by the
objects the other nodes allocate in between): the process grew by it after the first experiment and by
a few MB more after each. A child process returns all of it when it exits, its crash cannot take the
graph down, and the graph (the twin's clock included) keeps running while it writes.
`report_in_process: true` writes in the node instead (one process fewer, for a machine where spawning
Python is slow).
"""
import dataclasses
import subprocess
import sys
import threading
from collections import OrderedDict
from pathlib import Path

from agentchemist_ros.common.guarded import GuardedNode

from agentchemist.contracts import AnomalyKind, Severity, Symbol
from agentchemist.contracts import notes
from agentchemist.record.errors import RecordInputError
from agentchemist.record.store import confined_store, run_folder
from agentchemist_interfaces.msg import AgentMessage, Anomaly
from agentchemist_ros.common import topics
from agentchemist_ros.common.anomaly import make_anomaly
from agentchemist_ros.common.codec import decode_note, encode_note
from agentchemist_ros.common.params import declare
from agentchemist_ros.common.qos import RELIABLE
from agentchemist_ros.common.runner import spin_node
from agentchemist_ros.common.timeconv import node_now, to_msg

RECENT_EXPERIMENTS = 32


class ReportFailed(RuntimeError):
    """The report could not be written (the reason is the child's last error line)."""


class SummarizerNode(GuardedNode):
    def __init__(self, **kwargs):
        super().__init__("summarizer", **kwargs)
        self.runs_dir = Path(declare(self, "runs_dir", "runs", "Folder of the experiment run folders"))
        self.in_process = declare(self, "report_in_process", False,
                                  "Write the report inside this node instead of in a child process (the child "
                                  "gives its memory back when it exits; see the module docstring)")
        self.report_timeout = declare(self, "report_timeout_s", 600.0,
                                      "A report child still running after this long is stopped (wall s)",
                                      low=1.0, high=7200.0)
        self.lock = threading.Lock()
        # Experiments already reported (the recorder's record_closed may come twice): the recent ones are
        # enough to tell a repeat, and a node that reports experiment after experiment keeps no more.
        self.done: OrderedDict[str, None] = OrderedDict()
        self.children: dict[str, subprocess.Popen] = {}  # report processes still running, by experiment
        self.closing = False  # the node is destroyed and its children stopped: their threads announce nothing
        self.close_with_node(self.stop_children)
        self.msg_pub = self.create_publisher(AgentMessage, topics.MESSAGES, RELIABLE)
        self.anomaly_pub = self.create_publisher(Anomaly, topics.ANOMALIES, RELIABLE)
        self.create_subscription(AgentMessage, topics.MESSAGES, self.on_message, RELIABLE)

    def on_message(self, msg):
        if msg.receiver != self.get_name() or msg.symbol != Symbol.RECORD_CLOSED:
            return
        with self.lock:
            if msg.experiment_id in self.done:
                return
            self.done[msg.experiment_id] = None
            while len(self.done) > RECENT_EXPERIMENTS:
                self.done.popitem(last=False)
        closed = decode_note(msg)
        try:  # the id and the store come from the wire: the report is written in its run folder or nowhere
            run_dir = run_folder(self.runs_dir, msg.experiment_id)
            closed = dataclasses.replace(closed, store=confined_store(closed.store, self.runs_dir))
        except RecordInputError as exc:
            self.get_logger().warn(f"record_closed refused: {exc}")
            self.anomaly_pub.publish(make_anomaly(now=node_now(self), experiment_id="", source=self.get_name(),
                                                  kind=AnomalyKind.MALFORMED_MESSAGE, severity=Severity.WARN,
                                                  description=f"record_closed refused, no report: {exc}"))
            return
        if self.in_process:
            self.write(msg.experiment_id, run_dir, closed)
        else:  # the callback returns at once; the thread waits for the child and announces the report
            threading.Thread(target=self.write, args=(msg.experiment_id, run_dir, closed), daemon=True,
                             name=f"report-{msg.experiment_id}").start()

    def write(self, experiment_id, run_dir, closed: notes.RecordClosed):
        store = closed.store or None  # None: the run folder's own store
        try:
            if self.in_process:
                # imported here: the graph does not carry the report's libraries (matplotlib) otherwise
                from agentchemist.report.from_store import regenerate_report
                paths = regenerate_report(run_dir, store, experiment_id)
                documents = (paths.markdown, paths.html, paths.json)
            else:
                documents = self.write_in_child(experiment_id, run_dir, store)
        except Exception as exc:  # the report must never take the graph down; say why it failed
            if self.closing:
                return
            self.get_logger().error(f"report for {experiment_id} failed: {exc!r}")
            self.anomaly_pub.publish(make_anomaly(now=node_now(self), experiment_id=experiment_id,
                                                  source=self.get_name(), kind=AnomalyKind.REPORT_FAILED,
                                                  severity=Severity.WARN,
                                                  description=repr(exc)))
            documents = None
        if documents:
            md, html, js = (str(d.resolve()) for d in documents)
            from agentchemist.report.delivery import stated_outcome  # the report's libraries: see above
            verdict = stated_outcome(js)
            note = notes.ReportWritten(report=md, html=html, json=js, status=closed.status,
                                       outcome=verdict.kind.value if verdict else "",
                                       message=verdict.message if verdict else "")
        else:
            note = notes.ReportFailed(status=closed.status)  # not this module's ReportFailed (an exception)
        self.get_logger().info(f"report written: {note.report}")
        self.msg_pub.publish(AgentMessage(
            stamp=to_msg(node_now(self)), experiment_id=experiment_id, sender=self.get_name(),
            receiver="planner", symbol=note.SYMBOL, payload_json=encode_note(note)))

    def write_in_child(self, experiment_id, run_dir, store):
        """`agentchemist report` in a child process; returns the (markdown, html, json) paths it wrote."""
        argv = [sys.executable, "-m", "agentchemist.cli", "report", str(Path(run_dir).resolve()),
                "--experiment", experiment_id, *(["--store", store] if store else [])]
        child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        with self.lock:
            self.children[experiment_id] = child
        try:
            _, err = child.communicate(timeout=self.report_timeout)
        except subprocess.TimeoutExpired:
            child.kill()
            child.communicate()
            raise ReportFailed(f"the report took longer than {self.report_timeout:.0f} s") from None
        finally:
            with self.lock:
                self.children.pop(experiment_id, None)
        documents = tuple(Path(run_dir) / f"report.{ext}" for ext in ("md", "html", "json"))
        if child.returncode != 0 or not all(p.exists() for p in documents):
            lines = [line for line in (err or "").splitlines() if line.strip()]
            raise ReportFailed(lines[-1] if lines else f"the report process exited with code {child.returncode}")
        return documents

    def stop_children(self) -> None:
        """When the node is destroyed: no report process outlives it."""
        with self.lock:
            self.closing = True
            children = list(self.children.values())
        for child in children:
            child.kill()


def main(args=None):
    spin_node(SummarizerNode, args)


if __name__ == "__main__":
    main()
