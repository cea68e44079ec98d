"""`agentchemist scenario run --arm-backend mujoco`: the override reaches each run's own scenario file (the
whole-graph runs with mujoco are bench/mujoco_library.py's, minutes each)."""
import pytest
import yaml

pytest.importorskip("rclpy")

from agentchemist.sim.scenario import load_scenario  # noqa: E402
from agentchemist_ros.tools.scenario_runner import _job_argv, _seeded_scenario  # noqa: E402
from tests.conftest import REPO  # noqa: E402

SOURCE = REPO / "config" / "scenarios" / "fault_ph_stuck.yaml"


def test_the_arm_backend_override_is_written_into_the_runs_scenario(tmp_path):
    assert load_scenario(SOURCE).arm_backend == "kinematic"
    run = _seeded_scenario(SOURCE, 7, tmp_path, "mujoco")
    data = yaml.safe_load(run.read_text())
    assert data["arm_backend"] == "mujoco" and data["seed"] == 7
    assert load_scenario(run).arm_backend == "mujoco"
    (tmp_path / "kept").mkdir()
    kept = _seeded_scenario(SOURCE, 7, tmp_path / "kept", "")  # no override: the scenario's own key
    assert load_scenario(kept).arm_backend == "kinematic"


def test_the_worker_is_told_the_backend_only_when_one_is_given(tmp_path):
    argv = _job_argv(SOURCE, 1, tmp_path, tmp_path / "out.json", 60.0, "mujoco")
    assert argv[argv.index("--arm-backend") + 1] == "mujoco"
    assert "--arm-backend" not in _job_argv(SOURCE, 1, tmp_path, tmp_path / "out.json", 60.0)
