"""Issue 21 item 1: instructions in a chemist's own words. The corpus (instructions*.yaml, >= 300
cases) is scored as a whole: the tuned part and the held-out part (written first, never tuned on)
must each stay at or above 95 %, and every plan the chemists' wording produces must be sound."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from pydantic import ValidationError

from agentchemist.plan import Plan, Planner, verify_plan
from agentchemist.plan.evaluation import CORPUS_FILES, evaluate, load_corpora
from agentchemist.plan.schema import Entities, ReagentEntity
from agentchemist.plan.units import find_quantities
from agentchemist.plan.wording import determination_intent, experiment_request, fix_key_words

DATA = Path(__file__).resolve().parents[1] / "data"
CASES = load_corpora([DATA / name for name in CORPUS_FILES])
PLANNER = Planner()


@pytest.fixture(scope="module")
def report():
    return evaluate(CASES, PLANNER, time.perf_counter)


def test_corpus_size_and_split():
    assert len(CASES) >= 300
    held = [c for c in CASES if c.holdout]
    assert 0.3 <= len(held) / len(CASES) <= 0.45
    assert {c.expect.get("kind", "plan") for c in held} == {"plan", "question", "refusal"}


def test_accuracy_tuned_and_held_out(report):
    failures = {i: r for i, r in report.results.items() if r}
    # Measured on this commit: tuned 215/215 (issue 37 added 24 tuned cases), held-out 114/119 (95.8 %); the
    # five held-out misses are listed in docs/planner.md and were not tuned on.
    assert report.accuracy(False) >= 0.95, failures
    assert report.accuracy(True) >= 0.95, failures


def test_every_plan_from_the_new_corpus_is_sound(report):
    for case in CASES:
        if case.expect.get("kind", "plan") != "plan" or report.results[case.id] or not case.id.startswith(("c_", "h_")):
            continue
        plan = PLANNER.plan(case.text, case.scene).plan
        again = Plan.model_validate_json(plan.model_dump_json())
        assert again == plan
        leftover = [f for f in verify_plan(again, PLANNER.registry, PLANNER.library)
                    if f.fix is not None or f.severity == "HALT"]
        assert leftover == [], (case.id, leftover)


@pytest.mark.parametrize(
    ("text", "value"),
    [("0.1 mol·L⁻¹ HCl", 0.1), ("0.05 mol dm-3 HCl", 0.05), ("0.1 moles per litre x", 0.1), ("M/20 HCl", 0.05),
     ("N/10 NaOH", 0.1), ("decimolar NaOH", 0.1), ("centimolar HCl", 0.01), ("100 mM NaOH", 0.1),
     ("0.1 m hcl", 0.1), ("100 mmol/L HCl", 0.1)],
)
def test_concentration_notations(text, value):
    (q,) = [q for q in find_quantities(text) if q.kind == "concentration"]
    assert q.value == pytest.approx(value)


def test_key_word_typos_are_read_but_reagents_and_real_words_are_not():
    assert fix_key_words("Titrtae 20 mL untill pH 9")[0] == "titrate 20 mL until pH 9"
    for text in ("until neutral", "the titrant is", "titre of the base", "sodium hydroxid", "units"):
        assert fix_key_words(text) == (text, [])


def test_intent_words():
    assert determination_intent("Determine the concentration of the HCl")
    assert determination_intent("Titrate 20 mL of HCl of unknown concentration")
    assert not determination_intent("Titrate 25 mL of HCl with 0.1 M NaOH to pH 7")
    assert experiment_request("Please run a titration.") == "titration"
    assert experiment_request("Write me a poem about titration.") is None
    assert experiment_request("Make me a cup of coffee.") is None


def test_determination_plans_the_unknown_as_the_result():
    out = PLANNER.plan("Determine the concentration of 20 mL of HCl by titration with 0.1 M NaOH.")
    assert out.kind == "plan", out.message
    analyte, titrant = out.plan.reagent("analyte"), out.plan.reagent("titrant")
    assert analyte.unknown and analyte.concentration_m == pytest.approx(0.1)  # the planning estimate
    assert not titrant.unknown and out.plan.parsed_instruction.target_conditions.to_equivalence
    assert any("unknown" in w and "estimate" in w for w in out.plan.warnings)
    # the whole draw the pipette allows: the run, not the estimate, finds the endpoint
    assert out.plan.module_instantiation.dispenser.max_volume_ml >= 50.0
    # and it stops past the estimated equivalence (pH 7 for HCl/NaOH), so the jump is on record
    assert out.plan.module_instantiation.dispenser.target_ph == pytest.approx(8.5)
    # a plain missing concentration (no determination) is still asked about
    assert PLANNER.plan("Titrate 25 mL of HCl with 0.1 M NaOH to pH 7.").kind == "question"


def test_unknown_marker_is_validated():
    with pytest.raises(ValidationError, match="only the analyte or the titrant"):
        ReagentEntity(name="water", role="solvent", concentration_m=1.0, unknown=True)
    with pytest.raises(ValidationError, match="planning estimate"):
        ReagentEntity(name="hcl", role="analyte", unknown=True)
    with pytest.raises(ValidationError, match="at most one"):
        Entities(reagents=[ReagentEntity(name="hcl", role="analyte", concentration_m=0.1, unknown=True),
                           ReagentEntity(name="naoh", role="titrant", concentration_m=0.1, unknown=True)])
