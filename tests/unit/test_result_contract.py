"""What the instruction asked for, and whether the results deliver it (issue 37: each family's result contract;
experiments/acid_base/delivery.py, experiments/results.missing_results, report/delivery.py)."""
from agentchemist.experiments.acid_base.delivery import (CONCENTRATION, CURVE, EQUIVALENCE, PKA, asked_for, lacking,
                                                         predicted_equivalence_ph)
from agentchemist.experiments.results import missing_results

SETUP = {"analyte": "acetic_acid", "analyte_m": 0.1, "titrant": "naoh", "titrant_m": 0.1, "analyte_volume_ml": 25.0}


def plan(target_ph=None, outputs=(), to_equivalence=False, unknown=False, colour=None):
    return {"parsed_instruction": {
        "family": "acid_base_titration", "output_format": list(outputs),
        "target_conditions": {"target_ph": target_ph, "to_equivalence": to_equivalence, "colour_change": colour},
        "entities": {"reagents": [{"name": "acetic_acid", "role": "analyte", "unknown": unknown},
                                  {"name": "naoh", "role": "titrant", "unknown": False}]}}}


def results(**extra):
    return {"family": "acid_base_titration", "setup": SETUP, "initial_ph_measured": 2.9, "not_concluded": [], **extra}


def test_a_target_before_the_equivalence_asks_for_the_curve_only():
    assert 8.5 < predicted_equivalence_ph(SETUP) < 8.9
    assert asked_for(plan(8.2), results()) == (CURVE,)
    assert asked_for(plan(12.0), results()) == (CURVE, EQUIVALENCE)
    assert asked_for(plan(12.0, outputs=("report", "pka")), results()) == (CURVE, EQUIVALENCE, PKA)
    assert asked_for(plan(None, to_equivalence=True), results()) == (CURVE, EQUIVALENCE)
    assert asked_for(plan(None, unknown=True), results()) == (CURVE, EQUIVALENCE, CONCENTRATION)


def test_what_is_missing_carries_the_reports_own_reason():
    short = results(curve_points=2, not_concluded=["nothing concluded: only 2 distinct volume(s) measured (need 8)"])
    assert lacking(CURVE, short) == "nothing concluded: only 2 distinct volume(s) measured (need 8)"
    full = results(curve_points=500, equivalence_points=[{"supported": True}], pka=[{"supported": False}],
                   not_concluded=["pKa1 (curve fit) is not stated: the data barely constrain this pKa"])
    assert lacking(CURVE, full) is None and lacking(EQUIVALENCE, full) is None
    assert lacking(PKA, full) == "pKa1 (curve fit) is not stated: the data barely constrain this pKa"
    missing = missing_results("acid_base_titration", plan(12.0, outputs=("pka",)), full)
    assert missing == [(PKA, "pKa1 (curve fit) is not stated: the data barely constrain this pKa")]


def test_a_strong_acid_has_no_pka_to_ask_for():
    hcl = plan(12.5, outputs=("report", "pka"))
    hcl["parsed_instruction"]["entities"]["reagents"][0]["name"] = "hcl"
    assert PKA not in asked_for(hcl, results())


def test_families_without_a_contract_or_runs_without_a_plan_ask_nothing():
    assert missing_results("nacl_weighing", plan(12.0), results()) == []
    assert missing_results("acid_base_titration", {}, results(curve_points=0)) == []
    assert missing_results(None, plan(12.0), results()) == []
