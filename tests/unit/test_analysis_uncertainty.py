"""Uncertainty budgets (chemistry/analysis_uncertainty.py): arithmetic, the residual-correlation correction
on synthetic AR(1) data, the settling-lag bound, and the fit's linear sensitivities against real refits."""

from __future__ import annotations

import math

import numpy as np
import pytest

from agentchemist.chemistry.analysis import UncertaintyInputs, analyze_titration
from agentchemist.chemistry.analysis_fit import fit_titration_curve
from agentchemist.chemistry.analysis_uncertainty import (
    UncertaintyComponent,
    autocorrelation_factor,
    combine_budget,
    concentration_budget,
    equivalence_budget,
    half_equivalence_budget,
    settle_lag_bias,
    steady_lag,
)
from agentchemist.chemistry.equilibrium import titration_curve
from agentchemist.chemistry.reagents import default_library

INPUTS = UncertaintyInputs()


def test_budget_combines_by_root_sum_of_squares_and_states_the_interval():
    comps = [UncertaintyComponent("a", 0.03), UncertaintyComponent("b", 0.04), UncertaintyComponent("zero", 0.0)]
    b = combine_budget("pKa1", "", 4.76, comps, INPUTS)
    assert [c.source for c in b.components] == ["a", "b"]  # a zero component is not listed
    assert b.combined == pytest.approx(0.05)
    assert b.expanded == pytest.approx(0.10)
    assert b.interval == pytest.approx((4.66, 4.86))
    assert b.largest().source == "b"
    d = b.as_dict()
    assert d["combined_standard_uncertainty"] == pytest.approx(0.05) and d["coverage_factor"] == 2.0
    assert d["interval"] == pytest.approx([4.66, 4.86])
    k3 = combine_budget("x", "", 1.0, comps, UncertaintyInputs(coverage_factor=3.0))
    assert k3.expanded == pytest.approx(0.15)


@pytest.mark.parametrize("bad", [math.nan, -0.01, math.inf])
def test_a_non_finite_or_negative_component_is_refused(bad):
    with pytest.raises(ValueError, match="component 'a'"):
        combine_budget("pKa1", "", 4.76, [UncertaintyComponent("a", bad)], INPUTS)


@pytest.mark.parametrize("field", ["titrant_rel_sd", "settle_lag_bound_ph", "coverage_factor"])
def test_inputs_refuse_nan_and_negative(field):
    with pytest.raises(ValueError, match=field):
        UncertaintyInputs(**{field: math.nan})
    with pytest.raises(ValueError, match=field):
        UncertaintyInputs(**{field: -1.0})
    with pytest.raises(ValueError, match="settle_lag_carry"):
        UncertaintyInputs(settle_lag_carry=1.0)


def test_concentration_and_equivalence_budgets_add_relative_uncertainties():
    veq = equivalence_budget(1, 25.0, 0.01, 0.05, INPUTS)
    drops = 25.0 / 0.05
    expected = math.sqrt(0.01**2 + (25.0 * 0.01) ** 2 + (math.sqrt(drops) * 0.05 * 0.032) ** 2)
    assert veq.combined == pytest.approx(expected)
    c = concentration_budget(0.1, veq, INPUTS)
    rel = math.sqrt((expected / 25.0) ** 2 + 0.005**2 + 0.002**2)
    assert c.combined == pytest.approx(0.1 * rel)
    assert c.unit == "mol/L" and veq.unit == "mL"


def _ar1(n: int, phi: float, rng: np.random.Generator) -> np.ndarray:
    e = rng.standard_normal(n)
    x = np.empty(n)
    x[0] = e[0] / math.sqrt(1 - phi**2)
    for i in range(1, n):
        x[i] = phi * x[i - 1] + e[i]
    return x


def test_autocorrelation_factor_is_one_for_white_noise_and_large_for_ar1():
    rng = np.random.default_rng(1)
    factor, rho = autocorrelation_factor(rng.standard_normal(4000))
    assert factor < 1.1 and rho < 0.05
    factor, rho = autocorrelation_factor(_ar1(4000, 0.9, rng))
    assert rho == pytest.approx(0.9, abs=0.03)
    assert factor == pytest.approx(19.0, rel=0.3)
    # negative correlation never shrinks an uncertainty; too few points: no correction
    assert autocorrelation_factor(np.array([1.0, -1.0] * 50)) == (1.0, 0.0)
    assert autocorrelation_factor(np.array([1.0, 2.0])) == (1.0, 0.0)


def test_effective_sample_size_restores_the_coverage_of_a_mean_of_ar1_data():
    """The mean of correlated data: the naive sigma / sqrt(n) covers far less than 95 %; inflated by
    sqrt((1 + rho) / (1 - rho)) it covers about 95 % (AR(1), phi 0.8, 300 points, 300 replicates)."""
    rng = np.random.default_rng(7)
    naive = inflated = 0
    trials = 300
    for _ in range(trials):
        x = _ar1(300, 0.8, rng)
        se = x.std(ddof=1) / math.sqrt(x.size)
        factor, _ = autocorrelation_factor(x - x.mean())
        naive += abs(x.mean()) <= 2 * se
        inflated += abs(x.mean()) <= 2 * se * math.sqrt(factor)
    assert naive / trials < 0.6
    assert 0.88 <= inflated / trials <= 0.99


