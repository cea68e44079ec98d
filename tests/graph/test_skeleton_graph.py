"""The whole graph in one process on the twin: a short HCl/NaOH titration reaches the accepting state,
and leaves a report and a database whose rows match what was published."""
import json
import sqlite3
from pathlib import Path

import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.node import Node  # noqa: E402

from agentchemist_interfaces.msg import Anomaly, FsmState, FusedRecord  # noqa: E402
from agentchemist_ros.common import topics  # noqa: E402
from agentchemist_ros.common.qos import FSM, RELIABLE  # noqa: E402
from tests.conftest import REPO  # noqa: E402
from tests.graph.harness import run_experiment  # noqa: E402

SCENARIO = REPO / "tests" / "data" / "scenarios" / "hcl_short.yaml"


class Probe(Node):
    def __init__(self):
        super().__init__("test_probe")
        self.records, self.states, self.anomalies = [], [], []
        self.create_subscription(FusedRecord, topics.RECORDS, self.records.append, RELIABLE)
        self.create_subscription(FsmState, topics.FSM_STATE, self.states.append, FSM)
        self.create_subscription(Anomaly, topics.ANOMALIES, self.anomalies.append, RELIABLE)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    runs = tmp_path_factory.mktemp("runs")
    graph_run = run_experiment(SCENARIO, runs, probe=Probe)
    return {"result": graph_run.result, "probe": graph_run.probe, "runs": runs, "truth": graph_run.truth,
            "feedback": graph_run.feedback, "leftovers": graph_run.leftovers}


def test_reaches_the_accepting_state(run):
    result = run["result"]
    assert result.success, result.message
    assert result.outcome == "completed"
    states = [s.state for s in run["probe"].states]
    for state in ("initial", "pipette_grasped", "solution_drawn", "ready", "titrating", "waiting_ph", "done",
                  "accepted"):
        assert state in states
    assert run["probe"].states[-1].accepting and run["probe"].states[-1].terminal
    assert "accepted" in run["feedback"]


def test_the_agents_keep_nothing_of_an_ended_experiment(run):
    assert run["result"].success
    assert run["leftovers"] and not any(run["leftovers"].values()), run["leftovers"]


def test_report_with_titration_curve(run):
    report = Path(run["result"].report_path)
    assert report.exists() and report.name == "report.md"
    curve = report.parent / "titration_curve.png"
    assert curve.exists() and curve.stat().st_size > 10_000
    text = report.read_text()
    assert "titration_curve.png" in text
    data = json.loads(report.with_suffix(".json").read_text())
    assert data["status"] == "completed"
    final_ph = data["sections"]["results"]["final_ph"]
    assert final_ph >= 9.95  # reached the target (near equivalence one drop moves the pH by whole units)


def test_stops_within_one_drop_of_the_target(run):
    con = sqlite3.connect(Path(run["result"].report_path).parent / "records.db")
    settled = [v for (v,) in con.execute(
        "SELECT value FROM fused_records WHERE quantity = 'ph_settled' ORDER BY stamp")]
    assert settled[-1] >= 9.95
    # No drop was added once a settled pH had reached the target.
    assert all(v < 9.95 for v in settled[:-1]), settled[-5:]


def test_database_rows_match_what_was_published(run):
    db = Path(run["result"].report_path).parent / "records.db"
    con = sqlite3.connect(db)
    rows = con.execute("SELECT seq, quantity, value FROM fused_records ORDER BY seq").fetchall()
    published = {(m.seq, m.quantity) for m in run["probe"].records}
    stored = {(seq, q) for seq, q, _ in rows}
    assert published and published <= stored, "a published record is missing from the database"
    by_key = {(seq, q): v for seq, q, v in rows}
    for m in run["probe"].records:
        stored_value = by_key[(m.seq, m.quantity)]
        assert (stored_value is None and m.value != m.value) or stored_value == pytest.approx(m.value, rel=1e-12)
    drops = con.execute("SELECT COUNT(*) FROM fused_records WHERE quantity = 'titrant_volume'").fetchone()[0]
    landed = run["truth"]["drops_landed"]
    assert abs(drops - landed) <= 1, f"{drops} volume records for {landed} drops in the twin"
    transitions = con.execute("SELECT to_state FROM fsm_transitions ORDER BY stamp").fetchall()
    assert transitions[-1][0] == "accepted"
    status = con.execute("SELECT status FROM experiments").fetchone()[0]
    assert status == "completed"


def test_fused_volume_tracks_the_twin(run):
    records = [m for m in run["probe"].records if m.quantity == "titrant_volume" and m.value == m.value]
    dispensed = run["truth"]["dispensed_ml"]
    assert records[-1].value == pytest.approx(dispensed, abs=0.1)


def test_no_alarm_on_a_clean_run(run):
    """No fault injected: any warn or halt anomaly would be a false alarm (issue 11 scores them)."""
    con = sqlite3.connect(Path(run["result"].report_path).parent / "records.db")
    alarms = con.execute("SELECT stamp, source, kind, description FROM anomalies "
                         "WHERE severity IN ('warn', 'halt')").fetchall()
    assert alarms == []
    assert not [a for a in run["probe"].anomalies if a.severity in ("warn", "halt")]
