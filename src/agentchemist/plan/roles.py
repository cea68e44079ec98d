"""Which experiment family an instruction is, and which reagent plays which role in it.

Roles come from sentence shape first ("titrate X with Y", "use Y to titrate X", "add Y to X",
"Y as titrant"), then from chemistry where it is unambiguous (EDTA is the titrant of a calcium
solution; a metallochromic dye is the indicator). Two acid/base reagents with no cue is a question.
"""

from __future__ import annotations

import re

from agentchemist.plan.parse import InstructionParse
from agentchemist.plan.wording import standardised_name_span

__all__ = ["assign_roles", "detect_family"]

_ACID_BASE_KINDS = {"strong_acid", "strong_base", "weak_acid", "weak_base", "salt"}
_TITRATION_WORDS = re.compile(r"titrat|neutrali[sz]|equivalence|end\s?point|\bburet", re.I)
_WEIGH_WORDS = re.compile(r"\bweigh|\bbalance\b|\bdissolv|\bmake\s+up\b|\bprepare\b|\bmake\s+\d", re.I)
_COMPLEXO_WORDS = re.compile(r"complexometric|\bedta\b|chelat|water\s+hardness", re.I)

_R = "\ue000(\\d+)\ue001"
# A gap that crosses no other reagent and no sentence end.
_G = r"(?:(?!\ue000|[.;!?](?:\s|$)).){0,70}?"
_CUES: list[tuple[str, tuple[str, ...]]] = [
    (rf"\btitrat\w*\b{_G}{_R}{_G}\b(?:with|using|by|against|from)\b{_G}{_R}", ("analyte", "titrant")),
    (
        rf"\b(?:use|using|with|take|employ)\b{_G}{_R}{_G}\b(?:to|for)\s+(?:titrat\w*|neutrali[sz]\w*)\b{_G}{_R}",
        ("titrant", "analyte"),
    ),
    (
        rf"{_R}{_G}\b(?:is|was|be|being|gets|get)\s+(?:titrated|neutrali[sz]ed)\b{_G}\b(?:with|by|using)\b{_G}{_R}",
        ("analyte", "titrant"),
    ),
    (rf"\bneutrali[sz]\w*\b{_G}{_R}{_G}\b(?:with|using|by)\b{_G}{_R}", ("analyte", "titrant")),
    (
        rf"\b(?:add|adding|drip|dripping|dispense|dispensing|drop|squeeze|deliver|delivering)\b{_G}{_R}{_G}"
        rf"\b(?:to|into|onto|in)\b{_G}{_R}",
        ("titrant", "analyte"),
    ),
    # determinations and standardisations: "determine the concentration of X with Y" (X is measured),
    # "standardise X against Y" (X, in the burette, is measured against the standard Y in the beaker)
    (
        rf"\b(?:determin\w*|find\w*|measur\w*|assay\w*|quantif\w*|analy[sz]\w*)\b{_G}{_R}{_G}"
        rf"\b(?:with|using|by|against)\b{_G}{_R}",
        ("analyte", "titrant"),
    ),
    (rf"\bstandardi[sz]\w*\b{_G}{_R}{_G}\b(?:with|against|using|by|on)\b{_G}{_R}", ("titrant", "analyte")),
    (
        rf"{_R}{_G}\b(?:is|are|was|were|being|be)\s+(?:slowly\s+)?(?:added|dripped|dispensed|delivered)\b{_G}"
        rf"\b(?:to|into)\b{_G}{_R}",
        ("titrant", "analyte"),
    ),
    (rf"{_R}{_G}\b(?:vs|versus|against)\b{_G}{_R}", ("analyte", "titrant")),
    (rf"{_R}{_G}\bas\s+(?:the\s+)?titrant\b", ("titrant",)),
    (rf"\btitrant\b\s*(?:is|:|=|will\s+be)?{_G}{_R}", ("titrant",)),
    (rf"{_R}{_G}\bas\s+(?:the\s+)?(?:analyte|sample)\b", ("analyte",)),
    (rf"\b(?:analyte|sample)\b\s*(?:is|:|=)?{_G}{_R}", ("analyte",)),
    # "titrate it with Y", "titrate 20 mL with Y": no reagent between the verb and "with"
    (rf"\btitrat\w*\b(?:(?!\ue000|[.;!?](?:\s|$)).){{0,30}}?\b(?:with|using|by|against)\b{_G}{_R}", ("titrant",)),
    # where each solution is: the burette / pipette / bottle holds the titrant, the beaker the analyte
    (rf"\b(?:burettes?|burets?|pipettes?|droppers?|bottles?)\b\s*(?:holds|contains|has|:|is\s+filled\s+with)\s*{_G}{_R}",
     ("titrant",)),
    (rf"{_R}{_G}\bin\s+the\s+(?:burette|buret|pipette|dropper|bottle)\b", ("titrant",)),
    (rf"\b(?:beakers?|flasks?)\b\s*(?:holds|contains|has|:)\s*{_G}{_R}", ("analyte",)),
    (rf"{_R}{_G}\bin(?:to)?\s+the\s+(?:beaker|flask)\b", ("analyte",)),
    (rf"\btitrat\w*\s+(?:of\s+)?{_G}{_R}", ("analyte",)),
]


