"""`agentchemist scenario run` end to end: worker processes on their own DDS domains, the full graph in
the twin, experiments back to back on fresh samples (repeat), a refusal, and the scores it writes."""
import json
import subprocess
import sys

import pytest
import yaml

pytest.importorskip("rclpy")

from agentchemist.sim.scenario import read_scenario_yaml  # noqa: E402
from tests.conftest import REPO  # noqa: E402


# 83 s on the slowed machine of 2026-11-26 (two graphs at once): slow, to keep `make test` under 20 minutes.
# The runner's worker processes, DDS domains and scoring stay in the default run through
# test_scenario_runner_vla.py; the scenario library benchmark (bench/scenarios.py) runs this path on 23 scenarios.
@pytest.mark.slow
def test_runner_scores_back_to_back_titrations_and_a_refusal(tmp_path):
    data = read_scenario_yaml(REPO / "tests" / "data" / "scenarios" / "hcl_short.yaml")
    data["name"], data["repeat"] = "hcl_short_twice", 2
    twice = tmp_path / "hcl_short_twice.yaml"
    twice.write_text(yaml.safe_dump(data))
    out = tmp_path / "scores.json"
    proc = subprocess.run([sys.executable, "-m", "agentchemist.cli", "scenario", "run", str(twice),
                           str(REPO / "config" / "scenarios" / "missing_pipette.yaml"), "--jobs", "2",
                           "--json", str(out), "--runs", str(tmp_path / "runs"), "--timeout", "300"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "Against the paper's Table 4" in proc.stdout
    scores = json.loads(out.read_text())
    rows = {r["scenario"]: r for r in scores["runs"]}
    twice_row, refusal = rows["hcl_short_twice"], rows["missing_pipette"]
    # two titrations on one bench, one clock, no restart: every drop the twin let fall is a record
    record = json.loads((tmp_path / "runs" / "hcl_short_twice-seed1" / "run_record.json").read_text())
    assert record["truth"]["samples"] == 2
    assert twice_row["completed"] and twice_row["records_match_truth"], twice_row
    assert twice_row["records"]["titrant_volume"] > 150  # about 107 drops each
    assert twice_row["false_alarms"] == []
    # time per task is the two experiments' own time on the twin's clock, not the clock at the end (which
    # also ran while each report was written)
    assert 0 < twice_row["task_s"] < twice_row["sim_s"], (twice_row["task_s"], twice_row["sim_s"])
    # stopped on the first settled pH past the target: near pH 10 one drop into 5 mL moves it by up to ~1
    assert 10.0 <= twice_row["final_ph"] <= 11.0
    assert refusal["outcome"] == "refused" and refusal["outcome_ok"], refusal["message"]
    total = scores["summary"]["total"]
    assert total["completion"] == 1.0 and total["refusals_and_questions_ok"] is True
    assert total["clean_runs_with_false_alarm"] == 0
