"""Planning shared by the titration families: a titrant drawn once into the pipette and dropped into an
analyte in a beaker until an endpoint.

:func:`draft_titration` builds the planning context of a titration protocol; the family gives only its
endpoint (what ends the run and how much titrant that needs) and how its unknown is estimated.
:func:`titration_capacity` checks the plan's volumes against the beaker and the pipette, the family
giving the titrant its endpoint needs.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from agentchemist.chemistry.reagents import Reagent, ReagentLibrary
from agentchemist.experiments.family import Family
from agentchemist.experiments.planning import Draft, PlanningHost, ask
from agentchemist.plan.checks import Finding, beaker_of, draw_index, set_path
from agentchemist.plan.feasibility import InfeasibleTargetError
from agentchemist.plan.wording import standardised_name_span
from agentchemist.plan.parse import InstructionParse, ReagentParse
from agentchemist.plan.registry import HardwareRegistry
from agentchemist.plan.scene import SceneInfo
from agentchemist.plan.schema import Plan, ReagentEntity

__all__ = [
    "CAUSAL_RULES", "DEFAULT_ANALYTE_ML", "TitrationDraft", "conc_text", "draft_titration", "equivalents", "titrant_needed_ml",
    "titration_capacity",
]

DEFAULT_ANALYTE_ML = 25.0
#: the titration protocols' causal rules (see FamilyPlanning.CAUSAL_RULES)
CAUSAL_RULES = (
    ("grasp", "draw", "the pipette must be grasped before drawing", False),
    ("draw", "squeeze", "no dispensing before the titrant is drawn", True),
)


@dataclass
class TitrationDraft:
    """A titration being drafted, as the family's endpoint sees it. ``a`` / ``t``: {reagent name:
    mol/L} of the analyte and the titrant; ``va`` the analyte volume (mL); ``unknown`` the reagent whose
    concentration the run measures (None: none)."""

    parse: InstructionParse
    analyte: ReagentParse
    titrant: ReagentParse
    unknown: ReagentParse | None
    va: float
    a: dict[str, float]
    t: dict[str, float]
    ctx: dict[str, Any]
    target_conditions: dict[str, Any]
    warnings: list[str]
    host: PlanningHost


#: the family's endpoint: sets ``stop_on`` and its target in ctx and target_conditions, and returns the
#: titrant (mL) the endpoint needs, or None when the rule engine is to refuse it with its reason
Endpoint = Callable[[TitrationDraft], "float | None"]
#: the family's (known reagent, unknown reagent) -> concentration ratio of the unknown's estimate
UnknownRatio = Callable[[Reagent, Reagent], float]


def hazard_notes(reagents: list[ReagentParse]) -> list[str]:
    """The reagent registry's handling note for each reagent at or above its hazard concentration."""
    out = []
    for r in reagents:
        hazard = r.reagent.hazard
        if hazard is not None and r.concentration_m is not None and r.concentration_m >= hazard.above_m:
            out.append(f"hazard: {r.concentration_m:g} M {r.reagent.display_name}: {hazard.note}")
    return out


def _ask_about_leftovers(volumes: list, text: str) -> None:
    """A volume the plan would not use ("... and dispense 5 L") is asked about, never dropped."""
    if not volumes:
        return
    def phrase(q) -> str:
        words = re.findall(r"[\w.]+", text[: q.start])[-2:]  # "dispense 5 L": the verb with the amount
        return " ".join([*words, q.text.strip()])

    said = ", ".join(repr(phrase(q)) for q in volumes)
    raise ask(f"The instruction also names {said}, which this plan would not use or dispense (a titration "
              "adds titrant drop by drop until its target). What is it for? Leave it out to plan the titration alone.")


def equivalents(r: Reagent) -> int:
    """Protons given or taken per formula unit (what normality counts)."""
    if r.kind in ("strong_acid", "weak_acid"):
        return max(r.strong_protons, 0) + r.protons_as_added
    if r.kind in ("strong_base", "weak_base"):
        return max(-r.strong_protons, 0) + (len(r.pka) - r.protons_as_added)
    return 0


