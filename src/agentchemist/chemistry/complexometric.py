"""Complexometric titration of Ca2+ with EDTA and calconcarboxylic acid indicator, with solution colour.

At the buffered pH (12-13, NaOH) calcium binds to EDTA (conditional constant K'f = alpha_Y4-(pH) * Kf)
and, far more weakly, to the indicator's blue HIn3- form. Before the endpoint spare Ca2+ holds the
indicator as its magenta/fuchsin Ca complex; once EDTA has taken all the calcium, the indicator is
set free and the solution turns sapphire blue. Free Ca2+ is found from the calcium mass balance with
competitive binding (monotonic in free Ca, bracketed root in log space, so it holds from 1e-20 M up).

Constants (25 C): EDTA pKa 2.0, 2.67, 6.16, 10.26 and log Kf(CaY2-) 10.65 (Skoog, Fundamentals of
Analytical Chemistry); indicator phenolic pKa 9.26, 13.67 (Itoh and Ueno, Analyst 1970); log K for
Ca2+ + HIn3- is an estimate (5.85, see config/reagents.yaml). Ca(OH)+ formation is neglected.
Amounts in mol, volumes in L (mL where named), concentrations in mol/L.

Example::

    >>> s = ca_edta_state(ca_mol=2.5e-4, edta_mol=1.0e-4, indicator_mol=5e-7, volume_l=0.035)
    >>> s.fraction_metal_indicator > 0.99, 300 < s.hue_deg < 360
    (True, True)
"""

from __future__ import annotations

import colorsys
import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy.optimize import brentq

from .equilibrium import alpha_fractions
from .errors import ChemistryInputError

__all__ = [
    "COLOUR_CA_INDICATOR",
    "COLOUR_FREE_INDICATOR",
    "COLOUR_PROTONATED_INDICATOR",
    "COLOUR_NO_INDICATOR",
    "EDTA_PKA",
    "INDICATOR_PKA",
    "LOG_KF_CA_EDTA",
    "LOG_KF_CA_INDICATOR",
    "ComplexometricState",
    "ca_edta_equivalence_volume_ml",
    "ca_edta_state",
    "conditional_formation_constant",
    "conditional_indicator_constant",
]

EDTA_PKA: tuple[float, ...] = (2.0, 2.67, 6.16, 10.26)
LOG_KF_CA_EDTA = 10.65
INDICATOR_PKA: tuple[float, ...] = (9.26, 13.67)  # H2In2- -> HIn3- -> In4-
LOG_KF_CA_INDICATOR = 5.85  # Ca2+ + HIn3- <-> CaHIn-; an estimate (see config/reagents.yaml)

# sRGB colours of the solution dominated by one indicator form (8-bit).
COLOUR_CA_INDICATOR = (200, 40, 120)  # Ca-indicator complex: magenta / fuchsin red
COLOUR_FREE_INDICATOR = (30, 60, 180)  # HIn3- (pH about 10-13.5): sapphire blue
COLOUR_PROTONATED_INDICATOR = (160, 40, 70)  # H2In2- (below pH 9): wine red, why the buffer must be alkaline
COLOUR_NO_INDICATOR = (232, 236, 240)  # a clear solution against a white background


@dataclass(frozen=True)
class ComplexometricState:
    """Equilibrium of one Ca/EDTA/indicator mixture (concentrations in mol/L) and its colour.

    ``fraction_metal_indicator`` is CaIn / total indicator (0 when there is no indicator);
    ``rgb`` is 8-bit sRGB, ``hue_deg`` the HSV hue in degrees 0-360 (colorsys convention; OpenCV's
    8-bit hue is hue_deg / 2).
    """

    ca_free_m: float
    ca_edta_m: float
    ca_indicator_m: float
    indicator_free_m: float
    fraction_metal_indicator: float
    rgb: tuple[int, int, int]
    hue_deg: float


def _check_ph(ph: float | np.ndarray) -> np.ndarray:
    arr = np.asarray(ph, dtype=float)
    if not np.all(np.isfinite(arr)) or np.any(arr < 0.0) or np.any(arr > 14.5):
        raise ChemistryInputError(f"pH must be finite and within 0..14.5, got {ph!r}")
    return arr


def conditional_formation_constant(
    ph: float | np.ndarray, log_kf: float = LOG_KF_CA_EDTA, edta_pka: Sequence[float] = EDTA_PKA
) -> float | np.ndarray:
    """K'f = alpha_Y4-(pH) * Kf (L/mol): the Ca-EDTA constant for all unbound EDTA forms together."""
    arr = _check_ph(ph)
    if not math.isfinite(log_kf):
        raise ChemistryInputError(f"log_kf must be finite, got {log_kf!r}")
    k = alpha_fractions(edta_pka, arr)[..., -1] * 10.0**log_kf
    return float(k) if np.ndim(k) == 0 else k


