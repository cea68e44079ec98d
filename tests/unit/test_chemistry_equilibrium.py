"""Acid-base solver: analytic limits, an independent 60-digit reference, vectorisation, bad input."""

from __future__ import annotations

import math
from decimal import Decimal, localcontext

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentchemist.chemistry.equilibrium import (
    ChemistryInputError,
    alpha_fractions,
    davies_a,
    equivalence_volumes_ml,
    kw_at,
    ph_of_mixture,
    ph_of_mixtures,
    pkw_at,
    titration_curve,
)
from agentchemist.chemistry.reagents import UnknownReagentError

# ------------------------------------------------------------------ independent high-precision reference


def _poly_mul(a: list[Decimal], b: list[Decimal]) -> list[Decimal]:
    out = [Decimal(0)] * (len(a) + len(b) - 1)
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            out[i + j] += x * y
    return out


def _poly_add(a: list[Decimal], b: list[Decimal]) -> list[Decimal]:
    n = max(len(a), len(b))
    a = [Decimal(0)] * (n - len(a)) + a
    b = [Decimal(0)] * (n - len(b)) + b
    return [x + y for x, y in zip(a, b)]


def _poly_eval(p: list[Decimal], x: Decimal) -> Decimal:
    acc = Decimal(0)
    for c in p:  # highest power first
        acc = acc * x + c
    return acc


def reference_ph(spectator: float, systems: list[tuple[tuple[float, ...], int, float]], kw: float) -> float:
    """pH from the charge balance written as a polynomial in h = [H+], solved with 60 significant digits.

    h - Kw/h + S + sum_k C_k N_k(h)/D_k(h) = 0, multiplied by h * prod D_k, where for pKa_1..pKa_n
    D(h) = sum_i beta_i h^(n-i), N(h) = sum_i (z0 - i) beta_i h^(n-i), beta_i = Ka_1 ... Ka_i.
    The positive root is unique; it is found by geometric bisection.
    """
    with localcontext() as ctx:
        ctx.prec = 60
        ten = Decimal(10)
        s = Decimal(spectator)
        kw_d = Decimal(kw)
        dens, nums, concs = [], [], []
        for pka, z0, conc in systems:
            beta = [Decimal(1)]
            for p in pka:
                beta.append(beta[-1] * ten ** (-Decimal(str(p))))
            dens.append(beta)  # coefficients of h^n .. h^0
            nums.append([(z0 - i) * b for i, b in enumerate(beta)])
            concs.append(Decimal(conc))
        prod_all = [Decimal(1)]
        for d in dens:
            prod_all = _poly_mul(prod_all, d)
        poly = _poly_mul([Decimal(1), s, -kw_d], prod_all)
        for k in range(len(dens)):
            term = [concs[k] * c for c in nums[k]] + [Decimal(0)]  # times h
            for m, d in enumerate(dens):
                if m != k:
                    term = _poly_mul(term, d)
            poly = _poly_add(poly, term)
        lo, hi = Decimal("1e-20"), Decimal("1e3")
        assert _poly_eval(poly, lo) < 0 < _poly_eval(poly, hi)
        for _ in range(400):
            mid = (lo * hi).sqrt()
            if _poly_eval(poly, mid) > 0:
                hi = mid
            else:
                lo = mid
        return float(-((lo * hi).sqrt()).log10())


# Titrations written out by hand (pKa values typed here, not read from the library):
# (analyte reagent, conc M, analyte system, titrant, titrant conc M, titrant system, spectator sign)
CASES = {
    "hcl": ("hcl", 0.1, None, "naoh", 0.1, None),
    "acetic": ("acetic_acid", 0.1, ((4.76,), 0), "naoh", 0.1, None),
    "maleic": ("maleic_acid", 0.1, ((1.92, 6.23), 0), "naoh", 0.1, None),
    "phosphoric": ("phosphoric_acid", 0.1, ((2.15, 7.20, 12.35), 0), "naoh", 0.1, None),
    "ammonia": ("ammonia", 0.1, ((9.25,), 1), "hcl", 0.1, None),
    "carbonate": ("sodium_carbonate", 0.05, ((6.35, 10.33), 0), "hcl", 0.1, None),
}
SPECTATOR = {"hcl": -1.0, "naoh": +1.0, "sodium_carbonate": +2.0}  # net spectator charge per mol


