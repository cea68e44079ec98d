"""Aqueous acid-base equilibrium: pH of mixtures of strong and weak (polyprotic) acids and bases.

The pH is the root of the charge balance

    [H+] - [OH-] + sum(spectator charge) + sum_k C_k * (z0_k - nbar_k(pH)) = 0

where system k (concentration C_k, fully protonated charge z0_k) has lost on average nbar_k protons.
The left side falls strictly with pH, so a bracket in pH always holds exactly one root: single mixtures
use :func:`scipy.optimize.brentq`, titrations a vectorised safeguarded Newton (bisection whenever a
Newton step leaves the bracket or stops shrinking) on all points at once.

Water autoprotolysis follows Bandura and Lvov (2006) with the Kell (1975) density (see water.py); optional
activity coefficients follow Davies, with the Debye-Hueckel A(T) from the Malmberg and Maryott (1956)
dielectric constant, and the ionic strength iterated to self-consistency. pH is then -log10 a(H+).
pKa values are used as given (25 C); their temperature dependence is not modelled.

Units: amounts in mol, volumes in L (titration helpers take mL, as a burette reads), concentrations in
mol/L, temperature in degrees Celsius.

Example::

    >>> round(ph_of_mixture({"hcl": 0.0025, "naoh": 0.0025}, 0.050), 3)
    6.997
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
from scipy.optimize import brentq

from .errors import ChemistryInputError, ConvergenceError
from .reagents import Reagent, ReagentLibrary, default_library
from .water import check_temperature, davies_a, davies_s, kw_at, pkw_at, water_density_g_cm3

__all__ = [
    "ChemistryInputError",
    "ConvergenceError",
    "alpha_fractions",
    "davies_a",
    "equivalence_volumes_ml",
    "kw_at",
    "ph_of_mixture",
    "ph_of_mixtures",
    "pkw_at",
    "titration_curve",
    "water_density_g_cm3",
]

LN10 = math.log(10.0)
_PH_BRACKET = (-2.0, 16.0)
_PH_TOL = 1e-12
_EPS = float(np.finfo(float).eps)
_I_RTOL = 1e-10  # relative; the pH then moves < 1e-11
_MAX_NEWTON = 200
_MAX_I_ITER = 100


# ----------------------------------------------------------------------------------------- speciation
def alpha_fractions(pka: Sequence[float], ph: float | np.ndarray) -> np.ndarray:
    """Fractions of H_nA, H_(n-1)A, ..., A (protons removed 0..n) at each pH (concentration constants).

    Shape: (n+1,) for a scalar pH, else ph.shape + (n+1,). Rows sum to 1. Computed in log space, so
    exact for any pH and pKa.
    """
    pka_arr = np.asarray(pka, dtype=float).reshape(-1)
    if not np.all(np.isfinite(pka_arr)):
        raise ChemistryInputError(f"pKa values must be finite, got {pka!r}")
    ph_arr = np.asarray(ph, dtype=float)
    if not np.all(np.isfinite(ph_arr)):
        raise ChemistryInputError("pH must be finite")
    steps = np.arange(pka_arr.size + 1)
    cum = np.concatenate(([0.0], np.cumsum(pka_arr)))
    w = ph_arr[..., None] * steps - cum  # log10([H_(n-i)A] / [H_nA])
    w = w - w.max(axis=-1, keepdims=True)
    e = np.exp(LN10 * w)
    return e / e.sum(axis=-1, keepdims=True)


# ------------------------------------------------------------------------------------ mixture model
@dataclass(frozen=True)
class _System:
    """One weak acid-base system summed over all reagents that carry it (mol/L per point)."""

    pka: tuple[float, ...]
    z0: int
    conc: np.ndarray  # (N,)

    @property
    def charges(self) -> np.ndarray:
        return self.z0 - np.arange(len(self.pka) + 1)


@dataclass(frozen=True)
class _Mixture:
    spectator_charge: np.ndarray  # (N,) mol/L of net spectator charge
    spectator_pos: np.ndarray  # (N,) mol/L of positive spectator charge (Na+, K+, 2 x Ca2+)
    spectator_neg: np.ndarray  # (N,) mol/L of negative spectator charge (Cl-)
    spectator_i2: np.ndarray  # (N,) sum c z^2 of spectator ions, mol/L
    systems: tuple[_System, ...]


def _resolve(library: ReagentLibrary | None) -> ReagentLibrary:
    return default_library() if library is None else library


def _check_amount(name: str, value: np.ndarray | float, what: str = "amount") -> None:
    if np.ndim(value) == 0:  # plain floats: the single-mixture path is called in tight loops
        v = float(value)
        if not math.isfinite(v):
            raise ChemistryInputError(f"{what} of {name!r} must be finite, got {v!r}")
        if v < 0:
            raise ChemistryInputError(f"{what} of {name!r} must be >= 0, got {v!r}")
        return
    if not np.all(np.isfinite(value)):
        raise ChemistryInputError(f"{what} of {name!r} must be finite, got NaN or infinity")
    if np.any(value < 0):
        raise ChemistryInputError(f"{what} of {name!r} must be >= 0, got {np.min(value)!r}")


def _as_values(value: object, name: str) -> np.ndarray | float:
    try:
        return float(value) if np.ndim(value) == 0 else np.asarray(value, dtype=float)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ChemistryInputError(f"{name} must be a number or an array of numbers, got {value!r}") from None


def _compile(
    amounts_mol: Mapping[str, np.ndarray | float], volume_l: np.ndarray | float, library: ReagentLibrary
) -> tuple[_Mixture, int]:
    """Turn reagent amounts into concentrations of spectator charge and of acid-base systems.

    Scalars stay Python floats until the end (the single-mixture path runs in tight loops).
    """
    if not isinstance(amounts_mol, Mapping):
        raise ChemistryInputError(f"amounts must be a mapping reagent -> mol, got {type(amounts_mol).__name__}")
    volume = _as_values(volume_l, "volume_l")
    if np.ndim(volume) == 0:
        if not (math.isfinite(volume) and volume > 0):  # type: ignore[arg-type]
            raise ChemistryInputError(f"volume must be finite and > 0 L, got {volume_l!r}")
    elif not np.all(np.isfinite(volume)) or np.any(volume <= 0):
        raise ChemistryInputError(f"volume must be finite and > 0 L, got {volume_l!r}")
    per_reagent: dict[str, tuple[Reagent, np.ndarray | float]] = {}
    for key, amount in amounts_mol.items():
        reagent = library.get(key)
        value = _as_values(amount, f"amount of {key!r}")
        _check_amount(str(key), value)
        if reagent.name in per_reagent:  # "hcl" and "hydrochloric acid" in the same mapping add up
            value = per_reagent[reagent.name][1] + value
        per_reagent[reagent.name] = (reagent, value)
    try:
        shape = np.broadcast_shapes(np.shape(volume), *(np.shape(v) for _, v in per_reagent.values()))
    except ValueError:
        raise ChemistryInputError("amount arrays and volume must have the same length") from None
    if len(shape) > 1:
        raise ChemistryInputError(f"amounts and volume must be scalars or 1-D arrays, got shape {shape}")
    n_points = shape[0] if shape else 1

    # Sum in moles first, divide once: keeps exactly balanced mixtures (HCl + NaOH) balanced in floats.
    charge_mol: np.ndarray | float = 0.0
    pos_mol: np.ndarray | float = 0.0
    neg_mol: np.ndarray | float = 0.0
    i2_mol: np.ndarray | float = 0.0
    systems: dict[tuple[tuple[float, ...], int], np.ndarray | float] = {}
    for reagent, moles in per_reagent.values():
        if reagent.spectator_ions:
            charge_mol = charge_mol + reagent.spectator_charge_per_mol * moles
            pos_mol = pos_mol + reagent.spectator_cation_charge_per_mol * moles
            neg_mol = neg_mol + reagent.spectator_anion_charge_per_mol * moles
            i2_mol = i2_mol + reagent.spectator_ionic_strength_per_mol * moles
        if reagent.has_acid_base_system:
            key = (reagent.pka, reagent.charge_fully_protonated)
            systems[key] = systems.get(key, 0.0) + moles

    def per_litre(moles: np.ndarray | float) -> np.ndarray:
        return np.broadcast_to(np.asarray(moles / volume, dtype=float), (n_points,))

    mixture = _Mixture(
        spectator_charge=per_litre(charge_mol),
        spectator_pos=per_litre(pos_mol),
        spectator_neg=per_litre(neg_mol),
        spectator_i2=per_litre(i2_mol),
        systems=tuple(_System(pka, z0, per_litre(moles)) for (pka, z0), moles in systems.items()),
    )
    return mixture, n_points


def _effective_cum_pka(system: _System, a_s: np.ndarray | float) -> np.ndarray:
    """Cumulative concentration pKa sums (N, n+1) at Davies factor a_s = A * s(I) (0 without activity).

    With activities, [A_(i+1)]/[A_i] = Ka gamma(z_i) / (a_H gamma(z_i - 1)), i.e. an effective
    pKa_i - log gamma(z_i) + log gamma(z_i - 1) = pKa_i + a_s * (2 z_i - 1).
    """
    z = system.charges[:-1]
    pka_eff = np.asarray(system.pka)[None, :] + np.asarray(a_s).reshape(-1, 1) * (2 * z - 1)[None, :]
    return np.concatenate((np.zeros((pka_eff.shape[0], 1)), np.cumsum(pka_eff, axis=1)), axis=1)


def _balance(
    ph: np.ndarray, mix: _Mixture, cum_pkas: Sequence[np.ndarray], kw: np.ndarray, lg_gamma1: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Charge balance as G(pH) = ln(positive charge) - ln(negative charge), dG/dpH, ionic strength.

    G has the same root as the difference of the two sides but is nearly linear in pH over decades
    (both sides are sums of exponentials in pH), so Newton converges in a few steps from anywhere, and
    it never subtracts large numbers. dE[g(i)]/dpH = ln10 * Cov(i, g(i)) for the protons removed i.
    Returns (G, dG/dpH, ionic strength in mol/L, rounding-noise bound of G).
    """
    a_h = np.exp(-LN10 * ph)
    gamma1 = np.exp(LN10 * lg_gamma1)
    h = a_h / gamma1
    oh = kw / (a_h * gamma1)
    pos = h + mix.spectator_pos
    neg = oh + mix.spectator_neg
    dpos = -h
    dneg = oh.copy()
    i2 = h + oh + mix.spectator_i2
    for system, cum in zip(mix.systems, cum_pkas):
        steps = np.arange(len(system.pka) + 1, dtype=float)
        z = system.charges.astype(float)
        zpos, zneg = np.maximum(z, 0.0), np.maximum(-z, 0.0)
        w = ph[:, None] * steps - cum
        w -= w.max(axis=1, keepdims=True)
        e = np.exp(LN10 * w)
        alpha = e / e.sum(axis=1, keepdims=True)
        nbar = alpha @ steps
        if zpos.any():
            e_pos = alpha @ zpos
            pos = pos + system.conc * e_pos
            dpos = dpos + system.conc * (alpha @ (steps * zpos) - nbar * e_pos)
        if zneg.any():
            e_neg = alpha @ zneg
            neg = neg + system.conc * e_neg
            dneg = dneg + system.conc * (alpha @ (steps * zneg) - nbar * e_neg)
        i2 = i2 + system.conc * (alpha @ (z * z))
    ln_pos, ln_neg = np.log(pos), np.log(neg)
    noise = _EPS * (4.0 + np.abs(ln_pos) + np.abs(ln_neg))
    return ln_pos - ln_neg, LN10 * (dpos / pos - dneg / neg), 0.5 * i2, noise


