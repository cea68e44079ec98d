"""Injector attacks on a running experiment (issue 38): a real rclpy participant publishes the project's own
message types on the live topics while the vision supervisor runs a plan and the recorder records it.

Each attack must be refused at entry with its named anomaly (warn, never a halt) and leave the running
experiment untouched: same executor, same state, same record, nothing written for the forged id."""
import array
import sqlite3
import time

import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.node import Node  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from std_msgs.msg import Header  # noqa: E402

from agentchemist_interfaces.msg import (AgentMessage, Anomaly, AudioChunk, ChemicalReading,  # noqa: E402
                                         ExperimentPlan, FsmState)
from agentchemist_ros.audio_supervisor_node import AudioSupervisorNode  # noqa: E402
from agentchemist_ros.common import topics  # noqa: E402
from agentchemist_ros.common.qos import ANOMALY_LOG, AUDIO, FSM, LATCHED, READINGS, RELIABLE  # noqa: E402
from agentchemist_ros.common.timeconv import node_now, to_msg  # noqa: E402
from agentchemist_ros.recorder_node import RecorderNode  # noqa: E402
from agentchemist_ros.tools.graph import ensure_init  # noqa: E402
from agentchemist_ros.vision_supervisor_node import VisionSupervisorNode  # noqa: E402
from tests.conftest import REPO  # noqa: E402
from tests.factories import planned  # noqa: E402
from tests.graph.harness import spinning, wait_for  # noqa: E402

SCENARIO = REPO / "tests" / "data" / "scenarios" / "hcl_short.yaml"


class Injector(Node):
    def __init__(self):
        super().__init__("wire_injector")
        self.anomalies, self.states = [], []
        self.plan_pub = self.create_publisher(ExperimentPlan, topics.PLAN, LATCHED)
        self.ph_pub = self.create_publisher(ChemicalReading, topics.PH_READING, READINGS)
        self.msg_pub = self.create_publisher(AgentMessage, topics.MESSAGES, RELIABLE)
        self.anomaly_pub = self.create_publisher(Anomaly, topics.ANOMALIES, RELIABLE)
        self.audio_pub = self.create_publisher(AudioChunk, topics.audio_topic("right"), AUDIO)
        self.create_subscription(Anomaly, topics.ANOMALIES, self.anomalies.append, RELIABLE)
        self.create_subscription(FsmState, topics.FSM_STATE, self.states.append, FSM)

    def seen(self, kind, source=None):
        return [a for a in self.anomalies if a.kind == kind and (source is None or a.source == source)]

    def halts(self):
        return [(a.source, a.kind) for a in self.anomalies if a.severity == "halt"]


def reading(sensor, stamp, value=7.0):
    return ChemicalReading(header=Header(stamp=to_msg(stamp), frame_id=sensor), sensor=sensor, quantity="pH",
                           value=value, unit="pH", self_check_ok=True, noise=0.01)


@pytest.fixture
def running(tmp_path):
    """The supervisor running experiment A (waiting for its first agent, 120 s) and the recorder recording it."""
    ensure_init()
    runs = tmp_path / "runs"
    runs.mkdir()
    params = [Parameter("runs_dir", value=str(runs))]
    supervisor = VisionSupervisorNode(parameter_overrides=[*params, Parameter("require_scene_check", value=False),
                                                           Parameter("agent_wait_s", value=120.0)])
    recorder = RecorderNode(parameter_overrides=params)
    audio = AudioSupervisorNode()
    peer = Injector()
    plan = planned(SCENARIO)
    nodes = (supervisor, recorder, audio, peer)
    with spinning(nodes, threads=4):
        assert wait_for(lambda: peer.plan_pub.get_subscription_count() >= 2, 10.0)
        peer.plan_pub.publish(ExperimentPlan(experiment_id=plan.experiment_id, plan_json=plan.model_dump_json(),
                                             stamp=to_msg(node_now(peer))))
        assert wait_for(lambda: supervisor.ex is not None and recorder.recording is not None
                        and any(s.experiment_id == plan.experiment_id
                                                          for s in peer.states), 10.0)
        time.sleep(1.0)  # the supervisor's first moves (the recorder's acknowledgement, the first dispatch)
        yield supervisor, recorder, peer, plan, runs
    for node in nodes:
        node.destroy_node()


def untouched(supervisor, recorder, plan, state):
    assert supervisor.experiment_id == plan.experiment_id and supervisor.ex is not None and supervisor.ex.running
    assert supervisor.ex.machine.state == state
    assert recorder.recording is not None and recorder.recording.experiment_id == plan.experiment_id
    assert not recorder.recording.closed


