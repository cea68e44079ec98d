"""Results of a standardisation against KHP: the titration curve analysed as an acid-base titration's
(equivalence point with its budget, pKa, the curve fit), then the NaOH concentration from the stated KHP
mass and the equivalence volume (:mod:`.concentration`), beside the nominal one.

The acid-base family's own standardisation line is against a standard *solution*: its uncertainty counts
the titrant's estimate and the analyte volume, neither of which a weighed standard's result depends on
(c = P m / (M V_eq)). The acid-base analysis is therefore asked for no concentration finding, and this
family states the weighed standard's, with the mass, purity and V_eq budget.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from agentchemist.experiments.acid_base import results as acid_base
from agentchemist.experiments.standardisation.concentration import STANDARDS, resolution_of, standardise
from agentchemist.report.model import RunData
from agentchemist.report.results import ResultsContext, TitrationSetup, canonical, finite
from agentchemist.report.uncertainty import interval_text

DELIVERS = (*acid_base.DELIVERS, "standardisation")
TITRANT = True
RECORDED_AS = ()               # a run that names no family is an acid-base titration's, not this one's
ANALYSES_UNLABELLED = False


def stated_standard(plan: Mapping) -> dict:
    """What the plan's report subtask says the result is computed from (see the protocol): the standard's
    mass (g), the resolution its digits carry (g) and the titrant's nominal concentration; each None when
    the plan does not say (the mass then from the analyte's entity)."""
    params: Mapping = {}
    for task in plan.get("task_decomposition") or []:
        if isinstance(task, Mapping) and task.get("primitive") == "report":
            params = task.get("parameters") or {}
    mass = finite(params.get("standard_mass_g"))
    if mass is None:
        analyte = next((r for r in (plan.get("parsed_instruction") or {}).get("entities", {}).get("reagents") or []
                        if isinstance(r, Mapping) and r.get("role") == "analyte"), {})
        mass = finite(analyte.get("mass_g"))
    resolution = finite(params.get("mass_resolution_g"))
    if resolution is None and mass is not None:
        resolution = resolution_of(repr(mass))  # the digits the plan kept (trailing zeros are lost: coarser)
    return {"mass_g": mass, "resolution_g": resolution, "nominal_m": finite(params.get("titrant_nominal_m"))}


def compute(run: RunData, setup: TitrationSetup, opts: Mapping, out: dict, ctx: ResultsContext) -> None:
    acid_base.compute(run, dataclasses.replace(setup, titrant_unknown=True), opts, out, ctx, concentration=False)
    standard = STANDARDS.get(str(setup.analyte))
    plan = run.experiment.get("plan") if isinstance(run.experiment.get("plan"), Mapping) else {}
    stated = stated_standard(plan)
    if standard is None or stated["mass_g"] is None:
        what = "the standard's mass" if standard is not None else f"a primary standard (analyte {setup.analyte!r})"
        ctx.not_concluded.append(f"no NaOH concentration: the run's plan does not state {what}")
        return
    analysis = ctx.analysis
    supported = [e for e in (analysis.equivalence_points if analysis is not None else []) if e.supported]
    if not supported:
        ctx.not_concluded.append("no NaOH concentration: the run located no supported equivalence point")
        return
    eq = supported[-1]  # KHP has one titratable proton: its one equivalence point
    u_v = eq.budget.combined if eq.budget is not None else eq.uncertainty_ml
    try:
        result = standardise(stated["mass_g"], eq.volume_ml, u_v, balance_resolution_g=stated["resolution_g"] or 0.0,
                             standard=standard, nominal_m=stated["nominal_m"])
    except ValueError as exc:
        ctx.not_concluded.append(f"no NaOH concentration: {exc}")
        return
    out["standardisation"] = result.as_dict()
    out["titrant_concentration"] = {"titrant_m": result.concentration_m, "uncertainty_m": result.uncertainty_m,
                                    "estimate_m": setup.titrant_m, "standard_mass_g": result.mass_g,
                                    "supported": True}
    titrant, khp = canonical(setup.titrant, []), canonical(standard.reagent, [])
    ctx.concluded.append(
        f"{titrant.display_name if titrant else setup.titrant} concentration {result.concentration_m:.5f} ± "
        f"{result.uncertainty_m:.2g} mol/L (standardised against {result.mass_g:g} g of "
        f"{khp.display_name if khp else standard.reagent}, V_eq {eq.volume_ml:.3f} ± {u_v:.2g} mL)"
        + interval_text(result.budget.as_dict(), 5))
    if result.nominal_m is not None:
        agrees = "agrees with" if result.label_agrees else "does not agree with"
        ctx.concluded.append(f"nominal {result.nominal_m:g} mol/L: found {result.deviation_from_nominal:+.2%}; the "
                             f"nominal value {agrees} the found one within its expanded uncertainty")


found_equivalences = acid_base.found_equivalences


def measured_concentration(results: Mapping) -> float | None:
    """None: a standardisation measures the titrant, not the analyte (the standard's amount is given)."""
    return None
