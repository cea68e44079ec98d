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
pH meter reads: activity for a glass electrode). The instruments, causal rules and capacities of an
experiment family are its own (``experiments/<folder>/planning.py``); this module runs them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Callable, Literal

from agentchemist.chemistry.reagents import ReagentLibrary, default_library
from agentchemist.experiments import FAMILIES, family
from agentchemist.fsm.validation import reachable_states, topological_order
from agentchemist.plan.registry import HardwareRegistry
from agentchemist.plan.schema import Plan

__all__ = ["Finding", "beaker_of", "draw_index", "rectify_plan", "set_path", "verify_plan"]

Severity = Literal["HALT", "WARN"]
Fix = Callable[[dict[str, Any]], None]


@dataclass(frozen=True)
class Finding:
    """One rule result. ``fix`` (WARN only) edits a plan dict in place to rectify it."""

    severity: Severity
    code: str
    message: str
    fix: Fix | None = field(default=None, compare=False, repr=False)

    def __str__(self) -> str:
        return f"{self.severity} {self.code}: {self.message}"


def set_path(data: dict[str, Any], path: tuple[Any, ...], value: Any) -> None:
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
        lambda d, p=path, v=new: set_path(d, p, v),
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
                lambda d, v=target: set_path(d, base + ("target_ph",), v),
            )
        )
    return [f for f in out if f is not None]


def _instruments(plan: Plan) -> list[Finding]:
    have = set(plan.parsed_instruction.entities.instruments)
    planning = _planning(plan)
    if planning is None:
        return []
    out = [
        Finding("HALT", code, f"{why}: the plan lists no {inst.replace('_', ' ')}")
        for inst, code, why in planning.REQUIRED_INSTRUMENTS
        if inst not in have
    ]
    return out + planning.instrument_findings(plan)


def _causal_rules() -> list[tuple[str, str, str, bool]]:
    """Every family's causal rules, in the registry's order: a plan is held to all of them (a step of
    another family's in a plan is still checked), each rule once."""
    parts = [fam.part("planning") for fam in FAMILIES.values()]
    return list(dict.fromkeys(r for part in parts if part is not None for r in getattr(part, "CAUSAL_RULES", ())))


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
    for first, then, why, required in _causal_rules():
        for j in by_prim.get(then, []):
            later = tasks[j]
            if first not in by_prim:
                if required:
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


def draw_index(plan: Plan) -> int | None:
    """The index of the plan's first draw subtask (the titrant drawn into the pipette), or None."""
    for i, t in enumerate(plan.task_decomposition):
        if t.primitive == "draw":
            return i
    return None


def _planning(plan: Plan) -> ModuleType | None:
    """The plan's family's planning aspect (an agentchemist.experiments.planning.FamilyPlanning) (None: a family the planner does not plan, nothing to check)."""
    return family(plan.parsed_instruction.family).part("planning")


def verify_plan(plan: Plan, registry: HardwareRegistry, library: ReagentLibrary | None = None) -> list[Finding]:
    """Every finding for ``plan`` (empty: it may run as it is)."""
    lib = library if library is not None else default_library()
    findings = _ranges(plan, registry) + _instruments(plan) + _order(plan)
    planning = _planning(plan)
    return findings + (planning.capacity_findings(plan, registry, lib) if planning is not None else [])


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
