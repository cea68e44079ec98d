"""Weighing and dissolution planning: recognised by weighing words with a mass of a solid (or a
concentration and volume of one); the solid weighed onto the balance with a spatula or poured from its
bottle (the protocol's alternatives, chosen from the instruction and the bench), water added or already
in the beaker, stirred until dissolved.
"""
from __future__ import annotations

import re
from typing import Any

from agentchemist.chemistry.reagents import ReagentLibrary, UnknownReagentError
from agentchemist.experiments.family import Family
from agentchemist.experiments.planning import EXPLICIT, IMPLIED, Claim, Draft, PlanningHost, ask
from agentchemist.plan.alternatives import BenchOffer
from agentchemist.plan.checks import Finding, beaker_of
from agentchemist.plan.parse import InstructionParse, ReagentParse
from agentchemist.plan.registry import HardwareRegistry
from agentchemist.plan.scene import SceneInfo
from agentchemist.plan.schema import Plan
from agentchemist.plan.wording import TITRATION_WORDS, WEIGH_WORDS

#: how the refusal of an instruction no family recognises names this family's experiments
COVERS = "weighing and dissolution"
DISPENSES_DROPS = False
REQUIRED_INSTRUMENTS = (
    ("balance", "NO_BALANCE", "no weighing without a balance"),
    ("magnetic_stirrer", "NO_STIRRER", "dissolution uses the magnetic stirrer"),
)
# The protocol's primitive that pours the solid from its bottle (the other way is tapping a spatula).
POUR_FROM_BOTTLE = "pour_solid"
CAUSAL_RULES = (
    ("tare", "tap", "no dosing before the balance is tared", True),
    ("tare", POUR_FROM_BOTTLE, "no dosing before the balance is tared", True),
    ("grasp", POUR_FROM_BOTTLE, "the solid's bottle must be grasped before pouring from it", False),
    ("tap", "pour", "water goes in after the solid is weighed", False),
    (POUR_FROM_BOTTLE, "pour", "water goes in after the solid is weighed", False),
)


def recognise(parse: InstructionParse) -> Claim | None:
    # above an acid-base titration's explicit claim: "weigh 2 g NaOH, dissolve in 50 mL to pH 12" is a weighing
    text = parse.text
    weighing = bool(WEIGH_WORDS.search(text)) and any(
        r.mass_g is not None or (r.concentration_m and r.volume_ml and r.reagent.phase == "solid")
        for r in parse.reagents
        if r.reagent.kind not in ("solvent",)
    )
    if weighing and TITRATION_WORDS.search(text):
        return Claim(EXPLICIT + 10, "the instruction combines weighing and a titration; send one experiment per instruction")
    if weighing:
        return Claim(EXPLICIT + 10)
    if WEIGH_WORDS.search(text) and parse.reagents:
        return Claim(IMPLIED)
    return None


def assign_roles(parse: InstructionParse) -> None:
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


#: a stated mass and a stated molarity that disagree by more than this (relative) are asked about
MASS_MOLARITY_TOLERANCE = 0.02


def _cross_check(parse: InstructionParse, solid: ReagentParse, water_ml: float | None, warnings: list[str]) -> None:
    """A mass stated beside a molarity and a volume ("2 M NaCl in 100 mL: weigh 1.17 g") is checked
    against them: numbers that disagree are asked about, with both (issue 37), never one chosen silently."""
    conc = solid.concentration_m
    if conc is None:  # "... to make a 1 M solution": a molarity named by no reagent is the solid's
        loose = [q for q in parse.unbound if q.kind == "concentration"]
        conc = loose[0].value if len(loose) == 1 else None
    volume = solid.volume_ml or water_ml
    if conc is None or volume is None or solid.mass_g is None:
        return
    need = conc * volume * 1e-3 * solid.reagent.molar_mass_g_mol
    if abs(solid.mass_g - need) <= MASS_MOLARITY_TOLERANCE * need:
        warnings.append(f"the stated {conc:g} M in {volume:g} mL agrees with the {solid.mass_g:g} g weighed "
                        f"({need:.3f} g computed)")
        return
    made = solid.mass_g / (solid.reagent.molar_mass_g_mol * volume * 1e-3)
    name = solid.reagent.display_name
    raise ask(f"The instruction asks for {conc:g} M {name} in {volume:g} mL, which needs {need:.3f} g, but weighs "
              f"{solid.mass_g:g} g (which makes {made:.3g} M in {volume:g} mL). Which is right: the mass or the "
              "concentration?")


