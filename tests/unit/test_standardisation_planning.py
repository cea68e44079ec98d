"""Planning the standardisation of NaOH against KHP (experiments/standardisation/planning.py): the family
claims KHP instructions (a mass of KHP is not a weighing), states the mass and the resolution its digits
carry, plans the NaOH's concentration as the unknown with its nominal value as the estimate, stops past
the equivalence, and refuses without a mass."""
from __future__ import annotations

import pytest

from agentchemist.experiments.standardisation.planning import PAST_EQUIVALENCE_PH
from agentchemist.plan.feasibility import equivalence_point
from agentchemist.plan.planner import plan_instruction
from agentchemist.plan.scene import SceneInfo

KHP_M = 204.22


def _plan(text: str, scene: SceneInfo | None = None):
    outcome = plan_instruction(text, scene)
    assert outcome.kind == "plan", f"{outcome.kind}: {outcome.message} {outcome.reasons}"
    return outcome.plan


def _report_parameters(plan) -> dict:
    return next(t.parameters for t in plan.task_decomposition if t.primitive == "report")


def test_a_standardisation_against_a_weighed_mass_of_khp():
    plan = _plan("Standardise the NaOH solution against 0.5105 g of KHP dissolved in 50 mL of water")
    pi = plan.parsed_instruction
    assert pi.family == "naoh_standardisation" and plan.protocol.id == "naoh_standardisation"
    khp, naoh = plan.reagent("analyte"), plan.reagent("titrant")
    assert (khp.name, khp.mass_g, khp.volume_ml, khp.unknown) == ("khp", 0.5105, 50.0, False)
    assert khp.concentration_m == pytest.approx(0.5105 / KHP_M / 0.050)
    assert naoh.name == "naoh" and naoh.unknown  # the result, never an input
    # no weighing step: the KHP is in the beaker already
    assert [t.primitive for t in plan.task_decomposition] == ["grasp", "draw", "move_to", "squeeze", "verify",
                                                              "report"]
    assert _report_parameters(plan)["standard_mass_g"] == 0.5105
    assert _report_parameters(plan)["mass_resolution_g"] == pytest.approx(1e-4)
    # past the estimated equivalence pH, so that the whole jump is recorded
    eq = equivalence_point({"khp": khp.concentration_m}, 50.0, {"naoh": naoh.concentration_m})
    assert pi.target_conditions.target_ph == round(eq.ph + PAST_EQUIVALENCE_PH, 2)
    assert 10.0 <= pi.target_conditions.target_ph <= 11.5
    assert plan.module_instantiation.vision.endpoint == "ph"
    assert "ph_per_drop" in pi.data_recording


def test_the_nominal_concentration_is_the_estimate_and_a_determination_reads_the_same():
    plan = _plan("Determine the exact concentration of the 0.1 M sodium hydroxide using 0.51 g potassium "
                 "hydrogen phthalate dissolved in 40 mL of water")
    assert plan.parsed_instruction.family == "naoh_standardisation"
    naoh = plan.reagent("titrant")
    assert naoh.unknown and naoh.concentration_m == pytest.approx(0.1)
    assert plan.reagent("analyte").mass_g == 0.51
    assert _report_parameters(plan)["mass_resolution_g"] == pytest.approx(0.01)  # "0.51 g": two decimals


def test_milligrams_keep_their_resolution():
    plan = _plan("Standardise the NaOH against 510.5 mg of KHP in 50 mL of water")
    assert plan.reagent("analyte").mass_g == pytest.approx(0.5105)
    assert _report_parameters(plan)["mass_resolution_g"] == pytest.approx(1e-4)


def test_the_bottle_record_is_the_nominal_concentration_when_the_instruction_gives_none():
    scene = SceneInfo.from_dict({"objects": [
        {"id": "beaker_main", "kind": "beaker_100ml", "capacity_ml": 100},
        {"id": "titrant_bottle", "kind": "reagent_bottle", "reagent": "naoh", "concentration_m": 0.1},
        {"id": "pipette", "kind": "pipette"}, {"id": "ph_meter", "kind": "ph_meter"},
        {"id": "stirrer", "kind": "magnetic_stirrer"}]})
    plan = _plan("Standardise the NaOH against 0.2042 g of KHP dissolved in 25 mL of water", scene)
    assert plan.reagent("titrant").concentration_m == pytest.approx(0.1)
    assert any("bottle's record" in w for w in plan.warnings)


def test_without_a_mass_the_standardisation_is_refused():
    outcome = plan_instruction("Standardise the NaOH against KHP dissolved in 50 mL of water")
    assert outcome.kind == "refusal"
    assert "mass" in outcome.message and "does not weigh" in outcome.message


def test_a_stop_before_the_equivalence_is_questioned():
    outcome = plan_instruction("Standardise the 0.1 M NaOH against 0.2042 g of KHP dissolved in 25 mL of water "
                               "until pH 9")
    assert outcome.kind == "question"
    assert "not past the equivalence" in outcome.message


def test_other_families_keep_their_instructions():
    # a standardisation against a standard SOLUTION stays an acid-base titration; a weighing stays a weighing
    assert _plan("Standardise the NaOH against 25 mL of 0.1 M hydrochloric acid in the beaker until pH 11"
                 ).parsed_instruction.family == "acid_base_titration"
    assert _plan("Weigh 2.5 g of sodium chloride and dissolve it in 50 mL of water"
                 ).parsed_instruction.family == "weighing_dissolution"