def test_a_plan_for_another_experiment_mid_run_is_refused_and_the_run_goes_on(running):
    supervisor, recorder, peer, plan, runs = running
    ex, state = supervisor.ex, supervisor.ex.machine.state
    # garbage under a new id: nothing reads it, nothing switches
    peer.plan_pub.publish(ExperimentPlan(experiment_id="forged-1", plan_json="{not a plan"))
    assert wait_for(lambda: peer.seen("plan_refused", "vision_supervisor"), 10.0)
    # a well-formed plan under a new id: refused all the same (one experiment at a time)
    other = plan.model_copy(update={"experiment_id": "forged-2"})
    peer.plan_pub.publish(ExperimentPlan(experiment_id="forged-2", plan_json=other.model_dump_json(),
                                         stamp=to_msg(node_now(peer))))
    assert wait_for(lambda: len(peer.seen("plan_refused", "vision_supervisor")) >= 2, 10.0)
    time.sleep(1.0)
    assert supervisor.ex is ex
    untouched(supervisor, recorder, plan, state)
    assert all(s.experiment_id == plan.experiment_id and s.state != "aborted" for s in peer.states)
    assert not (runs / "forged-1").exists() and not (runs / "forged-2").exists()
    assert peer.halts() == []
    refusal = peer.seen("plan_refused", "vision_supervisor")[0]
    assert refusal.severity == "warn" and refusal.experiment_id == plan.experiment_id


def test_forged_readings_messages_and_halts_are_refused_at_entry(running):
    supervisor, recorder, peer, plan, runs = running
    state = supervisor.ex.machine.state
    now = node_now(peer)
    # one pH reading stamped 1e6 s ahead: refused by every node that reads pH, never the newest
    peer.ph_pub.publish(reading("ph_meter", now + 1e6))
    assert wait_for(lambda: {a.source for a in peer.seen("future_stamp")} >= {"vision_supervisor", "recorder"}, 10.0)
    # a genuine reading after it is taken (not refused as out of order by the recorder)
    peer.ph_pub.publish(reading("ph_meter", node_now(peer)))
    # a sensor the graph does not have
    peer.ph_pub.publish(reading("ghost_meter", node_now(peer), value=12.0))
    assert wait_for(lambda: {a.source for a in peer.seen("unknown_sensor")} >= {"vision_supervisor", "recorder"}, 10.0)
    # a malformed payload to the recorder, and a record_closed that is not its note
    peer.msg_pub.publish(AgentMessage(stamp=to_msg(node_now(peer)), experiment_id=plan.experiment_id,
                                      sender="planner", receiver="recorder", symbol="artifact",
                                      payload_json="{definitely not json"))
    assert wait_for(lambda: peer.seen("malformed_message", "recorder"), 10.0)
    # a halt from a participant that is not one of the graph's agents, and of a kind no agent reports
    for source, kind in (("intruder", "node_error"), ("dispenser_controller", "self_destruct")):
        peer.anomaly_pub.publish(Anomaly(stamp=to_msg(node_now(peer)), experiment_id=plan.experiment_id,
                                         source=source, kind=kind, severity="halt", description="stop everything"))
    assert wait_for(lambda: {a.source for a in peer.seen("halt_refused")} >= {"vision_supervisor", "recorder"}, 10.0)
    # a 5 MB audio chunk (2.5 M int16 samples: 52 s at 48 kHz)
    assert wait_for(lambda: peer.audio_pub.get_subscription_count() >= 1, 10.0)
    peer.audio_pub.publish(AudioChunk(header=Header(stamp=to_msg(node_now(peer))), sample_rate=48000,
                                      channels=1, data=array.array("h", bytes(5_000_000))))
    assert wait_for(lambda: peer.seen("oversized_message", "audio_supervisor"), 30.0)
    assert not peer.seen("audio_noise")
    time.sleep(1.0)
    untouched(supervisor, recorder, plan, state)
    assert [h for h in peer.halts() if h[0] in ("vision_supervisor", "recorder", "audio_supervisor")] == []
    assert [a.source for a in peer.seen("node_error")] == ["intruder"]  # only the forged one
    # the recorder's pH order was not poisoned: the genuine reading was kept unflagged
    recorder.recording.store.flush()
    with sqlite3.connect(f"file:{runs / plan.experiment_id / 'records.db'}?mode=ro", uri=True) as db:
        rows = db.execute("SELECT sensor, stamp, confidence FROM raw_observations WHERE quantity = 'pH'").fetchall()
    assert [r[0] for r in rows] == ["ph_meter"] and rows[0][1] < now + 100.0 and rows[0][2] > 0.0
    refusals = [a for a in peer.anomalies if a.kind in ("future_stamp", "unknown_sensor", "malformed_message",
                                                        "halt_refused", "oversized_message")]
    assert refusals and all(a.severity == "warn" for a in refusals)


def test_an_anomaly_burst_is_stored_whole(running):
    """1,000 anomalies in one burst from one agent (as from a node failing on every message): every one is in
    the record (500 deep, the recorder lost half of such a burst)."""
    supervisor, recorder, peer, plan, runs = running
    burst = peer.create_publisher(Anomaly, topics.ANOMALIES, ANOMALY_LOG)
    assert wait_for(lambda: burst.get_subscription_count() >= 2, 10.0)
    for i in range(1000):
        burst.publish(Anomaly(stamp=to_msg(node_now(peer)), experiment_id=plan.experiment_id,
                              source="audio_supervisor", kind="bad_audio", severity="warn",
                              description=f"burst {i}"))
    db = runs / plan.experiment_id / "records.db"

    def stored():
        recorder.recording.store.flush()
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            return conn.execute("SELECT COUNT(*) FROM anomalies WHERE description LIKE 'burst %'").fetchone()[0]
    assert wait_for(lambda: stored() == 1000, 90.0), stored()
