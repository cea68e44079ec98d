"""Issue 41: the analysis on data from real electrodes and real burettes: a fitted electrode, a misfit that
blocks every pKa, Gran functions, local-spacing windows, typing slips and an initial pH that does not fit."""
from __future__ import annotations

import numpy as np
import pytest

from agentchemist.chemistry.analysis import AnalysisConfig, analyze_titration
from agentchemist.chemistry.analysis_checks import gran_equivalence, local_step, volume_order_problems
from agentchemist.chemistry.analysis_types import DEFAULT_ACTIVITY
from agentchemist.chemistry.equilibrium import titration_curve
from agentchemist.report.stated import gum_text, round_to_uncertainty


def _meter(ph, offset=0.4, slope=0.97, noise=0.01, seed=0):
    return 7.0 + slope * (ph - 7.0) + offset + np.random.default_rng(seed).normal(0.0, noise, ph.size)


def test_one_activity_default():
    import inspect

    from agentchemist.chemistry.analysis_compare import compare_with_references
    from agentchemist.report.results import DEFAULT_ACTIVITY as REPORT_DEFAULT
    assert DEFAULT_ACTIVITY is True and REPORT_DEFAULT is True
    for fn in (analyze_titration, compare_with_references):
        assert inspect.signature(fn).parameters["activity"].default is True


@pytest.mark.parametrize("seed", [1, 2])
def test_fitted_electrode_recovers_the_pka_and_its_interval_covers_it(seed):
    v = np.round(np.arange(0.0, 35.0, 0.5), 2)
    ph = titration_curve({"phosphoric_acid": 0.05}, 25.0, {"naoh": 0.1}, v, activity=True)
    read = _meter(ph, seed=seed)
    plain = analyze_titration(v, read, titrant_m=0.1, analyte_volume_ml=25.0, analyte="phosphoric_acid")
    assert not any(p.supported for p in plain.pka), "an electrode 0.4 pH off must not give a stated pKa"
    fitted = analyze_titration(v, read, titrant_m=0.1, analyte_volume_ml=25.0, analyte="phosphoric_acid",
                               config=AnalysisConfig(electrode_fit=True))
    assert fitted.electrode["offset_ph"] == pytest.approx(0.4, abs=0.05)
    assert fitted.electrode["slope"] == pytest.approx(0.97, abs=0.01)
    stated = {i: fitted.best_pka(i) for i in (1, 2)}
    for index, truth in ((1, 2.148), (2, 7.198)):
        p = stated[index]
        assert p is not None and p.method == "curve_fit"
        lo, hi = p.budget.interval
        assert lo <= truth <= hi, (index, p.value, p.uncertainty)
    assert not any(p.supported for p in fitted.pka if p.method == "half_equivalence")


def test_a_misfit_blocks_every_pka():
    v = np.round(np.arange(0.0, 45.0, 0.25), 2)
    ph = titration_curve({"acetic_acid": 0.1}, 25.0, {"naoh": 0.1}, v, activity=True)
    bent = ph + 0.3 * np.sin(v / 4.0)   # a curve the model cannot follow (no electrode makes this)
    result = analyze_titration(v, bent, titrant_m=0.1, analyte_volume_ml=25.0, analyte="acetic_acid")
    assert result.pka and not any(p.supported for p in result.pka)
    assert all("does not describe" in p.reason for p in result.pka if np.isfinite(p.value))


def test_gran_agrees_on_a_clean_curve_and_is_independent_of_the_offset():
    v = np.round(np.arange(0.0, 40.0, 0.5), 2)
    for analyte, weak in (("acetic_acid", True), ("hcl", False)):
        ph = titration_curve({analyte: 0.1}, 25.0, {"naoh": 0.1}, v, activity=True)
        for shift in (0.0, 0.5):
            got = gran_equivalence(v, ph + shift, v_eq_guess=25.0, analyte_volume_ml=25.0, weak=weak,
                                   titrant_is_base=True, activity=True, titrant_m=0.1, analyte_m=0.1)
            assert {g.side for g in got} == {"before", "after"}
            for g in got:
                assert g.volume_ml == pytest.approx(25.0, abs=0.15), (analyte, shift, g)
    result = analyze_titration(v, _meter(titration_curve({"acetic_acid": 0.1}, 25.0, {"naoh": 0.1}, v,
                                                         activity=True), 0.0, 1.0, 0.005),
                               titrant_m=0.1, analyte_volume_ml=25.0, analyte="acetic_acid")
    assert result.gran and all(g["agrees"] for g in result.gran)


def test_windows_follow_the_local_spacing():
    """Fine steps to the jump, 1-1.5 mL steps after it: the endpoint stands, and a half-equivalence point in
    a 1 mL-step stretch finds its points."""
    v = np.concatenate([np.arange(0.0, 20.0, 1.0), np.arange(20.0, 26.0, 0.2), [27.0, 28.5, 30.0, 31.0, 32.5, 34.0]])
    v = np.round(v, 2)
    ph = titration_curve({"acetic_acid": 0.1}, 25.0, {"naoh": 0.1}, v, activity=True)
    result = analyze_titration(v, ph + np.random.default_rng(4).normal(0, 0.005, v.size), titrant_m=0.1,
                               analyte_volume_ml=25.0, analyte="acetic_acid")
    (eq,) = result.equivalence_points
    assert eq.supported, eq.reason
    assert abs(eq.volume_ml - 25.0) < 0.1
    half = next(p for p in result.pka if p.method == "half_equivalence")
    assert "point(s) before" not in half.reason, half.reason
    assert local_step(v, 12.5, 4) == pytest.approx(1.0)
    assert local_step(v, 26.0, 3, side=+1) == pytest.approx(1.5)


def test_typing_slips_are_flagged():
    v = np.array([0.0, 1.0, 2.0, 3.0, 2.0, 4.0])
    ph = np.array([3.0, 3.5, 3.8, 4.0, 4.9, 4.2])
    warnings, flags = volume_order_problems(v, ph)
    assert any("goes backwards from 3.000 to 2.000" in w for w in warnings)
    assert any("2 readings at 2.000 mL disagree by 1.10 pH" in w for w in warnings)
    assert (2.0, 2.0) in flags or (2.0, 3.0) in flags


def test_initial_ph_inconsistent_with_the_analyte_blocks_pka_on_a_calibrated_scale():
    v = np.round(np.arange(0.0, 40.0, 0.25), 2)
    ph = titration_curve({"acetic_acid": 0.1}, 25.0, {"naoh": 0.1}, v, activity=True)
    ph[0] += 0.7  # only the first reading is off (a probe not yet equilibrated)
    result = analyze_titration(v, ph, titrant_m=0.1, analyte_volume_ml=25.0, analyte="acetic_acid")
    assert any("initial pH" in w for w in result.warnings)
    assert not any(p.supported for p in result.pka)


@pytest.mark.parametrize("value,u,resolution,text", [
    (25.011, 0.25, None, "25.01 ± 0.25"),
    (0.10004, 0.0011, None, "0.1000 ± 0.0011"),
    (24.9996, 0.0996, None, "25.00 ± 0.10"),
    (10.904, 0.078, 0.5, "10.90 ± 0.08"),     # written to 0.5 mL: one decimal finer, u rounded up
    (2.50634, 0.0003, 0.01, "2.506 ± 0.001"),
])
def test_values_rounded_to_their_uncertainty(value, u, resolution, text):
    assert gum_text(value, u, resolution=resolution) == text
    v, uu, d = round_to_uncertainty(value, u, resolution)
    assert uu >= round(u, d)