def _reference_curve(case: str, volumes_ml: np.ndarray, temperature_c: float = 25.0) -> np.ndarray:
    analyte, ca, system, titrant, ct, _ = CASES[case]
    out = []
    for v in volumes_ml:
        total_l = (25.0 + v) * 1e-3
        n_a, n_t = ca * 25e-3, ct * v * 1e-3
        spectator = (SPECTATOR.get(analyte, 0.0) * n_a + SPECTATOR.get(titrant, 0.0) * n_t) / total_l
        systems = [] if system is None else [(system[0], system[1], n_a / total_l)]
        out.append(reference_ph(spectator, systems, kw_at(temperature_c)))
    return np.array(out)


VOLUMES = np.array([0.0, 5.0, 12.5, 24.9, 25.0, 25.1, 37.5, 49.9, 50.0, 50.1, 62.5, 75.0, 80.0])


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_independent_high_precision_reference(case):
    analyte, ca, _, titrant, ct, _ = CASES[case]
    reference = _reference_curve(case, VOLUMES)
    vectorised = titration_curve({analyte: ca}, 25.0, {titrant: ct}, VOLUMES)
    scalar = [
        ph_of_mixture({analyte: ca * 25e-3, titrant: ct * v * 1e-3}, (25.0 + v) * 1e-3) for v in VOLUMES
    ]
    assert np.max(np.abs(vectorised - reference)) < 1e-8
    assert np.max(np.abs(np.array(scalar) - reference)) < 1e-8


def test_reference_agreement_holds_at_body_temperature():
    reference = _reference_curve("acetic", VOLUMES, temperature_c=37.0)
    ph = titration_curve({"acetic_acid": 0.1}, 25.0, {"naoh": 0.1}, VOLUMES, temperature_c=37.0)
    assert np.max(np.abs(ph - reference)) < 1e-8


# ------------------------------------------------------------------------------------ analytic limits


def test_strong_acid_strong_base_equivalence_is_neutral():
    ph = ph_of_mixture({"hcl": 0.1 * 0.025, "naoh": 0.1 * 0.025}, 0.050)
    assert ph == pytest.approx(7.00, abs=0.005)
    assert ph == pytest.approx(pkw_at(25.0) / 2, abs=1e-9)
    curve = titration_curve({"hydrochloric acid": 0.1}, 25.0, {"sodium hydroxide": 0.1}, np.array([25.0]))
    assert curve[0] == pytest.approx(pkw_at(25.0) / 2, abs=1e-9)


def test_strong_acid_limits():
    assert ph_of_mixture({"hcl": 0.1 * 0.025}, 0.025) == pytest.approx(1.0, abs=1e-6)
    # excess base: pH = pKw + log10(excess OH-)
    ph = ph_of_mixture({"hcl": 0.0025, "naoh": 0.005}, 0.075)
    assert ph == pytest.approx(pkw_at(25.0) + math.log10(0.0025 / 0.075), abs=1e-9)


@pytest.mark.parametrize("temperature_c", [0.0, 10.0, 25.0, 37.0, 50.0, 80.0, 100.0])
def test_pure_water_is_neutral_at_every_temperature(temperature_c):
    pkw = pkw_at(temperature_c)
    assert ph_of_mixture({}, 1.0, temperature_c) == pytest.approx(pkw / 2, abs=1e-10)
    assert ph_of_mixture({"water": 55.5}, 1.0, temperature_c) == pytest.approx(pkw / 2, abs=1e-10)
    assert ph_of_mixture({"nacl": 0.01}, 1.0, temperature_c) == pytest.approx(pkw / 2, abs=1e-10)
    assert ph_of_mixtures({}, np.ones(3), temperature_c) == pytest.approx(np.full(3, pkw / 2), abs=1e-10)


