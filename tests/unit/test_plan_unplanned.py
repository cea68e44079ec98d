"""The lexicons that keep the planner from dropping a step (plan/unplanned.py) and from reading another
language word by word (plan/language.py): what they catch, and the ordinary English they must leave alone."""

from __future__ import annotations

import pytest

from agentchemist.chemistry.reagents import default_library
from agentchemist.plan.language import english_only_question, is_not_english
from agentchemist.plan.unplanned import indicator_mentions, step_notes, titration_extra_steps, unsupported_steps


@pytest.mark.parametrize("text, words", [
    ("Centrifuge the sample and titrate the supernatant", "no centrifuge ('Centrifuge')"),
    ("Filter the solution", "no filtration"),
    ("Boil the water", "no heating: runs happen at room temperature ('Boil')"),
    ("Cool it in an ice bath", "no cooling"),
    ("Sonicate for 5 min", "ultrasonic"),
    ("Crush the tablet", "tablet"),
    ("Rinse the electrode with water", "no rinsing"),
    ("Titrate the iron with KMnO4", "redox"),
    ("Titrate chloride by the Mohr method", "precipitation"),
    ("Back-titrate the excess HCl with NaOH", "back titration is not supported yet ('Back-titrate')"),
    ("Titrate the unreacted acid with NaOH", "back titration"),
    ("Report the heat of neutralisation", "the results computed from them ('heat of neutralisation')"),
])
def test_steps_the_bench_cannot_do_are_named(text, words):
    assert any(words in r for r in unsupported_steps(text)), unsupported_steps(text)


@pytest.mark.parametrize("text", [
    "Titrate 25 mL of 0.1 M HCl with 0.1 M NaOH to pH 7",
    "Do not heat the solution",
    "Titrate without filtering",
    "Dissolve it in freshly boiled and cooled water",
    "Use the filtered water",
    "Place the beaker on the hot plate stirrer",
    "Titrate with NaOH until the base is in excess",
])
def test_ordinary_wording_is_no_step(text):
    assert unsupported_steps(text) == []


def test_a_ruled_out_or_descriptive_step_word_is_noted():
    assert step_notes("Do not heat the solution") == ["'heat' is ruled out by the instruction: no step of this plan does it"]
    assert "describes a liquid" in step_notes("Dissolve it in freshly boiled water")[0]
    assert step_notes("Titrate 25 mL of HCl") == []


def test_indicators_outside_the_library():
    found = indicator_mentions("Add phenolphthalein, then EBT and 2 drops of bromothymol blue")
    assert [(i.name, i.words, i.metallochromic) for i in found] == [
        ("phenolphthalein", "phenolphthalein", False), ("Eriochrome Black T", "EBT", True),
        ("bromothymol blue", "bromothymol blue", False)]
    assert indicator_mentions("Titrate with calconcarboxylic acid as indicator") == []


def test_a_titration_neither_weighs_nor_dilutes():
    assert "no weighing step ('weigh')" in titration_extra_steps("then weigh the beaker", None)[0]
    assert "do not dilute" in titration_extra_steps("dilute it to 100 mL", None)[0]
    assert "50 mL of water" in titration_extra_steps("add water", 50.0)[0]
    assert titration_extra_steps("Titrate 25 mL of HCl", None) == []


@pytest.mark.parametrize("text, other", [
    ("Titrer 25 mL d'acide chlorhydrique avec de la soude jusqu'à pH 7", True),
    ("Titrieren Sie die Salzsäure mit Natronlauge bis pH 7", True),
    ("Valorar 25 mL de HCl con NaOH hasta pH 7", True),
    ("用氢氧化钠滴定盐酸", True),
    ("Оттитруйте соляную кислоту", True),
    ("Titrate 25 mL of 0.1 M HCl with 0.1 M NaOH to pH 7, as in Smith et al.", False),
    ("Standardise the NaOH against 0.2042 g of Kaliumhydrogenphthalat dissolved in 25 mL of water", False),
    ("Titrate the acid with the base", False),
])
def test_language_detection(text, other):
    assert is_not_english(text) is other


def test_the_english_only_answer_lists_what_was_recognised_and_no_half_words():
    answer = english_only_question("Titrieren Sie 25 mL 0,1 M Salzsäure mit NaOH bis pH 7", default_library())
    assert answer.startswith("I read English instructions only.") and answer.endswith("?")
    assert "25 mL" in answer and "pH 7" in answer and "sodium hydroxide" in answer
    assert "Salzsäure mit" not in answer
