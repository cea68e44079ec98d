"""Titration analysis against curves synthesised by the equilibrium solver with known constants.

Realistic noise: drops of 0.046875 mL with 3 % spread (the recorded cumulative volume is the true one),
pH noise sd 0.01. Tolerances from issue 9: equivalence volume within half a drop, pKa within 0.02.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

from agentchemist.chemistry.analysis import (
    AnalysisConfig,
    AnalysisInputError,
    analyze_titration as _analyze_titration,
)
from agentchemist.chemistry.equilibrium import titration_curve
from agentchemist.chemistry.reagents import UnknownReagentError

# These synthetic curves are concentration-based (titration_curve's default, no activity coefficients): they are
# analysed with activity=False; the analysis's own default is activity on (issue 41, one default).
analyze_titration = functools.partial(_analyze_titration, activity=False)


DROP_ML = 0.046875
HALF_DROP_ML = DROP_ML / 2


def synth(analyte: str, c_a: float, v_a: float, c_t: float, v_end: float, seed: int, *, noise: float = 0.01,
          spread: float = 0.03, activity: bool = False) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    drops = DROP_ML * (1.0 + spread * rng.standard_normal(int(v_end / DROP_ML * 1.1) + 10))
    v = np.concatenate(([0.0], np.cumsum(drops)))
    v = v[v <= v_end]
    ph = titration_curve({analyte: c_a}, v_a, {"naoh": c_t}, v, activity=activity) + rng.normal(0.0, noise, v.size)
    return v, ph


def pka_of(result, index: int, method: str):
    return next(p for p in result.pka if p.index == index and p.method == method)


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_hcl_naoh_equivalence_at_25_ml_within_half_drop(seed):
    v, ph = synth("hcl", 0.1, 25.0, 0.1, 50.0, seed)
    result = analyze_titration(v, ph, titrant_m=0.1, analyte_volume_ml=25.0, analyte="hcl")
    assert len(result.equivalence_points) == 1
    eq = result.equivalence_points[0]
    assert eq.supported, eq.reason
    assert abs(eq.volume_ml - 25.00) < HALF_DROP_ML
    # Volume and pH from the model fitted across the jump; the derivative estimate is the cross-check.
    assert eq.method == "model_fit_across_jump"
    assert abs(eq.d1_peak_ml - 25.00) < 2 * HALF_DROP_ML
    assert abs(eq.ph - 7.00) < 0.1  # theory: 7.00 at 25 degC
    # Strong-acid concentration from the equivalence volume, and from the fit.
    assert result.concentration["supported"]
    assert result.concentration["analyte_m"] == pytest.approx(0.1, rel=HALF_DROP_ML / 25.0)
    assert result.concentration["curve_fit"]["analyte_m"] == pytest.approx(0.1, rel=1e-3)
    # HCl has no pKa: stated as unsupported with the reason, and no number.
    (pka,) = result.pka
    assert not pka.supported and math.isnan(pka.value) and "strong acid" in pka.reason


@pytest.mark.parametrize("seed", [21, 22, 23])
def test_acetic_acid_equivalence_and_pka(seed):
    v, ph = synth("acetic_acid", 0.1, 25.0, 0.1, 50.0, seed)
    result = analyze_titration(v, ph, titrant_m=0.1, analyte_volume_ml=25.0, analyte="acetic_acid")
    (eq,) = result.equivalence_points
    assert eq.supported and abs(eq.volume_ml - 25.0) < HALF_DROP_ML
    assert abs(eq.ph - 8.72) < 0.1  # acetate: alkaline equivalence point (theory 8.72)
    half = pka_of(result, 1, "half_equivalence")
    fit = pka_of(result, 1, "curve_fit")
    assert half.supported and fit.supported, (half.reason, fit.reason)
    assert abs(half.value - 4.76) < 0.02
    assert abs(fit.value - 4.76) < 0.02
    assert half.half_equivalence_volume_ml == pytest.approx(eq.volume_ml / 2)
    # The fit's standard error is tiny; the stated uncertainty is the budget's combined one, which includes
    # the electrode's calibration offset (0.02) and slope (0.5 % of 4.76 - 7).
    assert 0.02 <= fit.uncertainty < 0.03 and 0.02 <= half.uncertainty < 0.05
    assert "electrode offset" in fit.reason and fit.uncertainty == pytest.approx(fit.budget.combined)
    assert {c.source for c in fit.budget.components} >= {"fit (residuals' correlation)", "electrode offset",
                                                         "electrode slope", "temperature"}
    assert result.best_pka(1) is not None


@pytest.mark.parametrize("seed", [31, 32])
def test_maleic_acid_two_equivalence_points_and_both_pka(seed):
    v, ph = synth("maleic_acid", 0.1, 25.0, 0.1, 60.0, seed)
    result = analyze_titration(v, ph, titrant_m=0.1, analyte_volume_ml=25.0, analyte="maleic_acid")
    eq1, eq2 = result.equivalence_points
    assert eq1.supported and eq2.supported
    # The second (sharp) jump meets the half-drop tolerance; the first is broad and shallow (pH 3 -> 5
    # over several mL), so noise moves its inflection by about a drop. The fit pins both.
    assert abs(eq2.volume_ml - 50.0) < HALF_DROP_ML
    assert abs(eq1.volume_ml - 25.0) < 2 * HALF_DROP_ML
    assert result.fit is not None and result.fit.converged
    assert [abs(x - y) < HALF_DROP_ML for x, y in zip(result.fit.equivalence_volumes_ml, [25.0, 50.0])] == [True, True]
    # pKa1: half equivalence is biased (maleic acid's first proton is too strong) and says so;
    # the curve fit recovers it. pKa2: both methods work.
    half1 = pka_of(result, 1, "half_equivalence")
    assert not half1.supported and "not the pKa" in half1.reason
    assert abs(pka_of(result, 1, "curve_fit").value - 1.92) < 0.02
    assert pka_of(result, 1, "curve_fit").supported
    for method in ("half_equivalence", "curve_fit"):
        est = pka_of(result, 2, method)
        assert est.supported, est.reason
        assert abs(est.value - 6.23) < 0.02
    assert pka_of(result, 2, "half_equivalence").half_equivalence_volume_ml == pytest.approx(
        (eq1.volume_ml + eq2.volume_ml) / 2)


def test_activity_scale_data_fitted_with_activities_give_thermodynamic_pka():
    # A glass electrode reads -log a(H+): at I ~ 0.05-0.1 M the HA-/A2- pair of maleic acid is shifted by
    # about 0.3 at half equivalence. The fit with Davies activities recovers the constants; the
    # half-equivalence estimate is flagged with the size of the shift.
    v, ph = synth("maleic_acid", 0.1, 25.0, 0.1, 60.0, 35, activity=True)
    result = analyze_titration(v, ph, titrant_m=0.1, analyte_volume_ml=25.0, analyte="maleic_acid", activity=True)
    assert abs(pka_of(result, 1, "curve_fit").value - 1.92) < 0.02
    assert abs(pka_of(result, 2, "curve_fit").value - 6.23) < 0.02
    half2 = pka_of(result, 2, "half_equivalence")
    assert not half2.supported and "activity" in half2.reason and half2.value < 6.0


def test_activity_scale_data_fitted_with_concentrations_is_called_a_misfit():
    v, ph = synth("acetic_acid", 0.1, 25.0, 0.1, 50.0, 36, activity=True)
    result = analyze_titration(v, ph, titrant_m=0.1, analyte_volume_ml=25.0, analyte="acetic_acid")
    assert not pka_of(result, 1, "curve_fit").supported
    assert any("does not describe the data" in w and "activity=True" in w for w in result.warnings)


@pytest.mark.parametrize("step", [0.05, DROP_ML])
def test_noise_free_hcl_lands_on_25_ml(step):
    v = np.arange(0.0, 50.0, step)
    ph = titration_curve({"hcl": 0.1}, 25.0, {"naoh": 0.1}, v)
    result = analyze_titration(v, ph, titrant_m=0.1, analyte_volume_ml=25.0, analyte="hcl", fit=False)
    volume = result.equivalence_points[0].volume_ml
    if step == 0.05:  # a point sits on 25.00 mL exactly
        assert round(volume, 2) == 25.00
    else:  # 25.00 mL falls between drops 533 and 534: located within half a drop
        assert abs(volume - 25.0) < HALF_DROP_ML


def test_smoothing_parameters_are_reported_and_chosen_from_data():
    v, ph = synth("acetic_acid", 0.1, 25.0, 0.1, 50.0, 1)
    result = analyze_titration(v, ph)
    s = result.smoothing
    assert s["method"] == "savitzky_golay" and s["polyorder"] == 2
    assert s["window_points"] % 2 == 1 and s["window_points"] >= 5
    assert s["grid_step_ml"] == pytest.approx(DROP_ML, rel=0.1)
    assert s["noise_sd_ph"] == pytest.approx(0.01, rel=0.3)
    assert "cross-validation" in s["reason"]
    assert result.grid_ml.size == result.ph_smooth.size == result.d1.size == result.d2.size
    assert np.all(np.diff(result.grid_ml) > 0) and np.allclose(np.diff(result.grid_ml), s["grid_step_ml"])
    # Without concentrations nothing quantitative is claimed, but the curve is analysed.
    assert result.concentration is None and result.fit is None
    assert any("titrant concentration" in w for w in result.warnings)


def test_unsorted_input_with_duplicate_volumes_is_sorted_and_averaged():
    v, ph = synth("acetic_acid", 0.1, 25.0, 0.1, 50.0, 2)
    v2 = np.concatenate((v, v[:10]))
    ph2 = np.concatenate((ph, ph[:10] + 0.02))
    order = np.random.default_rng(0).permutation(v2.size)
    result = analyze_titration(v2[order], ph2[order])
    assert np.all(np.diff(result.volume_ml) > 0)
    assert result.volume_ml.size == v.size
    assert result.ph[:10] == pytest.approx(ph[:10] + 0.01)


def test_too_few_points_concludes_nothing_and_says_why():
    v, ph = synth("acetic_acid", 0.1, 25.0, 0.1, 50.0, 3)
    result = analyze_titration(v[:6], ph[:6], titrant_m=0.1, analyte_volume_ml=25.0, analyte="acetic_acid")
    assert result.equivalence_points == [] and result.concentration is None and result.fit is None
    assert all(not p.supported and math.isnan(p.value) for p in result.pka)
    assert any("only 6 distinct volume" in w for w in result.warnings)


def test_no_jump_gives_no_equivalence_point_and_a_reason():
    v, ph = synth("acetic_acid", 0.1, 25.0, 0.1, 50.0, 4)
    keep = v < 15.0  # buffer region only: the run never reached the jump
    result = analyze_titration(v[keep], ph[keep], titrant_m=0.1, analyte_volume_ml=25.0, analyte="acetic_acid")
    assert result.equivalence_points == []
    assert any(w.startswith("no equivalence point") for w in result.warnings)
    assert not any(p.method == "half_equivalence" and p.supported for p in result.pka)
    # The concentration can only come from the model here: reported, but not as a finding.
    assert result.concentration["method"] == "curve_fit" and not result.concentration["supported"]


def test_run_that_stops_inside_the_jump_is_flagged():
    v, ph = synth("acetic_acid", 0.1, 25.0, 0.1, 50.0, 5)
    keep = v < 25.1
    result = analyze_titration(v[keep], ph[keep])
    assert not result.supported_equivalence_points
    assert any("still changing steeply at the end" in w for w in result.warnings)


def test_flagged_data_over_the_jump_make_the_claims_unsupported():
    v, ph = synth("acetic_acid", 0.1, 25.0, 0.1, 50.0, 6)
    result = analyze_titration(v, ph, titrant_m=0.1, analyte_volume_ml=25.0, analyte="acetic_acid",
                               quality_flags=[(24.95, 25.0)])
    (eq,) = result.equivalence_points
    assert not eq.supported and "quality-flagged" in eq.reason
    assert abs(eq.volume_ml - 25.0) < 0.05  # still located, just not claimed
    half = pka_of(result, 1, "half_equivalence")
    assert not half.supported and "equivalence point 1 is not supported" in half.reason
    assert not result.concentration["supported"]
    assert result.fit.excluded_points >= 1


def test_flag_at_half_equivalence_only_affects_that_pka():
    v, ph = synth("acetic_acid", 0.1, 25.0, 0.1, 50.0, 7)
    result = analyze_titration(v, ph, titrant_m=0.1, analyte_volume_ml=25.0, analyte="acetic_acid",
                               quality_flags=[(12.45, 12.55)])
    assert result.equivalence_points[0].supported
    half = pka_of(result, 1, "half_equivalence")
    assert not half.supported and "quality-flagged data at 12.450-12.550 mL" in half.reason


def test_gap_across_the_jump_is_not_enough_evidence():
    v, ph = synth("hcl", 0.1, 25.0, 0.1, 50.0, 8)
    keep = (v < 23.0) | (v > 27.0)
    result = analyze_titration(v[keep], ph[keep], titrant_m=0.1, analyte_volume_ml=25.0, analyte="hcl")
    (eq,) = result.equivalence_points
    assert not eq.supported and "gap without data" in eq.reason
    assert eq.uncertainty_ml > 0.5  # the gap dominates the uncertainty


def test_unknown_analyte_is_fitted_as_a_generic_acid():
    v, ph = synth("acetic_acid", 0.1, 25.0, 0.1, 50.0, 9)
    result = analyze_titration(v, ph, titrant_m=0.1, analyte_volume_ml=25.0)
    assert result.fit is not None and "unknown 1-protic acid" in result.fit.model
    assert abs(pka_of(result, 1, "curve_fit").value - 4.76) < 0.02


def test_phosphoric_acid_third_jump_is_reported_missing():
    v, ph = synth("phosphoric_acid", 0.1, 25.0, 0.1, 80.0, 10)
    result = analyze_titration(v, ph, titrant_m=0.1, analyte_volume_ml=25.0, analyte="phosphoric_acid", fit=False)
    assert [round(e.volume_ml) for e in result.equivalence_points] == [25, 50]
    assert any("expected 3 equivalence point(s)" in w for w in result.warnings)
    assert abs(pka_of(result, 2, "half_equivalence").value - 7.20) < 0.02


def test_expected_equivalents_keeps_the_most_prominent_jumps():
    v, ph = synth("maleic_acid", 0.1, 25.0, 0.1, 60.0, 33)
    result = analyze_titration(v, ph, expected_equivalents=1, fit=False)
    (eq,) = result.equivalence_points
    assert abs(eq.volume_ml - 50.0) < HALF_DROP_ML  # the sharp second jump


def test_analysis_is_deterministic():
    v, ph = synth("maleic_acid", 0.1, 25.0, 0.1, 60.0, 34)
    a = analyze_titration(v, ph, titrant_m=0.1, analyte_volume_ml=25.0, analyte="maleic_acid")
    b = analyze_titration(v, ph, titrant_m=0.1, analyte_volume_ml=25.0, analyte="maleic_acid")
    assert [e.volume_ml for e in a.equivalence_points] == [e.volume_ml for e in b.equivalence_points]
    assert [p.value for p in a.pka] == [p.value for p in b.pka]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"volume_ml": [0, 1, float("nan")], "ph": [1, 2, 3]}, "volume_ml contains NaN"),
        ({"volume_ml": [0, 1, 2], "ph": [1, float("inf"), 3]}, "ph contains NaN or infinity"),
        ({"volume_ml": [0, 1, 2], "ph": [1, 2]}, "has 3 values but ph has 2"),
        ({"volume_ml": [-1, 1, 2], "ph": [1, 2, 3]}, "volume_ml must be >= 0"),
        ({"volume_ml": [0, 1, 2], "ph": [1, 2, 30]}, "ph values must lie in -2..16"),
        ({"volume_ml": [0, 1, 2], "ph": [1, 2, 3], "titrant_m": -0.1}, "titrant_m must be a finite number > 0"),
        ({"volume_ml": [0, 1, 2], "ph": [1, 2, 3], "analyte_volume_ml": 0}, "analyte_volume_ml must be"),
        ({"volume_ml": [0, 1, 2], "ph": [1, 2, 3], "expected_equivalents": 0}, "expected_equivalents"),
        ({"volume_ml": [0, 1, 2], "ph": [1, 2, 3], "quality_flags": [(2.0, 1.0)]}, "start <= end"),
        ({"volume_ml": [0, 1, 2], "ph": [1, 2, 3], "titrant": "water"}, "not a strong acid or base"),
    ],
)
def test_bad_input_raises_a_typed_error_naming_the_problem(kwargs, message):
    with pytest.raises(AnalysisInputError, match=message):
        analyze_titration(kwargs.pop("volume_ml"), kwargs.pop("ph"), **kwargs)


def test_unknown_reagent_name_is_refused():
    with pytest.raises(UnknownReagentError):
        analyze_titration(np.arange(10.0), np.linspace(2, 12, 10), analyte="unobtainium")


def test_config_is_validated():
    with pytest.raises(ValueError, match="min_points"):
        AnalysisConfig(min_points=2)
    with pytest.raises(ValueError, match="max_gap_factor"):
        AnalysisConfig(max_gap_factor=0.5)
