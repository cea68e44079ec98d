"""File attacks over the wire (issue 38), with a real rclpy injector: a forged record_closed cannot make the
summarizer write a report outside the runs folder or open a database elsewhere, and a damaged store is
refused by the recorder with one named halt and never written to."""
import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.node import Node  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402

from agentchemist.contracts.notes import RecordClosed  # noqa: E402
from agentchemist_interfaces.msg import AgentMessage, Anomaly, ExperimentPlan  # noqa: E402
from agentchemist_ros.common import topics  # noqa: E402
from agentchemist_ros.common.codec import encode_note  # noqa: E402
from agentchemist_ros.common.qos import LATCHED, RELIABLE  # noqa: E402
from agentchemist_ros.common.timeconv import node_now, to_msg  # noqa: E402
from agentchemist_ros.recorder_node import RecorderNode  # noqa: E402
from agentchemist_ros.summarizer_node import SummarizerNode  # noqa: E402
from agentchemist_ros.tools.graph import ensure_init  # noqa: E402
from tests.conftest import REPO  # noqa: E402
from tests.factories import planned  # noqa: E402
from tests.graph.harness import spinning, wait_for  # noqa: E402
from tests.unit.test_wire_files import stored_run  # noqa: E402

SCENARIO = REPO / "tests" / "data" / "scenarios" / "hcl_short.yaml"


class Injector(Node):
    def __init__(self):
        super().__init__("wire_file_injector")
        self.anomalies, self.messages = [], []
        self.msg_pub = self.create_publisher(AgentMessage, topics.MESSAGES, RELIABLE)
        self.plan_pub = self.create_publisher(ExperimentPlan, topics.PLAN, LATCHED)
        self.create_subscription(Anomaly, topics.ANOMALIES, self.anomalies.append, RELIABLE)
        self.create_subscription(AgentMessage, topics.MESSAGES, self.messages.append, RELIABLE)

    def closed(self, experiment_id, store):
        self.msg_pub.publish(AgentMessage(stamp=to_msg(node_now(self)), experiment_id=experiment_id,
                                          sender="recorder", receiver="summarizer", symbol="record_closed",
                                          payload_json=encode_note(RecordClosed(store, "completed"))))


