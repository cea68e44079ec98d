"""Faults injected into the twin during a short titration: each one produces the right anomaly from the
right agent, the response it calls for, and the run still ends (accepted after recovery) with nothing
recorded lost."""
import sqlite3
from pathlib import Path

import pytest
import yaml

rclpy = pytest.importorskip("rclpy")


from agentchemist.sim.scenario import read_scenario_yaml, scenario_from_dict  # noqa: E402
from tests.conftest import REPO  # noqa: E402
from tests.graph.harness import run_experiment  # noqa: E402

BASE = REPO / "tests" / "data" / "scenarios" / "hcl_short.yaml"

# fault injected ~50 s into dispensing (sim time) -> (source, anomaly kind, response)
CASES = {
    "ph_dropout": ({"kind": "ph_dropout", "at_s": 60.0, "duration_s": 6.0},
                   ("dispenser_controller", "sensor_timeout", "retry")),
    "drop_fails": ({"kind": "drop_fails", "at_s": 60.0, "params": {"count": 6}},
                   ("dispenser_controller", "no_drop", "retry")),
    "gripper_stall": ({"kind": "gripper_stall", "at_s": 60.0, "duration_s": 7.0, "params": {"side": "right"}},
                      ("dispenser_controller", "gripper_stall", "retry")),
}


def run_with_fault(tmp_path: Path, fault: dict):
    data = read_scenario_yaml(BASE)
    data["faults"] = [fault]
    scenario_file = tmp_path / "scenario.yaml"
    scenario_file.write_text(yaml.safe_dump(data))
    instruction = scenario_from_dict(data, source=str(scenario_file)).instruction
    graph_run = run_experiment(scenario_file, tmp_path / "runs", instruction=instruction, settle_s=0.0)
    return graph_run.result, graph_run.truth


@pytest.mark.parametrize("name", [pytest.param("ph_dropout"),
                                  pytest.param("drop_fails", marks=pytest.mark.slow),
                                  pytest.param("gripper_stall", marks=pytest.mark.slow)])
def test_fault_gives_the_right_anomaly_and_the_run_recovers(tmp_path, name):
    fault, (source, kind, response) = CASES[name]
    result, truth = run_with_fault(tmp_path, fault)
    assert [f["kind"] for f in truth["faults"]] == [fault["kind"]], "the fault did not fire"
    run_dir = Path(result.report_path).parent if result.report_path else next((tmp_path / "runs").iterdir())
    con = sqlite3.connect(run_dir / "records.db")
    anomalies = con.execute("SELECT source, kind, response FROM anomalies").fetchall()
    assert (source, kind, response) in anomalies, anomalies
    assert result.success, result.message  # recovered: retried after RESET and finished
    drops = con.execute("SELECT COUNT(*) FROM fused_records WHERE quantity = 'titrant_volume'").fetchone()[0]
    assert abs(drops - truth["drops_landed"]) <= 1 + (fault["kind"] == "drop_fails")
