"""`agentchemist scenario run --policy-checkpoint DIR`: the action policy on the VLA backend through the
runner's per-node overrides. A checkpoint that is not there reaches the node, which refuses the first
subtask with the reason (docs/vla.md): the run aborts at the grasp, the anomaly says why, nothing drops."""
import json
import subprocess
import sys

import pytest

pytest.importorskip("rclpy")

from tests.conftest import REPO  # noqa: E402


def test_missing_checkpoint_reaches_the_node_and_the_grasp_is_refused(tmp_path):
    missing = tmp_path / "no_such_checkpoint"
    out = tmp_path / "scores.json"
    proc = subprocess.run([sys.executable, "-m", "agentchemist.cli", "scenario", "run",
                           str(REPO / "tests" / "data" / "scenarios" / "hcl_short.yaml"),
                           "--policy-checkpoint", str(missing), "--json", str(out), "--runs", str(tmp_path / "runs"),
                           "--timeout", "240"], capture_output=True, text=True, timeout=400)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]  # not as the scenario expects
    row = json.loads(out.read_text())["runs"][0]
    assert row["policy"] == f"vla:{missing}"
    assert row["outcome"] == "aborted" and not row["completed"], row
    assert "grasp_pipette" in row["message"] and f"no config.json in {missing}" in row["message"], row["message"]
    record = json.loads((tmp_path / "runs" / "hcl_short-seed1" / "run_record.json").read_text())
    assert record["policy_checkpoint"] == str(missing)
    refusals = [a for a in record["anomalies"] if a["source"] == "action_policy" and a["kind"] == "subtask_failed"]
    assert refusals and "VLA checkpoint refused" in refusals[0]["description"], record["anomalies"]
    assert record["truth"]["drops_landed"] == 0 and record["truth"]["dispensed_ml"] == 0.0


def test_policy_checkpoint_is_refused_with_the_policy_apart(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "agentchemist.cli", "scenario", "run",
                           str(REPO / "tests" / "data" / "scenarios" / "hcl_short.yaml"), "--policy-checkpoint",
                           str(tmp_path), "--apart", "action_policy", "--runs", str(tmp_path / "runs")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "do not run it --apart" in proc.stdout, proc.stdout + proc.stderr
