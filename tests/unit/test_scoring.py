"""Scoring of scenario runs: outcomes, reasons, chemistry errors against theory, fault detection and
false alarms, and the totals set beside the paper's Table 4."""
import math

import pytest

from agentchemist.scoring import RunRecord, reason_matches, score_run, summarise
from agentchemist.sim.scenario import read_scenario_yaml, scenario_from_dict
from tests.conftest import REPO

SCENARIOS = REPO / "config" / "scenarios"
DROP = 0.046875


def scenario(file, **changes):
    data = read_scenario_yaml(SCENARIOS / f"{file}.yaml")
    for key, value in changes.items():
        data[key] = value
    return scenario_from_dict(data, source=file)


def record(sc, **kw):
    base = dict(scenario=sc.name, file="x.yaml", seed=sc.seed, outcome="completed", success=True,
                message="experiment completed", wall_s=10.0, sim_s=100.0)
    base.update(kw)
    return RunRecord(**base)


def test_hcl_equivalence_error_is_against_theory_in_ml_and_drops():
    sc = scenario("hcl_naoh")
    rec = record(sc, results={"family": "acid_base_titration", "final_ph": 12.46,
                              "equivalence_points": [{"index": 1, "volume_ml": 24.95, "supported": True}],
                              "total_volume_ml": 47.9},
                 truth={"dispensed_ml": 47.95, "drops_landed": 1022, "true_ph": 12.47},
                 records={"titrant_volume": 1022})
    row = score_run(sc, rec)
    assert row["outcome_ok"] and row["completed"]
    assert row["equivalence_theory_ml"] == pytest.approx([25.0])
    assert row["equivalence_error_ml"] == pytest.approx([-0.05])
    assert row["equivalence_error_drops"] == pytest.approx([-0.05 / DROP])
    assert row["ph_deviation"] == pytest.approx(0.04)
    assert row["volume_error_drops"] == pytest.approx(-0.05 / DROP)
    assert row["records_match_truth"] is True


def test_an_unsupported_equivalence_point_is_not_scored_as_found():
    sc = scenario("hcl_naoh")
    rec = record(sc, results={"equivalence_points": [{"index": 1, "volume_ml": 10.0, "supported": False}]})
    assert score_run(sc, rec)["equivalence_found_ml"] == []


def test_pka_error_is_the_stated_value_with_half_equivalence_and_the_raw_fit_beside_it():
    sc = scenario("acetic_naoh")
    half = {"index": 1, "value": 4.70, "uncertainty": 0.03, "method": "half_equivalence", "supported": True}
    # The report states the supported estimate with the smaller uncertainty: here the fit, whose value carries
    # the budget's settling-lag correction (4.77) while its raw parameter is 4.75.
    fitted = {"index": 1, "value": 4.77, "uncertainty": 0.02, "method": "curve_fit", "supported": True}
    rec = record(sc, results={"pka": [half, fitted],
                              "curve_fit": {"converged": True, "parameters": {"pka1": 4.75}}})
    row = score_run(sc, rec)
    assert row["pka_truth"] == [4.76]
    assert row["pka_error"] == pytest.approx([0.01])
    assert row["pka_half_equivalence_error"] == pytest.approx([-0.06])
    assert row["pka_fit_parameter_error"] == pytest.approx([-0.01])
    fitted["supported"] = False
    rec.results["curve_fit"]["converged"] = False
    row = score_run(sc, rec)
    assert row["pka_error"] == pytest.approx([-0.06])
    assert row["pka_fit_parameter_error"] == [None]
    half["supported"] = False
    assert score_run(sc, rec)["pka_error"] == [None]


