"""Complexometric (Ca/EDTA) titration planning: recognised by its words (EDTA, complexometric, water
hardness) or a chelator; EDTA is the titrant, the calcium salt the analyte, a metallochromic dye the
indicator whose colour change ends the run.
"""
from __future__ import annotations

import math
import re

from agentchemist.chemistry.reagents import Reagent, ReagentLibrary
from agentchemist.experiments.family import Family
from agentchemist.experiments.planning import SPECIFIC, Claim, Draft, PlanningHost
from agentchemist.experiments.titration_planning import CAUSAL_RULES, TitrationDraft, draft_titration, titration_capacity
from agentchemist.plan.checks import Finding
from agentchemist.plan.feasibility import InfeasibleTargetError
from agentchemist.plan.parse import InstructionParse
from agentchemist.plan.registry import HardwareRegistry
from agentchemist.plan.scene import SceneInfo
from agentchemist.plan.schema import Plan, ReagentEntity

#: how the refusal of an instruction no family recognises names this family's experiments
COVERS = "complexometric Ca/EDTA titration"
DISPENSES_DROPS = True
SAMPLE_AS_GIVEN = True  # the sample is titrated as it is: no weighing, no dilution (plan.roles)
ENDPOINT_BY_INDICATOR = True  # the endpoint is an indicator's colour: a dye the bench lacks is refused
CAUSAL_RULES = CAUSAL_RULES  # a titration's: grasp, draw, squeeze
REQUIRED_INSTRUMENTS = (("pipette", "NO_PIPETTE", "the titrant is dispensed from the pipette"),)
# A colour endpoint must be passed to be seen: 20 % past the theoretical equivalence is planned.
PAST_ENDPOINT = 1.2

_WORDS = re.compile(r"complexometric|\bedta\b|chelat|water\s+hardness", re.I)
# Default endpoint colours per indicator (complex -> free indicator at the working pH).
_INDICATOR_COLOURS = {"calconcarboxylic_acid": ("magenta", "blue")}


def complexometric_equivalence_ml(metal_m: float, analyte_volume_ml: float, chelator_m: float) -> float:
    """EDTA binds metal ions 1:1, so V_eq = C_metal * V_analyte / C_EDTA (mL)."""
    for name, value in (("metal", metal_m), ("analyte volume", analyte_volume_ml), ("chelator", chelator_m)):
        if not (math.isfinite(value) and value > 0):
            raise InfeasibleTargetError(f"{name} must be a positive number, got {value!r}")
    return metal_m * analyte_volume_ml / chelator_m


def recognise(parse: InstructionParse) -> Claim | None:
    if _WORDS.search(parse.text) or any(r.reagent.kind == "chelator" for r in parse.reagents):
        return Claim(SPECIFIC)
    return None


def assign_roles(parse: InstructionParse) -> None:
    for rp in parse.reagents:
        if rp.reagent.kind == "chelator" and parse.by_role("titrant") is None:
            rp.role = "titrant"
        elif rp.reagent.kind == "metal_salt" and parse.by_role("analyte") is None:
            rp.role = "analyte"
    if parse.by_role("titrant") is None:
        parse.questions.append("Which EDTA solution is the titrant, and at what concentration?")
    if parse.by_role("analyte") is None:
        parse.questions.append("Which metal-ion (calcium) solution is being titrated?")
    if parse.by_role("indicator") is None:
        parse.questions.append(
            "Which metallochromic indicator is in the calcium solution (e.g. calconcarboxylic acid)? "
            "The endpoint is read from its colour change."
        )


def _endpoint(d: TitrationDraft) -> float:
    """The indicator's colour change (stated, else the indicator's default), past the equivalence."""
    parse, warnings = d.parse, d.warnings
    need = complexometric_equivalence_ml(d.analyte.concentration_m, d.va, d.titrant.concentration_m) * PAST_ENDPOINT
    indicator = parse.by_role("indicator")
    default = _INDICATOR_COLOURS.get(indicator.reagent.name if indicator else "", ("magenta", "blue"))
    c_from, c_to = parse.colour_from or default[0], parse.colour_to or default[1]
    if not (parse.colour_from and parse.colour_to):
        warnings.append(f"endpoint colour change assumed {c_from} -> {c_to} for the indicator")
    d.target_conditions["colour_change"] = {"from_colour": c_from, "to_colour": c_to}
    d.ctx.update(
        stop_on="colour",
        colour_from=c_from,
        colour_to=c_to,
        indicator_display=indicator.reagent.display_name if indicator else "indicator",
    )
    if parse.target_ph is not None:
        warnings.append(f"pH {parse.target_ph:g} is not a stop here: a complexometric endpoint is read from the "
                        "indicator's colour, and the bench does not adjust the sample's pH (it is titrated as given)")
    return need


def _ratio(known: Reagent, unknown: Reagent) -> float:
    return 1.0  # EDTA binds calcium 1:1


def draft(parse: InstructionParse, scene: SceneInfo | None, warnings: list[str], host: PlanningHost,
          family: Family) -> Draft:
    return draft_titration(parse, scene, warnings, host, family, endpoint=_endpoint, unknown_ratio=_ratio)


def instrument_findings(plan: Plan) -> list[Finding]:
    if plan.reagent("indicator") is None:
        return [Finding("HALT", "NO_INDICATOR", "a complexometric titration needs a metallochromic indicator")]
    return []


def _needed(plan: Plan, analyte: ReagentEntity, titrant: ReagentEntity, va: float, library: ReagentLibrary,
            activity: bool) -> float:
    return complexometric_equivalence_ml(analyte.concentration_m, va, titrant.concentration_m)


def capacity_findings(plan: Plan, registry: HardwareRegistry, library: ReagentLibrary) -> list[Finding]:
    return titration_capacity(plan, registry, library, needed=_needed, margin=PAST_ENDPOINT)
