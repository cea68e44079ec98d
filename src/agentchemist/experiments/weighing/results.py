"""Weighing and dissolution results: the weighed mass against its target (the weighing error) and the
time the solid took to dissolve.
"""
from __future__ import annotations

from collections.abc import Mapping

from agentchemist.chemistry.analysis import weighing_error
from agentchemist.report.model import RunData, series
from agentchemist.report.results import ResultsContext, TitrationSetup, finite

DELIVERS = ("final_mass_g", "target_mass_g", "dissolution_time_s", "weighing_error")
TITRANT = False
# a run whose record names no family but has balance readings is a weighing
RECORDED_AS = ("mass",)


def _last(run: RunData, quantity: str) -> tuple[float | None, float | None]:
    stamps, values = series(run, quantity)
    return (float(values[-1]), float(stamps[-1])) if values.size else (None, None)


def compute(run: RunData, setup: TitrationSetup, opts: Mapping, out: dict, ctx: ResultsContext) -> None:
    exp = run.experiment
    plan = exp.get("plan") if isinstance(exp.get("plan"), Mapping) else {}
    target = None
    try:
        target = finite(plan["parsed_instruction"]["target_conditions"]["target_mass_g"])
    except (KeyError, TypeError):
        target = finite((exp.get("conditions") or {}).get("target_mass_g"))
    # The weighed mass is the balance settled at the end of the pour (the supervisor's target_mass,
    # recorded as mass_weighed); the last periodic reading is taken only when there is none, since after
    # the beaker leaves the balance the display shows minus the beaker.
    final = run.fused("mass_weighed") or run.fused("mass_settled")
    if final:
        mass = float(final[-1]["value"])
        if not run.fused("mass_weighed"):
            ctx.not_concluded.append("no weighed mass was recorded at the end of the pour: the last settled "
                                     "balance reading is used")
    else:
        mass, _ = _last(run, "mass")
        if mass is not None:
            ctx.not_concluded.append("no settled mass was recorded: the last balance reading is used")
    out["final_mass_g"] = mass
    out["target_mass_g"] = target
    dissolution = [r for r in run.raw_observations if r.get("quantity") == "dissolution_time_s"]
    if dissolution:
        out["dissolution_time_s"] = float(dissolution[-1]["value"])
        ctx.concluded.append(f"dissolved in {out['dissolution_time_s']:.0f} s after the stirrer started "
                             "(no solid seen by the front camera)")
    if mass is None or target is None:
        ctx.not_concluded.append("no weighing error: " + ("no mass was recorded" if mass is None else "no target mass"))
        return
    try:
        err = weighing_error(target, mass)
    except ValueError as exc:  # e.g. a negative reading: the beaker was already off the balance
        ctx.not_concluded.append(f"no weighing error: {exc}")
        return
    out["weighing_error"] = err.__dict__
    ctx.concluded.append(f"weighed {mass:.3f} g for a {target:.3f} g target (error {err.error_g:+.3f} g)")


def found_equivalences(results: Mapping) -> list[float]:
    return []  # a weighing has no equivalence


def measured_concentration(results: Mapping) -> float | None:
    return None  # nor a concentration it measured