def test_settle_lag_bound_carries_over_and_saturates():
    steps = np.full(40, 0.005)
    rising = np.concatenate(([3.0], 3.0 + np.cumsum(steps)))
    lag = settle_lag_bias(rising, 0.05, 0.75)
    assert lag[0] == 0.0 and np.all(lag <= 0)
    # equal small steps: the bound tends to carry / (1 - carry) = 3 steps
    assert lag[-1] == pytest.approx(-0.015, rel=1e-3)
    assert steady_lag(0.005, UncertaintyInputs(settle_lag_bound_ph=0.05)) == pytest.approx(0.015)
    # large steps saturate at the bound; a falling titration lags above the bulk pH
    falling = 12.0 - np.arange(20) * 0.5
    assert np.max(settle_lag_bias(falling, 0.05, 0.75)) == pytest.approx(0.05)
    assert settle_lag_bias(np.array([]), 0.05, 0.75).size == 0


def test_half_equivalence_budget_corrects_towards_the_bulk_ph():
    inputs = UncertaintyInputs.for_settled_readings()
    up = half_equivalence_budget(1, 4.70, [], ph_step_per_drop=0.004, ph_calibration_sd=0.02, temperature_c=25.0,
                                 inputs=inputs, direction=1)
    assert up.correction == pytest.approx(0.006) and up.value == pytest.approx(4.706)
    down = half_equivalence_budget(1, 4.70, [], ph_step_per_drop=0.004, ph_calibration_sd=0.02, temperature_c=25.0,
                                   inputs=inputs, direction=-1)
    assert down.correction == pytest.approx(-0.006)
    plain = half_equivalence_budget(1, 4.70, [], ph_step_per_drop=0.004, ph_calibration_sd=0.02, temperature_c=25.0,
                                    inputs=UncertaintyInputs())
    assert plain.correction == 0.0 and "settling lag" not in {c.source for c in plain.components}


def _acetic(seed: int):
    rng = np.random.default_rng(seed)
    v = np.arange(0.0, 40.0, 0.1)
    ph = titration_curve({"acetic_acid": 0.1}, 25.0, {"naoh": 0.1}, v, activity=True)
    ph = ph + 0.005 * rng.standard_normal(v.size)
    return v, ph


def test_fit_sensitivities_predict_a_real_refit():
    """d(pKa)/d(source) from the Jacobian against fitting the perturbed data again."""
    library = default_library()
    v, ph = _acetic(3)
    kw = dict(analyte=library.get("acetic_acid"), titrant=library.get("naoh"), titrant_m=0.1,
              analyte_volume_ml=25.0, concentration_guess_m=0.1, activity=True)
    base = fit_titration_curve(v, ph, **kw)
    s = base.source_sensitivities
    assert s["ph_offset"]["pka1"] == pytest.approx(1.0, abs=0.05)  # a buffer's pH moves one to one with pKa
    shifted = fit_titration_curve(v, ph + 0.02, **kw)
    assert shifted.parameters["pka1"] - base.parameters["pka1"] == pytest.approx(0.02 * s["ph_offset"]["pka1"], rel=0.1)
    scaled = fit_titration_curve(v * 1.01, ph, **kw)
    predicted = -0.01 * s["volume_scale"]["analyte_m"]  # the data's volumes read 1 % high: minus the model change
    assert scaled.parameters["analyte_m"] - base.parameters["analyte_m"] == pytest.approx(-predicted, rel=0.15)
    sloped = fit_titration_curve(v, 7.0 + 1.01 * (ph - 7.0), **kw)
    assert sloped.parameters["pka1"] - base.parameters["pka1"] == pytest.approx(0.01 * s["ph_slope"]["pka1"], rel=0.15)


def test_analysis_states_budgets_and_corrects_only_settle_gated_readings():
    v, ph = _acetic(4)
    plain = analyze_titration(v, ph, titrant_m=0.1, analyte_volume_ml=25.0, analyte="acetic_acid", activity=True)
    fit = next(p for p in plain.pka if p.method == "curve_fit")
    assert fit.supported and fit.budget is not None and fit.budget.correction == 0.0
    assert fit.uncertainty == pytest.approx(fit.budget.combined)
    assert abs(fit.value - 4.76) <= fit.budget.expanded
    eq = plain.equivalence_points[0]
    assert eq.budget.combined > eq.uncertainty_ml  # the drop volume calibration is added to the location
    assert plain.concentration["budget"]["combined_standard_uncertainty"] == pytest.approx(
        plain.concentration["uncertainty_m"])
    settled = analyze_titration(v, ph, titrant_m=0.1, analyte_volume_ml=25.0, analyte="acetic_acid", activity=True,
                                uncertainty=UncertaintyInputs.for_settled_readings())
    lagged = next(p for p in settled.pka if p.method == "curve_fit")
    assert lagged.budget.correction > 0  # a rising titration's readings lag below: the pKa is raised
    assert lagged.value == pytest.approx(fit.value + lagged.budget.correction)
    assert "settling lag" in {c.source for c in lagged.budget.components}


def test_a_run_stopped_before_any_jump_states_no_fitted_pka():
    """Phosphoric acid stopped at pH 3 (before the first equivalence point): a wrong pKa set fits as well as
    the right one, so no fitted pKa is stated and the reason says why (issue 21: the data cannot support it)."""
    rng = np.random.default_rng(2)
    v = np.arange(0.0, 4.4, 0.046875)
    ph = titration_curve({"phosphoric_acid": 0.05}, 10.0, {"naoh": 0.1}, v, activity=True)
    ph = ph + 0.005 * rng.standard_normal(v.size)
    result = analyze_titration(v, ph, titrant_m=0.1, analyte_volume_ml=10.0, analyte="phosphoric_acid", activity=True)
    assert not result.supported_equivalence_points
    fitted = [p for p in result.pka if p.method == "curve_fit"]
    assert fitted and not any(p.supported for p in fitted)
    assert any("anchors the concentration" in p.reason for p in fitted)
    assert result.best_pka(1) is None and result.best_pka(2) is None
    assert result.concentration is None or not result.concentration["supported"]
