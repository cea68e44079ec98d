"""The standardisation family's result (experiments/standardisation/concentration.py): c(NaOH) from a
weighed KHP mass and the equivalence volume, and its uncertainty budget, checked against hand-worked numbers."""
from __future__ import annotations

import math

import pytest

from agentchemist.chemistry.reagents import default_library
from agentchemist.experiments.standardisation.concentration import (
    KHP,
    PrimaryStandard,
    resolution_of,
    standardise,
)


def test_khp_agrees_with_the_reagent_library():
    khp = default_library().get("potassium hydrogen phthalate")
    assert khp.name == KHP.reagent
    assert khp.molar_mass_g_mol == KHP.molar_mass_g_mol
    # one proton left for NaOH (pKa2 5.41); the first is gone in KHP
    assert khp.pka == (2.95, 5.41) and khp.protons_as_added == 1 == KHP.protons
    assert default_library().get("KHP") is khp and default_library().get("potassium biphthalate") is khp


def test_concentration_from_mass_and_equivalence_volume():
    # 0.5105 g / 204.22 g/mol = 2.49976 mmol; over 25.33 mL: 0.098688 mol/L
    s = standardise(0.5105, 25.33, 0.05, balance_resolution_g=0.0001, nominal_m=0.1)
    assert s.concentration_m == pytest.approx(0.5105 / 204.22 / 0.02533, rel=1e-12)
    assert s.concentration_m == pytest.approx(0.098688, abs=5e-6)
    assert s.deviation_from_nominal == pytest.approx(-0.01312, abs=1e-4)


def test_the_budget_combines_volume_mass_and_purity_in_quadrature():
    s = standardise(0.5105, 25.33, 0.05, balance_resolution_g=0.0001)
    c = s.concentration_m
    rel_v = 0.05 / 25.33
    rel_m = 0.0001 / math.sqrt(6) / 0.5105          # two readings of a 0.1 mg balance
    rel_p = 0.0005 / math.sqrt(3)                    # 99.95-100.05 %, rectangular
    assert s.uncertainty_m == pytest.approx(c * math.sqrt(rel_v**2 + rel_m**2 + rel_p**2), rel=1e-9)
    assert s.expanded_m == pytest.approx(2 * s.uncertainty_m)
    sources = {comp.source: comp.standard_uncertainty for comp in s.budget.components}
    assert sources["equivalence volume"] == pytest.approx(c * rel_v)
    assert sources["khp mass"] == pytest.approx(c * rel_m)
    assert sources["khp purity"] == pytest.approx(c * rel_p)
    one = standardise(0.5105, 25.33, 0.05, balance_resolution_g=0.0001, by_difference=False)
    assert one.budget.components[1].standard_uncertainty == pytest.approx(c * rel_m / math.sqrt(2))


def test_a_coarse_mass_dominates_the_uncertainty():
    # "0.51 g" carries 0.01 g: 0.8 % of the mass, far above a 0.2 % equivalence volume
    s = standardise(0.51, 25.0, 0.05, balance_resolution_g=resolution_of("0.51"))
    assert s.budget.largest().source == "khp mass"
    assert s.uncertainty_m / s.concentration_m > 0.008


def test_the_label_agrees_only_within_the_expanded_interval():
    # found 1.3 % below the label: within U = 2 x 0.8 % (a 0.2 mL V_eq), outside U = 2 x 0.09 % (0.02 mL)
    close = standardise(0.5105, 25.33, 0.20, balance_resolution_g=0.0001, nominal_m=0.1)
    assert close.label_agrees
    far = standardise(0.5105, 25.33, 0.02, balance_resolution_g=0.0001, nominal_m=0.1)
    assert far.label_agrees is False
    assert standardise(0.5105, 25.33, 0.02, balance_resolution_g=0.0001).label_agrees is None


def test_resolution_of_the_stated_mass():
    assert resolution_of("0.5105") == pytest.approx(1e-4)
    assert resolution_of("0.51") == pytest.approx(0.01)
    assert resolution_of("2") == 1.0
    assert resolution_of(0.2042) == pytest.approx(1e-4)
    with pytest.raises(ValueError):
        resolution_of("about half a gram")


@pytest.mark.parametrize("kwargs", [dict(mass_g=0.0), dict(equivalence_ml=-1.0), dict(equivalence_u_ml=math.nan),
                                    dict(balance_resolution_g=-0.1), dict(nominal_m=0.0)])
def test_refuses_impossible_inputs(kwargs):
    args = dict(mass_g=0.5, equivalence_ml=25.0, equivalence_u_ml=0.05, balance_resolution_g=1e-4) | kwargs
    with pytest.raises(ValueError):
        standardise(**args)


def test_a_standard_with_an_impossible_purity_is_refused():
    with pytest.raises(ValueError, match="purity"):
        PrimaryStandard("x", 100.0, 1.001, 0.999, "nowhere")