def test_pkw_agrees_with_published_values_and_an_independent_fit():
    assert pkw_at(25.0) == pytest.approx(13.995, abs=0.001)
    assert kw_at(25.0) == pytest.approx(10**-13.995, rel=0.005)
    for t in np.arange(0.0, 61.0, 5.0):  # Harned and Owen: log Kw = -4470.99/T + 6.0875 - 0.01706 T
        T = t + 273.15
        harned_owen = -(-4470.99 / T + 6.0875 - 0.01706 * T)
        assert pkw_at(t) == pytest.approx(harned_owen, abs=0.01), t
    assert np.all(np.diff(pkw_at(np.linspace(0, 100, 11))) < 0)  # autoprotolysis grows with T
    assert davies_a(25.0) == pytest.approx(0.51, abs=0.003)


def test_buffer_region_follows_henderson_hasselbalch():
    v_eq = 25.0
    assert titration_curve({"acetic_acid": 0.1}, 25.0, {"naoh": 0.1}, np.array([v_eq / 2]))[0] == pytest.approx(
        4.76, abs=0.02
    )
    fractions = np.linspace(0.2, 0.8, 13)
    ph = titration_curve({"acetic_acid": 0.1}, 25.0, {"naoh": 0.1}, fractions * v_eq)
    assert ph == pytest.approx(4.76 + np.log10(fractions / (1 - fractions)), abs=0.02)
    # maleic acid: second half-equivalence sits at pKa2 (first is too strong an acid for H-H)
    ph2 = titration_curve({"maleic_acid": 0.1}, 25.0, {"naoh": 0.1}, np.array([37.5]))[0]
    assert ph2 == pytest.approx(6.23, abs=0.05)


def test_weak_acid_and_conjugate_base_textbook_values():
    # 0.1 M acetic acid: pH ~ 2.88; 0.1 M sodium acetate: pH ~ 8.88; 0.1 M ammonia: pH ~ 11.12
    assert ph_of_mixture({"acetic_acid": 0.1}, 1.0) == pytest.approx(2.88, abs=0.01)
    assert ph_of_mixture({"sodium_acetate": 0.1}, 1.0) == pytest.approx(8.88, abs=0.01)
    assert ph_of_mixture({"ammonia": 0.1}, 1.0) == pytest.approx(11.12, abs=0.01)
    # acetic acid + sodium acetate 1:1 is the same system as half-neutralised acetic acid
    a = ph_of_mixture({"acetic_acid": 0.05, "sodium_acetate": 0.05}, 1.0)
    b = ph_of_mixture({"acetic_acid": 0.1, "naoh": 0.05}, 1.0)
    assert a == pytest.approx(b, abs=1e-10)


def test_sulfuric_acid_first_proton_is_strong():
    ph = ph_of_mixture({"h2so4": 0.05}, 1.0)
    # between one strong proton (pH 1.30) and two (pH 1.00); the second is partly dissociated
    assert 1.0 < ph < 1.30
    assert equivalence_volumes_ml({"h2so4": 0.05}, 25.0, {"naoh": 0.1}) == pytest.approx([12.5, 25.0])


def test_aliases_and_repeated_reagents_add_up():
    a = ph_of_mixture({"hcl": 0.001, "hydrochloric acid": 0.001}, 1.0)
    b = ph_of_mixture({"hcl": 0.002}, 1.0)
    assert a == pytest.approx(b, abs=1e-12)


def test_alpha_fractions():
    alpha = alpha_fractions([4.76], 4.76)
    assert alpha == pytest.approx([0.5, 0.5])
    grid = alpha_fractions([2.15, 7.20, 12.35], np.linspace(-1, 15, 50))
    assert grid.shape == (50, 4)
    assert grid.sum(axis=1) == pytest.approx(np.ones(50))
    assert alpha_fractions([2.15, 7.20, 12.35], 7.20)[1:3] == pytest.approx([0.5, 0.5], abs=1e-4)
    assert np.all(np.isfinite(alpha_fractions([1.0, 2.0], 400.0)))


# ----------------------------------------------------------------------------------- activity (Davies)


