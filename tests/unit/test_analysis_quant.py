"""Endpoint arithmetic, weighing errors, comparisons with theory/literature, and the smoothing choices."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

from agentchemist.chemistry.analysis import (
    AnalysisInputError,
    analyze_titration as _analyze_titration,
    ca_concentration_from_endpoint,
    concentration_from_equivalence,
    strong_acid_concentration,
    weighing_error,
)
from agentchemist.chemistry.analysis_compare import compare_with_references
from agentchemist.chemistry.analysis_smoothing import estimate_ph_noise, smooth_curve
from agentchemist.chemistry.equilibrium import titration_curve

# These synthetic curves are concentration-based (titration_curve's default, no activity coefficients): they are
# analysed with activity=False; the analysis's own default is activity on (issue 41, one default).
analyze_titration = functools.partial(_analyze_titration, activity=False)


def test_strong_acid_concentration_from_equivalence_volume():
    assert strong_acid_concentration(25.0, 0.1, 25.0) == pytest.approx(0.1)
    assert strong_acid_concentration(12.5, 0.1, 25.0) == pytest.approx(0.05)


def test_polyprotic_concentration_uses_the_step_number():
    # Maleic acid 0.1 M, 25 mL: second equivalence at 50 mL of 0.1 M NaOH.
    assert concentration_from_equivalence(50.0, 0.1, 25.0, step=2) == pytest.approx(0.1)
    with pytest.raises(AnalysisInputError, match="step"):
        concentration_from_equivalence(50.0, 0.1, 25.0, step=0)


def test_calcium_from_edta_endpoint():
    # 25 mL sample, 0.01 M EDTA, endpoint at 12.5 mL -> 0.005 M Ca2+ (1:1 complex).
    assert ca_concentration_from_endpoint(0.01, 12.5, 25.0) == pytest.approx(0.005)


@pytest.mark.parametrize(
    ("args", "message"),
    [((0.0, 12.5, 25.0), "edta_m must be > 0"), ((0.01, float("nan"), 25.0), "endpoint_volume_ml must be finite"),
     ((0.01, 12.5, -1.0), "sample_volume_ml must be > 0"), ((0.01, "x", 25.0), "must be a number")],
)
def test_calcium_bad_input(args, message):
    with pytest.raises(AnalysisInputError, match=message):
        ca_concentration_from_endpoint(*args)


def test_weighing_error_signed_absolute_relative():
    # The paper's NaCl weighing: target 2.50 g, error about 0.096 g.
    err = weighing_error(2.50, 2.596)
    assert err.error_g == pytest.approx(0.096) and err.absolute_error_g == pytest.approx(0.096)
    assert err.relative == pytest.approx(0.096 / 2.5)
    under = weighing_error(2.50, 2.45)
    assert under.error_g == pytest.approx(-0.05) and under.absolute_error_g == pytest.approx(0.05)
    with pytest.raises(AnalysisInputError, match="target_g"):
        weighing_error(0.0, 1.0)
    with pytest.raises(AnalysisInputError, match="measured_g"):
        weighing_error(2.5, -0.1)


def _acetic(seed: int = 0):
    rng = np.random.default_rng(seed)
    v = np.concatenate(([0.0], np.cumsum(0.046875 * (1 + 0.03 * rng.standard_normal(1100)))))
    v = v[v <= 50.0]
    return v, titration_curve({"acetic_acid": 0.1}, 25.0, {"naoh": 0.1}, v) + rng.normal(0, 0.01, v.size)


def test_comparison_with_theory_and_literature():
    v, ph = _acetic(1)
    analysis = analyze_titration(v, ph, titrant_m=0.1, analyte_volume_ml=25.0, analyte="acetic_acid")
    deviations, curve = compare_with_references(analysis, analyte_m=0.1, activity=False)  # concentration-based data
    by = {(d.quantity, d.method): d for d in deviations}
    veq = by[("equivalence volume 1", "model_fit_across_jump")]
    ph_eq = by[("equivalence pH 1", "model_fit_across_jump")]
    assert ph_eq.reference == pytest.approx(8.72, abs=0.02) and abs(ph_eq.deviation) < 0.1
    assert veq.reference == pytest.approx(25.0) and veq.reference_kind == "theory"
    assert abs(veq.deviation) < 0.0234 and veq.relative_deviation == pytest.approx(veq.deviation / 25.0)
    lit = by[("pKa1", "half_equivalence")]
    assert lit.reference == pytest.approx(4.76) and lit.reference_kind == "literature" and "CRC" in lit.source
    assert abs(lit.relative_deviation) < 0.02 / 4.76
    conc = by[("analyte concentration", "equivalence_volume")]
    assert conc.reference_kind == "nominal" and abs(conc.relative_deviation) < 0.001
    # Point by point against the theoretical curve: the residual is the meter noise.
    assert curve is not None and curve.n_points == v.size
    assert curve.rms_ph == pytest.approx(0.01, rel=0.2) and abs(curve.mean_ph) < 0.003


def test_comparison_without_nominal_concentration_has_literature_only():
    v, ph = _acetic(2)
    analysis = analyze_titration(v, ph, titrant_m=0.1, analyte_volume_ml=25.0, analyte="acetic_acid")
    deviations, curve = compare_with_references(analysis)
    assert curve is None
    assert {d.reference_kind for d in deviations} == {"literature"}
    with pytest.raises(AnalysisInputError):
        compare_with_references(analysis, analyte_m=-1.0)


def test_noise_estimate_tracks_the_true_noise_and_ignores_the_jump():
    v, clean = _acetic(3)
    clean = titration_curve({"acetic_acid": 0.1}, 25.0, {"naoh": 0.1}, v)
    for sd in (0.005, 0.02, 0.05):
        noisy = clean + np.random.default_rng(4).normal(0, sd, v.size)
        assert estimate_ph_noise(v, noisy) == pytest.approx(sd, rel=0.2)


def test_window_widens_with_noise_and_grid_follows_dosing():
    v, clean = _acetic(5)
    clean = titration_curve({"acetic_acid": 0.1}, 25.0, {"naoh": 0.1}, v)
    rng = np.random.default_rng(6)
    quiet = smooth_curve(v, clean + rng.normal(0, 0.002, v.size))
    loud = smooth_curve(v, clean + rng.normal(0, 0.05, v.size))
    assert loud.window > quiet.window
    # Non-uniform volumes (coarse then fine dosing): the grid resolves the fine steps.
    v2 = np.concatenate((np.arange(0, 20, 0.5), np.arange(20, 30, 0.05), np.arange(30, 40, 0.5)))
    ph2 = titration_curve({"acetic_acid": 0.1}, 25.0, {"naoh": 0.1}, v2)
    curve = smooth_curve(v2, ph2)
    assert curve.step_ml == pytest.approx(0.05, rel=0.05)
    assert curve.grid_ml[0] == v2[0] and curve.grid_ml[-1] == pytest.approx(v2[-1])
    assert math.isfinite(curve.d1_noise_sd)
