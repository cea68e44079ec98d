"""The right bottle through the graph (issue 21): the front camera finds the bottle's tag, the twin's lab
inventory (written by tools/graph.py from the scenario) says what it holds, DescribeScene carries it to the
planner. A bottle that truthfully holds 0.5 M KOH is refused before anything moves; a bottle recorded as
0.1 M NaOH that really holds 0.5 M is halted with reagent_mismatch while dispensing."""
import pytest

rclpy = pytest.importorskip("rclpy")

from tests.conftest import REPO  # noqa: E402
from tests.graph.harness import MotionProbe, run_experiment  # noqa: E402

SCENARIOS = REPO / "config" / "scenarios"


def test_a_wrong_titrant_is_refused_naming_the_bottle(tmp_path):
    graph_run = run_experiment(SCENARIOS / "fault_wrong_titrant.yaml", tmp_path, probe=MotionProbe, wall_limit_s=60.0)
    result = graph_run.result
    assert not result.success and result.outcome == "refused"
    assert "titrant_bottle holds 0.5 M potassium hydroxide" in result.message
    assert "the instruction asks for 0.1 M sodium hydroxide" in result.message
    assert graph_run.probe.commands == [], "nothing may move when the bench contradicts the plan"


@pytest.mark.slow  # about 30 s wall (150 s of sim time) on an idle machine
def test_a_mislabelled_titrant_halts_with_reagent_mismatch(tmp_path):
    graph_run = run_experiment(SCENARIOS / "fault_mislabelled_titrant.yaml", tmp_path, probe=MotionProbe,
                               wall_limit_s=400.0)
    result = graph_run.result
    assert result.outcome == "aborted" and result.message.startswith("reagent_mismatch:")
    halts = [a for a in graph_run.probe.anomalies if a.severity == "halt"]
    assert [a.kind for a in halts] == ["reagent_mismatch"] and halts[0].source == "vision_supervisor"