def test_davies_activity_limits():
    # 0.01 M HCl: I = 0.01, pH = -log10(0.01 gamma) with log gamma = -A (sqrt I/(1+sqrt I) - 0.3 I)
    a = davies_a(25.0)
    ionic = 0.01 + kw_at(25.0) / 0.01  # (H+ + Cl- + OH-) / 2, OH- negligible
    expected = 2.0 + a * (math.sqrt(ionic) / (1 + math.sqrt(ionic)) - 0.3 * ionic)
    assert ph_of_mixture({"hcl": 0.01}, 1.0, activity=True) == pytest.approx(expected, abs=1e-6)
    # very dilute: activity and concentration agree
    dilute = {"acetic_acid": 1e-6, "naoh": 5e-7}
    assert ph_of_mixture(dilute, 1.0, activity=True) == pytest.approx(ph_of_mixture(dilute, 1.0), abs=1e-3)
    # salt lowers the apparent pKa of acetic acid (the buffer reads more acidic)
    buffer = {"acetic_acid": 0.01, "naoh": 0.005, "nacl": 0.1}
    assert ph_of_mixture(buffer, 1.0, activity=True) < ph_of_mixture(buffer, 1.0) - 0.05
    # pure water stays neutral in activity terms
    assert ph_of_mixture({"kcl": 0.1}, 1.0, activity=True) == pytest.approx(pkw_at(25.0) / 2, abs=1e-9)


def test_activity_vectorised_equals_scalar():
    volumes = np.linspace(0.0, 60.0, 25)
    curve = titration_curve({"phosphoric_acid": 0.1}, 25.0, {"naoh": 0.1}, volumes, activity=True)
    scalar = [
        ph_of_mixture({"phosphoric_acid": 0.0025, "naoh": 0.1 * v * 1e-3}, (25 + v) * 1e-3, activity=True)
        for v in volumes
    ]
    assert curve == pytest.approx(scalar, abs=1e-9)


# ------------------------------------------------------------------------------------- vectorisation


def test_vectorised_equals_scalar_on_a_dense_mixed_titration():
    volumes = np.linspace(0.0, 70.0, 301)
    analyte = {"citric_acid": 0.03, "ammonia": 0.02, "hcl": 0.01}
    curve = titration_curve(analyte, 20.0, {"naoh": 0.1}, volumes)
    scalar = [
        ph_of_mixture({**{k: c * 0.02 for k, c in analyte.items()}, "naoh": 0.1 * v * 1e-3}, (20.0 + v) * 1e-3)
        for v in volumes
    ]
    assert curve == pytest.approx(scalar, abs=1e-9)
    assert np.all(np.diff(curve) > 0)


def test_ph_of_mixtures_broadcasts_scalars_and_accepts_temperature_arrays():
    n = np.linspace(0, 0.002, 5)
    ph = ph_of_mixtures({"acetic_acid": 0.001, "naoh": n}, 0.1)
    assert ph.shape == (5,)
    temps = np.array([5.0, 15.0, 25.0, 35.0, 45.0])
    water = ph_of_mixtures({}, np.ones(5), temperature_c=temps)
    assert water == pytest.approx(pkw_at(temps) / 2, abs=1e-10)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    acid=st.sampled_from(["hcl", "acetic_acid", "maleic_acid", "phosphoric_acid", "citric_acid", "h2so4"]),
    conc=st.floats(1e-4, 0.5),
    base=st.sampled_from(["naoh", "ammonia", "sodium_carbonate", "koh"]),
    base_conc=st.floats(1e-3, 1.0),
    salt=st.floats(0.0, 0.2),
    activity=st.booleans(),
)
def test_ph_never_falls_as_base_is_added(acid, conc, base, base_conc, salt, activity):
    volumes = np.linspace(0.0, 100.0, 200)
    ph = titration_curve({acid: conc, "nacl": salt}, 25.0, {base: base_conc}, volumes, activity=activity)
    assert np.all(np.isfinite(ph))
    assert np.all(np.diff(ph) >= -1e-9)


# -------------------------------------------------------------------------------------- equivalence


