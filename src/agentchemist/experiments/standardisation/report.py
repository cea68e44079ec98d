"""A standardisation in the report: the acid-base titration's rows and four curve charts, then what the
chemist asked for: the NaOH concentration found with its uncertainty, the equivalence volume and the KHP
mass it comes from, and the nominal concentration beside the found one."""
from __future__ import annotations

from agentchemist.experiments.acid_base import report as acid_base
from agentchemist.report.document import fmt, fmt_sig, fmt_text

TITRATION_CURVE = True


def key_values(results: dict, rows: list[tuple[str, str]]) -> list[tuple[str, str]]:
    s = results.get("standardisation")
    setup = results.get("setup") or {}
    # the acid-base row would state the titrant's planning estimate as if it were known
    rows = [(label, text) if label != "Analysed as" else
            (label, f"{fmt_text(setup.get('analyte'))} ({fmt(setup.get('analyte_volume_ml'), 2)} mL) titrated with "
                    f"{fmt_text(setup.get('titrant'))} of unknown concentration (planned at "
                    f"{fmt_sig(setup.get('titrant_m'))} mol/L) at {fmt(setup.get('temperature_c'), 1)} °C")
            for label, text in acid_base.key_values(results, rows)]
    if not s:
        return [*rows, ("NaOH concentration", "not stated (see what could not be concluded)")]
    k = s.get("coverage_factor", 2.0)
    rows += [
        ("NaOH concentration", f"{fmt(s.get('titrant_m'), 5)} ± {fmt_sig(s.get('uncertainty_m'), 2)} mol/L "
                               f"(expanded, k = {k:g}: ± {fmt_sig(s.get('expanded_uncertainty_m'), 2)} mol/L)"),
        ("From", f"{fmt_sig(s.get('standard_mass_g'), 6)} g of {s.get('standard')} "
                 f"({fmt(s.get('standard_molar_mass_g_mol'), 2)} g/mol, purity {fmt(100 * s['standard_purity'], 2)} %) "
                 f"and the equivalence volume {fmt(s.get('equivalence_volume_ml'), 3)} mL"),
    ]
    if s.get("nominal_m") is not None:
        verdict = "agrees" if s.get("label_agrees") else "does not agree"
        rows.append(("Nominal vs found", f"{fmt_sig(s['nominal_m'], 4)} mol/L nominal, found "
                                         f"{100 * s['deviation_from_nominal']:+.2f} %: the nominal value {verdict} "
                                         "within the expanded uncertainty"))
    return rows