def detect_family(parse: InstructionParse) -> str | None:
    """The experiment family, or None (then a refusal or question is already recorded on ``parse``)."""
    text = parse.text
    kinds = {r.reagent.kind for r in parse.reagents}
    titration = (
        bool(_TITRATION_WORDS.search(text)) or parse.target_ph is not None or parse.determination
        or parse.standardisation
    )
    weighing = bool(_WEIGH_WORDS.search(text)) and any(
        r.mass_g is not None or (r.concentration_m and r.volume_ml and r.reagent.phase == "solid")
        for r in parse.reagents
        if r.reagent.kind not in ("solvent",)
    )
    if _COMPLEXO_WORDS.search(text) or "chelator" in kinds:
        return "complexometric_titration"
    if weighing and _TITRATION_WORDS.search(text):
        parse.refusals.append("the instruction combines weighing and a titration; send one experiment per instruction")
        return None
    if weighing:
        return "weighing_dissolution"
    if titration and kinds & _ACID_BASE_KINDS:
        return "acid_base_titration"
    # "Add 10 mL of NaOH to the acetic acid": an acid and a base together are a titration.
    if kinds & {"strong_acid", "weak_acid"} and kinds & {"strong_base", "weak_base"}:
        return "acid_base_titration"
    if _WEIGH_WORDS.search(text) and parse.reagents:
        return "weighing_dissolution"
    return None


def _skeleton(text: str, spans: list[tuple[int, int, int]]) -> str:
    out, pos = [], 0
    for start, end, idx in spans:
        out.append(text[pos:start])
        out.append(f"\ue000{idx}\ue001")
        pos = end
    out.append(text[pos:])
    return "".join(out)


_GENERIC = {
    "acid": ("strong_acid", "weak_acid"),
    "base": ("strong_base", "weak_base"),
    "alkali": ("strong_base", "weak_base"),
}


def _generic_names(skeleton: str, candidates: list) -> str:
    """'the acid' / 'the base' stand for the one candidate of that kind ("titrate the acid with the base
    in the bottle"); with two acids (or two bases) the words stay words and name nothing."""
    for word, kinds in _GENERIC.items():
        of_kind = [i for i, r in enumerate(candidates) if r.reagent.kind in kinds]
        if len(of_kind) == 1:
            skeleton = re.sub(rf"\bthe\s+{word}\b(?!\s+(?:is|was)\s+\ue000)", f"\ue000{of_kind[0]}\ue001", skeleton,
                              flags=re.I)
    return skeleton


def _titration_roles(parse: InstructionParse) -> None:
    mentions = parse.mentions
    candidates = [r for r in parse.reagents if r.reagent.kind in _ACID_BASE_KINDS]
    index = {r.reagent.name: i for i, r in enumerate(candidates)}
    spans = [(s, e, index[rg.name]) for rg, s, e in mentions if rg.name in index]
    skeleton = _generic_names(_skeleton(parse.text, spans), candidates)
    start = standardised_name_span(parse.text)
    if start is not None:
        # "standardise the NaOH ...": the solution being standardised is the titrant (its concentration
        # is the result); the standard it is measured against is the analyte
        named = [rg.name for rg, s, _ in mentions if start <= s <= start + 2 and rg.name in index]
        if named:
            candidates[index[named[0]]].role = "titrant"
    for pattern, roles in _CUES:
        m = re.search(pattern, skeleton, re.I)
        if not m:
            continue
        picked = [candidates[int(g)] for g in m.groups()]
        if len(picked) == 2 and picked[0] is picked[1]:
            continue
        for rp, role in zip(picked, roles, strict=True):
            if rp.role is None and parse.by_role(role) is None:
                rp.role = role
        if parse.by_role("analyte") and parse.by_role("titrant"):
            break
    unassigned = [r for r in candidates if r.role is None]
    for role in ("analyte", "titrant"):
        if (
            parse.by_role(role) is None
            and len(unassigned) == 1
            and (parse.by_role("analyte") or parse.by_role("titrant"))
        ):
            unassigned[0].role = role
            unassigned = []
    if parse.by_role("analyte") is None or parse.by_role("titrant") is None:
        if len(candidates) >= 2 and not (parse.by_role("analyte") or parse.by_role("titrant")):
            names = " or ".join(r.reagent.display_name for r in candidates[:3])
            parse.questions.append(f"Which solution is the titrant (added drop by drop): {names}?")
        elif parse.by_role("titrant") is None:
            parse.questions.append(
                "Which titrant should be added (e.g. '0.1 M sodium hydroxide'), and at what concentration?"
            )
        else:
            parse.questions.append("Which solution is being titrated (the analyte in the beaker)?")


def assign_roles(parse: InstructionParse, family: str) -> None:
    """Set ``role`` on the parsed reagents for ``family``; drop reagents with no part; add questions."""
    for rp in parse.reagents:
        if rp.reagent.kind == "indicator":
            rp.role = "indicator"
    if family == "acid_base_titration":
        _titration_roles(parse)
    elif family == "complexometric_titration":
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
    elif family == "weighing_dissolution":
        solids = [r for r in parse.reagents if r.reagent.kind != "solvent" and r.role is None]
        water = [r for r in parse.reagents if r.reagent.name == "water"]
        if len(solids) > 1:
            names = ", ".join(r.reagent.display_name for r in solids)
            parse.questions.append(f"Weigh one solid per experiment: which one of {names}?")
        elif solids:
            solids[0].role = "solid"
        else:
            parse.questions.append("Which solid should be weighed, and how much (e.g. '2.50 g of sodium chloride')?")
        if water:
            water[0].role = "solvent"
    dropped = [r for r in parse.reagents if r.role is None]
    for rp in dropped:
        parse.warnings.append(f"{rp.reagent.display_name} has no role in a {family.replace('_', ' ')}; ignored")
    parse.reagents = [r for r in parse.reagents if r.role is not None]