def test_equivalence_volumes():
    assert equivalence_volumes_ml({"hcl": 0.1}, 25.0, {"naoh": 0.1}) == pytest.approx([25.0])
    assert equivalence_volumes_ml({"maleic_acid": 0.1}, 25.0, {"naoh": 0.1}) == pytest.approx([25.0, 50.0])
    assert equivalence_volumes_ml({"phosphoric_acid": 0.1}, 25.0, {"naoh": 0.2}) == pytest.approx(
        [12.5, 25.0, 37.5]
    )
    assert equivalence_volumes_ml({"sodium_carbonate": 0.05}, 25.0, {"hcl": 0.1}) == pytest.approx([12.5, 25.0])
    assert equivalence_volumes_ml({"ammonia": 0.1}, 25.0, {"hcl": 0.1}) == pytest.approx([25.0])
    assert equivalence_volumes_ml({"hcl": 0.1, "acetic_acid": 0.1}, 25.0, {"naoh": 0.1}) == pytest.approx(
        [25.0, 50.0]
    )
    # a partly neutralised strong acid: only the remaining protons count
    assert equivalence_volumes_ml({"hcl": 0.1, "naoh": 0.04}, 25.0, {"naoh": 0.1}) == pytest.approx([15.0])
    assert equivalence_volumes_ml({"sodium_acetate": 0.1}, 25.0, {"naoh": 0.1}) == []
    with pytest.raises(ChemistryInputError, match="buffer"):
        equivalence_volumes_ml({"hcl": 0.1}, 25.0, {"acetic_acid": 0.1, "sodium_acetate": 0.1})
    with pytest.raises(ChemistryInputError, match="no acid or base"):
        equivalence_volumes_ml({"hcl": 0.1}, 25.0, {"nacl": 0.1})


@pytest.mark.parametrize("analyte", ["hcl", "acetic_acid"])
def test_steepest_point_is_at_the_equivalence_volume(analyte):
    (v_eq,) = equivalence_volumes_ml({analyte: 0.1}, 25.0, {"naoh": 0.1})
    volumes = np.linspace(20.0, 30.0, 2001)
    ph = titration_curve({analyte: 0.1}, 25.0, {"naoh": 0.1}, volumes)
    slope_peak = volumes[np.argmax(np.gradient(ph, volumes))]
    assert slope_peak == pytest.approx(v_eq, abs=0.02)


# ---------------------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "amounts, volume, temperature, error, match",
    [
        ({"hcl": float("nan")}, 1.0, 25.0, ChemistryInputError, "finite"),
        ({"hcl": -0.1}, 1.0, 25.0, ChemistryInputError, ">= 0"),
        ({"hcl": 0.1}, 0.0, 25.0, ChemistryInputError, "volume"),
        ({"hcl": 0.1}, float("inf"), 25.0, ChemistryInputError, "volume"),
        ({"hcl": 0.1}, 1.0, 120.0, ChemistryInputError, "temperature"),
        ({"hcl": 0.1}, 1.0, float("nan"), ChemistryInputError, "temperature"),
        ({"vinegar essence": 0.1}, 1.0, 25.0, UnknownReagentError, "vinegar essence"),
        ({"hcl": "lots"}, 1.0, 25.0, ChemistryInputError, "number"),
    ],
)
def test_bad_input_raises_typed_errors(amounts, volume, temperature, error, match):
    with pytest.raises(error, match=match) as info:
        ph_of_mixture(amounts, volume, temperature)
    assert isinstance(info.value, ValueError)


def test_bad_array_input_raises_typed_errors():
    with pytest.raises(ChemistryInputError, match="same length"):
        ph_of_mixtures({"hcl": np.ones(3), "naoh": np.ones(4)}, np.ones(3))
    with pytest.raises(ChemistryInputError, match=">= 0"):
        ph_of_mixtures({"hcl": np.array([0.1, -0.1])}, np.ones(2))
    with pytest.raises(ChemistryInputError, match="volume"):
        ph_of_mixtures({"hcl": np.ones(2)}, np.array([1.0, 0.0]))
    with pytest.raises(ChemistryInputError, match="scalar"):
        ph_of_mixture({"hcl": np.ones(2)}, 1.0)
    with pytest.raises(ChemistryInputError, match="added volume"):
        titration_curve({"hcl": 0.1}, 25.0, {"naoh": 0.1}, np.array([1.0, -1.0]))
    with pytest.raises(ChemistryInputError, match="analyte_volume_ml"):
        titration_curve({"hcl": 0.1}, 0.0, {"naoh": 0.1}, np.array([1.0]))
    with pytest.raises(ChemistryInputError, match="titrant concentration"):
        titration_curve({"hcl": 0.1}, 25.0, {"naoh": float("nan")}, np.array([1.0]))
    with pytest.raises(UnknownReagentError):
        equivalence_volumes_ml({"hcll": 0.1}, 25.0, {"naoh": 0.1})