def files_under(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_a_forged_record_closed_writes_nothing_outside_the_runs_folder(tmp_path):
    ensure_init()
    runs = tmp_path / "a" / "b" / "runs"
    stored_run(runs / "exp-real")
    victim = stored_run(tmp_path / "victim")  # a database outside runs/
    summarizer = SummarizerNode(parameter_overrides=[Parameter("runs_dir", value=str(runs))])
    peer = Injector()
    before = files_under(tmp_path)
    with spinning((summarizer, peer), threads=2):
        assert wait_for(lambda: peer.msg_pub.get_subscription_count() >= 1, 10.0)
        peer.closed("../../escaped", "")                                 # a path as the id
        peer.closed(str(tmp_path / "abs_escape"), "")                    # an absolute id
        peer.closed("exp-real", str(victim / "records.db"))              # a store outside runs/
        peer.closed("exp-made", f"sqlite:///{tmp_path}/made/new.db")     # a store to create
        assert wait_for(lambda: len([a for a in peer.anomalies if a.kind == "malformed_message"
                                     and a.source == "summarizer"]) >= 4, 15.0)
    summarizer.destroy_node()
    peer.destroy_node()
    assert files_under(tmp_path) == before
    refusals = [a for a in peer.anomalies if a.source == "summarizer"]
    assert all(a.severity == "warn" and a.kind == "malformed_message" for a in refusals)
    assert not [m for m in peer.messages if m.sender == "summarizer"]  # no report announced


def test_a_damaged_store_is_refused_with_one_named_halt_and_not_written(tmp_path):
    ensure_init()
    runs = tmp_path / "runs"
    plan = planned(SCENARIO)
    db = stored_run(runs / plan.experiment_id, rows=2000) / "records.db"
    with open(db, "r+b") as fh:
        fh.seek(4 * 4096)
        fh.write(bytes(3 * 4096))
    damaged = db.read_bytes()
    recorder = RecorderNode(parameter_overrides=[Parameter("runs_dir", value=str(runs))])
    peer = Injector()
    with spinning((recorder, peer), threads=2):
        assert wait_for(lambda: peer.plan_pub.get_subscription_count() >= 1, 10.0)
        peer.plan_pub.publish(ExperimentPlan(experiment_id=plan.experiment_id, plan_json=plan.model_dump_json()))
        assert wait_for(lambda: [a for a in peer.anomalies if a.kind == "store_damaged"], 10.0)
    recorder.destroy_node()
    peer.destroy_node()
    halt = [a for a in peer.anomalies if a.kind == "store_damaged"][0]
    assert halt.severity == "halt" and halt.source == "recorder" and "quick_check" in halt.description
    assert "\n" not in halt.description
    assert not [a for a in peer.anomalies if a.kind == "node_error"]
    assert db.read_bytes() == damaged and not db.with_name("records.db-wal").exists()


def test_a_runs_folder_that_cannot_be_written_is_one_named_halt_not_a_traceback(tmp_path):
    ensure_init()
    runs = tmp_path / "runs"
    runs.write_text("a file where the runs folder should be")  # mkdir fails as a read-only folder does, even as root
    plan = planned(SCENARIO)
    recorder = RecorderNode(parameter_overrides=[Parameter("runs_dir", value=str(runs))])
    peer = Injector()
    with spinning((recorder, peer), threads=2):
        assert wait_for(lambda: peer.plan_pub.get_subscription_count() >= 1, 10.0)
        peer.plan_pub.publish(ExperimentPlan(experiment_id=plan.experiment_id, plan_json=plan.model_dump_json()))
        assert wait_for(lambda: [a for a in peer.anomalies if a.kind == "io_error"], 10.0)
    recorder.destroy_node()
    peer.destroy_node()
    halt = [a for a in peer.anomalies if a.kind == "io_error"][0]
    assert halt.severity == "halt" and halt.experiment_id == plan.experiment_id and "\n" not in halt.description
    assert "cannot record" in halt.description
    assert not [a for a in peer.anomalies if a.kind == "node_error"]


def test_a_second_plan_is_recorded_only_when_the_supervisor_runs_it_and_the_first_gets_its_stop_record(tmp_path):
    """One experiment at a time in the record: a plan for B while A's record is open waits (a forged plan is
    never run, so never recorded); when the supervisor runs B (its first state), A's record is closed with
    its stop record (aborted, saying why) before B's opens."""
    from agentchemist_interfaces.msg import FsmState
    from agentchemist_ros.common.qos import FSM

    ensure_init()
    runs = tmp_path / "runs"
    plan = planned(SCENARIO)
    other = plan.model_copy(update={"experiment_id": "exp-second"})
    recorder = RecorderNode(parameter_overrides=[Parameter("runs_dir", value=str(runs))])
    peer = Injector()
    fsm_pub = peer.create_publisher(FsmState, topics.FSM_STATE, FSM)

    def state(experiment_id, name):
        fsm_pub.publish(FsmState(stamp=to_msg(node_now(peer)), experiment_id=experiment_id, state=name,
                                 previous_state="initial" if name != "initial" else "", symbol="start"))
    with spinning((recorder, peer), threads=2):
        assert wait_for(lambda: peer.plan_pub.get_subscription_count() >= 1, 10.0)
        peer.plan_pub.publish(ExperimentPlan(experiment_id=plan.experiment_id, plan_json=plan.model_dump_json()))
        assert wait_for(lambda: recorder.recording is not None, 10.0)
        state(plan.experiment_id, "check_scene")
        assert wait_for(lambda: recorder.fsm_experiment == plan.experiment_id, 10.0)
        peer.plan_pub.publish(ExperimentPlan(experiment_id=other.experiment_id, plan_json=other.model_dump_json()))
        assert wait_for(lambda: recorder.pending is not None, 10.0)
        assert recorder.recording.experiment_id == plan.experiment_id and not (runs / "exp-second").exists()
        state("exp-second", "initial")  # the supervisor runs it
        assert wait_for(lambda: recorder.recording is not None and recorder.recording.experiment_id == "exp-second",
                        10.0)
    recorder.destroy_node()
    peer.destroy_node()
    import sqlite3
    with sqlite3.connect(f"file:{runs / plan.experiment_id / 'records.db'}?mode=ro", uri=True) as db:
        status, reason, finished = db.execute("SELECT status, reason, finished FROM experiments").fetchone()
    assert status == "aborted" and "experiment exp-second started" in reason and finished is not None
    assert (runs / "exp-second" / "records.db").exists()
