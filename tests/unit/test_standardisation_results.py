"""The standardisation's results and report rows (experiments/standardisation/{results,report}.py) on a
synthetic run of 0.2042 g KHP in 25 mL titrated with NaOH labelled 0.1 M that really is 0.0968 M: the
report states c(NaOH) from the mass and the equivalence volume, within its uncertainty of the truth, and
says the label does not agree."""
from __future__ import annotations

import pytest

from agentchemist.experiments.standardisation import results as standardisation
from agentchemist.experiments.standardisation.report import key_values
from agentchemist.report.results import compute_results
from agentchemist.experiments.acid_base.sample_run import synthetic_titration_run

TRUE_M, NOMINAL_M, MASS_G = 0.0968, 0.1, 0.2042
KHP_M = MASS_G / 204.22 / 0.025


def _run(report_parameters: dict | None = None, seed: int = 3):
    run = synthetic_titration_run("khp", KHP_M, 25.0, "naoh", TRUE_M, target_ph=10.93, seed=seed)
    plan = run.experiment["plan"]
    plan["parsed_instruction"]["family"] = "naoh_standardisation"
    for r in [*plan["parsed_instruction"]["entities"]["reagents"], *run.experiment.get("reagents", [])]:
        if r["role"] == "titrant":
            r.update(concentration_m=NOMINAL_M, unknown=True)  # what the plan knew: the label
        if r["role"] == "analyte":
            r["mass_g"] = MASS_G
    for task in plan["task_decomposition"]:
        if task["id"] == "report":
            task["primitive"] = "report"
            task["parameters"] = report_parameters if report_parameters is not None else {
                "standard_mass_g": MASS_G, "mass_resolution_g": 1e-4, "titrant_nominal_m": NOMINAL_M}
    return run


@pytest.mark.parametrize("seed", [3, 4])
def test_the_naoh_concentration_is_found_within_its_uncertainty(seed):
    res = compute_results(_run(seed=seed)).results
    assert res["family"] == "naoh_standardisation"
    s = res["standardisation"]
    assert abs(s["titrant_m"] - TRUE_M) <= s["expanded_uncertainty_m"]
    (eq,) = [e for e in res["equivalence_points"] if e["supported"]]
    assert s["titrant_m"] == pytest.approx(MASS_G / 204.22 / (eq["volume_ml"] / 1000))
    assert s["nominal_m"] == NOMINAL_M and s["label_agrees"] is False  # 3 % low, U about 2 %
    sources = {c["source"] for c in s["budget"]["components"]}
    assert sources == {"equivalence volume", "khp mass", "khp purity"}
    # one concentration line, the weighed standard's (the acid-base line against a solution is replaced)
    lines = [c for c in res["concluded"] if "concentration" in c and "mol/L" in c]
    assert len(lines) == 1 and lines[0].startswith("sodium hydroxide concentration") and "0.2042 g" in lines[0]
    assert res["titrant_concentration"]["titrant_m"] == s["titrant_m"]
    assert standardisation.measured_concentration(res) is None  # the analyte is given, not measured
    assert standardisation.found_equivalences(res) == [eq["volume_ml"]]


def test_the_report_rows_state_found_and_nominal():
    rows = dict(key_values(compute_results(_run()).results, [("Final pH", "10.95")]))
    assert rows["Final pH"] == "10.95"
    assert "naoh of unknown concentration (planned at 0.1 mol/L)" in rows["Analysed as"]
    assert rows["NaOH concentration"].startswith("0.09") and "k = 2" in rows["NaOH concentration"]
    assert "0.2042 g of khp" in rows["From"]
    assert "does not agree" in rows["Nominal vs found"]


def test_the_summary_answers_with_the_titrant_not_the_standard():
    from agentchemist.report.document import _answer
    results = compute_results(_run()).results
    answer = dict(_answer(results))
    assert answer["Titrant concentration"].startswith("0.09") and "standardised" in answer["Titrant concentration"]
    # the standard's concentration computed from the label's 0.1 M is no answer to a standardisation
    assert "Analyte concentration" not in answer


def test_without_the_mass_nothing_is_invented():
    run = _run(report_parameters={})
    for r in run.experiment["plan"]["parsed_instruction"]["entities"]["reagents"]:
        r.pop("mass_g", None)
    res = compute_results(run).results
    assert "standardisation" not in res and "titrant_concentration" not in res
    assert any("does not state the standard's mass" in line for line in res["not_concluded"])
    assert dict(key_values(res, []))["NaOH concentration"].startswith("not stated")


def test_the_mass_alone_gives_the_result_with_the_resolution_its_digits_carry():
    res = compute_results(_run(report_parameters={"standard_mass_g": MASS_G})).results
    s = res["standardisation"]
    assert s["nominal_m"] is None and s["label_agrees"] is None
    mass = next(c for c in s["budget"]["components"] if c["source"] == "khp mass")
    assert "0.0001 g resolution" in mass["note"]
