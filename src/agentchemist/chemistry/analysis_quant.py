"""Quantitative results derived from endpoints and weighings (concentrations, errors).

Units: volumes in mL, concentrations in mol/L, masses in g. Every function refuses NaN, infinite,
negative or zero inputs where they make no sense, with an :class:`AnalysisInputError` naming the input.

    >>> round(strong_acid_concentration(25.0, 0.1, 25.0), 6)
    0.1
    >>> round(ca_concentration_from_endpoint(0.01, 12.5, 25.0), 6)
    0.005
    >>> weighing_error(2.50, 2.596).error_g
    0.096
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .analysis_types import AnalysisInputError

__all__ = [
    "WeighingError",
    "ca_concentration_from_endpoint",
    "concentration_from_equivalence",
    "strong_acid_concentration",
    "weighing_error",
]


def _positive(name: str, value: float, *, allow_zero: bool = False) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise AnalysisInputError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(x):
        raise AnalysisInputError(f"{name} must be finite, got {value!r}")
    if x < 0 or (x == 0 and not allow_zero):
        raise AnalysisInputError(f"{name} must be {'>= 0' if allow_zero else '> 0'}, got {value!r}")
    return x


def concentration_from_equivalence(
    equivalence_volume_ml: float,
    titrant_m: float,
    analyte_volume_ml: float,
    *,
    step: int = 1,
    titrant_capacity: int = 1,
) -> float:
    """Analyte concentration (mol/L) from the ``step``-th equivalence volume.

    c_analyte = titrant_m * titrant_capacity * V_eq / (step * V_analyte): at the k-th equivalence
    point k protons (or acceptor sites) per analyte formula unit have reacted; ``titrant_capacity`` is
    H+ or OH- per titrant formula unit (1 for NaOH and HCl).
    """
    v_eq = _positive("equivalence_volume_ml", equivalence_volume_ml)
    c_t = _positive("titrant_m", titrant_m)
    v_a = _positive("analyte_volume_ml", analyte_volume_ml)
    if not isinstance(step, int) or step < 1:
        raise AnalysisInputError(f"step must be an integer >= 1, got {step!r}")
    if not isinstance(titrant_capacity, int) or titrant_capacity < 1:
        raise AnalysisInputError(f"titrant_capacity must be an integer >= 1, got {titrant_capacity!r}")
    return c_t * titrant_capacity * v_eq / (step * v_a)


def strong_acid_concentration(equivalence_volume_ml: float, titrant_m: float, analyte_volume_ml: float) -> float:
    """Concentration (mol/L) of a monoprotic strong acid titrated with a monohydroxide base."""
    return concentration_from_equivalence(equivalence_volume_ml, titrant_m, analyte_volume_ml)


def ca_concentration_from_endpoint(edta_m: float, endpoint_volume_ml: float, sample_volume_ml: float) -> float:
    """Ca2+ concentration (mol/L) from an EDTA complexometric endpoint (1:1 CaY2- complex).

    c_Ca = c_EDTA * V_endpoint / V_sample.
    """
    c_edta = _positive("edta_m", edta_m)
    v_ep = _positive("endpoint_volume_ml", endpoint_volume_ml)
    v_s = _positive("sample_volume_ml", sample_volume_ml)
    return c_edta * v_ep / v_s


@dataclass(frozen=True)
class WeighingError:
    """A weighing compared with its target: ``error_g`` = measured - target (g), ``relative`` = error/target."""

    target_g: float
    measured_g: float
    error_g: float
    absolute_error_g: float
    relative: float


def weighing_error(target_g: float, measured_g: float) -> WeighingError:
    """Signed and absolute error of a weighing (g) and the error relative to the target."""
    target = _positive("target_g", target_g)
    measured = _positive("measured_g", measured_g, allow_zero=True)
    # Rounded to 1e-9 g (far below any balance's resolution) so 2.596 - 2.5 reads 0.096, not 0.0959999.
    error = round(measured - target, 9)
    return WeighingError(target, measured, error, abs(error), error / target)