def _solve_vectorised(
    mix: _Mixture, n: int, kw: np.ndarray, a_s: np.ndarray, guess: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """Root of the charge balance at every point; returns (pH, ionic strength at that pH)."""
    cum = [_effective_cum_pka(s, a_s) for s in mix.systems]
    cum = [np.broadcast_to(c, (n, c.shape[1])) for c in cum]
    lg_gamma1 = -a_s * np.ones(n)

    def evaluate(ph: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        return _balance(ph, mix, cum, kw, lg_gamma1)

    # A warm start (the previous ionic-strength iterate) needs only a narrow bracket.
    if guess is None:
        lo, hi, widen = np.full(n, _PH_BRACKET[0]), np.full(n, _PH_BRACKET[1]), 4.0
    else:
        lo, hi, widen = guess - 0.05, guess + 0.05, 0.5
    for _ in range(30):  # widen until the bracket holds the root (G falls with pH: G(lo) > 0 > G(hi))
        bad_lo = evaluate(lo)[0] < 0
        bad_hi = evaluate(hi)[0] > 0
        if not (bad_lo.any() or bad_hi.any()):
            break
        lo = np.where(bad_lo, lo - widen, lo)
        hi = np.where(bad_hi, hi + widen, hi)
        widen *= 2.0
    else:
        raise ConvergenceError("could not bracket the pH; concentrations are beyond any physical range")

    ph = 0.5 * (lo + hi) if guess is None else np.clip(guess, lo, hi)
    dx_old = hi - lo
    dx = dx_old.copy()
    active = np.ones(n, dtype=bool)
    for _ in range(_MAX_NEWTON):
        f, df, _, noise = evaluate(ph)
        lo = np.where(f > 0, ph, lo)
        hi = np.where(f < 0, ph, hi)
        newton_step = -f / df
        # Done when the Newton correction is below tolerance or G is down to its rounding noise
        # (G = ln P - ln N is good to a few ulp; below that the step is noise, not information).
        done = (np.abs(newton_step) <= _PH_TOL) | (np.abs(f) <= noise)
        newton = ph + newton_step
        # rtsafe rule: bisect when Newton leaves the bracket or does not halve the step before last.
        bisect = ~np.isfinite(newton) | (newton <= lo) | (newton >= hi) | (np.abs(2.0 * f) > np.abs(dx_old * df))
        step = np.where(bisect, 0.5 * (lo + hi) - ph, newton_step)
        step = np.where(active & ~done, step, 0.0)
        dx_old = np.where(active, dx, dx_old)
        dx = np.where(active, np.abs(step), dx)
        ph = ph + step
        active &= ~done & (hi - lo > _PH_TOL)
        if not active.any():
            break
    else:
        raise ConvergenceError(f"pH iteration did not converge at {int(active.sum())} point(s)")
    return ph, evaluate(ph)[2]


def _solve_mixture(mix: _Mixture, n: int, temperature_c: float | np.ndarray, activity: bool) -> np.ndarray:
    kw = np.broadcast_to(np.asarray(kw_at(temperature_c), dtype=float), (n,))
    if not activity:
        return _solve_vectorised(mix, n, kw, np.zeros(n), None)[0]
    a_const = np.broadcast_to(np.asarray(davies_a(temperature_c), dtype=float), (n,))
    ionic = 0.5 * mix.spectator_i2 + 0.0
    ph = None
    for iteration in range(_MAX_I_ITER):
        ph, ionic_new = _solve_vectorised(mix, n, kw, a_const * davies_s(ionic), ph)
        converged = np.abs(ionic_new - ionic) <= _I_RTOL * np.maximum(ionic_new, 1e-9)
        # Plain fixed-point iteration converges fast at ordinary strengths; damp if it ever lingers.
        ionic = ionic_new if iteration < 20 else 0.5 * (ionic + ionic_new)
        if converged.all():
            return ph
    raise ConvergenceError("ionic strength iteration did not converge")


# ------------------------------------------------------------------------------------------ public
_ScalarSystem = tuple[list[float], int, float]  # (cumulative effective pKa sums, z0, mol/L)


def _scalar_alpha(ph: float, cum: list[float]) -> list[float]:
    w = [i * ph - c for i, c in enumerate(cum)]
    top = max(w)
    e = [10.0 ** (x - top) for x in w]
    total = sum(e)
    return [x / total for x in e]


def _scalar_balance(ph: float, spectator: float, systems: list[_ScalarSystem], kw: float, lg_g1: float) -> float:
    """Charge balance (mol/L) at one pH in plain floats: the fast path for single mixtures."""
    a_h = 10.0**-ph
    g1 = 10.0**lg_g1
    f = a_h / g1 - kw / (a_h * g1) + spectator
    for cum, z0, conc in systems:
        nbar = sum(i * a for i, a in enumerate(_scalar_alpha(ph, cum)))
        f += conc * (z0 - nbar)
    return f


def _scalar_ionic(ph: float, spectator_i2: float, systems: list[_ScalarSystem], kw: float, lg_g1: float) -> float:
    a_h = 10.0**-ph
    g1 = 10.0**lg_g1
    i2 = a_h / g1 + kw / (a_h * g1) + spectator_i2
    for cum, z0, conc in systems:
        i2 += conc * sum(a * (z0 - i) ** 2 for i, a in enumerate(_scalar_alpha(ph, cum)))
    return 0.5 * i2


@functools.lru_cache(maxsize=64)
def _water_constants(temperature_c: float) -> tuple[float, float]:
    """(Kw, Davies A) at one temperature, cached: single mixtures are solved in tight loops."""
    return float(kw_at(temperature_c)), float(davies_a(temperature_c))


def _solve_scalar(mix: _Mixture, temperature_c: float, activity: bool) -> float:
    """One mixture: brentq on the charge balance, inside the ionic-strength iteration when asked."""
    kw, a_const = _water_constants(temperature_c)
    spectator = float(mix.spectator_charge[0])
    spectator_i2 = float(mix.spectator_i2[0])
    ionic = 0.5 * spectator_i2
    ph: float | None = None
    for _ in range(_MAX_I_ITER):
        a_s = a_const * (math.sqrt(ionic) / (1.0 + math.sqrt(ionic)) - 0.3 * ionic) if activity else 0.0
        systems = [
            (
                [0.0, *itertools.accumulate(p + a_s * (2 * (s.z0 - i) - 1) for i, p in enumerate(s.pka))],
                s.z0,
                float(s.conc[0]),
            )
            for s in mix.systems
        ]
        args = (spectator, systems, kw, -a_s)
        if ph is None:
            lo, hi, widen = *_PH_BRACKET, 4.0
        else:
            lo, hi, widen = ph - 0.05, ph + 0.05, 0.5
        while _scalar_balance(lo, *args) < 0:
            lo, widen = lo - widen, widen * 2.0
        while _scalar_balance(hi, *args) > 0:
            hi, widen = hi + widen, widen * 2.0
        ph = float(brentq(_scalar_balance, lo, hi, args=args, xtol=_PH_TOL))
        if not activity:
            return ph
        ionic_new = _scalar_ionic(ph, spectator_i2, systems, kw, -a_s)
        if abs(ionic_new - ionic) <= _I_RTOL * max(ionic_new, 1e-9):
            return ph
        ionic = ionic_new
    raise ConvergenceError("ionic strength iteration did not converge")


def ph_of_mixture(
    amounts_mol: Mapping[str, float],
    volume_l: float,
    temperature_c: float = 25.0,
    activity: bool = False,
    library: ReagentLibrary | None = None,
) -> float:
    """pH of reagent amounts (mol, by name or alias) dissolved to ``volume_l`` litres at ``temperature_c``.

    Water is implicit (an amount of "water" is accepted and ignored). With ``activity=True`` activity
    coefficients follow Davies (sensible up to an ionic strength of about 0.5 mol/L) and the result is
    -log10 a(H+); otherwise -log10 [H+].
    Raises ChemistryInputError / UnknownReagentError (both ValueError) on bad input.
    """
    for key, value in amounts_mol.items() if isinstance(amounts_mol, Mapping) else ():
        if np.ndim(value) != 0:
            raise ChemistryInputError(f"amount of {key!r} must be a scalar; use ph_of_mixtures for arrays")
    if np.ndim(volume_l) != 0 or np.ndim(temperature_c) != 0:
        raise ChemistryInputError("volume_l and temperature_c must be scalars; use ph_of_mixtures for arrays")
    mix, _ = _compile(amounts_mol, volume_l, _resolve(library))
    return _solve_scalar(mix, float(check_temperature(temperature_c)), activity)


def ph_of_mixtures(
    amounts_mol: Mapping[str, np.ndarray],
    volume_l: np.ndarray,
    temperature_c: float | np.ndarray = 25.0,
    activity: bool = False,
    library: ReagentLibrary | None = None,
) -> np.ndarray:
    """pH at each of N points (amount arrays in mol and volumes in L of length N; scalars broadcast).

    Solved for all points at once (vectorised safeguarded Newton, converged to 1e-12 in pH or to the
    floating-point noise of the charge balance). Same conventions as :func:`ph_of_mixture`.
    """
    mix, n = _compile(amounts_mol, volume_l, _resolve(library))
    temperature = check_temperature(temperature_c)
    if temperature.ndim > 1 or (temperature.ndim == 1 and temperature.shape[0] not in (1, n)):
        raise ChemistryInputError(f"temperature must be a scalar or have length {n}")
    return _solve_mixture(mix, n, temperature, activity)


def _concentrations(name: str, mapping: Mapping[str, float], library: ReagentLibrary) -> dict[str, float]:
    if not isinstance(mapping, Mapping):
        raise ChemistryInputError(f"{name} must be a mapping reagent -> mol/L, got {type(mapping).__name__}")
    out: dict[str, float] = {}
    for key, value in mapping.items():
        reagent = library.get(key)
        conc = np.asarray(value, dtype=float)
        if conc.ndim != 0:
            raise ChemistryInputError(f"{name} concentration of {key!r} must be a scalar")
        _check_amount(str(key), conc, f"{name} concentration")
        out[reagent.name] = out.get(reagent.name, 0.0) + float(conc)
    return out


def _check_volume_ml(name: str, value: float, allow_zero: bool = False) -> float:
    v = float(value)
    if not math.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        raise ChemistryInputError(f"{name} must be a finite volume {'>=' if allow_zero else '>'} 0 mL, got {value!r}")
    return v


def titration_curve(
    analyte: Mapping[str, float],
    analyte_volume_ml: float,
    titrant: Mapping[str, float],
    titrant_volume_ml: np.ndarray,
    temperature_c: float = 25.0,
    activity: bool = False,
    library: ReagentLibrary | None = None,
) -> np.ndarray:
    """pH after adding each titrant volume (mL) to ``analyte_volume_ml`` mL of analyte.

    ``analyte`` and ``titrant`` map reagent -> concentration (mol/L); volumes are taken as additive.
    """
    lib = _resolve(library)
    c_analyte = _concentrations("analyte", analyte, lib)
    c_titrant = _concentrations("titrant", titrant, lib)
    va = _check_volume_ml("analyte_volume_ml", analyte_volume_ml)
    vt = np.atleast_1d(np.asarray(titrant_volume_ml, dtype=float))
    if vt.ndim != 1:
        raise ChemistryInputError("titrant_volume_ml must be a 1-D array of volumes (mL)")
    _check_amount("titrant", vt, "added volume")
    amounts: dict[str, np.ndarray] = {}
    for name, c in c_analyte.items():
        amounts[name] = np.full(vt.shape, c * va * 1e-3)
    for name, c in c_titrant.items():
        amounts[name] = amounts.get(name, np.zeros(vt.shape)) + c * vt * 1e-3
    return ph_of_mixtures(amounts, (va + vt) * 1e-3, temperature_c, activity, lib)


# Proton sites for equivalence counting: strong acids bind protons at pKa -inf (never), OH- at +inf.
def _sites(conc: Mapping[str, float], library: ReagentLibrary) -> tuple[list[tuple[float, float]], float]:
    """(pKa, mol/L) of every proton-binding site, and the protons available (mol/L)."""
    sites: list[tuple[float, float]] = []
    protons = 0.0
    for name, c in conc.items():
        reagent = library.get(name)
        if reagent.strong_protons > 0:
            sites.append((-math.inf, reagent.strong_protons * c))
            protons += reagent.strong_protons * c
        elif reagent.strong_protons < 0:
            sites.append((math.inf, -reagent.strong_protons * c))
        sites.extend((pka, c) for pka in reagent.pka)
        protons += reagent.protons_as_added * c
    return sites, protons


def _fill(sites: list[tuple[float, float]], protons: float) -> tuple[dict[float, float], dict[float, float]]:
    """Equilibrium (idealised) filling of sites, strongest base first: (filled, empty) mol/L by pKa."""
    filled: dict[float, float] = {}
    empty: dict[float, float] = {}
    for pka, amount in sorted(sites, key=lambda s: -s[0]):
        take = min(amount, protons)
        protons -= take
        if take > 0:
            filled[pka] = filled.get(pka, 0.0) + take
        if amount - take > 0:
            empty[pka] = empty.get(pka, 0.0) + amount - take
    return filled, empty


def equivalence_volumes_ml(
    analyte: Mapping[str, float],
    analyte_volume_ml: float,
    titrant: Mapping[str, float],
    library: ReagentLibrary | None = None,
) -> list[float]:
    """Theoretical equivalence volumes (mL, ascending) of a titration, one per titratable step.

    A basic titrant removes the analyte's protons in order of increasing pKa (strong acid first), an
    acidic titrant fills its empty sites in order of decreasing pKa (hydroxide first); sites with the
    same pKa are one step. Every step is listed, visible on the curve or not.
    """
    lib = _resolve(library)
    c_analyte = _concentrations("analyte", analyte, lib)
    c_titrant = _concentrations("titrant", titrant, lib)
    va = _check_volume_ml("analyte_volume_ml", analyte_volume_ml)
    t_filled, t_empty = _fill(*_sites(c_titrant, lib))
    t_acid = sum(v for k, v in t_filled.items() if k != math.inf)  # protons on OH- are water
    t_base = sum(v for k, v in t_empty.items() if k != -math.inf)  # Cl- takes no protons
    if t_acid > 0 and t_base > 0:
        raise ChemistryInputError("titrant is both acidic and basic (a buffer); equivalence is ambiguous")
    if t_acid == 0 and t_base == 0:
        raise ChemistryInputError("titrant has no acid or base capacity")
    a_filled, a_empty = _fill(*_sites(c_analyte, lib))
    if t_base > 0:
        steps = [(k, v) for k, v in sorted(a_filled.items()) if k != math.inf]
        capacity = t_base
    else:
        steps = [(k, v) for k, v in sorted(a_empty.items(), reverse=True) if k != -math.inf]
        capacity = t_acid
    volumes, total = [], 0.0
    for _, amount in steps:
        total += amount
        volumes.append(total * va / capacity)
    return volumes
