"""Which experiment family an instruction is, and which reagent plays which role in it.

Each registered family recognises its own instructions and assigns its own roles (its
``experiments/<folder>/planning.py``, see :mod:`agentchemist.experiments.planning`): the family with the
strongest claim is the instruction's; what this module adds is what every family shares: an indicator
dye is the indicator; an indicator the bench does not hold, a reagent with no part in the experiment, a
weighing or a dilution a titration protocol does not do are refused or asked about with their names
(issue 37: nothing the chemist said is dropped).
"""

from __future__ import annotations

from agentchemist.experiments import FAMILIES, family as family_of
from agentchemist.plan.parse import InstructionParse, ReagentParse
from agentchemist.plan.unplanned import indicator_mentions, titration_extra_steps

__all__ = ["assign_roles", "detect_family"]

_ACIDS = ("strong_acid", "weak_acid")
_BASES = ("strong_base", "weak_base")


def detect_family(parse: InstructionParse) -> str | None:
    """The experiment family, or None (then a refusal or question is already recorded on ``parse``)."""
    best = None
    for fam in FAMILIES.values():
        planning = fam.part("planning")
        claim = planning.recognise(parse) if planning is not None else None  # a family not planned (yet)
        if claim is not None and (best is None or claim.strength > best[1].strength):
            best = (fam.name, claim)  # ties: the registry's order
    if best is None:
        return None
    name, claim = best
    if claim.refusal is not None:
        parse.refusals.append(claim.refusal)
        return None
    return name


def _indicators(parse: InstructionParse, planning: object) -> None:
    """An indicator dye the library does not hold: the bench cannot add it. Refused where the endpoint is
    read from an indicator's colour (or the dye is metallochromic), else asked: the pH meter reads the
    endpoint, and the chemist says whether the run may go without the dye."""
    colour_read = bool(getattr(planning, "ENDPOINT_BY_INDICATOR", False))
    for ind in indicator_mentions(parse.text):
        if colour_read or ind.metallochromic:
            parse.refusals.append(f"the bench has no {ind.name} ({ind.words!r}): its only indicator is "
                                  "calconcarboxylic acid, for the calcium/EDTA titration")
        else:
            parse.questions.append(f"The bench holds no {ind.name} ({ind.words!r}) and adds no indicator: the "
                                   "endpoint is read from the pH meter. Should the titration run without it, to a "
                                   "target pH (e.g. 'to pH 8.2') or to the equivalence point?")


def _no_part(parse: InstructionParse, rp: ReagentParse, family: str) -> str:
    """The question about a reagent left without a role."""
    name = rp.reagent.display_name
    titrant = parse.by_role("titrant")
    if titrant is not None and (
        (titrant.reagent.kind in _BASES and rp.reagent.kind in _BASES)
        or (titrant.reagent.kind in _ACIDS and rp.reagent.kind in _ACIDS)
    ):
        return (f"The instruction names two titrants, {titrant.reagent.display_name} and {name}; one is added "
                "per run. Which one should it be?")
    what = family.replace("_", " ")
    analyte = parse.by_role("analyte")
    sample = f"the {analyte.reagent.display_name}" if analyte is not None else "the sample"
    return (f"The instruction names {name}, which has no part in this {what} (one sample is titrated with one "
            f"titrant; a mixture or an added {name} is not planned). Should {sample} be used without it?")


def assign_roles(parse: InstructionParse, family: str) -> None:
    """Set ``role`` on the parsed reagents for ``family``; what the plan would not use goes to
    ``parse.refusals`` or ``parse.questions`` (water named without an amount is read as the solvent, with
    a warning)."""
    planning = family_of(family).part("planning")
    for rp in parse.reagents:
        if rp.reagent.kind == "indicator":
            rp.role = "indicator"
    _indicators(parse, planning)
    planning.assign_roles(parse)
    left = [r for r in parse.reagents if r.role is None]
    water = next((r for r in left if r.reagent.kind == "solvent"), None)
    if getattr(planning, "SAMPLE_AS_GIVEN", False):
        # water beside an assigned sample is added to it; with the roles still asked about, it may be the
        # sample itself ("50 mL of water sample"): the role question comes first
        added = water.volume_ml if water is not None and not parse.questions else None
        parse.refusals.extend(titration_extra_steps(parse.text, added))
    for rp in left:
        if rp is water and rp.volume_ml is None:
            parse.warnings.append(f"{rp.reagent.display_name} is named without an amount: read as the solvent of "
                                  "the solutions, no step adds it")
        elif (rp is not water or not getattr(planning, "SAMPLE_AS_GIVEN", False)) and not parse.questions:
            # (with the roles still asked about, the role question names the candidates already)
            parse.questions.append(_no_part(parse, rp, family))
    parse.reagents = [r for r in parse.reagents if r.role is not None]
