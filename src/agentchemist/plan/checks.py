"""The rule engine: deterministic checks of a plan against the hardware registry and the chemistry.

``verify_plan(plan, registry)`` returns findings: ``HALT`` (the plan must be refused; the message says
why, with the numbers) or ``WARN`` (the plan can be rectified: a value clamped into range, a missing
dependency added, subtasks reordered). ``rectify_plan`` applies the WARN fixes and returns the new plan
with the changes listed in ``plan.warnings``. The planner always runs it; no backend can skip it.

Checks: parameter ranges (dispense rate, windows, thresholds, stirrer speed, recorder tau); target pH
within the pH meter's range; required instruments (no titration without a pH probe, no weighing
without a balance); causal order (no dispensing before a draw, no draw before the grasp, no dosing
before taring, no pouring from a bottle not grasped, dependencies that match the machine's order);
capacities (analyte plus the titrant needed must fit the beaker, the titrant needed must fit one
pipette draw, water fits the beaker and, when poured in, the cylinder, the mass is within the
balance's range); reachability of the target with the titrant (equilibrium solver, as the registry's
pH meter reads: activity for a glass electrode).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Literal

from agentchemist.chemistry.reagents import ReagentLibrary, UnknownReagentError, default_library
from agentchemist.fsm.validation import reachable_states, topological_order
from agentchemist.plan.feasibility import (
    InfeasibleTargetError,
    complexometric_equivalence_ml,
    equivalence_point,
    ph_after,
    titrant_for_ph,
)
from agentchemist.plan.registry import HardwareRegistry
from agentchemist.plan.schema import Plan

__all__ = ["Finding", "beaker_of", "rectify_plan", "titrant_needed_ml", "verify_plan"]

Severity = Literal["HALT", "WARN"]
Fix = Callable[[dict[str, Any]], None]

# (primitive that must come first, primitive that depends on it, why)
_CAUSAL_RULES = (
    ("grasp", "draw", "the pipette must be grasped before drawing"),
    ("draw", "squeeze", "no dispensing before the titrant is drawn"),
    ("tare", "tap", "no dosing before the balance is tared"),
    ("tare", "pour_solid", "no dosing before the balance is tared"),
    ("grasp", "pour_solid", "the solid's bottle must be grasped before pouring from it"),
    ("tap", "pour", "water goes in after the solid is weighed"),
    ("pour_solid", "pour", "water goes in after the solid is weighed"),
)
_REQUIRED_INSTRUMENTS = {
    "acid_base_titration": (
        ("ph_meter", "NO_PROBE", "no titration without a pH probe"),
        ("pipette", "NO_PIPETTE", "the titrant is dispensed from the pipette"),
    ),
    "complexometric_titration": (("pipette", "NO_PIPETTE", "the titrant is dispensed from the pipette"),),
    "weighing_dissolution": (
        ("balance", "NO_BALANCE", "no weighing without a balance"),
        ("magnetic_stirrer", "NO_STIRRER", "dissolution uses the magnetic stirrer"),
    ),
}


@dataclass(frozen=True)
class Finding:
    """One rule result. ``fix`` (WARN only) edits a plan dict in place to rectify it."""

    severity: Severity
    code: str
    message: str
    fix: Fix | None = field(default=None, compare=False, repr=False)

    def __str__(self) -> str:
        return f"{self.severity} {self.code}: {self.message}"


def _set_path(data: dict[str, Any], path: tuple[Any, ...], value: Any) -> None:
    node: Any = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value


def _clamp_finding(path: tuple[Any, ...], what: str, value: float, lo: float, hi: float, unit: str) -> Finding | None:
    if lo <= value <= hi:
        return None
    new = min(max(value, lo), hi)
    return Finding(
        "WARN",
        "RANGE_CLAMP",
        f"{what} {value:g} {unit} is outside [{lo:g}, {hi:g}]; clamped to {new:g}",
        lambda d, p=path, v=new: _set_path(d, p, v),
    )


def beaker_of(plan: Plan, registry: HardwareRegistry) -> tuple[str, bool]:
    """(registry beaker kind the plan uses, whether it was assumed because the plan names none)."""
    for obj in plan.parsed_instruction.entities.objects:
        if obj in registry.beakers:
            return obj, False
    return registry.default_beaker, True


def _ranges(plan: Plan, reg: HardwareRegistry) -> list[Finding]:
    out: list[Finding] = []
    disp = plan.module_instantiation.dispenser
    base = ("module_instantiation", "dispenser")
    for key, unit in (
        ("rate_mm_s", "mm/s"),
        ("settle_window_s", "s"),
        ("endpoint_stable_s", "s"),
        ("wait_on_change_threshold", "per s"),
    ):
        lo, hi = reg.dispense_ranges[key]
        out.append(_clamp_finding(base + (key,), f"dispenser {key}", getattr(disp, key), lo, hi, unit))
    if disp.mass_tolerance_g is not None:
        lo, hi = reg.dispense_ranges["mass_tolerance_g"]
        lo = max(lo, reg.balance_resolution_g)
        out.append(_clamp_finding(base + ("mass_tolerance_g",), "mass tolerance", disp.mass_tolerance_g, lo, hi, "g"))
    lo, hi = reg.recorder_tau
    out.append(
        _clamp_finding(
            ("module_instantiation", "recorder", "tau"),
            "recorder tau",
            plan.module_instantiation.recorder.tau,
            lo,
            hi,
            "",
        )
    )
    param_ranges = {
        "rate_mm_s": reg.dispense_ranges["rate_mm_s"],
        "stable_window_s": reg.dispense_ranges["settle_window_s"],
        "endpoint_stable_s": reg.dispense_ranges["endpoint_stable_s"],
        "wait_on_change_threshold": reg.dispense_ranges["wait_on_change_threshold"],
        "speed_rpm": reg.stirrer_rpm,
        "opening_mm": reg.gripper_travel_mm,
        "tilt_rate_deg_s": reg.solid_pour_tilt_rate_deg_s,
    }
    for i, task in enumerate(plan.task_decomposition):
        for key, (lo, hi) in param_ranges.items():
            value = task.parameters.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                out.append(
                    _clamp_finding(
                        ("task_decomposition", i, "parameters", key),
                        f"subtask {task.id!r} {key}",
                        float(value),
                        lo,
                        hi,
                        "",
                    )
                )
    for ph, what in (
        (plan.parsed_instruction.target_conditions.target_ph, "target pH"),
        (disp.target_ph, "dispenser target pH"),
    ):
        if ph is not None and not reg.ph_range[0] <= ph <= reg.ph_range[1]:
            out.append(
                Finding(
                    "HALT",
                    "PH_OUT_OF_RANGE",
                    f"{what} {ph:g} is outside the pH meter's range {reg.ph_range[0]:g}-{reg.ph_range[1]:g}",
                )
            )
    target = plan.parsed_instruction.target_conditions.target_ph
    if target is not None and disp.target_ph is not None and abs(disp.target_ph - target) > 1e-6:
        out.append(
            Finding(
                "WARN",
                "TARGET_MISMATCH",
                f"dispenser target pH {disp.target_ph:g} differs from the instruction's {target:g}; using {target:g}",
                lambda d, v=target: _set_path(d, base + ("target_ph",), v),
            )
        )
    return [f for f in out if f is not None]


def _instruments(plan: Plan) -> list[Finding]:
    have = set(plan.parsed_instruction.entities.instruments)
    fam = plan.parsed_instruction.family
    out = [
        Finding("HALT", code, f"{why}: the plan lists no {inst.replace('_', ' ')}")
        for inst, code, why in _REQUIRED_INSTRUMENTS[fam]
        if inst not in have
    ]
    if fam == "acid_base_titration" and plan.module_instantiation.vision.endpoint != "ph":
        out.append(Finding("HALT", "NO_PROBE", "an acid-base titration must read its endpoint from the pH probe"))
    if fam == "complexometric_titration" and plan.reagent("indicator") is None:
        out.append(Finding("HALT", "NO_INDICATOR", "a complexometric titration needs a metallochromic indicator"))
    return out


def _order(plan: Plan) -> list[Finding]:
    out: list[Finding] = []
    tasks = plan.task_decomposition
    by_prim: dict[str, list[int]] = {}
    for i, t in enumerate(tasks):
        by_prim.setdefault(t.primitive, []).append(i)
    deps = {t.id: set(t.dependencies) for t in tasks}

    def ancestors(tid: str) -> set[str]:
        seen: set[str] = set()
        stack = list(deps.get(tid, ()))
        while stack:
            d = stack.pop()
            if d not in seen:
                seen.add(d)
                stack.extend(deps.get(d, ()))
        return seen

    spec = plan.state_machine
    for first, then, why in _CAUSAL_RULES:
        for j in by_prim.get(then, []):
            later = tasks[j]
            if first not in by_prim:
                if first in ("draw", "tare"):
                    out.append(
                        Finding("HALT", "CAUSAL_ORDER", f"{why}: subtask {later.id!r} has no {first!r} step before it")
                    )
                continue
            before = tasks[by_prim[first][0]]
            if before.fsm_state in spec.states and later.fsm_state not in reachable_states(spec, before.fsm_state):
                out.append(
                    Finding(
                        "HALT",
                        "CAUSAL_ORDER",
                        f"{why}: {later.id!r} runs in {later.fsm_state!r}, which cannot follow "
                        f"{before.id!r} in {before.fsm_state!r}",
                    )
                )
            elif before.id not in ancestors(later.id):
                out.append(
                    Finding(
                        "WARN",
                        "CAUSAL_ORDER",
                        f"{why}: added dependency {later.id!r} -> {before.id!r}",
                        lambda d, j=j, b=before.id: d["task_decomposition"][j]["dependencies"].append(b),
                    )
                )
    try:
        order = topological_order(list(tasks))
    except ValueError:
        return out  # cycles are the machine validator's to report
    if order != [t.id for t in tasks]:

        def reorder(d: dict[str, Any], order: list[str] = order) -> None:
            by_id = {t["id"]: t for t in d["task_decomposition"]}
            d["task_decomposition"] = [by_id[i] for i in order if i in by_id]

        out.append(Finding("WARN", "REORDER", "subtasks listed out of dependency order; reordered", reorder))
    return out


def titrant_needed_ml(plan: Plan, library: ReagentLibrary, activity: bool = False) -> float:
    """Titrant (mL) the plan needs to reach its target; InfeasibleTargetError when it cannot.
    ``activity``: a target pH is the reading of a glass electrode (-log10 a(H+), Davies)."""
    pi = plan.parsed_instruction
    analyte, titrant = plan.reagent("analyte"), plan.reagent("titrant")
    if analyte is None or titrant is None or analyte.concentration_m is None or titrant.concentration_m is None:
        raise InfeasibleTargetError("the plan needs an analyte and a titrant with concentrations")
    va = analyte.volume_ml or pi.initial_conditions.analyte_volume_ml
    if va is None:
        raise InfeasibleTargetError("the plan does not give the analyte volume")
    a, t = {analyte.name: analyte.concentration_m}, {titrant.name: titrant.concentration_m}
    tc = pi.target_conditions
    if pi.family == "complexometric_titration":
        return complexometric_equivalence_ml(analyte.concentration_m, va, titrant.concentration_m)
    if tc.target_ph is not None:
        return titrant_for_ph(a, va, t, tc.target_ph, library, activity=activity).volume_ml
    if tc.to_equivalence:
        return equivalence_point(a, va, t, library).volume_ml
    target_v = tc.target_volume_ml or plan.module_instantiation.dispenser.target_volume_ml
    if target_v is not None:
        return target_v
    raise InfeasibleTargetError("the plan has no target pH, equivalence point or target volume")


def _draw_index(plan: Plan) -> int | None:
    for i, t in enumerate(plan.task_decomposition):
        if t.primitive == "draw":
            return i
    return None


def _titration_capacity(plan: Plan, reg: HardwareRegistry, lib: ReagentLibrary) -> list[Finding]:
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
        need = titrant_needed_ml(plan, lib, activity=reg.ph_reads_activity)
    except InfeasibleTargetError as exc:
        return [Finding("HALT", "UNREACHABLE_TARGET", str(exc))]
    cap_note = f" (assumed {kind}: the plan names no beaker)" if assumed else ""
    # A colour endpoint must be passed to be seen: allow 20 % past the theoretical equivalence.
    planned = need * 1.2 if pi.family == "complexometric_titration" else need
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
    di = _draw_index(plan)
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
                    lambda d, i=di, v=wanted_draw: _set_path(
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
                lambda d, v=hard_cap: _set_path(d, ("module_instantiation", "dispenser", "max_volume_ml"), v),
            )
        )
    start = pi.initial_conditions.initial_ph
    if pi.family == "acid_base_titration" and start is not None:
        theory = ph_after(
            {analyte.name: analyte.concentration_m},
            va,
            {plan.reagent("titrant").name: plan.reagent("titrant").concentration_m},
            0.0,
            lib,
            reg.ph_reads_activity,  # the stated initial pH is a meter reading
        )
        if abs(theory - start) > 1.0:
            out.append(
                Finding(
                    "WARN",
                    "INITIAL_PH",
                    f"stated initial pH {start:g} differs from {theory:.2f} computed for "
                    f"{analyte.concentration_m:g} M {lib.get(analyte.name).display_name}; check the concentration",
                )
            )
    return out


def _weighing_capacity(plan: Plan, reg: HardwareRegistry, lib: ReagentLibrary) -> list[Finding]:
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


def verify_plan(plan: Plan, registry: HardwareRegistry, library: ReagentLibrary | None = None) -> list[Finding]:
    """Every finding for ``plan`` (empty: it may run as it is)."""
    lib = library if library is not None else default_library()
    findings = _ranges(plan, registry) + _instruments(plan) + _order(plan)
    fam = plan.parsed_instruction.family
    if fam in ("acid_base_titration", "complexometric_titration"):
        findings += _titration_capacity(plan, registry, lib)
    else:
        findings += _weighing_capacity(plan, registry, lib)
    return findings


def rectify_plan(
    plan: Plan, registry: HardwareRegistry, library: ReagentLibrary | None = None, max_passes: int = 3
) -> tuple[Plan, list[Finding]]:
    """Apply every WARN fix (clamp, add dependency, reorder), re-verify, and return (plan, findings).

    Findings are the final pass's HALTs, the fixes applied, and the WARN notes that need no fix; the
    returned plan lists the fixes and notes in ``warnings``. Any HALT means the plan must be refused.
    """
    current = plan
    applied: list[Finding] = []
    for _ in range(max_passes):
        findings = verify_plan(current, registry, library)
        fixes = [f for f in findings if f.severity == "WARN" and f.fix is not None]
        if not fixes or any(f.severity == "HALT" for f in findings):
            break
        data = current.model_dump(mode="json")
        for f in fixes:
            f.fix(data)
        data["warnings"] = list(data["warnings"]) + [f"{f.code}: {f.message}" for f in fixes]
        current = Plan.model_validate(data)
        applied += fixes
    else:
        findings = verify_plan(current, registry, library)
        unfixed = [f for f in findings if f.severity == "WARN" and f.fix is not None]
        if unfixed:
            findings.append(
                Finding("HALT", "NOT_RECTIFIED", "rectification did not converge: " + "; ".join(map(str, unfixed)))
            )
    halts = [f for f in findings if f.severity == "HALT"]
    notes = [f for f in findings if f.severity == "WARN" and f.fix is None]
    new_notes = [f"{f.code}: {f.message}" for f in notes if f"{f.code}: {f.message}" not in current.warnings]
    if new_notes:
        current = current.model_copy(update={"warnings": [*current.warnings, *new_notes]})
    return current, halts + applied + notes