def _the_unknown(
    parse: InstructionParse, analyte: ReagentParse, titrant: ReagentParse, warnings: list[str], ratio: UnknownRatio
) -> ReagentParse | None:
    """In a determination or standardisation the one concentration not given is what the run measures:
    give it a planning estimate (equivalence near one analyte volume of titrant, by the family's ratio) so
    the feasibility and volume checks have a number, and mark it unknown. None when nothing is unknown."""
    if not (parse.determination or parse.standardisation):
        return None
    missing = [r for r in (analyte, titrant) if r.concentration_m is None]
    if (parse.standardisation and not missing and titrant.role == "titrant"
            and standardised_name_span(parse.text) is not None):
        # "standardise the approximately 0.1 M NaOH against ...": the stated value is the nominal one, the
        # planning estimate; what the run measures is still the titrant's concentration
        titrant.unknown = True
        warnings.append(f"the {titrant.reagent.display_name}'s stated {titrant.concentration_m:g} M is its nominal "
                        "concentration (what this standardisation measures): planned with it as the estimate; the "
                        "analysis reports the measured value")
        return titrant
    if len(missing) != 1:
        return None  # both missing: the titrant's concentration is still asked for
    unknown = missing[0]
    known = titrant if unknown is analyte else analyte
    unknown.concentration_m = round(known.concentration_m * ratio(known.reagent, unknown.reagent), 6)
    unknown.unknown = True
    what = "the result of this determination" if unknown is analyte else "what this standardisation measures"
    warnings.append(
        f"the {unknown.reagent.display_name} concentration is unknown ({what}): planned with an estimate of "
        f"{unknown.concentration_m:g} M; the analysis reports the measured value"
    )
    return unknown


def conc_text(r: ReagentParse) -> str:
    if r.unknown:
        return f"{r.reagent.display_name} of unknown concentration"
    return f"{r.concentration_m:g} M {r.reagent.display_name}" if r.concentration_m else r.reagent.display_name


def _molar(r: ReagentParse, warnings: list[str]) -> None:
    if r.concentration_m is None or not r.normality:
        return
    eq = equivalents(r.reagent)
    if eq != 1:
        raise ask(
            f"Normality is ambiguous for {r.reagent.display_name} ({eq or 'no'} acid-base equivalents "
            f"per mole): what is its molar concentration?"
        )
    warnings.append(
        f"{r.concentration_m:g} N {r.reagent.display_name} read as {r.concentration_m:g} M (monoprotic)"
    )


