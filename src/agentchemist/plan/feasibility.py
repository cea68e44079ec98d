"""Chemistry questions the planner and the rule engine ask: how much titrant reaches a target, and can it.

All answers come from the equilibrium solver (``agentchemist.chemistry.equilibrium``) at 25 C. By
default the pH is -log10 [H+] (ideal solution); with ``activity=True`` it is -log10 a(H+) with Davies
activity coefficients, which is what a glass electrode reads. The two differ by 0.05-0.15 pH at the
ionic strengths of a titration (0.01-0.1 mol/L), and far from equivalence, where the curve is flat,
that is many millilitres: 25 mL of 0.1 M HCl needs 48.6 mL of 0.1 M NaOH to pH 12.5 by concentration
but 58.3 mL to pH 12.5 as the electrode reads it. The planner asks with the pH meter's model
(``HardwareRegistry.ph_reads_activity``). Volumes in mL, concentrations in mol/L.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq

from agentchemist.chemistry.equilibrium import equivalence_volumes_ml, ph_of_mixture, titration_curve
from agentchemist.chemistry.reagents import ReagentLibrary, default_library

__all__ = [
    "InfeasibleTargetError",
    "TitrantNeed",
    "equivalence_point",
    "equivalence_points",
    "ph_after",
    "titrant_for_ph",
    "titrant_limit_ph",
]

# A target closer than this to the titrant's own pH needs an unbounded volume: call it unreachable.
_ASYMPTOTE_MARGIN_PH = 0.05
_MAX_SEARCH_ML = 1.0e6


class InfeasibleTargetError(ValueError):
    """A target that the chosen titrant cannot reach (message says why, with the numbers)."""


@dataclass(frozen=True)
class TitrantNeed:
    """Titrant volume (mL) to reach the target and the pH there; ``start_ph`` is before any titrant."""

    volume_ml: float
    ph: float
    start_ph: float


def _lib(library: ReagentLibrary | None) -> ReagentLibrary:
    return library if library is not None else default_library()


# The planner and the rule engine ask for the same points; the solver call is the cost, so memoise.
# Keyed by the library's id, holding a reference to it so that the id cannot be reused while cached.
_CACHE: dict[tuple, tuple[ReagentLibrary, float]] = {}
_CACHE_MAX = 4096


def ph_after(
    analyte: dict[str, float],
    analyte_volume_ml: float,
    titrant: dict[str, float],
    titrant_volume_ml: float,
    library: ReagentLibrary | None = None,
    activity: bool = False,
) -> float:
    """pH after ``titrant_volume_ml`` of titrant is added to the analyte (as read by a glass electrode
    when ``activity``)."""
    lib = _lib(library)
    key = (
        id(lib),
        bool(activity),
        tuple(sorted(analyte.items())),
        float(analyte_volume_ml),
        tuple(sorted(titrant.items())),
        float(titrant_volume_ml),
    )
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is lib:
        return hit[1]
    value = float(
        titration_curve(
            analyte, analyte_volume_ml, titrant, np.array([titrant_volume_ml]), activity=activity, library=lib
        )[0]
    )
    if len(_CACHE) >= _CACHE_MAX:
        _CACHE.clear()
    _CACHE[key] = (lib, value)
    return value


def titrant_limit_ph(
    titrant: dict[str, float], library: ReagentLibrary | None = None, activity: bool = False
) -> float:
    """pH of the titrant itself: what the mixture approaches as titrant is added without limit."""
    return ph_of_mixture(dict(titrant), 1.0, activity=activity, library=_lib(library))


def titrant_for_ph(
    analyte: dict[str, float],
    analyte_volume_ml: float,
    titrant: dict[str, float],
    target_ph: float,
    library: ReagentLibrary | None = None,
    activity: bool = False,
) -> TitrantNeed:
    """Titrant volume at which the pH (as a glass electrode reads it when ``activity``) first reaches
    ``target_ph``.

    InfeasibleTargetError when the target lies on the wrong side of the starting pH or at/after the
    titrant's own pH (which the mixture only approaches).
    """
    if not math.isfinite(target_ph):
        raise InfeasibleTargetError(f"target pH must be finite, got {target_ph!r}")
    start = ph_after(analyte, analyte_volume_ml, titrant, 0.0, library, activity)
    limit = titrant_limit_ph(titrant, library, activity)
    lib = _lib(library)
    names = ", ".join(f"{c:g} M {lib.get(n).display_name}" for n, c in titrant.items())
    rising = limit > start
    if abs(target_ph - start) < 0.01:
        raise InfeasibleTargetError(f"the analyte already starts at pH {start:.2f}, the target pH {target_ph:g}")
    if (target_ph < start) == rising:
        direction = "raises" if rising else "lowers"
        raise InfeasibleTargetError(
            f"target pH {target_ph:g} is unreachable: {names} {direction} the pH, and the analyte starts at "
            f"pH {start:.2f}"
        )
    if (rising and target_ph > limit - _ASYMPTOTE_MARGIN_PH) or (
        not rising and target_ph < limit + _ASYMPTOTE_MARGIN_PH
    ):
        # Both numbers when the electrode's reading differs from the concentration pH: a chemist checks
        # the latter against the titrant's concentration, the former is what the run would see.
        read = ""
        if activity:
            read = f" ({limit:.2f} as a glass electrode reads it)"
            limit = titrant_limit_ph(titrant, library)
        raise InfeasibleTargetError(
            f"target pH {target_ph:g} is unreachable with {names}: adding it without limit only approaches "
            f"pH {limit:.2f}{read}"
        )

    def f(v: float) -> float:
        return ph_after(analyte, analyte_volume_ml, titrant, v, library, activity) - target_ph

    sign = 1.0 if rising else -1.0
    hi = max(analyte_volume_ml, 1.0)
    while sign * f(hi) < 0:
        hi *= 2.0
        if hi > _MAX_SEARCH_ML:  # pragma: no cover - excluded by the asymptote check above
            raise InfeasibleTargetError(f"target pH {target_ph:g} needs more than {_MAX_SEARCH_ML:g} mL")
    volume = float(brentq(f, 0.0, hi, xtol=1e-4))
    return TitrantNeed(volume_ml=volume, ph=target_ph, start_ph=start)


def equivalence_points(
    analyte: dict[str, float],
    analyte_volume_ml: float,
    titrant: dict[str, float],
    library: ReagentLibrary | None = None,
) -> list[TitrantNeed]:
    """Every theoretical equivalence point (volume, pH there) of an acid-base titration, in the order the
    titrant reaches them (phosphoric acid with NaOH: three).

    InfeasibleTargetError when the titrant does not react with the analyte (e.g. acid titrated with acid).
    """
    lib = _lib(library)
    try:
        volumes = equivalence_volumes_ml(analyte, analyte_volume_ml, titrant, library=lib)
    except ValueError as exc:
        raise InfeasibleTargetError(f"no equivalence point: {exc}") from None
    volumes = [v for v in volumes if v > 1e-9]
    if not volumes:
        raise InfeasibleTargetError(
            "no equivalence point: the titrant does not neutralise the analyte (same acid/base character)"
        )
    start = ph_after(analyte, analyte_volume_ml, titrant, 0.0, lib)
    return [TitrantNeed(volume_ml=v, ph=ph_after(analyte, analyte_volume_ml, titrant, v, lib), start_ph=start)
            for v in volumes]


def equivalence_point(
    analyte: dict[str, float],
    analyte_volume_ml: float,
    titrant: dict[str, float],
    library: ReagentLibrary | None = None,
) -> TitrantNeed:
    """The last theoretical equivalence point (volume, pH there) of an acid-base titration.

    InfeasibleTargetError when the titrant does not react with the analyte (e.g. acid titrated with acid).
    """
    return equivalence_points(analyte, analyte_volume_ml, titrant, library)[-1]
