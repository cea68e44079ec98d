"""Ca2+/EDTA titration with calconcarboxylic acid: constants, mass balance, colour and its endpoint."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import brentq

from agentchemist.chemistry.complexometric import (
    COLOUR_CA_INDICATOR,
    COLOUR_FREE_INDICATOR,
    LOG_KF_CA_EDTA,
    ca_edta_equivalence_volume_ml,
    ca_edta_state,
    conditional_formation_constant,
)
from agentchemist.chemistry.equilibrium import ChemistryInputError

DROP_ML = 0.046875
CA_M, CA_ML, EDTA_M = 0.01, 25.0, 0.01
# A small pinch of indicator (about 0.2 mg): large amounts bind enough Ca to move the colour change
# earlier, the real "indicator error" (see test_more_indicator_changes_colour_earlier).
INDICATOR_MOL = 5e-7


def state_at(v_ml: float, indicator_mol: float = INDICATOR_MOL, ph: float = 12.5):
    return ca_edta_state(CA_M * CA_ML * 1e-3, EDTA_M * v_ml * 1e-3, indicator_mol, (CA_ML + v_ml) * 1e-3, ph)


def test_conditional_constant_matches_alpha_y4_by_hand():
    ka = [10.0**-p for p in (2.0, 2.67, 6.16, 10.26)]
    for ph in (8.0, 10.0, 12.5, 13.0):
        h = 10.0**-ph
        den = h**4 + ka[0] * h**3 + ka[0] * ka[1] * h**2 + ka[0] * ka[1] * ka[2] * h + np.prod(ka)
        alpha = np.prod(ka) / den
        assert conditional_formation_constant(ph) == pytest.approx(alpha * 10**LOG_KF_CA_EDTA, rel=1e-10)
    assert np.log10(conditional_formation_constant(12.5)) == pytest.approx(10.65, abs=0.01)
    values = conditional_formation_constant(np.array([6.0, 8.0, 10.0, 12.0]))
    assert np.all(np.diff(values) > 0)


def test_equivalence_volume():
    assert ca_edta_equivalence_volume_ml(CA_M, CA_ML, EDTA_M) == pytest.approx(25.0)
    assert ca_edta_equivalence_volume_ml(0.02, 10.0, 0.05) == pytest.approx(4.0)
    with pytest.raises(ChemistryInputError, match="edta_m"):
        ca_edta_equivalence_volume_ml(0.01, 25.0, 0.0)


@pytest.mark.parametrize("v_ml", [0.0, 5.0, 24.9, 25.0, 25.1, 40.0])
def test_mass_balances_hold(v_ml):
    s = state_at(v_ml)
    volume_l = (CA_ML + v_ml) * 1e-3
    ca_total = CA_M * CA_ML * 1e-3 / volume_l
    edta_total = EDTA_M * v_ml * 1e-3 / volume_l
    indicator_total = INDICATOR_MOL / volume_l
    assert s.ca_free_m + s.ca_edta_m + s.ca_indicator_m == pytest.approx(ca_total, rel=1e-10)
    assert s.ca_indicator_m + s.indicator_free_m == pytest.approx(indicator_total, rel=1e-10)
    assert 0.0 <= s.ca_edta_m <= edta_total * (1 + 1e-12)
    assert s.fraction_metal_indicator == pytest.approx(s.ca_indicator_m / indicator_total)
    # the equilibria themselves: [CaY] = K'f [Ca][Y'] with Y' = Y_T - CaY
    if v_ml > 0:
        k = conditional_formation_constant(12.5)
        assert s.ca_edta_m == pytest.approx(k * s.ca_free_m * (edta_total - s.ca_edta_m), rel=1e-6)


def test_colour_is_magenta_before_and_blue_after_the_endpoint():
    v_eq = ca_edta_equivalence_volume_ml(CA_M, CA_ML, EDTA_M)
    for v in np.arange(0.0, v_eq - 2 * DROP_ML, 1.0):
        s = state_at(float(v))
        assert 300.0 <= s.hue_deg < 360.0, (v, s.hue_deg)
        assert s.rgb[0] > s.rgb[2]
    for v in np.arange(v_eq + 2 * DROP_ML, 40.0, 1.0):
        s = state_at(float(v))
        assert 210.0 <= s.hue_deg <= 240.0, (v, s.hue_deg)
        assert s.rgb[2] > s.rgb[0]
    assert state_at(0.0).rgb == pytest.approx(COLOUR_CA_INDICATOR, abs=1)
    assert state_at(40.0).rgb == pytest.approx(COLOUR_FREE_INDICATOR, abs=1)


def _transition_volume(indicator_mol: float) -> float:
    """Volume at which half of the indicator is free (colour midway); the fraction falls with volume."""
    assert state_at(23.0, indicator_mol).fraction_metal_indicator > 0.5
    assert state_at(27.0, indicator_mol).fraction_metal_indicator < 0.5
    return brentq(lambda v: state_at(v, indicator_mol).fraction_metal_indicator - 0.5, 23.0, 27.0, xtol=1e-6)


def test_colour_changes_within_one_drop_of_equivalence():
    v_eq = ca_edta_equivalence_volume_ml(CA_M, CA_ML, EDTA_M)
    assert abs(_transition_volume(INDICATOR_MOL) - v_eq) <= DROP_ML
    # and the change is sharp: one drop either side of the midpoint is clearly red / clearly blue
    v_mid = _transition_volume(INDICATOR_MOL)
    assert state_at(v_mid - 1.5 * DROP_ML).hue_deg > 300.0
    assert state_at(v_mid + 1.5 * DROP_ML).hue_deg < 240.0


def test_more_indicator_changes_colour_earlier():
    v_small = _transition_volume(INDICATOR_MOL)
    v_large = _transition_volume(20 * INDICATOR_MOL)
    assert v_large < v_small - DROP_ML


def test_indicator_colour_depends_on_ph():
    # Below pH ~ 9 the free indicator is wine red, so the endpoint would not show: why NaOH is added.
    after = ca_edta_state(2.5e-4, 3.0e-4, INDICATOR_MOL, 0.055, ph=8.0)
    assert after.fraction_metal_indicator < 0.01
    assert after.hue_deg > 300.0
    assert ca_edta_state(2.5e-4, 3.0e-4, INDICATOR_MOL, 0.055, ph=12.5).hue_deg < 240.0


def test_no_indicator_or_no_calcium():
    clear = ca_edta_state(2.5e-4, 1e-4, 0.0, 0.035)
    assert clear.fraction_metal_indicator == 0.0 and clear.ca_indicator_m == 0.0
    assert min(clear.rgb) > 200  # colourless
    no_ca = ca_edta_state(0.0, 1e-4, INDICATOR_MOL, 0.035)
    assert no_ca.ca_free_m == 0.0 and no_ca.fraction_metal_indicator == 0.0
    assert 210.0 <= no_ca.hue_deg <= 240.0
    no_edta = ca_edta_state(2.5e-4, 0.0, INDICATOR_MOL, 0.025)
    assert no_edta.ca_edta_m == 0.0
    assert no_edta.ca_free_m + no_edta.ca_indicator_m == pytest.approx(0.01, rel=1e-12)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(ca_mol=float("nan")), "ca_mol"),
        (dict(edta_mol=-1e-4), "edta_mol"),
        (dict(indicator_mol=float("inf")), "indicator_mol"),
        (dict(volume_l=0.0), "volume_l"),
        (dict(ph=15.0), "pH"),
        (dict(ph=float("nan")), "pH"),
    ],
)
def test_bad_input_raises(kwargs, match):
    args = dict(ca_mol=2.5e-4, edta_mol=1e-4, indicator_mol=INDICATOR_MOL, volume_l=0.035, ph=12.5)
    with pytest.raises(ChemistryInputError, match=match):
        ca_edta_state(**{**args, **kwargs})
