"""The planner never drops part of an instruction silently: overflow, contradictions, demands it will not
carry out and conditions the bench cannot honour are refused or asked about (issues 22 item 7, 25 item 6)."""
from __future__ import annotations

import pytest

from agentchemist.cli import main as cli_main
from agentchemist.control.calibration import load_or_none
from agentchemist.plan import plan_instruction

BASE = "Titrate 25 mL of 0.1 M HCl with 0.1 M NaOH to pH 7"


@pytest.mark.parametrize("text, kind, words", [
    ("Titrate 25 mL of 1e400 M HCl with 0.1 M NaOH to pH 7", "refusal", "not a finite number"),
    ("Titrate 25 mL of 0.1 M HCl with 0.1 M NaOH to pH 1e-400", "refusal", ""),
    ("Titrate 25 mL of 1e300 M HCl with 0.1 M NaOH to pH 7", "refusal", "above any aqueous solution"),
    ("Titrate 1e300 mL of 0.1 M HCl with 0.1 M NaOH to pH 7", "refusal", "more than 10 L"),
    (BASE + " and also pH 9", "question", "two target pH values"),
    ("Titrate 25 mL of 0.1 M HCl with 0.2 M NaOH to pH 7 using 0.1 M NaOH", "question", "two concentrations"),
    (BASE + " and dispense 5 L", "question", "'and dispense 5 L'"),
    (BASE + " at 300 C", "refusal", "300 degC"),
    (BASE + " at 4 °C", "refusal", "no heating or cooling"),
    (BASE + " under nitrogen", "refusal", "no gas supply"),
    (BASE + " within 10 minutes", "refusal", "time limit"),
])
def test_refused_or_asked_never_silently_planned(text, kind, words):
    outcome = plan_instruction(text)
    assert outcome.kind != "plan", outcome.message
    if words:
        assert outcome.kind == kind and words in outcome.message, outcome.message


@pytest.mark.parametrize("text", [BASE, BASE + " at 25 °C", BASE + " at pH 7 (pH 7)", BASE + " in a 100 mL beaker"])
def test_plain_instructions_still_plan(text):
    outcome = plan_instruction(text)
    assert outcome.kind == "plan", outcome.message


def test_the_plan_carries_the_calibrated_drop_volume():
    plan = plan_instruction(BASE).plan
    cal = load_or_none(None)  # tests read the shipped calibration (tests/conftest.py)
    assert cal is not None
    modules = plan.module_instantiation
    assert modules.dispenser.drop_volume_ml == pytest.approx(cal.drop_volume_ml, abs=1e-6)


def test_a_refusal_prints_its_message_once(capsys):
    rc = cli_main(["plan", BASE + " under nitrogen"])
    out = capsys.readouterr().out
    assert rc == 1 and out.count("no gas supply") == 1


def test_concentrated_reagents_get_the_registry_hazard_note_and_a_meter_range_word():
    outcome = plan_instruction("Titrate 25 mL of 12 M HCl with 10 M NaOH to pH 7")
    assert outcome.kind == "plan"
    warnings = outcome.plan.warnings
    assert any(w.startswith("hazard: 12 M hydrochloric acid") and "H314" in w for w in warnings)
    assert any(w.startswith("hazard: 10 M sodium hydroxide") for w in warnings)
    assert any("outside the pH meter's range 0-14" in w for w in warnings)
    plain = plan_instruction(BASE).plan.warnings
    assert not any(w.startswith("hazard:") or "meter's range" in w for w in plain)


# Issue 37 item 4: nothing the chemist said is dropped; refusals give the right reason.
@pytest.mark.parametrize("text, kind, words", [
    ("Dissolve the antacid tablet in 50.0 mL of 0.1 M HCl, then back-titrate the excess acid with 0.1 M NaOH to "
     "the equivalence point.", "refusal", "back titration is not supported yet"),
    ("Centrifuge the sample, then titrate 25 mL of 0.1 M HCl with 0.1 M NaOH to pH 7.", "refusal", "no centrifuge"),
    ("Filter the solution and titrate 25 mL of 0.1 M HCl with 0.1 M NaOH to pH 7.", "refusal", "no filtration"),
    (BASE + ", then weigh the beaker.", "refusal", "no weighing step"),
    ("Dissolve a tablet in 25 mL of 0.1 M HCl and titrate with 0.1 M NaOH to pH 7.", "refusal", "tablet"),
    ("Pipette 25 mL of 0.1 M HCl into the beaker, add 50 mL of water, and titrate with 0.1 M NaOH to pH 7.",
     "refusal", "50 mL of water"),
    ("Titrate 20 mL of 0.01 M CaCl2 with 0.01 M EDTA using Eriochrome Black T until wine red turns blue.",
     "refusal", "no Eriochrome Black T"),
    ("Titrate 25 mL of 0.1 M ammonia with 0.1 M HCl to pH 5 in the presence of NH4Cl.", "question",
     "ammonium chloride"),
    ("Titrate 25 mL of 0.1 M HCl with 0.1 M NaOH or 0.1 M KOH to pH 7.", "question",
     "two titrants, sodium hydroxide and potassium hydroxide"),
    (BASE + " using phenolphthalein.", "question", "no phenolphthalein"),
    ("Prepare 50 mL of 5 M NaCl: weigh 1.472 g of NaCl and dissolve in 50 mL of water.", "question",
     "5 M sodium chloride in 50 mL, which needs 14.611 g, but weighs 1.472 g"),
    ("Titrate 25 mL of 0.1 M HCl with 0.1 M NaOH to the second equivalence point.", "question",
     "one equivalence point"),
])
def test_every_substance_and_step_is_used_or_answered(text, kind, words):
    outcome = plan_instruction(text)
    assert outcome.kind == kind and words in outcome.message, outcome.message
    assert "ignored" not in outcome.message


