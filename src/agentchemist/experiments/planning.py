"""The planning aspect of a family: what the planner (:mod:`agentchemist.plan`) asks a family's
``experiments/<folder>/planning.py``.

The planner is a generic host. For every instruction it

1. asks each registered family's :func:`FamilyPlanning.recognise` how strongly the parsed instruction
   is of that family, and takes the strongest :class:`Claim` (ties: the registry's order); a claim may
   instead be a refusal ("weighing and a titration in one instruction");
2. lets the chosen family :func:`FamilyPlanning.assign_roles` (the host first gives every indicator dye
   the ``indicator`` role, and afterwards asks about each reagent left without a role, and refuses an
   indicator the bench does not hold where the endpoint is its colour);
3. asks it to :func:`FamilyPlanning.draft` the planning context its protocol template is filled with
   (``config/protocols/<family>.yaml``), the plan's reagent entities and the objects it uses; a draft
   that cannot go on raises :func:`ask` or :func:`refuse`;
4. fills the family's protocol with the context, and adds the family's ``recording`` (Family.recording)
   and its instruments;
5. verifies the plan (:mod:`agentchemist.plan.checks`): generic ranges and causal order, then the
   family's ``REQUIRED_INSTRUMENTS``, :func:`FamilyPlanning.instrument_findings` and
   :func:`FamilyPlanning.capacity_findings`.

A family's planning module defines the module-level names of :class:`FamilyPlanning` (a module is
checked against it structurally, like any Protocol). Everything else it needs from the host comes in
the :class:`PlanningHost` it is handed: the reagent and protocol libraries, the hardware registry, and
the host's choice of beaker and of scene objects (shared by every family, so that a beaker is chosen
and questioned about the same way in every experiment).

Claim strengths (compare them, do not invent finer ones without need):

- :data:`SPECIFIC` a word or a reagent only this family uses ("EDTA", "complexometric");
- :data:`EXPLICIT` the instruction asks for this kind of experiment in words and names what it needs
  (a mass of a solid to weigh, a titration of an acid);
- :data:`IMPLIED` no word for it, but the reagents make it the likely one (an acid and a base together).

A family may add a few points to a level to rank itself against another family at the same level (the
weighing's claim is ``EXPLICIT + 10``: "weigh 2 g of NaOH and dissolve it in 50 mL water to pH 12" is
a weighing, not an acid-base titration). The values are the contract with other families: a new family
reads the existing planning modules' claims and picks its own so that its instructions win and no
others change.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # the plan package imports the registry: no import of it at run time here
    from agentchemist.chemistry.reagents import ReagentLibrary
    from agentchemist.experiments.family import Family
    from agentchemist.plan.checks import Finding
    from agentchemist.plan.parse import InstructionParse
    from agentchemist.plan.protocols import ProtocolLibrary
    from agentchemist.plan.registry import HardwareRegistry
    from agentchemist.plan.scene import SceneInfo
    from agentchemist.plan.schema import Plan

__all__ = [
    "EXPLICIT", "IMPLIED", "SPECIFIC", "Claim", "Draft", "FamilyPlanning", "PlanningHost", "PlanningStop", "ask",
    "refuse",
]

SPECIFIC = 100
EXPLICIT = 50
IMPLIED = 10


@dataclass(frozen=True)
class Claim:
    """How strongly an instruction is of a family. With ``refusal`` set, the strongest reading of the
    instruction is one the family refuses (the planner refuses it with that reason, asking no other family)."""

    strength: int
    refusal: str | None = None


class PlanningStop(Exception):
    """Planning stops with a question or a refusal: ``payload`` is the planner's answer
    (``{"question": ..., "reasons": [...]}`` or ``{"refusal": ..., "reasons": [...]}``)."""

    def __init__(self, payload: dict[str, Any]) -> None:
        self.payload = payload
        super().__init__(payload.get("question") or payload.get("refusal"))


def ask(*questions: str) -> PlanningStop:
    """A question to the chemist (raise it): every question in one message, each one a reason."""
    return PlanningStop({"question": " ".join(questions), "reasons": list(questions)})


def refuse(*reasons: str) -> PlanningStop:
    """A refusal (raise it): the reasons joined with '; '."""
    return PlanningStop({"refusal": "; ".join(reasons), "reasons": list(reasons)})


@dataclass
class Draft:
    """What a family's :func:`FamilyPlanning.draft` gives the planner.

    ``context``: the protocol template's fill values, plus the keys the planner reads itself:
    ``experiment_name``, ``initial_conditions`` and ``target_conditions`` (dicts of the schema's
    InitialConditions / TargetConditions fields), ``operation_intent`` (one sentence), and optionally
    ``alternative_instruments`` (instruments of the protocol alternatives chosen, required by the plan).
    ``reagents``: the plan's reagent entities (dicts of the schema's ReagentEntity). ``objects``: the
    beaker's registry kind first, then the scene ids (or kinds) of everything else the plan uses."""

    context: dict[str, Any]
    reagents: list[dict[str, Any]]
    objects: list[str] = field(default_factory=list)


