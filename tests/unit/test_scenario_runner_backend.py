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


def test_the_policy_checkpoint_becomes_the_action_policys_overrides(tmp_path):
    from agentchemist_ros.tools.scenario_runner import policy_overrides

    assert policy_overrides("") == {}  # the default: the scripted backend, nothing overridden
    cameras = ["front", "left_wrist", "right_wrist"]  # what the policy reads, at its control rate
    assert policy_overrides(str(tmp_path / "ckpt")) == {
        "action_policy": {"backend": "vla", "checkpoint": str((tmp_path / "ckpt").resolve())},
        "lab_sim": {"cameras": cameras, "camera_rate_hz": 10.0, "real_time_factor": 2.0}}
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "config.json").write_text('{"control_rate_hz": 50}')
    assert policy_overrides(str(tmp_path / "ckpt"), 1.0)["lab_sim"] == {"cameras": cameras, "camera_rate_hz": 50.0,
                                                                          "real_time_factor": 1.0}
    argv = _job_argv(SOURCE, 1, tmp_path, tmp_path / "out.json", 60.0, policy_checkpoint="runs/ckpt")
    assert argv[argv.index("--policy-checkpoint") + 1] == "runs/ckpt"
    assert "--policy-checkpoint" not in _job_argv(SOURCE, 1, tmp_path, tmp_path / "out.json", 60.0)
