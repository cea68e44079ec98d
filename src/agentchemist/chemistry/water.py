"""Properties of liquid water at 1 atm, 0-100 C: density, ion product Kw(T), Debye-Hueckel A(T).

Sources: density Kell (1975), J. Chem. Eng. Data 20, 97; pKw Bandura and Lvov (2006), J. Phys. Chem.
Ref. Data 35, 15; dielectric constant Malmberg and Maryott (1956), J. Res. NBS 56, 1.
All functions take a temperature in degrees Celsius (scalar or array) and refuse values outside 0-100 C.
"""

from __future__ import annotations

import numpy as np

from .errors import ChemistryInputError

__all__ = ["T_MAX_C", "T_MIN_C", "check_temperature", "davies_a", "davies_s", "kw_at", "pkw_at",
           "water_density_g_cm3"]  # fmt: skip

T_MIN_C, T_MAX_C = 0.0, 100.0  # liquid water at 1 atm; the fits below are not used outside


def check_temperature(temperature_c: float | np.ndarray) -> np.ndarray:
    """The temperature (C) as an array; ChemistryInputError if not finite or outside 0-100 C."""
    t = np.asarray(temperature_c, dtype=float)
    if not np.all(np.isfinite(t)):
        raise ChemistryInputError(f"temperature must be finite, got {temperature_c!r}")
    if np.any(t < T_MIN_C) or np.any(t > T_MAX_C):
        raise ChemistryInputError(
            f"temperature {temperature_c!r} C outside {T_MIN_C:g}..{T_MAX_C:g} C (liquid water at 1 atm)"
        )
    return t


def water_density_g_cm3(temperature_c: float | np.ndarray) -> float | np.ndarray:
    """Density of air-free water at 1 atm (g/cm3), Kell (1975), J. Chem. Eng. Data 20, 97."""
    t = check_temperature(temperature_c)
    num = (
        999.83952
        + 16.945176 * t
        - 7.9870401e-3 * t**2
        - 46.170461e-6 * t**3
        + 105.56302e-9 * t**4
        - 280.54253e-12 * t**5
    )
    rho = num / (1.0 + 16.879850e-3 * t) / 1000.0
    return float(rho) if rho.ndim == 0 else rho


def pkw_at(temperature_c: float | np.ndarray) -> float | np.ndarray:
    """pKw of water at 1 atm (molal scale, ~ molar in dilute solution).

    Bandura and Lvov (2006), J. Phys. Chem. Ref. Data 35, 15: pKw from temperature and density,
    valid 0-1000 C; here used 0-100 C with the Kell density. pKw(25 C) = 13.995.
    """
    t = check_temperature(temperature_c)
    T = t + 273.15
    rho = np.asarray(water_density_g_cm3(t))
    n, a0, a1, a2 = 6.0, -0.864671, 8659.19, -22786.2
    b0, b1, b2 = 0.642044, -56.8534, -0.375754
    molar_mass_water = 18.015268e-3  # kg/mol, times m0 = 1 mol/kg
    q = rho * np.exp(a0 + a1 / T + a2 / T**2 * rho ** (2.0 / 3.0))
    pkw_gas = 0.61415 + 48251.33 / T - 67707.93 / T**2 + 10102100.0 / T**3
    pkw = (
        -2.0 * n * (np.log10(1.0 + q) - q / (q + 1.0) * rho * (b0 + b1 / T + b2 * rho))
        + pkw_gas
        + 2.0 * np.log10(molar_mass_water)
    )
    return float(pkw) if pkw.ndim == 0 else pkw


def kw_at(temperature_c: float | np.ndarray) -> float | np.ndarray:
    """Ion product of water Kw = 10**-pKw(T) (mol2/L2); see :func:`pkw_at`."""
    kw = 10.0 ** (-np.asarray(pkw_at(temperature_c)))
    return float(kw) if np.ndim(kw) == 0 else kw


def davies_a(temperature_c: float | np.ndarray) -> float | np.ndarray:
    """Debye-Hueckel A (log10 units, (L/mol)^0.5) at 1 atm, ~0.511 at 25 C.

    A = 1.82483e6 * sqrt(rho) / (eps * T)^1.5 with the dielectric constant of water from
    Malmberg and Maryott (1956), J. Res. NBS 56, 1 (0-100 C).
    """
    t = check_temperature(temperature_c)
    eps = 87.740 - 0.40008 * t + 9.398e-4 * t**2 - 1.410e-6 * t**3
    a = 1.82483e6 * np.sqrt(np.asarray(water_density_g_cm3(t))) / (eps * (t + 273.15)) ** 1.5
    return float(a) if a.ndim == 0 else a


def davies_s(ionic_strength: np.ndarray) -> np.ndarray:
    """The Davies ionic-strength term s(I) (I in mol/L): log10 gamma(z) = -A z^2 s(I)."""
    sq = np.sqrt(ionic_strength)
    return sq / (1.0 + sq) - 0.3 * ionic_strength
