"""Which experiment family an instruction is, and which reagent plays which role in it.

Each registered family recognises its own instructions and assigns its own roles (its
``experiments/<folder>/planning.py``, see :mod:`agentchemist.experiments.planning`): the family with the
strongest claim is the instruction's; what this module adds is what every family shares (an indicator
dye is the indicator; a reagent with no part in the experiment is dropped, with a warning).
"""

from __future__ import annotations

from agentchemist.experiments import FAMILIES, family as family_of
from agentchemist.plan.parse import InstructionParse

__all__ = ["assign_roles", "detect_family"]


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


def assign_roles(parse: InstructionParse, family: str) -> None:
    """Set ``role`` on the parsed reagents for ``family``; drop reagents with no part; add questions."""
    for rp in parse.reagents:
        if rp.reagent.kind == "indicator":
            rp.role = "indicator"
    family_of(family).part("planning").assign_roles(parse)
    dropped = [r for r in parse.reagents if r.role is None]
    for rp in dropped:
        parse.warnings.append(f"{rp.reagent.display_name} has no role in a {family.replace('_', ' ')}; ignored")
    parse.reagents = [r for r in parse.reagents if r.role is not None]
