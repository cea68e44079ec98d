"""The stated results as a list a program reads, each rounded to its uncertainty.

``report.json``'s ``results`` list carries every quantity the report states (a supported equivalence
volume, the analyte's or the titrant's concentration, a stated pKa) as
``{quantity, value, unit, u, interval: [lo, hi], k, method}``: ``u`` the combined standard uncertainty,
``interval`` the 95 % interval value +- k u. Rounding follows the GUM (JCGM 100:2008, 7.2.6): the
uncertainty to two significant digits, the value to the same decimal place, and so the interval's ends;
and never finer than the instrument's resolution when one is known (a volume written to 0.01 mL is not
stated to 0.001 mL). The unrounded figures stay in the results section.
"""
from __future__ import annotations

import math
from collections.abc import Mapping

from .results import finite, stated_pka

__all__ = ["gum_decimals", "gum_text", "round_to_uncertainty", "stated_results"]


def _sig2_decimals(u: float) -> int:
    decimals = 1 - math.floor(math.log10(u))
    if round(u, decimals) >= 10.0 ** (2 - decimals):  # 0.0996 rounds to 0.10: one digit fewer
        decimals -= 1
    return decimals


def gum_decimals(u: float, resolution: float | None = None) -> int | None:
    """Decimal places for a value whose standard uncertainty is ``u`` (two significant digits of u), at most
    one place finer than ``resolution`` (a value interpolated between readings gains one digit, no more);
    None when u is not a positive finite number."""
    if not (isinstance(u, (int, float)) and math.isfinite(u) and u > 0):
        return None
    decimals = _sig2_decimals(u)
    if resolution is not None and math.isfinite(resolution) and resolution > 0:
        decimals = min(decimals, max(0, -math.floor(math.log10(resolution) + 1e-9) + 1))
    return decimals


def round_to_uncertainty(value: float, u: float, resolution: float | None = None) -> tuple[float, float, int]:
    """(value, u, decimals) rounded per the GUM (see the module docstring); decimals 3 when u is unknown. An
    uncertainty cut short by the resolution is rounded up, never down (GUM 7.2.6)."""
    decimals = gum_decimals(u, resolution)
    if decimals is None:
        return value, u, 3
    if decimals < _sig2_decimals(u):
        u_r = math.ceil(u * 10.0**decimals - 1e-9) / 10.0**decimals
    else:
        u_r = round(u, decimals)
    return round(value, decimals) + 0.0, u_r + 0.0, decimals


def _fixed(x: float, decimals: int) -> str:
    return f"{x:.{max(decimals, 0)}f}"


def gum_text(value: float, u: float, unit: str = "", resolution: float | None = None) -> str:
    """'25.51 ± 0.32 mL': value and standard uncertainty rounded together."""
    v, uu, d = round_to_uncertainty(value, u, resolution)
    text = f"{_fixed(v, d)} ± {_fixed(uu, d)}"
    return f"{text} {unit}".rstrip()


def _item(quantity: str, value, u, unit: str, budget: Mapping | None, method: str,
          resolution: float | None = None) -> dict | None:
    value, u = finite(value), finite(u)
    if value is None:
        return None
    k = float((budget or {}).get("coverage_factor") or 2.0)
    if u is None:
        return {"quantity": quantity, "value": value, "unit": unit, "u": None, "interval": None, "k": k,
                "method": method}
    v, uu, d = round_to_uncertainty(value, u, resolution)
    lo, hi = (budget or {}).get("interval") or (value - k * u, value + k * u)
    return {"quantity": quantity, "value": v, "unit": unit, "u": uu, "interval": [round(lo, d) + 0.0, round(hi, d) + 0.0],
            "k": k, "method": method, "decimals": d}


def stated_results(results: Mapping, volume_resolution_ml: float | None = None) -> list[dict]:
    """Every quantity the results section states (supported), rounded to its uncertainty."""
    out: list[dict] = []
    for e in results.get("equivalence_points") or []:
        if e.get("supported"):
            budget = e.get("budget") or {}
            u = budget.get("combined_standard_uncertainty", e.get("uncertainty_ml"))
            out.append(_item(f"V_eq{e['index']}", e.get("volume_ml"), u, "mL", budget, str(e.get("method")),
                             volume_resolution_ml))
    titrant = results.get("titrant_concentration") or {}
    conc = results.get("concentration") or {}
    if titrant.get("supported"):
        out.append(_item("titrant concentration", titrant.get("titrant_m"), titrant.get("uncertainty_m"), "mol/L",
                         None, "standardisation"))
    elif conc.get("supported"):
        out.append(_item("analyte concentration", conc.get("analyte_m"), conc.get("uncertainty_m"), "mol/L",
                         conc.get("budget"), str(conc.get("method"))))
    for index, p in sorted(stated_pka(results.get("pka")).items()):
        out.append(_item(f"pKa{index}", p.get("value"), p.get("uncertainty"), "", p.get("budget"),
                         str(p.get("method"))))
    return [item for item in out if item is not None]
