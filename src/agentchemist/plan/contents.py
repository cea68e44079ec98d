"""The bench's contents against the plan: what the lab recorded each container holds (the inventory its
tag links to, :mod:`agentchemist.workcell.inventory`, carried on the scene's objects as ``reagent`` and
``concentration_m``) must be what the instruction asks for.

The titrant is looked for in the reagent bottles and the analyte in the beakers. A role whose containers
carry no record is not judged here (the planner notes that the bench did not say); when containers of
that kind do carry records and none holds the asked reagent at the asked concentration (within
``REL_TOLERANCE``), the plan is refused, naming each container and what it holds.
"""
from __future__ import annotations

from agentchemist.workcell.labware import canonical_kind
from agentchemist.chemistry.reagents import ReagentLibrary, UnknownReagentError
from agentchemist.plan.scene import SceneInfo, SceneObject

__all__ = ["REL_TOLERANCE", "ROLE_CONTAINERS", "contents_mismatches"]

#: Where each role's reagent stands on the bench (bench kinds; "beaker_100ml" counts as a beaker).
ROLE_CONTAINERS = {"titrant": ("reagent_bottle",), "analyte": ("beaker",)}
#: A recorded concentration this close (relative) to the asked one is the same solution: a standardised
#: 0.1023 M NaOH is the instruction's "0.1 M"; 0.5 M is not.
REL_TOLERANCE = 0.10


def _is_container(obj: SceneObject, kinds: tuple[str, ...]) -> bool:
    kind = canonical_kind(obj.kind)
    return any(kind == k or kind.startswith(k + "_") for k in kinds)


def _name(name: str, library: ReagentLibrary) -> str:
    try:
        return library.get(name).name
    except UnknownReagentError:
        return name


def describe(name: str, concentration_m: float | None, library: ReagentLibrary) -> str:
    try:
        display = library.get(name).display_name
    except UnknownReagentError:
        display = name
    return display if concentration_m is None else f"{concentration_m:g} M {display}"


def _same_reagent(a: str, b: str, library: ReagentLibrary) -> bool:
    """The same reagent; "EDTA" in an instruction is whichever EDTA salt the bottle holds (any chelator of
    the library binds the metal 1:1, as the complexometric protocol assumes)."""
    if _name(a, library) == _name(b, library):
        return True
    try:
        return library.get(a).kind == library.get(b).kind == "chelator"
    except UnknownReagentError:
        return False


def _holds(obj: SceneObject, name: str, concentration_m: float | None, library: ReagentLibrary) -> bool:
    if not _same_reagent(obj.reagent or "", name, library):
        return False
    if concentration_m is None or obj.concentration_m is None:
        return True
    return abs(obj.concentration_m - concentration_m) <= REL_TOLERANCE * concentration_m


def contents_mismatches(scene: SceneInfo, reagents, library: ReagentLibrary) -> list[str]:
    """One sentence per plan reagent (``ReagentEntity``: name, role, concentration_m) the bench's recorded
    containers contradict, e.g. "titrant_bottle holds 0.5 M potassium hydroxide; the instruction asks for
    0.1 M sodium hydroxide as the titrant". Empty: nothing contradicts the plan."""
    out: list[str] = []
    for reagent in reagents:
        kinds = ROLE_CONTAINERS.get(reagent.role)
        if kinds is None:
            continue
        recorded = [o for o in scene.objects if o.reagent and _is_container(o, kinds)]
        if not recorded or any(_holds(o, reagent.name, reagent.concentration_m, library) for o in recorded):
            continue
        held = ", ".join(f"{o.id} holds {describe(o.reagent, o.concentration_m, library)}" for o in recorded)
        out.append(f"{held}; the instruction asks for {describe(reagent.name, reagent.concentration_m, library)} "
                   f"as the {reagent.role}")
    return out