def conditional_indicator_constant(
    ph: float | np.ndarray, log_k: float = LOG_KF_CA_INDICATOR, indicator_pka: Sequence[float] = INDICATOR_PKA
) -> float | np.ndarray:
    """K' = alpha_HIn3-(pH) * K (L/mol) for Ca2+ binding to the indicator's unbound forms together."""
    arr = _check_ph(ph)
    k = alpha_fractions(indicator_pka, arr)[..., 1] * 10.0**log_k
    return float(k) if np.ndim(k) == 0 else k


def _mix_colour(weights: Sequence[float], colours: Sequence[tuple[int, int, int]]) -> tuple[int, int, int]:
    rgb = np.asarray(weights, dtype=float) @ np.asarray(colours, dtype=float)
    return tuple(int(round(min(255.0, max(0.0, c)))) for c in rgb)  # type: ignore[return-value]


def _hue_deg(rgb: tuple[int, int, int]) -> float:
    return colorsys.rgb_to_hsv(*(c / 255.0 for c in rgb))[0] * 360.0


def _free_calcium(ca_t: float, y_t: float, in_t: float, k_y: float, k_in: float) -> float:
    """Free Ca2+ (mol/L) from Ca_T = c + K_y c Y_T/(1 + K_y c) + K_in c In_T/(1 + K_in c)."""
    if ca_t == 0.0:
        return 0.0

    def excess(log_c: float) -> float:
        c = math.exp(log_c)
        return c + k_y * c * y_t / (1.0 + k_y * c) + k_in * c * in_t / (1.0 + k_in * c) - ca_t

    # Bound complexes never exceed K c L_T, so c >= Ca_T / (1 + K_y Y_T + K_in In_T); and c <= Ca_T.
    lo = math.log(ca_t / (1.0 + k_y * y_t + k_in * in_t))
    hi = math.log(ca_t)
    f_lo, f_hi = excess(lo), excess(hi)
    if f_hi <= 0.0:  # nothing binds calcium
        return ca_t
    if f_lo >= 0.0:
        return math.exp(lo)
    return math.exp(brentq(excess, lo, hi, xtol=1e-14, rtol=4 * np.finfo(float).eps))


def ca_edta_state(
    ca_mol: float, edta_mol: float, indicator_mol: float, volume_l: float, ph: float = 12.5
) -> ComplexometricState:
    """Speciation and colour of Ca2+ + EDTA + calconcarboxylic acid in ``volume_l`` L at ``ph``."""
    for name, value in (("ca_mol", ca_mol), ("edta_mol", edta_mol), ("indicator_mol", indicator_mol)):
        if not (isinstance(value, (int, float, np.floating, np.integer)) and math.isfinite(value) and value >= 0):
            raise ChemistryInputError(f"{name} must be a finite amount >= 0 mol, got {value!r}")
    if not (isinstance(volume_l, (int, float, np.floating, np.integer)) and math.isfinite(volume_l) and volume_l > 0):
        raise ChemistryInputError(f"volume_l must be finite and > 0 L, got {volume_l!r}")
    ph_value = float(_check_ph(ph))
    ca_t, y_t, in_t = ca_mol / volume_l, edta_mol / volume_l, indicator_mol / volume_l
    k_y = float(conditional_formation_constant(ph_value))
    k_in = float(conditional_indicator_constant(ph_value))
    c = _free_calcium(ca_t, y_t, in_t, k_y, k_in)
    ca_edta = k_y * c * y_t / (1.0 + k_y * c)
    ca_ind = k_in * c * in_t / (1.0 + k_in * c)
    ind_free = in_t / (1.0 + k_in * c)
    if in_t > 0:
        fraction = ca_ind / in_t
        # Unbound indicator shows the colour of its protonation state (blue only above pH ~ 10).
        free_alpha = alpha_fractions(INDICATOR_PKA, ph_value)
        acid_share = float(free_alpha[0])
        rgb = _mix_colour(
            (fraction, (1.0 - fraction) * acid_share, (1.0 - fraction) * (1.0 - acid_share)),
            (COLOUR_CA_INDICATOR, COLOUR_PROTONATED_INDICATOR, COLOUR_FREE_INDICATOR),
        )
    else:
        fraction = 0.0
        rgb = COLOUR_NO_INDICATOR
    return ComplexometricState(
        ca_free_m=c,
        ca_edta_m=ca_edta,
        ca_indicator_m=ca_ind,
        indicator_free_m=ind_free,
        fraction_metal_indicator=fraction,
        rgb=rgb,
        hue_deg=_hue_deg(rgb),
    )


def ca_edta_equivalence_volume_ml(ca_m: float, ca_volume_ml: float, edta_m: float) -> float:
    """EDTA volume (mL) that binds all the calcium 1:1: ca_m * ca_volume_ml / edta_m."""
    for name, value in (("ca_m", ca_m), ("ca_volume_ml", ca_volume_ml), ("edta_m", edta_m)):
        if not (isinstance(value, (int, float, np.floating, np.integer)) and math.isfinite(value) and value > 0):
            raise ChemistryInputError(f"{name} must be finite and > 0, got {value!r}")
    return ca_m * ca_volume_ml / edta_m