def draft_titration(
    parse: InstructionParse,
    scene: SceneInfo | None,
    warnings: list[str],
    host: PlanningHost,
    family: Family,
    *,
    endpoint: Endpoint,
    unknown_ratio: UnknownRatio,
    notes: Callable[[TitrationDraft], list[str]] | None = None,
) -> Draft:
    """The planning context of a titration protocol (``notes``: the family's warnings after the hazards)."""
    analyte, titrant = parse.by_role("analyte"), parse.by_role("titrant")
    assert analyte is not None and titrant is not None  # assign_roles asked otherwise
    registry = host.registry
    for r in (titrant, analyte):
        _molar(r, warnings)
    unknown = _the_unknown(parse, analyte, titrant, warnings, unknown_ratio)
    missing = [
        f"What is the concentration of the {r.reagent.display_name}?"
        for r in (titrant, analyte)
        if r.concentration_m is None
    ]
    if missing:
        raise ask(*missing, "It is needed to check that the target is reachable and the titrant fits the beaker.")
    va = analyte.volume_ml
    volumes = [q for q in parse.unbound if q.kind == "volume"]
    used = volumes[0] if va is None and len(volumes) == 1 else None
    _ask_about_leftovers([q for q in volumes if q is not used], parse.text)
    if va is None:
        if len(volumes) == 1:
            va = volumes[0].value
            warnings.append(f"read {volumes[0].text.strip()!r} as the analyte volume")
        else:
            va = DEFAULT_ANALYTE_ML
            warnings.append(f"analyte volume not stated: assuming {va:g} mL of {analyte.reagent.display_name}")
    ctx: dict[str, Any] = {}
    target_conditions: dict[str, Any] = {
        "target_ph": None,
        "to_equivalence": False,
        "target_volume_ml": None,
        "target_mass_g": None,
        "colour_change": None,
    }
    state = TitrationDraft(parse, analyte, titrant, unknown, va, {analyte.reagent.name: analyte.concentration_m},
                           {titrant.reagent.name: titrant.concentration_m}, ctx, target_conditions, warnings, host)
    need = endpoint(state)
    if unknown is not None and need is not None:
        need = max(need, min(registry.pipette_capacity_ml, registry.max_titrant_ml) / 1.1)
    beaker_id, beaker_kind = host.beaker(
        parse, scene, analyte.reagent.name, warnings, va + need if need is not None else None
    )
    room = registry.beaker_room_ml(beaker_kind)
    limit = min(registry.pipette_capacity_ml, registry.max_titrant_ml)
    if titrant.volume_ml is not None and ctx.get("stop_on") != "volume":
        limit = min(limit, titrant.volume_ml)
    # An unknown concentration: the estimate only places the equivalence roughly, so the whole draw
    # the pipette and the beaker allow is taken and the run stops on its own endpoint.
    draw = round(min(limit, need * 1.1 + 1.0), 1) if need is not None and unknown is None else round(limit, 1)
    cap = round(max(min(room - va, draw), 0.1), 1)
    pipette = host.scene_id(scene, "pipette", "pipette")
    container = "titrant_bottle"
    if scene is not None:
        holders = [o for o in scene.holding(titrant.reagent.name, host.library) if o.id != beaker_id]
        container = holders[0].id if holders else container
    settle = parse.settle_each_drop
    ctx.update(
        experiment_name=f"{family.label} of {conc_text(analyte)} with {conc_text(titrant)}",
        analyte_name=analyte.reagent.name,
        analyte_display=analyte.reagent.display_name,
        titrant_name=titrant.reagent.name,
        titrant_display=titrant.reagent.display_name,
        analyte_concentration_m=analyte.concentration_m,
        titrant_concentration_m=titrant.concentration_m,
        analyte_volume_ml=va,
        draw_volume_ml=draw,
        max_volume_ml=cap,
        beaker=beaker_id,
        pipette=pipette,
        titrant_container=container,
    )
    if settle is not None:
        ctx["settle_each_drop"] = settle
    ctx["initial_conditions"] = {
        "initial_ph": parse.initial_ph,
        "analyte_volume_ml": va,
        "temperature_c": parse.initial_temperature_c,
    }
    ctx["target_conditions"] = target_conditions
    warnings.extend(hazard_notes([analyte, titrant, *[r for r in parse.reagents if r not in (analyte, titrant)]]))
    if notes is not None:
        warnings.extend(notes(state))
    end = (
        f"until pH {ctx['target_ph']:g}"
        if ctx.get("stop_on") == "ph"
        else f"until the colour turns {ctx.get('colour_to')}"
        if ctx.get("stop_on") == "colour"
        else f"adding {ctx.get('target_volume_ml'):g} mL"
    )
    wait = ", acting only on a settled reading after each drop" if settle else ""
    ctx["operation_intent"] = f"Titrate {va:g} mL of {conc_text(analyte)} with {conc_text(titrant)} {end}{wait}."
    reagents = [
        {
            "name": titrant.reagent.name,
            "role": "titrant",
            "concentration_m": titrant.concentration_m,
            "volume_ml": titrant.volume_ml,
            "mass_g": None,
            "unknown": unknown is titrant,
        },
        {
            "name": analyte.reagent.name,
            "role": "analyte",
            "concentration_m": analyte.concentration_m,
            "volume_ml": va,
            "mass_g": None,
            "unknown": unknown is analyte,
        },
    ]
    indicator = parse.by_role("indicator")
    if indicator is not None:
        reagents.append(
            {
                "name": indicator.reagent.name,
                "role": "indicator",
                "concentration_m": indicator.concentration_m,
                "volume_ml": indicator.volume_ml,
                "mass_g": indicator.mass_g,
            }
        )
    objects = [beaker_kind] + [o for o in (beaker_id, pipette, container) if o != beaker_kind]
    return Draft(ctx, reagents, objects)


#: the family's titrant (mL) its endpoint needs: (plan, analyte, titrant, analyte volume mL, library,
#: whether a target pH is a glass electrode's reading) -> mL; InfeasibleTargetError when it cannot
Needed = Callable[[Plan, ReagentEntity, ReagentEntity, float, ReagentLibrary, bool], float]


def titrant_needed_ml(plan: Plan, library: ReagentLibrary, needed: Needed, activity: bool = False) -> float:
    """Titrant (mL) the plan needs to reach its target; InfeasibleTargetError when it cannot.
    ``activity``: a target pH is the reading of a glass electrode (-log10 a(H+), Davies)."""
    analyte, titrant = plan.reagent("analyte"), plan.reagent("titrant")
    if analyte is None or titrant is None or analyte.concentration_m is None or titrant.concentration_m is None:
        raise InfeasibleTargetError("the plan needs an analyte and a titrant with concentrations")
    va = analyte.volume_ml or plan.parsed_instruction.initial_conditions.analyte_volume_ml
    if va is None:
        raise InfeasibleTargetError("the plan does not give the analyte volume")
    return needed(plan, analyte, titrant, va, library, activity)


