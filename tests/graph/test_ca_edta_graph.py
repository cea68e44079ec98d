"""The whole graph on the twin for a complexometric Ca2+/EDTA titration: the endpoint is read by the
colour channel alone (the plan has no target pH), and the run ends within one drop of the true
equivalence volume; the hue stream reaches the recorder as vision-channel raw observations.

The short scenario (0.1 M EDTA, 2.5 mL, camera at 1 Hz) runs by default; the full config/scenarios/ca_edta.yaml
(25 mL of 0.01 M EDTA, about 533 drops) is marked slow.
"""
import sqlite3
from pathlib import Path

import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.node import Node  # noqa: E402

from agentchemist.chemistry.complexometric import ca_edta_equivalence_volume_ml  # noqa: E402
from agentchemist.perception.colour_change import hue_difference, hue_of  # noqa: E402
from agentchemist.sim.scenario import load_scenario  # noqa: E402
from agentchemist_interfaces.msg import Anomaly, FsmState, QuantityEstimate  # noqa: E402
from agentchemist_ros.common import topics  # noqa: E402
from agentchemist_ros.common.qos import FSM, RELIABLE  # noqa: E402
from tests.conftest import REPO  # noqa: E402
from tests.graph.harness import run_experiment  # noqa: E402

SHORT = REPO / "tests" / "data" / "scenarios" / "ca_edta_short.yaml"
FULL = REPO / "config" / "scenarios" / "ca_edta.yaml"


class Probe(Node):
    def __init__(self):
        super().__init__("test_probe")
        self.states, self.anomalies, self.hues = [], [], []
        self.create_subscription(FsmState, topics.FSM_STATE, self.states.append, FSM)
        self.create_subscription(Anomaly, topics.ANOMALIES, self.anomalies.append, RELIABLE)
        self.create_subscription(QuantityEstimate, topics.QUANTITY,
                                 lambda m: self.hues.append(m) if m.quantity == "colour_hue" else None, RELIABLE)


def _run(scenario_path: Path, runs: Path, wall_limit_s: float) -> dict:
    graph_run = run_experiment(scenario_path, runs, probe=Probe, wall_limit_s=wall_limit_s,
                               overrides={"lab_sim": {"camera_rate_hz": 1.0}})
    return {"result": graph_run.result, "probe": graph_run.probe, "truth": graph_run.truth}


def _equivalence_ml(scenario_path: Path) -> float:
    sc = load_scenario(scenario_path)
    return ca_edta_equivalence_volume_ml(sc.beaker.solution["calcium_chloride"], sc.beaker.volume_ml,
                                         sc.titrant["disodium_edta"])


def _check_run(run: dict, scenario_path: Path) -> float:
    result, probe, truth = run["result"], run["probe"], run["truth"]
    assert result.success, result.message
    assert result.outcome == "completed"
    states = [s.state for s in probe.states]
    for state in ("titrating", "waiting_mix", "done", "accepted"):
        assert state in states
    endpoint = [s for s in probe.states if s.symbol == "endpoint"]
    assert len(endpoint) == 1 and endpoint[0].state == "done"
    assert not [a for a in probe.anomalies if a.severity == "halt"], [a.description for a in probe.anomalies]

    # within one drop of the true endpoint, by colour alone
    drop_ml = load_scenario(scenario_path).pipette.drop_volume_ml
    error_ml = truth["dispensed_ml"] - _equivalence_ml(scenario_path)
    assert abs(error_ml) <= drop_ml, f"stopped {error_ml:+.4f} mL from the equivalence volume"

    # the hue stream: magenta before the endpoint, blue from it on, all as vision-channel estimates
    assert probe.hues and all(h.channel == "vision" and h.unit == "deg" for h in probe.hues)
    stamp = lambda m: m.stamp.sec + m.stamp.nanosec * 1e-9  # noqa: E731
    at_endpoint = stamp(endpoint[0])
    started = stamp(next(s for s in probe.states if s.symbol == "titrate"))
    # the last drops before the change turn the liquid violet (part of the indicator freed): real chemistry
    before = [h for h in probe.hues if stamp(h) < started + 0.8 * (at_endpoint - started)]
    after = [h for h in probe.hues if stamp(h) >= at_endpoint]
    assert before and after
    assert all(abs(hue_difference(hue_of("magenta"), h.value)) < 15 for h in before)
    assert all(abs(hue_difference(hue_of("blue"), h.value)) < 15 for h in after)

    # the recorder kept every hue as a raw observation
    db = Path(result.report_path).parent / "records.db"
    con = sqlite3.connect(db)
    rows = con.execute("SELECT channel, unit FROM raw_observations WHERE quantity = 'colour_hue'").fetchall()
    assert len(rows) >= 0.9 * len(probe.hues) and set(rows) == {("vision", "deg")}
    # ... and the report draws them against the titrant volume
    assert (Path(result.report_path).parent / "colour_curve.png").is_file()
    return error_ml / drop_ml


@pytest.fixture(scope="module")
def short_run(tmp_path_factory):
    return _run(SHORT, tmp_path_factory.mktemp("runs"), 300.0)


def test_short_ca_edta_ends_within_one_drop_by_colour(short_run):
    drops = _check_run(short_run, SHORT)
    print(f"ca_edta_short: endpoint error {drops:+.2f} drops")


@pytest.mark.slow
def test_full_ca_edta_scenario_ends_within_one_drop_by_colour(tmp_path):
    run = _run(FULL, tmp_path, 900.0)
    drops = _check_run(run, FULL)
    print(f"ca_edta: endpoint error {drops:+.2f} drops")
