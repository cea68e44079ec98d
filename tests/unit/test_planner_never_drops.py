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