def draft(parse: InstructionParse, scene: SceneInfo | None, warnings: list[str], host: PlanningHost,
          family: Family) -> Draft:
    solid = parse.by_role("solid")
    assert solid is not None
    water = parse.by_role("solvent")
    water_ml = water.volume_ml if water is not None else None
    mass = solid.mass_g
    if mass is not None:
        _cross_check(parse, solid, water_ml, warnings)
    if mass is None and solid.concentration_m is not None and solid.volume_ml is not None:
        mass = round(solid.concentration_m * solid.volume_ml * 1e-3 * solid.reagent.molar_mass_g_mol, 3)
        water_ml = water_ml or solid.volume_ml
        warnings.append(
            f"{solid.volume_ml:g} mL of {solid.concentration_m:g} M {solid.reagent.display_name} needs "
            f"{mass:g} g; made up with {water_ml:g} mL of water (the solid's volume is neglected)"
        )
    if mass is None:
        raise ask(f"How much {solid.reagent.display_name} should be weighed (e.g. '2.50 g')?")
    if water_ml is None:
        volumes = [q for q in parse.unbound if q.kind == "volume"]
        if len(volumes) == 1:
            water_ml = volumes[0].value
            if water is None:
                warnings.append("no solvent named: dissolving in water")
        else:
            raise ask(f"In how much water should the {solid.reagent.display_name} be dissolved (e.g. '50 mL')?")
    proto = host.protocols.for_family(family.name)
    roles = {"solid": solid.reagent.name, "solvent": "water"}
    # "the beaker containing 50 mL of water": the beaker that holds water, when the scene says which
    water_cued = [
        o for g in proto.alternatives for o in g.options if o.condition == "water_in_beaker" and o.cue
        and re.search(o.cue, parse.text, re.I)
    ]
    beaker_id, beaker_kind = host.beaker(parse, scene, "water" if water_cued else None, warnings, water_ml)
    scene_beaker = beaker_id if scene is not None and scene.get(beaker_id) is not None else None
    offer = BenchOffer(scene, host.registry, host.library, roles, scene_beaker)
    choice: dict[str, Any] = {}
    for group in proto.alternatives:
        option, asked = offer.choose(group, parse.text)
        choice[group.name] = option
        if not asked and len(group.options) > 1:
            how = "the bench has it" if scene is not None and option.instrument else "the default"
            warnings.append(f"{group.name.replace('_', ' ')}: {option.display} (not stated; {how})")
    balance = host.scene_id(scene, "balance", "balance")
    stirrer = host.scene_id(scene, "magnetic_stirrer", "magnetic_stirrer")
    cylinder = host.scene_id(scene, "graduated_cylinder", "graduated_cylinder")
    bottle = "solid_bottle"
    for option in choice.values():
        if option.instrument == "solid_bottle":
            holder = offer.holder_of(option)
            bottle = holder.id if holder is not None else bottle
    in_beaker = any(o.condition == "water_in_beaker" for o in choice.values())
    poured = any(o.primitive == POUR_FROM_BOTTLE for o in choice.values())
    ctx: dict[str, Any] = {
        "experiment_name": f"{family.label} of {mass:g} g {solid.reagent.display_name} "
        f"in {water_ml:g} mL water",
        "solid_name": solid.reagent.name,
        "solid_display": solid.reagent.display_name,
        "target_mass_g": mass,
        "water_volume_ml": water_ml,
        "beaker": beaker_id,
        "balance": balance,
        "stirrer": stirrer,
        "water_container": cylinder,
        "solid_container": bottle,
        "alternative_instruments": [o.instrument for o in choice.values() if o.instrument],
        **{name: option.value for name, option in choice.items()},
    }
    if parse.settle_each_drop is not None:
        ctx["settle_each_drop"] = parse.settle_each_drop
    ctx["initial_conditions"] = {
        "initial_ph": None,
        "analyte_volume_ml": None,
        "temperature_c": parse.initial_temperature_c,
    }
    ctx["target_conditions"] = {
        "target_ph": None,
        "to_equivalence": False,
        "target_volume_ml": None,
        "target_mass_g": mass,
        "colour_change": None,
    }
    how = f"Pour {mass:g} g of {solid.reagent.display_name} from its bottle" if poured else (
        f"Weigh {mass:g} g of {solid.reagent.display_name} with a spatula"
    )
    if in_beaker:
        ctx["operation_intent"] = (
            f"{how} into the beaker holding {water_ml:g} mL of water on the balance and stir until dissolved."
        )
    else:
        ctx["operation_intent"] = f"{how} into the beaker, add {water_ml:g} mL of water and stir until dissolved."
    reagents = [
        {"name": solid.reagent.name, "role": "solid", "concentration_m": None, "volume_ml": None, "mass_g": mass},
        {"name": "water", "role": "solvent", "concentration_m": None, "volume_ml": water_ml, "mass_g": None},
    ]
    used = [balance, stirrer, bottle if poured else None, None if in_beaker else cylinder]
    objects = [beaker_kind] + [o for o in (beaker_id, *used) if o is not None and o != beaker_kind]
    return Draft(ctx, reagents, objects)


