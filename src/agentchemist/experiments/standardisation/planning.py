"""Planning a standardisation of NaOH against a weighed primary standard (KHP).

Recognised when the instruction names the primary standard and a base (no other family uses KHP); the
standard in the beaker is the analyte and the base in the pipette the titrant, whatever the sentence's
shape. What differs from an acid-base titration:

- the titrant's concentration is always the result: a concentration the instruction or the bottle's
  record gives is only its nominal value, the planning estimate (marked ``unknown``);
- the analyte's amount is the stated mass: the plan states it (``mass_g``) and the concentration in the
  beaker (mass / molar mass / water volume) sizes the curve; without a mass there is nothing to compute
  the result from, and the instruction is refused;
- the run stops 2 pH units past the estimated equivalence pH (about pH 10.9 for KHP) so that the whole
  jump and points beyond it are recorded; a stated target pH is honoured only when it lies past the
  equivalence.
"""
from __future__ import annotations

import math
import re

from agentchemist.chemistry.reagents import ReagentLibrary
from agentchemist.experiments.acid_base import planning as acid_base
from agentchemist.experiments.family import Family
from agentchemist.experiments.planning import SPECIFIC, Claim, Draft, PlanningHost, ask, refuse
from agentchemist.experiments.standardisation.concentration import STANDARDS, resolution_of
from agentchemist.experiments.titration_planning import (CAUSAL_RULES, DEFAULT_ANALYTE_ML, TitrationDraft, draft_titration,
                                                          equivalents)
from agentchemist.plan.checks import Finding
from agentchemist.plan.feasibility import InfeasibleTargetError, equivalence_point, titrant_for_ph
from agentchemist.plan.parse import InstructionParse, ReagentParse
from agentchemist.plan.registry import HardwareRegistry
from agentchemist.plan.scene import SceneInfo
from agentchemist.plan.schema import Plan
from agentchemist.plan.units import QuantityError, find_quantities

COVERS = "standardisation of NaOH against weighed KHP"
DISPENSES_DROPS = True
CAUSAL_RULES = CAUSAL_RULES  # a titration's: grasp, draw, squeeze
REQUIRED_INSTRUMENTS = acid_base.REQUIRED_INSTRUMENTS
#: pH units past the estimated equivalence pH where the run stops: the jump (about 7.5 -> 10.5 for KHP)
#: and a few points beyond it, for the analysis to locate the equivalence from both sides
PAST_EQUIVALENCE_PH = 2.0
#: a stated target pH closer than this above the estimated equivalence pH would cut the jump short
MIN_PAST_EQUIVALENCE_PH = 1.0


def _standard(parse: InstructionParse) -> ReagentParse | None:
    return next((r for r in parse.reagents if r.reagent.name in STANDARDS), None)


def recognise(parse: InstructionParse) -> Claim | None:
    """SPECIFIC when a primary standard and a strong base are named: KHP is this family's alone, and its
    mass ("0.5105 g of KHP dissolved in 50 mL") must not read as a weighing. A weak base's jump at KHP's
    equivalence is too small to standardise it: that stays an acid-base titration."""
    standard = _standard(parse)
    if standard is None:
        return None
    if standard.mass_g is None and standard.concentration_m is not None:
        return None  # "20 mL of 0.05 M KHP": a solution of stated molarity, titrated like any weak acid
    if not any(r.reagent.kind == "strong_base" for r in parse.reagents):
        return None
    return Claim(SPECIFIC)


def assign_roles(parse: InstructionParse) -> None:
    """The standard is the analyte and the base the titrant whatever the sentence's shape ("determine the
    NaOH using KHP", "standardise the NaOH against KHP"); the water it is dissolved in is the solvent; any
    other reagent has no part (the host drops it, with a warning)."""
    standard = _standard(parse)
    bases = [r for r in parse.reagents if r.reagent.kind == "strong_base"]
    if standard is not None:
        standard.role = "analyte"
    if len(bases) == 1:
        bases[0].role = "titrant"
    else:
        names = " or ".join(r.reagent.display_name for r in bases) or "none named"
        parse.questions.append(f"Which base solution is being standardised (the titrant): {names}?")
    for r in parse.reagents:
        if r.role is None and r.reagent.kind == "solvent":
            r.role = "solvent"  # the water the standard is dissolved in: its volume is the analyte's


