"""The uncertainty budgets of section 9: one table, a block of rows per stated value.

Each block lists the value's sources with their standard uncertainties (in the value's unit), then the
combined standard uncertainty and the 95 % interval (coverage factor k). Only values the analysis states
(supported) get a block: an unsupported value's reason is what the reader needs, not its budget. Numbers
are formatted here, never computed (the budget dicts come from chemistry.analysis_uncertainty).
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["BUDGET_HEADERS", "budget_rows", "interval_text"]

BUDGET_HEADERS = ["Value", "Source", "Standard uncertainty", "How obtained"]


def _g(x, sig: int = 2) -> str:
    try:
        return f"{float(x):.{sig}g}"
    except (TypeError, ValueError):
        return "n/a"


def interval_text(budget: Mapping | None, digits: int = 3) -> str:
    """' (95 %: a to b)' for a budget dict, '' without one."""
    if not budget or "interval" not in budget:
        return ""
    lo, hi = budget["interval"]
    k = budget.get("coverage_factor", 2.0)
    return f" (95 % interval {lo:.{digits}f} to {hi:.{digits}f}, k = {k:g})"


def _block(label: str, budget: Mapping, digits: int) -> list[list[str]]:
    unit = f" {budget['unit']}" if budget.get("unit") else ""
    rows = [[label, c["source"], _g(c["standard_uncertainty"]) + unit, c.get("note", "")]
            for c in budget.get("components", [])]
    correction = budget.get("correction") or 0.0
    note = f"; includes a correction of {correction:+.{digits}f}" if correction else ""
    rows.append([label, "**combined**", _g(budget["combined_standard_uncertainty"]) + unit,
                 f"root sum of squares of the above (independent sources){note}"])
    lo, hi = budget["interval"]
    rows.append([label, f"**expanded (k = {budget['coverage_factor']:g})**",
                 _g(budget["expanded_uncertainty"]) + unit,
                 f"{budget['value']:.{digits}f} ± {budget['expanded_uncertainty']:.2g}: "
                 f"{lo:.{digits}f} to {hi:.{digits}f}{unit}, about 95 %"])
    return rows


def budget_rows(results: Mapping) -> list[list[str]]:
    """Rows of the budget table for the supported equivalence points, pKa values and concentration."""
    rows: list[list[str]] = []
    for e in results.get("equivalence_points") or []:
        if e.get("supported") and e.get("budget"):
            rows += _block(f"V_eq{e['index']} = {e['volume_ml']:.3f} mL", e["budget"], 3)
    for p in results.get("pka") or []:
        if p.get("supported") and p.get("budget"):
            rows += _block(f"pKa{p['index']} ({p['method'].replace('_', ' ')}) = {p['value']:.3f}", p["budget"], 3)
    conc = results.get("concentration") or {}
    if conc.get("supported") and conc.get("budget"):
        rows += _block(f"analyte concentration = {conc['analyte_m']:.5f} mol/L", conc["budget"], 5)
    return rows