def instrument_findings(plan: Plan) -> list[Finding]:
    return []


def capacity_findings(plan: Plan, reg: HardwareRegistry, lib: ReagentLibrary) -> list[Finding]:
    """A solid within the balance's range; its water within the beaker and, when poured in, the cylinder."""
    out: list[Finding] = []
    solid, water = plan.reagent("solid"), plan.reagent("solvent")
    if solid is None or solid.mass_g is None:
        return [Finding("HALT", "MISSING_REAGENT", "the plan names no solid with a mass to weigh")]
    try:
        reagent = lib.get(solid.name)
        if reagent.phase != "solid":
            out.append(
                Finding("HALT", "NOT_A_SOLID", f"{reagent.display_name} is a {reagent.phase}, not a solid to weigh")
            )
    except UnknownReagentError as exc:
        out.append(Finding("HALT", "UNKNOWN_REAGENT", str(exc)))
    lo, hi = reg.balance_range_g
    minimum = 10 * reg.balance_resolution_g  # below this the resolution alone is a >10 % error
    if solid.mass_g > hi:
        out.append(Finding("HALT", "MASS_RANGE", f"{solid.mass_g:g} g exceeds the balance's {hi:g} g range"))
    elif solid.mass_g < minimum:
        out.append(
            Finding(
                "HALT",
                "MASS_RANGE",
                f"{solid.mass_g:g} g is below the smallest mass the balance weighs usefully "
                f"({minimum:g} g at {reg.balance_resolution_g:g} g resolution)",
            )
        )
    if water is None or water.volume_ml is None:
        out.append(Finding("HALT", "MISSING_VOLUME", "the plan gives no volume of water to dissolve in"))
        return out
    kind, assumed = beaker_of(plan, reg)
    room = reg.beaker_room_ml(kind)
    if water.volume_ml > room:
        note = f" (assumed {kind}: the plan names no beaker)" if assumed else ""
        out.append(
            Finding(
                "HALT", "OVERFLOW", f"{water.volume_ml:g} mL water exceeds the usable {room:g} mL of the {kind}{note}"
            )
        )
    # The cylinder limits only a plan that pours the water in; water already in the beaker is not measured.
    pours_water = any(t.primitive == "pour" for t in plan.task_decomposition)
    if pours_water and water.volume_ml > reg.cylinder_capacity_ml:
        out.append(
            Finding(
                "HALT",
                "CYLINDER_CAPACITY",
                f"{water.volume_ml:g} mL water exceeds the {reg.cylinder_capacity_ml:g} mL graduated cylinder",
            )
        )
    return out
