"""Acid-base titration in the report: what the curve was analysed as, and its four titration charts."""
from __future__ import annotations

from agentchemist.report.document import fmt, fmt_sig, fmt_text

# the titration curve and its derivatives are this family's charts: when they cannot be drawn, say why
TITRATION_CURVE = True


def key_values(results: dict, rows: list[tuple[str, str]]) -> list[tuple[str, str]]:
    setup = results.get("setup") or {}
    if not results.get("per_drop_rows"):
        return rows
    return [*rows, ("Analysed as", f"{fmt_text(setup.get('analyte'))} ({fmt_sig(setup.get('analyte_m'))} mol/L "
                                   f"nominal, {fmt(setup.get('analyte_volume_ml'), 2)} mL) titrated with "
                                   f"{fmt_text(setup.get('titrant'))} ({fmt_sig(setup.get('titrant_m'))} mol/L) at "
                                   f"{fmt(setup.get('temperature_c'), 1)} °C")]
