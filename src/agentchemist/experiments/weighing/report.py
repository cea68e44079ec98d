"""Weighing and dissolution in the report: the weighed mass against its target, the dissolution time,
and the snapshots of the weighed beaker and the dissolved solution."""
from __future__ import annotations

from agentchemist.report.document import fmt_sig

# the weighed beaker and the dissolved solution, beside the bench at the start
SNAPSHOTS = ("start", "weighed", "dissolved")


def key_values(results: dict, rows: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """No pH, titrant or drops in a weighing: only its own rows."""
    out = []
    for key, label in (("final_mass_g", "Final mass (g)"), ("target_mass_g", "Target mass (g)"),
                       ("dissolution_time_s", "Dissolution time (s, stirrer on to no solid seen)")):
        if key in results:
            out.append((label, fmt_sig(results[key], 5)))
    if results.get("weighing_error"):
        w = results["weighing_error"]
        out.append(("Weighing error", f"{w['error_g']:+.3f} g ({100 * w['relative']:+.2f} %)"))
    return out