@pytest.mark.parametrize("ordinal, index", [("first", 0), ("second", 1)])
def test_an_ordinal_equivalence_point_is_the_stop_target(ordinal, index):
    from agentchemist.plan.feasibility import equivalence_points

    outcome = plan_instruction(f"Titrate 20 mL of 0.1 M phosphoric acid with 0.1 M NaOH to the {ordinal} equivalence "
                               "point.")
    assert outcome.kind == "plan", outcome.message
    points = equivalence_points({"phosphoric_acid": 0.1}, 20.0, {"naoh": 0.1})
    assert len(points) == 3
    assert outcome.plan.module_instantiation.dispenser.target_ph == pytest.approx(round(points[index].ph, 2))
    assert outcome.plan.parsed_instruction.target_conditions.to_equivalence


@pytest.mark.parametrize("text, target", [
    ("Lower the pH of 50 mL of 0.1 M NaOH to 7 with 0.1 M HCl.", 7.0),
    ("Raise the pH of 30 mL of 0.05 M HCl to 9 with 0.1 M NaOH.", 9.0),
    ("Titrate 25 mL of 0.1 M HCl with 0.1 M NaOH until the meter reads 7.0.", 7.0),
    ("Titrate 25 mL of 0.1 M HCl with 0.1 M NaOH from a 50 mL burette to pH 7.", 7.0),
    ("Titrate 25 mL of 0.1 M HCl in a 250 mL beaker with 0.1 M NaOH to pH 7.", 7.0),
])
def test_ph_of_a_volume_meter_readings_and_glassware_sizes_parse(text, target):
    outcome = plan_instruction(text)
    assert outcome.kind == "plan", outcome.message
    assert outcome.plan.parsed_instruction.target_conditions.target_ph == target
    analyte = outcome.plan.reagent("analyte")
    assert analyte.volume_ml in (25.0, 30.0, 50.0)


def test_the_papers_formal_example_asks_only_for_what_it_does_not_name():
    text = ("Grab the rubber-tipped pipette, close the gripper tightly, and draw up the alkaline solution. Adjust the "
            "pH of the liquid in the beaker on the magnetic stirrer to 12.5")
    outcome = plan_instruction(text)
    assert outcome.kind == "question"
    assert "pH 12.5" in outcome.message and "alkaline solution" in outcome.message
    assert "liquid in the beaker" in outcome.message and "target pH" not in outcome.message


@pytest.mark.parametrize("text", [
    "Titrer 25 mL d'acide chlorhydrique 0,1 M avec de la soude 0,1 M jusqu'à pH 7.",
    "Titrieren Sie 25 mL 0,1 M Salzsäure mit 0,1 M Natronlauge bis pH 7.",
    "称取2.0克氯化钠，溶于50毫升水中。",
])
def test_other_languages_get_an_answer_in_what_was_understood(text):
    outcome = plan_instruction(text)
    assert outcome.kind == "question" and "I read English instructions only" in outcome.message
    assert "I do not know the reagent" not in outcome.message


def test_english_with_a_foreign_reagent_alias_is_still_english():
    outcome = plan_instruction("Standardise the NaOH against 0.2042 g of Kaliumhydrogenphthalat dissolved in 25 mL "
                               "of water")
    assert "English" not in outcome.message


def test_a_suggestion_never_swaps_an_acid_for_a_base():
    outcome = plan_instruction("Titrate 20 mL of 0.05 M potassium hydrogen phtalate with 0.1 M NaOH to pH 9.")
    assert outcome.kind == "question" and "potassium hydrogen phthalate" in outcome.message
    assert "potassium hydroxide" not in outcome.message


@pytest.mark.parametrize("text, note", [
    (BASE + ". Do not heat the solution.", "'heat' is ruled out"),
    ("Weigh 2.0 g of NaCl and dissolve it in 50 mL of filtered water.", "'filtered' describes a liquid"),
])
def test_a_step_word_that_asks_for_no_step_is_planned_and_said(text, note):
    from agentchemist.plan.evaluation import silent_drops

    outcome = plan_instruction(text)
    assert outcome.kind == "plan", outcome.message
    assert any(note in w for w in outcome.plan.warnings)
    assert silent_drops(text, outcome, outcome_library()) == []


def outcome_library():
    from agentchemist.chemistry.reagents import default_library

    return default_library()


def test_a_heat_measurement_is_refused_as_calorimetry_not_as_heating():
    outcome = plan_instruction("Titrate 25 mL of 0.1 M acetic acid with 0.1 M NaOH to pH 8.2 and report the heat of "
                               "neutralisation.")
    assert outcome.kind == "refusal" and "no calorimetry" in outcome.message
    assert "'heat of neutralisation'" in outcome.message and "no heating" not in outcome.message
