"""Acid-base titration planning: recognised by titration words with an acid or a base (or an acid and a
base together); roles from the sentence's shape ("titrate X with Y", "use Y to titrate X", "add Y to
X", "Y as titrant"); the endpoint a target pH, the equivalence point or a stated titrant volume.
"""
from __future__ import annotations

import math
import re

import numpy as np

from agentchemist.chemistry.equilibrium import titration_curve
from agentchemist.chemistry.reagents import Reagent, ReagentLibrary
from agentchemist.experiments.family import Family
from agentchemist.experiments.planning import EXPLICIT, IMPLIED, Claim, Draft, PlanningHost, ask, refuse
from agentchemist.experiments.titration_planning import CAUSAL_RULES, TitrationDraft, draft_titration, equivalents, titration_capacity
from agentchemist.plan.checks import Finding
from agentchemist.plan.feasibility import (InfeasibleTargetError, equivalence_point, equivalence_points, ph_after,
                                            titrant_for_ph)
from agentchemist.plan.parse import InstructionParse, ReagentParse
from agentchemist.plan.registry import HardwareRegistry
from agentchemist.plan.scene import SceneInfo
from agentchemist.plan.schema import Plan, ReagentEntity
from agentchemist.plan.wording import TITRATION_WORDS, standardised_name_span

#: how the refusal of an instruction no family recognises names this family's experiments
COVERS = "acid-base titration"
DISPENSES_DROPS = True
SAMPLE_AS_GIVEN = True  # the sample is titrated as it is: no weighing, no dilution (plan.roles)
CAUSAL_RULES = CAUSAL_RULES  # a titration's: grasp, draw, squeeze
REQUIRED_INSTRUMENTS = (
    ("ph_meter", "NO_PROBE", "no titration without a pH probe"),
    ("pipette", "NO_PIPETTE", "the titrant is dispensed from the pipette"),
)
ACID_BASE_KINDS = {"strong_acid", "strong_base", "weak_acid", "weak_base", "salt"}

def recognise(parse: InstructionParse) -> Claim | None:
    kinds = {r.reagent.kind for r in parse.reagents}
    titration = (
        bool(TITRATION_WORDS.search(parse.text)) or parse.target_ph is not None or parse.determination
        or parse.standardisation
    )
    if titration and kinds & ACID_BASE_KINDS:
        return Claim(EXPLICIT)
    # "Add 10 mL of NaOH to the acetic acid": an acid and a base together are a titration.
    if kinds & {"strong_acid", "weak_acid"} and kinds & {"strong_base", "weak_base"}:
        return Claim(IMPLIED + 10)
    return None