def titration_capacity(
    plan: Plan,
    reg: HardwareRegistry,
    lib: ReagentLibrary,
    *,
    needed: Needed,
    margin: float = 1.0,
    more: Callable[[Plan, float, HardwareRegistry, ReagentLibrary], list[Finding]] | None = None,
) -> list[Finding]:
    """Reagents known, analyte plus the titrant needed (times ``margin``) within the beaker, the titrant
    within one pipette draw; the draw volume and the dispenser's cap set to match (WARN fixes). ``more``:
    the family's findings (given the analyte volume) once the volumes fit."""
    out: list[Finding] = []
    pi = plan.parsed_instruction
    for role in ("analyte", "titrant"):
        r = plan.reagent(role)
        if r is None or r.concentration_m is None:
            out.append(Finding("HALT", "MISSING_REAGENT", f"the plan has no {role} concentration"))
        elif r.name not in lib:
            out.append(Finding("HALT", "UNKNOWN_REAGENT", f"{role} {r.name!r} is not in the reagent library"))
    if out:
        return out
    kind, assumed = beaker_of(plan, reg)
    room = reg.beaker_room_ml(kind)
    analyte = plan.reagent("analyte")
    va = analyte.volume_ml or pi.initial_conditions.analyte_volume_ml
    if va is None:
        return [Finding("HALT", "MISSING_VOLUME", "the plan does not give the analyte volume")]
    try:
        need = titrant_needed_ml(plan, lib, needed, activity=reg.ph_reads_activity)
    except InfeasibleTargetError as exc:
        return [Finding("HALT", "UNREACHABLE_TARGET", str(exc))]
    cap_note = f" (assumed {kind}: the plan names no beaker)" if assumed else ""
    planned = need * margin
    if va + planned > room:
        out.append(
            Finding(
                "HALT",
                "OVERFLOW",
                f"{va:g} mL analyte + {planned:.1f} mL titrant needed = {va + planned:.1f} mL exceeds "
                f"the usable {room:g} mL of the {kind}{cap_note}",
            )
        )
    limit = min(reg.pipette_capacity_ml, reg.max_titrant_ml)
    if planned > limit:
        # One draw per experiment: the protocol has no refill step (the machine goes grasp -> draw ->
        # titrate once, and the twin fills the pipette once at the bottle), so more titrant is refused.
        by_ph = reg.ph_reads_activity and pi.target_conditions.target_ph is not None
        read = " (the pH as the glass electrode reads it)" if by_ph else ""
        out.append(
            Finding(
                "HALT",
                "PIPETTE_CAPACITY",
                f"the target needs {planned:.1f} mL of titrant{read}; one pipette draw holds {limit:g} mL and "
                f"the protocol draws once",
            )
        )
    if out:
        return out
    di = draw_index(plan)
    wanted_draw = round(min(limit, planned * 1.1 + 1.0), 1)
    if di is not None:
        drawn = plan.task_decomposition[di].parameters.get("volume_ml")
        if not isinstance(drawn, (int, float)) or isinstance(drawn, bool) or drawn < planned or drawn > limit:
            out.append(
                Finding(
                    "WARN",
                    "DRAW_VOLUME",
                    f"draw volume {drawn!r} mL does not cover the {planned:.1f} mL needed within the "
                    f"pipette's {limit:g} mL; set to {wanted_draw:g} mL",
                    lambda d, i=di, v=wanted_draw: set_path(
                        d, ("task_decomposition", i, "parameters", "volume_ml"), v
                    ),
                )
            )
            drawn = wanted_draw
        hard_cap = round(min(room - va, float(drawn)), 1)
    else:
        hard_cap = round(min(room - va, limit), 1)
    current = plan.module_instantiation.dispenser.max_volume_ml
    if current is None or current > hard_cap + 1e-9 or current < planned:
        out.append(
            Finding(
                "WARN",
                "MAX_VOLUME",
                f"dispenser cap {current!r} mL set to {hard_cap:g} mL (titrant drawn, room left in the beaker)",
                lambda d, v=hard_cap: set_path(d, ("module_instantiation", "dispenser", "max_volume_ml"), v),
            )
        )
    if more is not None:
        out += more(plan, va, reg, lib)
    return out
