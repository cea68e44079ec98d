"""Faults injected into the twin during a short titration: each one produces the right anomaly from the
right agent, the response it calls for, and the run still ends (accepted after recovery) with nothing
recorded lost."""
import sqlite3
import threading
import time
from pathlib import Path

import pytest
import yaml

rclpy = pytest.importorskip("rclpy")

from rclpy.action import ActionClient  # noqa: E402
from rclpy.node import Node  # noqa: E402

from agentchemist.sim.scenario import read_scenario_yaml, scenario_from_dict  # noqa: E402
from agentchemist_interfaces.action import RunExperiment  # noqa: E402
from agentchemist_ros.common import topics  # noqa: E402
from agentchemist_ros.graph import Graph, ensure_init  # noqa: E402
from tests.conftest import REPO  # noqa: E402

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
    ensure_init()
    graph = Graph(scenario_file, tmp_path / "runs")
    probe = Node("fault_probe")
    client = ActionClient(probe, RunExperiment, topics.RUN_EXPERIMENT)
    graph.executor.add_node(probe)
    stop = threading.Event()
    thread = threading.Thread(target=lambda: [graph.spin_once(0.05) for _ in iter(stop.is_set, True)], daemon=True)
    thread.start()
    try:
        assert client.wait_for_server(timeout_sec=30)
        sent = client.send_goal_async(RunExperiment.Goal(instruction=instruction))
        end = time.monotonic() + 240
        while not sent.done() and time.monotonic() < end:
            time.sleep(0.05)
        result_future = sent.result().get_result_async()
        while not result_future.done() and time.monotonic() < end:
            time.sleep(0.1)
        assert result_future.done(), "the run did not end within 240 s"
        truth = graph.nodes["lab_sim"].twin.truth()
    finally:
        stop.set()
        thread.join(timeout=10)
        graph.shutdown()
        probe.destroy_node()
        rclpy.try_shutdown()
    return result_future.result().result, truth


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