def _mass_resolution_g(parse: InstructionParse, mass_g: float) -> float:
    """The resolution of the mass as written ("0.5105 g": 0.1 mg; "510.5 mg": 0.1 mg)."""
    try:
        quantities = find_quantities(parse.text)
    except QuantityError:
        quantities = []
    for q in quantities:
        number = re.match(r"\s*(\d+(?:\.\d*)?|\.\d+)", q.text)
        if q.kind == "mass" and number and float(number.group(1)) > 0 and math.isclose(q.value, mass_g, rel_tol=1e-9):
            return resolution_of(number.group(1)) * q.value / float(number.group(1))  # in the unit written
    return resolution_of(repr(mass_g))


def _nominal(titrant: ReagentParse, scene: SceneInfo | None, host: PlanningHost, warnings: list[str]) -> float | None:
    """The titrant's nominal concentration: the instruction's, else the bottle's record."""
    if titrant.concentration_m is not None:
        return titrant.concentration_m
    if scene is None:
        return None
    lib, name = host.library, titrant.reagent.name
    recorded = [o.concentration_m for o in scene.objects if o.concentration_m is not None and o.reagent
                and o.reagent in lib and lib.get(o.reagent).name == name]  # the lab inventory's record
    if not recorded:
        return None
    warnings.append(f"the {titrant.reagent.display_name}'s nominal {recorded[0]:g} M is the bottle's record: "
                    "the planning estimate only")
    return recorded[0]


def _endpoint(d: TitrationDraft) -> float | None:
    """Past the estimated equivalence (see the module); the titrant that needs as the probe reads it."""
    host = d.host
    try:
        eq = equivalence_point(d.a, d.va, d.t, host.library)
    except InfeasibleTargetError as exc:
        raise refuse(str(exc)) from None
    target = d.parse.target_ph
    if target is not None and target < eq.ph + MIN_PAST_EQUIVALENCE_PH:
        raise ask(f"pH {target:g} is not past the equivalence (about pH {eq.ph:.1f} for "
                  f"{d.analyte.reagent.display_name}): the standardisation needs the whole jump. Stop at about pH "
                  f"{eq.ph + PAST_EQUIVALENCE_PH:.1f} instead?")
    if target is None:
        target = round(eq.ph + PAST_EQUIVALENCE_PH, 2)
        d.warnings.append(f"a standardisation: the run stops at pH {target:g}, past the estimated equivalence pH "
                          f"{eq.ph:.2f} (about {eq.volume_ml:.2f} mL at the nominal concentration), so that the "
                          "whole jump is recorded")
    d.target_conditions["target_ph"] = target
    d.ctx.update(stop_on="ph", target_ph=target)
    try:
        return titrant_for_ph(d.a, d.va, d.t, target, host.library,
                              activity=host.registry.ph_reads_activity).volume_ml
    except InfeasibleTargetError:
        return None  # the rule engine refuses it with the reason


