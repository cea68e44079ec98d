"""The titrant a plan draws and lets the dispenser give is sized as the pH meter reads: a glass electrode
reads -log10 a(H+) (Davies), which far past equivalence lags the concentration pH by many millilitres."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from agentchemist.chemistry.equilibrium import titration_curve
from agentchemist.plan import HardwareRegistry, Planner
from agentchemist.plan.feasibility import titrant_for_ph
from agentchemist.plan.registry import default_registry_path

PLANNER = Planner()
WORKED = "Titrate 25 mL of 0.1 M HCl with 0.1 M NaOH until the pH reaches 12.5, acting only when the pH is stable."


def ideal_planner() -> Planner:
    doc = yaml.safe_load(default_registry_path().read_text())
    doc["ph_meter"]["reads_activity"] = False
    return Planner(registry=HardwareRegistry.from_dict(doc))


def test_the_electrode_needs_more_base_for_a_high_ph_and_less_for_a_low_one():
    hcl, naoh = {"hcl": 0.1}, {"naoh": 0.1}
    ideal = titrant_for_ph(hcl, 25.0, naoh, 12.5).volume_ml
    read = titrant_for_ph(hcl, 25.0, naoh, 12.5, activity=True).volume_ml
    assert ideal == pytest.approx(48.56, abs=0.02) and read == pytest.approx(58.28, abs=0.02)
    # before equivalence a(H+) < [H+]: the electrode reads pH 3 a little earlier
    early = titrant_for_ph(hcl, 25.0, naoh, 3.0, activity=True).volume_ml
    assert early < titrant_for_ph(hcl, 25.0, naoh, 3.0).volume_ml


def test_the_worked_example_draws_and_allows_what_the_electrode_needs():
    plan = PLANNER.plan(WORKED).plan
    cap = plan.module_instantiation.dispenser.max_volume_ml
    draw = plan.subtask("draw_titrant").parameters["volume_ml"]
    assert draw == 60.0  # need x 1.1 + 1 mL = 65 mL: one pipette, full
    assert 58.28 < cap <= draw
    # the twin's probe (activity) reads the target within the cap
    volumes = np.linspace(0.0, cap, 2001)
    read = titration_curve({"hcl": 0.1}, 25.0, {"naoh": 0.1}, volumes, activity=True)
    assert read[-1] >= 12.5


def test_with_an_ideal_reading_meter_the_old_sizing_returns():
    plan = ideal_planner().plan(WORKED).plan
    assert plan.subtask("draw_titrant").parameters["volume_ml"] == pytest.approx(54.4)  # 48.56 x 1.1 + 1
    assert plan.module_instantiation.dispenser.max_volume_ml == pytest.approx(54.4)


def test_a_short_titration_is_sized_with_activity_too():
    plan = PLANNER.plan("Titrate 5 mL of 0.1 M HCl with 0.1 M NaOH until the pH reaches 11.").plan
    read_need = titrant_for_ph({"hcl": 0.1}, 5.0, {"naoh": 0.1}, 11.0, activity=True).volume_ml
    assert read_need == pytest.approx(5.125, abs=0.005)
    assert plan.module_instantiation.dispenser.max_volume_ml == pytest.approx(round(read_need * 1.1 + 1.0, 1))


def test_more_than_one_pipette_fill_as_read_is_refused_with_the_reading_named():
    # pH 12.55: 53.0 mL by concentration (one draw) but 65.8 mL as the electrode reads; the protocol
    # draws once (no refill step), so the plan is refused rather than stopping short
    out = PLANNER.plan("Titrate 25 mL of 0.1 M HCl with 0.1 M NaOH until the pH reaches 12.55.")
    assert out.kind == "refusal"
    assert any("PIPETTE_CAPACITY" in r and "65.8 mL" in r and "glass electrode" in r for r in out.reasons)
    assert ideal_planner().plan("Titrate 25 mL of 0.1 M HCl with 0.1 M NaOH until the pH reaches 12.55.").kind == "plan"


def test_a_target_the_electrode_cannot_read_is_unreachable_with_both_numbers():
    out = PLANNER.plan("Titrate 25 mL of 0.1 M HCl with 0.1 M NaOH until the pH reaches 12.92.")
    assert out.kind == "refusal"
    assert "only approaches pH 12.99 (12.89 as a glass electrode reads it)" in out.message
