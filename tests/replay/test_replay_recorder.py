"""Replay every recorded estimate, reading, FSM state, anomaly and message into the recorder and the
summarizer alone (no twin, no other agent): the recorder fuses the same titrant volumes and stores the
same run; the summarizer regenerates a report with the same equivalence volume as the live run."""
import json
import sqlite3
from pathlib import Path

import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.parameter import Parameter  # noqa: E402

from agentchemist_interfaces.msg import AgentMessage, FusedRecord  # noqa: E402
from agentchemist_ros.common import topics  # noqa: E402
from agentchemist_ros.common.qos import RELIABLE  # noqa: E402
from agentchemist_ros.recorder_node import RecorderNode  # noqa: E402
from agentchemist_ros.summarizer_node import SummarizerNode  # noqa: E402
from tests.replay.harness import FIXTURES, SIM_TIME, ensure_rclpy, live_summary, recorded, replay  # noqa: E402

BAG = FIXTURES / "hcl_short_agents"
INPUTS = [topics.PLAN, topics.FSM_STATE, topics.QUANTITY, topics.ANOMALIES, topics.AUDIO_EVENTS, topics.MESSAGES,
          topics.PH_READING, topics.BALANCE_READING]
OUTPUTS = {topics.RECORDS: (FusedRecord, RELIABLE), topics.MESSAGES: (AgentMessage, RELIABLE)}
VOLUME_TOL_ML = 0.005  # fused volumes may differ where an estimate and an FSM change raced live


def _replay(runs: Path) -> dict:
    ensure_rclpy()
    params = [*SIM_TIME, Parameter("runs_dir", value=str(runs))]
    nodes = [RecorderNode(parameter_overrides=params, start_parameter_services=False),
             SummarizerNode(parameter_overrides=params, start_parameter_services=False)]
    # Neither node has a timer: /clock only needs to move with the messages.
    result = replay(BAG, nodes, INPUTS, OUTPUTS, senders={"recorder", "summarizer"}, clock_step_s=0.0,
                    drain_on_clock=False)
    records = result.probe.on(topics.RECORDS)
    written = [m for m in result.probe.on(topics.MESSAGES) if m.sender == "summarizer"]
    report = json.loads(Path(json.loads(written[0].payload_json)["json"]).read_text()) if written else None
    return {"result": result, "records": records, "written": written, "report": report}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return _replay(tmp_path_factory.mktemp("replay_runs"))


def _volumes(records):
    return [(m.value, m.fsm_state, m.subtask_id) for m in records if m.quantity == "titrant_volume"]


def test_inputs_were_replayed(run):
    per_topic = run["result"].per_topic
    assert per_topic[topics.PLAN] == 1
    assert per_topic[topics.QUANTITY] > 200 and per_topic[topics.PH_READING] > 1000


def test_same_fused_titrant_volumes_as_live(run):
    live = [m for m in recorded(BAG, topics.RECORDS, FusedRecord) if m.quantity == "titrant_volume"]
    replayed = [m for m in run["records"] if m.quantity == "titrant_volume"]
    assert len(live) > 100
    assert len(replayed) == len(live)
    for a, b in zip(replayed, live):
        assert a.value == pytest.approx(b.value, abs=VOLUME_TOL_ML)
        assert a.stamp == b.stamp and a.channels == b.channels
    assert replayed[-1].value == pytest.approx(live_summary()["total_volume_ml"], abs=VOLUME_TOL_ML)


def test_same_ph_records_as_live(run):
    for quantity in ("ph", "ph_settled"):
        live = [(m.stamp.sec, m.stamp.nanosec, round(m.value, 9)) for m in recorded(BAG, topics.RECORDS, FusedRecord)
                if m.quantity == quantity]
        replayed = [(m.stamp.sec, m.stamp.nanosec, round(m.value, 9)) for m in run["records"] if m.quantity == quantity]
        assert live and replayed == live, quantity


def test_database_holds_the_run(run):
    done = [m for m in run["result"].probe.on(topics.MESSAGES)
            if m.symbol == "record_closed" and m.sender == "recorder"]
    assert len(done) == 1
    db = Path(json.loads(done[0].payload_json)["store"])
    con = sqlite3.connect(db)
    status = con.execute("SELECT status FROM experiments").fetchone()[0]
    volumes = con.execute("SELECT COUNT(*) FROM fused_records WHERE quantity = 'titrant_volume'").fetchone()[0]
    last_state = con.execute("SELECT to_state FROM fsm_transitions ORDER BY stamp DESC, id DESC LIMIT 1").fetchone()[0]
    con.close()
    assert status == "completed" and last_state == "accepted"
    assert volumes == len([m for m in run["records"] if m.quantity == "titrant_volume"])


def test_summarizer_reports_the_same_equivalence_volume(run):
    live = live_summary()
    assert run["report"] is not None, "the summarizer wrote no report"
    results = run["report"]["sections"]["results"]
    live_eq = [e for e in live["equivalence_points"] if e.get("supported")]
    replay_eq = [e for e in results["equivalence_points"] if e.get("supported")]
    assert len(live_eq) == len(replay_eq) == 1
    assert replay_eq[0]["volume_ml"] == pytest.approx(live_eq[0]["volume_ml"], abs=1e-6)
    assert results["drops"] == live["drops"]
    assert results["final_ph"] == pytest.approx(live["final_ph"], abs=1e-9)


def _fingerprint(records):
    return [(m.seq, m.quantity, m.stamp.sec, m.stamp.nanosec, repr(m.value), m.confidence, m.fsm_state,
             m.subtask_id, tuple(m.quality_flags)) for m in records]


@pytest.mark.slow
def test_deterministic_across_replays(run, tmp_path):
    again = _replay(tmp_path)
    assert _fingerprint(again["records"]) == _fingerprint(run["records"])
    first = run["report"]["sections"]["results"]["equivalence_points"]
    second = again["report"]["sections"]["results"]["equivalence_points"]
    assert [e["volume_ml"] for e in second] == [e["volume_ml"] for e in first]
