"""Reagents an instruction names by where they are, resolved from what the scene says the containers hold.

The paper's formal example, "Grab the rubber-tipped pipette, close the gripper tightly, and draw up the
alkaline solution. Adjust the pH of the liquid in the beaker on the magnetic stirrer to 12.5", names no
reagent: "the alkaline solution" is whatever base the bench's bottle holds, "the liquid in the beaker" what
the working beaker holds. When the scene reports both (a container's ``contains`` / ``label`` / the lab
inventory's ``reagent`` and ``concentration_m``), the instruction is read as the titration it describes,
with a warning per resolved phrase; otherwise the planner asks for what is missing (issue 37).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agentchemist.chemistry.reagents import Reagent, ReagentLibrary
from agentchemist.plan.registry import HardwareRegistry
from agentchemist.plan.scene import SceneInfo, SceneObject
from agentchemist.plan.units import QuantityError, find_quantities

__all__ = ["ResolvedTitration", "resolve_by_place"]

_TITRANT = re.compile(r"\b(?:the\s+)?(alkaline|basic|alkali|acidic|acid|base)\s+solution\b|\bthe\s+(base|alkali|acid)\b", re.I)
_SAMPLE = re.compile(r"\bthe\s+(?:liquid|solution|sample|contents)\s+(?:in|of)\s+the\s+beaker\b", re.I)
_BASES = ("strong_base", "weak_base")
_ACIDS = ("strong_acid", "weak_acid")


@dataclass(frozen=True)
class ResolvedTitration:
    """The instruction's titrant and sample as the scene shows them: (reagent, mol/L, scene id) each."""

    titrant: tuple[Reagent, float, str]
    sample: tuple[Reagent, float, str]

    def sentence(self) -> str:
        (t, tc, _), (a, ac, _) = self.titrant, self.sample
        return f"titrate the {ac:g} M {a.display_name} in the beaker with {tc:g} M {t.display_name}"

    def notes(self, words: tuple[str, str]) -> list[str]:
        (t, tc, tid), (a, ac, aid) = self.titrant, self.sample
        return [f"read {words[0]!r} as the {tc:g} M {t.display_name} that the scene says {tid} holds",
                f"read {words[1]!r} as the {ac:g} M {a.display_name} that the scene says {aid} holds"]


def _contents(obj: SceneObject, library: ReagentLibrary) -> tuple[Reagent, float] | None:
    """What the scene says ``obj`` holds, with its concentration (the inventory's, else its label's)."""
    name = obj.reagent or obj.contains
    reagent = library.get(name) if name and name in library else None
    if reagent is None and obj.label:
        found = list(library.find_in_text(obj.label))
        reagent = found[0][0] if len(found) == 1 else None
    if reagent is None:
        return None
    conc = obj.concentration_m
    if conc is None and obj.label:
        try:
            concs = [q.value for q in find_quantities(obj.label) if q.kind == "concentration" and not q.normality]
        except QuantityError:
            concs = []
        conc = concs[0] if len(concs) == 1 else None
    return (reagent, conc) if conc else None


def resolve_by_place(text: str, scene: SceneInfo | None, library: ReagentLibrary,
                     registry: HardwareRegistry) -> tuple[ResolvedTitration, tuple[str, str]] | None:
    """The titration "the <acid/alkaline> solution" and "the liquid in the beaker" describe, when the scene
    says what each holds (exactly one candidate each), with the phrases as written; else None."""
    t_m, s_m = _TITRANT.search(text), _SAMPLE.search(text)
    if scene is None or t_m is None or s_m is None:
        return None
    word = (t_m.group(1) or t_m.group(2)).lower()
    kinds = _ACIDS if word in ("acidic", "acid") else _BASES
    beaker_kinds = set(registry.kinds_for("beaker")) | set(registry.beakers)
    beakers = [o for o in scene.objects if o.kind in beaker_kinds]
    others = [o for o in scene.objects if o.kind not in beaker_kinds]
    titrants = [(o, c) for o in others if (c := _contents(o, library)) is not None and c[0].kind in kinds]
    samples = [(o, c) for o in beakers if (c := _contents(o, library)) is not None]
    if len(titrants) != 1 or len(samples) != 1:
        return None
    (t_obj, (t, tc)), (a_obj, (a, ac)) = titrants[0], samples[0]
    resolved = ResolvedTitration((t, tc, t_obj.id), (a, ac, a_obj.id))
    return resolved, (t_m.group(0).strip(), s_m.group(0).strip())
