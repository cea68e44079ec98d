"""A missing pipette stops the run before any motion, with the planner's missing-equipment sentence."""
import pytest

rclpy = pytest.importorskip("rclpy")

from tests.conftest import REPO  # noqa: E402
from tests.graph.harness import MotionProbe, run_experiment  # noqa: E402

SCENARIO = REPO / "config" / "scenarios" / "missing_pipette.yaml"


def test_refused_before_any_motion(tmp_path):
    graph_run = run_experiment(SCENARIO, tmp_path, probe=MotionProbe, wall_limit_s=60.0)
    result = graph_run.result
    assert not result.success and result.outcome == "refused"
    assert "The current experimental scene lacks" in result.message and "pipette" in result.message
    assert graph_run.probe.commands == [], "nothing may move when the scene is incomplete"