def draft(parse: InstructionParse, scene: SceneInfo | None, warnings: list[str], host: PlanningHost,
          family: Family) -> Draft:
    standard, titrant = parse.by_role("analyte"), parse.by_role("titrant")
    assert standard is not None and titrant is not None  # assign_roles asked otherwise
    spec = STANDARDS.get(standard.reagent.name)
    if spec is None:
        raise refuse(f"{standard.reagent.display_name} is not a primary standard this protocol knows "
                     f"(known: {', '.join(STANDARDS)})")
    if standard.mass_g is None:
        raise refuse(f"a standardisation against {standard.reagent.display_name} needs the mass weighed into the "
                     f"beaker (e.g. 'against 0.5105 g of KHP dissolved in 50 mL of water'): the NaOH concentration "
                     "is computed from that mass, and this protocol does not weigh")
    weigh = re.search(r"\bweigh(?:s|ing)?\b|\bdissolve\b", parse.text, re.I)
    if weigh:
        # "Weigh 0.5 g of KHP, dissolve it ...": this protocol does neither; said, not dropped (issue 37)
        warnings.append(f"{weigh.group(0)!r}: this protocol does not weigh or dissolve; the plan takes the "
                        f"{standard.mass_g:g} g of {standard.reagent.display_name} as already weighed and dissolved "
                        "in the beaker")
    water = next((r for r in parse.reagents if r.reagent.kind == "solvent" and r.volume_ml), None)
    volumes = [q for q in parse.unbound if q.kind == "volume"]
    if standard.volume_ml is None and water is not None:
        standard.volume_ml = water.volume_ml
    elif standard.volume_ml is None and len(volumes) == 1:
        standard.volume_ml = volumes[0].value
        parse.unbound.remove(volumes[0])
        warnings.append(f"read {volumes[0].text.strip()!r} as the water the {standard.reagent.display_name} is "
                        "dissolved in")
    elif standard.volume_ml is None and not volumes:
        # the water only shapes the curve (dilution); the result depends on the mass alone
        standard.volume_ml = DEFAULT_ANALYTE_ML
        warnings.append(f"the water the {standard.reagent.display_name} is dissolved in is not stated: planning "
                        f"with {DEFAULT_ANALYTE_ML:g} mL (it shapes the curve only; the result depends on the mass)")
    if standard.volume_ml is None:
        raise ask(f"In how much water is the {standard.mass_g:g} g of {standard.reagent.display_name} dissolved?")
    # the parser's "titrating to the equivalence point" does not hold here: the run goes past it (_endpoint)
    warnings[:] = [w for w in warnings if not w.startswith("a determination: titrating to the equivalence")]
    standard.concentration_m = standard.mass_g / spec.molar_mass_g_mol / (standard.volume_ml / 1000.0)
    nominal = _nominal(titrant, scene, host, warnings)
    # the titrant's concentration is the result: the nominal value, or failing one an equivalence near one
    # analyte volume (the titration host's estimate), only sizes the plan
    titrant.concentration_m = None
    parse.standardisation = True
    parse.determination = False

    def ratio(known, unknown) -> float:
        if nominal is not None:
            return nominal / standard.concentration_m
        return max(equivalents(known), 1) / max(equivalents(unknown), 1)

    out = draft_titration(parse, scene, warnings, host, family, endpoint=_endpoint, unknown_ratio=ratio)
    for entity in out.reagents:
        if entity["role"] == "analyte":
            entity["mass_g"] = round(standard.mass_g, 9)  # mg from "510.5 mg" is 0.5105000000000001 g
    out.context["standard_mass_g"] = round(standard.mass_g, 9)
    out.context["mass_resolution_g"] = float(f"{_mass_resolution_g(parse, standard.mass_g):.3g}")
    out.context["titrant_nominal_m"] = nominal  # None: no label or stated value to compare the result with
    out.context["experiment_name"] = (f"standardisation of {titrant.reagent.display_name} against "
                                      f"{standard.mass_g:g} g of {standard.reagent.display_name}")
    out.context["operation_intent"] = (
        f"Titrate {standard.mass_g:g} g of {standard.reagent.display_name}, already dissolved in "
        f"{standard.volume_ml:g} mL of water, with the {titrant.reagent.display_name} until pH "
        f"{out.context['target_ph']:g}, to find its concentration.")
    return out


def instrument_findings(plan: Plan) -> list[Finding]:
    if plan.module_instantiation.vision.endpoint != "ph":
        return [Finding("HALT", "NO_PROBE", "a standardisation must read the pH jump from the pH probe")]
    return []


def capacity_findings(plan: Plan, registry: HardwareRegistry, library: ReagentLibrary) -> list[Finding]:
    return acid_base.capacity_findings(plan, registry, library)