def test_refusal_must_name_what_is_missing():
    sc = scenario("missing_pipette")
    good = record(sc, outcome="refused", success=False,
                  message="The current experimental scene lacks [rubber-headed pipette (pipette)].")
    bad = record(sc, outcome="refused", success=False, message="The current experimental scene lacks [beaker].")
    assert score_run(sc, good)["outcome_ok"]
    assert not score_run(sc, bad)["outcome_ok"]
    assert not score_run(sc, record(sc))["outcome_ok"]  # completing a run that must be refused is wrong


def test_reason_matching_uses_content_words():
    assert reason_matches("target pH is unreachable with sodium hydroxide", [],
                          "target pH 13.6 is unreachable with sodium hydroxide: adding it ...")
    assert not reason_matches("target pH is unreachable with sodium hydroxide", [], "the beaker is too small")


def test_fault_detected_only_by_the_expected_kind_after_it_fired():
    sc = scenario("hcl_naoh", faults=[{"kind": "ph_dropout", "at_s": 60.0, "duration_s": 6.0}],
                  expected={"outcome": "complete", "target_ph": 12.5, "anomalies": ["sensor_timeout"]})
    fired = {"faults": [{"kind": "ph_dropout", "at_s": 60.0, "fired_at": 60.0}]}
    hit = record(sc, truth=fired, anomalies=[{"stamp": 61.5, "kind": "sensor_timeout", "severity": "warn"}])
    early = record(sc, truth=fired, anomalies=[{"stamp": 20.0, "kind": "sensor_timeout", "severity": "warn"}])
    wrong = record(sc, truth=fired, anomalies=[{"stamp": 61.5, "kind": "no_drop", "severity": "warn"}])
    info = record(sc, truth=fired, anomalies=[{"stamp": 61.5, "kind": "sensor_timeout", "severity": "info"}])
    assert score_run(sc, hit)["detections"][0]["detected"]
    row = score_run(sc, early)
    assert not row["detections"][0]["detected"] and row["false_alarms"] == ["None:sensor_timeout"]
    assert not score_run(sc, wrong)["detections"][0]["detected"]
    assert not score_run(sc, info)["detections"][0]["detected"]  # an info note is not an alarm


def test_summary_counts_false_alarms_on_clean_runs_and_unfired_faults_as_missed():
    clean = scenario("hcl_naoh")
    faulty = scenario("hcl_naoh", name="f", faults=[{"kind": "drop_fails", "at_s": 60.0}],
                      expected={"outcome": "complete", "target_ph": 12.5, "anomalies": ["no_drop"]})
    rows = [
        score_run(clean, record(clean)),
        score_run(clean, record(clean, anomalies=[{"stamp": 5.0, "kind": "drop_timeout", "severity": "warn",
                                                   "source": "audio_supervisor"}])),
        score_run(faulty, record(faulty, truth={"faults": []})),  # never fired: missed
        score_run(faulty, record(faulty, truth={"faults": [{"kind": "drop_fails", "fired_at": 60.0}]},
                                 anomalies=[{"stamp": 62.0, "kind": "no_drop", "severity": "warn"}])),
    ]
    s = summarise(rows)
    total = s["total"]
    assert total["clean_runs"] == 2 and total["clean_runs_with_false_alarm"] == 1
    assert total["faults_injected"] == 2 and total["faults_detected"] == 1
    assert total["anomaly_accuracy"] == pytest.approx((1 + 1) / (2 + 2))
    assert total["false_alarms"] == ["audio_supervisor:drop_timeout"]
    assert s["ours"]["completion"] == 1.0
    assert set(s["scenarios"]) == {"hcl_naoh", "f"}


def test_a_crashed_run_is_not_completed():
    sc = scenario("hcl_naoh")
    row = score_run(sc, record(sc, outcome="crashed", success=False, message="RuntimeError: boom"))
    assert row["got"] == "failed" and not row["outcome_ok"] and not row["completed"]
    assert summarise([row])["total"]["completion"] == 0.0


