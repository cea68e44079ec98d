"""A standardisation (issue 21): the plan marks the titrant's concentration unknown and gives an
estimate; the report states the titrant's concentration measured against the known standard, and not
the standard's concentration computed from the estimate."""

from __future__ import annotations

import pytest

from agentchemist.report.results import compute_results
from agentchemist.experiments.acid_base.sample_run import synthetic_titration_run


def _as_standardisation(run, estimate_m: float):
    exp = run.experiment
    for r in [*exp["plan"]["parsed_instruction"]["entities"]["reagents"], *exp.get("reagents", [])]:
        if r.get("role") == "titrant":
            r.update(concentration_m=estimate_m, unknown=True)
    return run


def test_titrant_concentration_is_measured_against_the_standard():
    # truth 0.12 M NaOH, planned with an estimate of 0.10 M, against 25 mL of 0.1 M HCl
    run = _as_standardisation(synthetic_titration_run(titrant_m=0.12, target_ph=11.0, seed=3), 0.1)
    ctx = compute_results(run)
    got = ctx.results["titrant_concentration"]
    assert got["titrant_m"] == pytest.approx(0.12, rel=0.01)
    assert got["supported"] and got["estimate_m"] == 0.1 and got["standard_m"] == 0.1
    assert abs(got["titrant_m"] - 0.12) <= 3 * got["uncertainty_m"] + 1e-4
    assert any(c.startswith("titrant concentration 0.12") and "hydrochloric acid" in c for c in ctx.concluded)
    assert not any(c.startswith("analyte concentration") for c in ctx.concluded)


def test_plain_titration_reports_the_analyte_as_before():
    ctx = compute_results(synthetic_titration_run(target_ph=11.0, seed=3))
    assert "titrant_concentration" not in ctx.results
    assert any(c.startswith("analyte concentration 0.1") for c in ctx.concluded)


def test_determination_compares_theory_at_the_measured_concentration():
    run = synthetic_titration_run(analyte_m=0.08, target_ph=11.0, seed=4)
    exp = run.experiment
    for r in [*exp["plan"]["parsed_instruction"]["entities"]["reagents"], *exp.get("reagents", [])]:
        if r.get("role") == "analyte":
            r.update(concentration_m=0.1, unknown=True)  # the plan's estimate, not the truth
    ctx = compute_results(run)
    assert ctx.setup.analyte_unknown and ctx.setup.analyte_m is None
    assert any(c.startswith("analyte concentration 0.08") for c in ctx.concluded)
    # the theory curve at the measured concentration fits the run (at the 0.1 M estimate it would not)
    assert ctx.curve is not None and ctx.curve.rms_ph < 0.05
    assert any("measured 0.0800" in c or "measured 0.0799" in c for c in ctx.concluded)