class PlanningHost(Protocol):
    """What the planner lends a family while it drafts."""

    library: ReagentLibrary
    protocols: ProtocolLibrary
    registry: HardwareRegistry

    def beaker(self, parse: InstructionParse, scene: SceneInfo | None, holds: str | None, warnings: list[str],
               volume_ml: float | None = None) -> tuple[str, str]:
        """(scene id or kind of the beaker, registry beaker kind): the one the instruction and scene
        mean, ``holds`` the reagent it is said to hold, ``volume_ml`` what must fit in it; raises a
        question when several fit, a refusal when none is in the registry."""

    def scene_id(self, scene: SceneInfo | None, instrument: str, default: str) -> str:
        """The scene's object of a registry instrument kind, else ``default``."""


class FamilyPlanning(Protocol):
    """The module-level names of ``experiments/<folder>/planning.py``."""

    #: (registry instrument, finding code, why) the plan must list, else a HALT "<why>: the plan lists no ..."
    REQUIRED_INSTRUMENTS: tuple[tuple[str, str, str], ...]
    #: optional: how the planner's refusal of an instruction no family recognises names this family's
    #: experiments ("... the protocol library covers (acid-base titration, ...)")
    COVERS: str
    #: whether the plan states the pipette calibration's drop volume (a family that dispenses drops)
    DISPENSES_DROPS: bool
    #: optional, default False: the sample is titrated as it is given, so a weighing, a dilution or water
    #: added to it is refused by the host (plan.roles), not dropped
    SAMPLE_AS_GIVEN: bool
    #: optional, default False: the endpoint is an indicator's colour, so an indicator dye the bench does
    #: not hold is refused (elsewhere it is asked about: the pH meter reads the endpoint)
    ENDPOINT_BY_INDICATOR: bool
    #: (primitive that must come first, primitive that depends on it, why, whether the second is refused
    #: without the first (HALT) rather than only ordered after it when both are there (WARN, a dependency
    #: added)). Every plan is held to every family's rules (plan.checks). Optional: a family whose
    #: primitives are another family's (a titration's grasp, draw, squeeze) need not repeat them.
    CAUSAL_RULES: tuple[tuple[str, str, str, bool], ...]

    def recognise(self, parse: InstructionParse) -> Claim | None:
        """How strongly the parsed instruction is of this family; None: not at all. Must not edit ``parse``."""

    def assign_roles(self, parse: InstructionParse) -> None:
        """Set ``role`` on ``parse.reagents`` (the schema's roles); append to ``parse.questions`` what is
        missing or ambiguous (the planner asks them and goes no further)."""

    def draft(self, parse: InstructionParse, scene: SceneInfo | None, warnings: list[str], host: PlanningHost,
              family: Family) -> Draft:
        """The planning context, reagents and objects of the plan; raise :func:`ask` / :func:`refuse`
        to stop. ``warnings``: append what the chemist should read in the plan."""

    def instrument_findings(self, plan: Plan) -> list[Finding]:
        """HALT findings about the plan's instruments and endpoint beyond REQUIRED_INSTRUMENTS."""

    def capacity_findings(self, plan: Plan, registry: HardwareRegistry, library: ReagentLibrary) -> list[Finding]:
        """The family's capacity and feasibility findings (HALT, or WARN with a fix: see plan.checks.Finding)."""