_R = "\ue000(\\d+)\ue001"
# A gap that crosses no other reagent and no sentence end.
_G = r"(?:(?!\ue000|[.;!?](?:\s|$)).){0,70}?"
_CUES: list[tuple[str, tuple[str, ...]]] = [
    (rf"\btitrat\w*\b{_G}{_R}{_G}\b(?:with|using|by|against|from)\b{_G}{_R}", ("analyte", "titrant")),
    # "raise the pH of X to 9 with Y", "bring X to pH 7 with Y": X is the sample, Y what is added
    (rf"\bp\s?H\s+of\b{_G}{_R}{_G}\b(?:with|using|by)\b{_G}{_R}", ("analyte", "titrant")),
    (rf"\b(?:bring|adjust|raise|lower|take)\w*\b{_G}{_R}{_G}\bto\s+(?:a\s+)?p\s?H\b{_G}\b(?:with|using|by)\b{_G}{_R}",
     ("analyte", "titrant")),
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


def assign_roles(parse: InstructionParse) -> None:
    """Analyte and titrant from the sentence's shape (see the module docstring); a question when unclear."""
    mentions = parse.mentions
    candidates = [r for r in parse.reagents if r.reagent.kind in ACID_BASE_KINDS]
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


def _past_equivalence(
    host: PlanningHost, a: dict, va: float, t: dict, titrant: ReagentParse, eq_ph: float, warnings: list[str]
) -> float:
    """Where a determination stops: its equivalence pH comes from an estimate, and the analysis needs
    the jump and the points after it, so the run goes 1.5 pH units past the estimated equivalence
    (toward the titrant's side) when the titrant reaches that within one draw; else to the estimate."""
    up = titrant.reagent.kind in ("strong_base", "weak_base")
    target = round(eq_ph + (1.5 if up else -1.5), 2)
    limit = min(host.registry.pipette_capacity_ml, host.registry.max_titrant_ml)
    try:
        need = titrant_for_ph(a, va, t, target, host.library, activity=host.registry.ph_reads_activity).volume_ml
    except InfeasibleTargetError:
        need = math.inf
    if need > limit / 1.5:  # room for an analyte up to 1.5x the estimate
        return round(eq_ph, 2)
    try:
        ratio = limit / equivalence_point(a, va, t, host.library).volume_ml
    except InfeasibleTargetError:
        ratio = math.nan
    warnings.append(f"a determination: the run stops at pH {target:g}, past the estimated equivalence pH "
                    f"{eq_ph:.2f}, so that the jump is recorded; one {limit:g} mL draw reaches the equivalence "
                    f"of up to about {ratio:.1f}x the estimated concentration")
    return target



def _meter_range(d: TitrationDraft) -> list[str]:
    """A word when the pH the run starts at lies outside the pH meter's range (hardware registry)."""
    host, a, va, t = d.host, d.a, d.va, d.t
    lo, hi = host.registry.ph_range
    try:
        (start,) = titration_curve(a, va, t, np.array([0.0]), activity=host.registry.ph_reads_activity,
                                   library=host.library)
    except (ValueError, ArithmeticError):
        return []
    if lo <= start <= hi:
        return []
    return [f"the solution starts at about pH {start:.1f}, outside the pH meter's range {lo:g}-{hi:g}: the first "
            "readings are at the meter's limit and are not evidence of the pH (dilute the sample to see the "
            "whole curve)"]


_COUNT = {1: "one", 2: "two", 3: "three", 4: "four"}
_NTH = {1: "first", 2: "second", 3: "third", 4: "fourth", 5: "fifth"}


def _ordinal_point(d: TitrationDraft, points: list) -> tuple:
    """(the equivalence point the instruction names, its ordinal word and a space, or '' for the plain
    'equivalence point': the last). An ordinal past the analyte's last point is asked about."""
    n = d.parse.equivalence_ordinal
    if n is None:
        return points[-1], ""
    if n > len(points):
        count = f"{_COUNT.get(len(points), len(points))} equivalence point{'s' if len(points) > 1 else ''}"
        raise ask(f"{d.analyte.reagent.display_name.capitalize()} has {count} with {d.titrant.reagent.display_name}"
                  f" ({'the last ' if len(points) > 1 else ''}at about pH {points[-1].ph:.2f}), so there is no {_NTH.get(n, str(n))}: titrate to "
                  f"{'the last one' if len(points) > 1 else 'it'} instead?")
    return points[n - 1], f"{_NTH[n]} "


def _endpoint(d: TitrationDraft) -> float | None:
    """A target pH, the equivalence point, or the stated titrant volume; else a question."""
    parse, titrant, ctx, target_conditions, host = d.parse, d.titrant, d.ctx, d.target_conditions, d.host
    if parse.target_ph is not None:
        target_conditions["target_ph"] = parse.target_ph
        ctx.update(stop_on="ph", target_ph=parse.target_ph)
        try:
            # Sized as the pH meter reads (activity, for a glass electrode): the run stops on the
            # reading, and far past equivalence the reading lags the concentration pH by many mL.
            return titrant_for_ph(
                d.a, d.va, d.t, parse.target_ph, host.library, activity=host.registry.ph_reads_activity
            ).volume_ml
        except InfeasibleTargetError:
            return None  # the rule engine refuses it with the reason
    if parse.to_equivalence:
        try:
            points = equivalence_points(d.a, d.va, d.t, host.library)
        except InfeasibleTargetError as exc:
            raise refuse(str(exc)) from None
        eq, which = _ordinal_point(d, points)
        target_conditions["to_equivalence"] = True
        ctx.update(stop_on="ph", target_ph=round(eq.ph, 2))
        if d.unknown is not None and eq is points[-1]:
            ctx["target_ph"] = _past_equivalence(host, d.a, d.va, d.t, titrant, eq.ph, d.warnings)
        d.warnings.append(
            f"to the {which}equivalence point: stopping at the theoretical equivalence pH {eq.ph:.2f} "
            f"(about {eq.volume_ml:.2f} mL of titrant)"
        )
        return eq.volume_ml
    if titrant.volume_ml is not None:
        target_conditions["target_volume_ml"] = titrant.volume_ml
        ctx.update(stop_on="volume", target_volume_ml=titrant.volume_ml)
        d.warnings.append(f"no target pH given: dispensing the stated {titrant.volume_ml:g} mL of titrant")
        return titrant.volume_ml
    raise ask(
        "What should end the titration: a target pH (e.g. 'until the pH reaches 8.2') or the equivalence point?"
    )


def _ratio(known: Reagent, unknown: Reagent) -> float:
    """The unknown's estimate: equivalence near one analyte volume of titrant, by acid-base equivalents."""
    return max(equivalents(known), 1) / max(equivalents(unknown), 1)


def draft(parse: InstructionParse, scene: SceneInfo | None, warnings: list[str], host: PlanningHost,
          family: Family) -> Draft:
    return draft_titration(parse, scene, warnings, host, family, endpoint=_endpoint, unknown_ratio=_ratio,
                           notes=_meter_range)


def instrument_findings(plan: Plan) -> list[Finding]:
    if plan.module_instantiation.vision.endpoint != "ph":
        return [Finding("HALT", "NO_PROBE", "an acid-base titration must read its endpoint from the pH probe")]
    return []


def _needed(plan: Plan, analyte: ReagentEntity, titrant: ReagentEntity, va: float, library: ReagentLibrary,
            activity: bool) -> float:
    a, t = {analyte.name: analyte.concentration_m}, {titrant.name: titrant.concentration_m}
    tc = plan.parsed_instruction.target_conditions
    if tc.target_ph is not None:
        return titrant_for_ph(a, va, t, tc.target_ph, library, activity=activity).volume_ml
    if tc.to_equivalence:
        # the point the plan stops at: an ordinal one ("to the first equivalence point") is the one whose
        # pH is nearest the dispenser's target (the plan states no ordinal), else the last
        points = equivalence_points(a, va, t, library)
        stop = plan.module_instantiation.dispenser.target_ph
        if stop is None or len(points) == 1:
            return points[-1].volume_ml
        return min(reversed(points), key=lambda p: abs(p.ph - stop)).volume_ml
    target_v = tc.target_volume_ml or plan.module_instantiation.dispenser.target_volume_ml
    if target_v is not None:
        return target_v
    raise InfeasibleTargetError("the plan has no target pH, equivalence point or target volume")


def _initial_ph(plan: Plan, va: float, reg: HardwareRegistry, lib: ReagentLibrary) -> list[Finding]:
    """A stated initial pH far from the one the stated concentrations give: a concentration to check."""
    start = plan.parsed_instruction.initial_conditions.initial_ph
    if start is None:
        return []
    analyte, titrant = plan.reagent("analyte"), plan.reagent("titrant")
    theory = ph_after(
        {analyte.name: analyte.concentration_m},
        va,
        {titrant.name: titrant.concentration_m},
        0.0,
        lib,
        reg.ph_reads_activity,  # the stated initial pH is a meter reading
    )
    if abs(theory - start) > 1.0:
        return [
            Finding(
                "WARN",
                "INITIAL_PH",
                f"stated initial pH {start:g} differs from {theory:.2f} computed for "
                f"{analyte.concentration_m:g} M {lib.get(analyte.name).display_name}; check the concentration",
            )
        ]
    return []


def capacity_findings(plan: Plan, registry: HardwareRegistry, library: ReagentLibrary) -> list[Finding]:
    return titration_capacity(plan, registry, library, needed=_needed, more=_initial_ph)