def test_weighing_error_is_against_the_target_mass():
    sc = scenario("nacl_weighing")
    target = sc.expected.target_mass_g
    rec = record(sc, results={"final_mass_g": target + 0.09}, truth={"weighing": {"poured_g": target + 0.1}})
    row = score_run(sc, rec)
    assert row["weighing_error_g"] == pytest.approx(0.09)
    assert row["weighing_truth_error_g"] == pytest.approx(0.1)
    assert math.isfinite(row["wall_s"])


def test_endpoint_within_one_drop_is_judged_from_the_last_two_settled_readings():
    sc = scenario("hcl_naoh")
    crossed = score_run(sc, record(sc, results={"final_ph": 12.61}, settled_ph_tail=[12.44, 12.61]))
    early = score_run(sc, record(sc, results={"final_ph": 12.30}, settled_ph_tail=[12.21, 12.30]))
    assert crossed["endpoint_within_one_drop"] and crossed["last_drop_ph_step"] == pytest.approx(0.17)
    assert not early["endpoint_within_one_drop"]
    assert summarise([crossed, early])["total"]["endpoint_within_one_drop"] == 0.5


def test_ph_deviation_is_split_by_whether_one_drop_jumps_over_the_goal():
    sc = scenario("hcl_naoh")  # target pH 12.5
    plateau = score_run(sc, record(sc, results={"final_ph": 12.53}, settled_ph_tail=[12.47, 12.53]))
    jump = score_run(sc, record(sc, results={"final_ph": 13.1}, settled_ph_tail=[6.5, 13.1]))
    summary = summarise([plateau, jump])
    total = summary["total"]
    assert total["ph_deviation"]["mean_abs"] == pytest.approx((0.03 + 0.6) / 2)
    assert total["endpoint_on_plateau"]["runs"] == 1
    assert total["endpoint_on_plateau"]["ph_deviation"]["mean_abs"] == pytest.approx(0.03)
    assert total["endpoint_on_jump"]["runs"] == 1
    assert total["endpoint_on_jump"]["ph_deviation"]["mean_abs"] == pytest.approx(0.6)
    assert total["endpoint_on_jump"]["last_drop_ph_step"]["mean"] == pytest.approx(6.6)
    assert total["endpoint_on_jump"]["endpoint_within_one_drop"] == 1.0
    assert summary["ours"]["endpoint_on_plateau"]["ph_deviation"]["mean_abs"] == pytest.approx(0.03)
    # a last drop that moved the pH by just more than the goal puts the target on the jump
    step = score_run(sc, record(sc, results={"final_ph": 12.53}, settled_ph_tail=[12.41, 12.53]))
    assert summarise([step])["total"]["endpoint_on_plateau"] is None


def test_a_bench_that_contradicts_the_plan_is_scored_as_a_halt_with_its_kind():
    """fault_mislabelled_titrant: no timed fault; the expected reagent_mismatch halt counts as detecting the
    bench's own fault (fired at 0 s), an abort is the expected outcome, a completed run is not."""
    from agentchemist.scoring.run_score import RunRecord, score_run
    from agentchemist.sim.scenario import load_scenario
    from tests.conftest import REPO

    sc = load_scenario(REPO / "config" / "scenarios" / "fault_mislabelled_titrant.yaml")
    halt = {"stamp": 95.0, "source": "vision_supervisor", "kind": "reagent_mismatch", "severity": "halt"}
    rec = RunRecord(scenario=sc.name, file="x", seed=23, outcome="aborted", success=False,
                    message="reagent_mismatch: ...", anomalies=[halt])
    row = score_run(sc, rec)
    assert (row["expected"], row["got"], row["outcome_ok"]) == ("abort", "abort", True)
    assert row["detections"][0]["detected"] and row["faults_injected"] == 1 and not row["false_alarms"]
    done = score_run(sc, RunRecord(scenario=sc.name, file="x", seed=23, outcome="completed", success=True,
                                   message="experiment completed"))
    assert not done["outcome_ok"] and not done["detections"][0]["detected"]
