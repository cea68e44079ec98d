"""tools/agents_apart.py: the recorder, summarizer, planner and action policy in a second process beside
the twin's (both cores), the twin's clock held within their acknowledged progress. A short titration
completes with every landed drop recorded, no anomaly, and the report written by the summarizer apart.

Slow (a whole titration, two processes): about 2-4 min on 2 shared cores."""
import os

import pytest
import yaml

pytest.importorskip("rclpy")

from agentchemist.sim.scenario import read_scenario_yaml  # noqa: E402
from agentchemist_ros.tools.agents_apart import DEFAULT_APART  # noqa: E402
from tests.conftest import REPO  # noqa: E402
from tests.graph.harness import run_worker  # noqa: E402


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_titration_with_the_listening_agents_in_a_second_process(tmp_path):
    data = read_scenario_yaml(REPO / "tests" / "data" / "scenarios" / "hcl_short.yaml")
    scenario = tmp_path / "hcl_short.yaml"
    scenario.write_text(yaml.safe_dump(data))
    record = run_worker(scenario, tmp_path, "--apart", ",".join(DEFAULT_APART), worker_timeout_s=600, timeout_s=800)
    log = (tmp_path / "runs" / "agents_apart.log").read_text()
    assert record["processes"] == 2 and "recorder" in log and "summarizer" in log
    assert record["success"] and record["outcome"] == "completed", record["message"]
    assert record["anomalies"] == [], [a["kind"] for a in record["anomalies"]]
    # every drop the twin let fall is a titrant record written by the recorder in the other process
    assert record["records"]["titrant_volume"] == record["truth"]["drops_landed"] > 50
    assert record["report_path"] and os.path.exists(record["report_path"])
    assert record["task_wall_s"] > 0.0
