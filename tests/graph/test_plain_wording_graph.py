"""The chemist's own words through the whole graph on the twin (issue 37): three ordinary sentences with no
settle phrase. Each run dispenses adaptively, its curve comes from the meter's trace, it stops within the
endpoint goals (the first drop past the target), and its outcome says what it delivered:

- "Titrate 25 mL of 0.1 M acetic acid with 0.1 M NaOH to pH 8.2" on the bench it names: the curve, the stop on
  the first drop past 8.2, and why no equivalence point (the target lies before it, pH 8.6-8.7);
- "Titrate 5 mL of 0.1 M hydrochloric acid ... until pH 9, and record the pH and the volume after each drop" on
  a bench holding 5 mL: the jump is crossed by one drop and the equivalence point lies inside it;
- the acetic sentence on the default bench (0.1 M HCl): a reagent_mismatch before the first drop.
"""
import json
from pathlib import Path

import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.node import Node  # noqa: E402

from agentchemist.sim.scenario import load_scenario  # noqa: E402
from agentchemist_interfaces.msg import Anomaly  # noqa: E402
from agentchemist_ros.common import topics  # noqa: E402
from agentchemist_ros.common.qos import RELIABLE  # noqa: E402
from tests.conftest import REPO  # noqa: E402
from tests.graph.harness import run_experiment  # noqa: E402

SCENARIOS = REPO / "config" / "scenarios"
SIM = {"camera_rate_hz": 1.0, "free_run": True}


class Probe(Node):
    def __init__(self):
        super().__init__("test_probe")
        self.anomalies = []
        self.create_subscription(Anomaly, topics.ANOMALIES, self.anomalies.append, RELIABLE)


def _run(name, tmp_path):
    run = run_experiment(SCENARIOS / f"{name}.yaml", tmp_path, probe=Probe, wall_limit_s=420.0,
                         overrides={"lab_sim": SIM})
    report = json.loads(Path(run.result.report_path).with_suffix(".json").read_text()) if run.result.report_path else {}
    return run, report


def _plan_settles(report) -> bool:
    return report["sections"]["parameters"]["plan"]["module_instantiation"]["dispenser"]["settle_each_drop"]


def test_acetic_acid_to_ph_8_2_gives_its_curve_and_stops_on_the_target(tmp_path):
    run, report = _run("plain_acetic_to_82", tmp_path)
    problems = [f"{a.kind}: {a.description}" for a in run.probe.anomalies if a.severity != "info"]
    assert run.result.outcome == "completed", (run.result.message, problems)
    results = report["sections"]["results"]
    assert results["curve_source"] == "meter trace"
    assert results["curve_points"] > 400                       # one point per drop, not 2 settled readings
    stop = results["stop"]
    assert stop["drops_after_it"] == 0                         # the first drop past pH 8.2 was the last
    assert stop["ph_before"] < 8.2 <= stop["ph_first_past"]
    assert any("before the equivalence" in line for line in results["not_concluded"])
    assert report["outcome"]["kind"] == "completed" and report["outcome"]["missing"] == []


def test_five_ml_of_hcl_to_ph_9_states_the_equivalence_inside_the_last_drop(tmp_path):
    sc = load_scenario(SCENARIOS / "plain_hcl_5ml_ph9.yaml")
    run, report = _run("plain_hcl_5ml_ph9", tmp_path)
    assert run.result.outcome == "completed", run.result.message
    results = report["sections"]["results"]
    assert results["curve_source"] == "meter trace" and results["curve_points"] >= 8
    assert results["stop"]["drops_after_it"] == 0
    eq = [e for e in results["equivalence_points"] if e["supported"]]
    assert len(eq) == 1
    truth_ml = 5.0 * sc.beaker.solution["hcl"] / sc.titrant["naoh"]
    low, high = eq[0]["jump_region_ml"]
    assert low - 0.05 <= truth_ml <= high + 0.05               # the drop that jumped holds the equivalence
    assert abs(eq[0]["volume_ml"] - truth_ml) <= 2 * eq[0]["uncertainty_ml"]


def test_acetic_acid_asked_on_the_hcl_bench_is_refused_before_the_first_drop(tmp_path):
    run, report = _run("plain_acetic_on_hcl", tmp_path)
    assert run.result.outcome == "aborted"
    assert "reagent_mismatch" in run.result.message and "before the first drop is 1.1" in run.result.message
    assert run.truth["dispensed_ml"] == 0.0                    # no titrant was spent
    kinds = [a.kind for a in run.probe.anomalies if a.severity == "halt"]
    assert kinds == ["reagent_mismatch"]
