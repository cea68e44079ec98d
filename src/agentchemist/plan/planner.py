"""``plan_instruction``: from a chemist's sentence (and the scene) to a verified plan, a question, or a refusal.

Design -> verify -> rectify, whatever the backend:

1. guard the input (empty, > 10 kB, not UTF-8, control characters, attempts to override the limits);
2. retrieve the protocol template for the instruction (the hint for model backends);
3. ask the backend; validate against the schema and the machine validator (bounded repair loop);
4. check the environment against the scene; anything missing -> SPEC.md's sentence, nothing moves;
5. run the rule engine over the hardware registry; HALT -> refusal with reasons, WARN -> rectified
   and listed in ``plan.warnings``.

Steps 4 and 5 are deterministic code and run on every plan: no backend output can skip them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

from agentchemist.fsm.validation import validate_machine
from agentchemist.plan.backends import BackendError, PlannerBackend, PlanValidationError, propose_validated
from agentchemist.plan.checks import Finding, rectify_plan
from agentchemist.plan.guard import InstructionRejected, check_instruction
from agentchemist.plan.alternatives import BenchOffer
from agentchemist.plan.protocols import Protocol, ProtocolError
from agentchemist.plan.routing import RulesThenModel
from agentchemist.plan.rules import PlanningData, RulesBackend, experiment_id_for
from agentchemist.plan.contents import contents_mismatches
from agentchemist.plan.scene import INSTRUMENT_DISPLAY, SceneInfo, check_environment, missing_equipment_message
from agentchemist.plan.schema import EnvironmentCheck, Plan

__all__ = ["PlanOutcome", "Planner", "plan_instruction"]


@dataclass(frozen=True)
class PlanOutcome:
    """``kind`` plan (``plan`` set, may run), refusal (nothing runs; ``reasons`` say why) or question
    (``message`` is the question for the user). ``findings`` are the rule engine's results."""

    kind: Literal["plan", "refusal", "question"]
    plan: Plan | None
    message: str
    reasons: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)


class Planner(PlanningData):
    """Holds the loaded library, protocols and registry so that repeated planning is cheap."""

    @cached_property
    def _rules(self) -> RulesBackend:
        return RulesBackend(self.library, self.protocols, self.registry)

    def _backend(self, backend: str | PlannerBackend) -> PlannerBackend:
        if backend == "rules":
            return self._rules
        if isinstance(backend, RulesThenModel) and backend.rules is None:
            return backend.with_rules(self._rules)  # the model answers where these rules are unsure
        if isinstance(backend, str):
            raise ValueError(f"unknown backend {backend!r}: pass 'rules' or a PlannerBackend instance")
        if not isinstance(backend, PlannerBackend):
            raise ValueError(f"backend {backend!r} does not implement PlannerBackend.propose")
        return backend

    def plan(
        self,
        text: str | bytes,
        scene: SceneInfo | None = None,
        *,
        backend: str | PlannerBackend = "rules",
        experiment_id: str | None = None,
        max_repairs: int = 2,
    ) -> PlanOutcome:
        try:
            instruction = check_instruction(text)
        except InstructionRejected as exc:
            return PlanOutcome(
                "refusal", None, "I cannot plan this instruction: " + "; ".join(exc.reasons), exc.reasons
            )
        chosen = self._backend(backend)
        ranked = self.protocols.retrieve(instruction)
        hint = ranked[0][0].hint() if ranked else None
        defaults = {"experiment_id": experiment_id or experiment_id_for(instruction), "warnings": []}
        if ranked:
            defaults["protocol"] = {"id": ranked[0][0].id, "version": ranked[0][0].version}
        try:
            proposal = propose_validated(
                chosen,
                instruction,
                scene,
                hint,
                max_repairs=0 if chosen is self._rules or isinstance(chosen, RulesThenModel) else max_repairs,
                defaults=defaults,
            )
        except PlanValidationError as exc:
            return PlanOutcome(
                "refusal",
                None,
                f"the {getattr(chosen, 'name', 'planner')} backend produced no valid "
                f"plan after {exc.attempts} attempt(s)",
                exc.messages,
            )
        except BackendError as exc:
            return PlanOutcome("refusal", None, f"the planner backend failed: {exc}", [str(exc)])
        except ArithmeticError as exc:  # the chemistry could not be computed for these numbers (no traceback)
            reason = f"the chemistry of this instruction cannot be computed ({type(exc).__name__}: {exc})"
            return PlanOutcome("refusal", None, f"I cannot plan this instruction: {reason}", [reason])
        if proposal.kind != "plan" or proposal.plan is None:
            return PlanOutcome(proposal.kind, None, proposal.message, proposal.reasons)
        plan = proposal.plan
        if experiment_id:
            plan = plan.model_copy(update={"experiment_id": experiment_id})
        return self._verify(plan, scene)

    def _verify(self, plan: Plan, scene: SceneInfo | None) -> PlanOutcome:
        try:
            proto = self.protocols.get(plan.protocol.id)
        except ProtocolError as exc:
            return PlanOutcome("refusal", None, str(exc), [str(exc)])
        pi = plan.parsed_instruction
        if proto.family != pi.family:
            msg = f"protocol {proto.id!r} is for {proto.family}, but the plan is a {pi.family}"
            return PlanOutcome("refusal", None, msg, [msg])
        instruments = list(dict.fromkeys([*proto.required_instruments, *pi.entities.instruments]))
        reagents = [(r.name, self._reagent_text(r.name, r.concentration_m)) for r in pi.entities.reagents]
        warnings = list(plan.warnings)
        if scene is None:
            env = EnvironmentCheck(satisfied=True, user_feedback="no scene description: equipment not verified")
            warnings.append("no scene description: the equipment was not verified against the bench")
        else:
            preconditions = list(dict.fromkeys([*proto.preconditions, *plan.module_instantiation.vision.preconditions]))
            alt_missing, alt_notes = self._check_alternatives(proto, plan, scene)
            # an alternative's instrument is checked with its group (above), not as a required instrument
            checked = [i for i in instruments if i not in proto.alternative_instruments()]
            missing, notes = check_environment(
                scene,
                checked,
                reagents,
                preconditions,
                self.registry.instrument_kinds,
                self.library,
                alternatives_missing=alt_missing,
            )
            notes += alt_notes
            if missing:
                message = missing_equipment_message(
                    pi.experiment_name,
                    [self._instrument_text(i) for i in instruments],
                    [t for _, t in reagents],
                    missing,
                )
                return PlanOutcome("refusal", None, message, [f"missing: {m}" for m in missing])
            # What the bench's containers hold (their tags' inventory records), not the instruction's word.
            wrong = contents_mismatches(scene, pi.entities.reagents, self.library)
            if wrong:
                message = ("The bench does not hold what the instruction asks for: " + "; ".join(wrong)
                           + ". Nothing was moved.")
                return PlanOutcome("refusal", None, message, [f"reagent mismatch: {w}" for w in wrong])
            warnings += notes
            env = EnvironmentCheck(satisfied=True, user_feedback="all required instruments and reagents are present")
        plan = plan.model_copy(update={"environment_check": env, "warnings": warnings})
        plan, findings = rectify_plan(plan, self.registry, self.library)
        halts = [f for f in findings if f.severity == "HALT"]
        if halts:
            return PlanOutcome(
                "refusal",
                None,
                "The plan was refused by the hardware and chemistry check: " + "; ".join(f.message for f in halts),
                [str(f) for f in halts],
                findings,
            )
        # Rectification may reorder subtasks or add dependencies: the machine must still be valid.
        plan = Plan.model_validate(plan.model_dump(mode="json"))
        reasons = validate_machine(plan)
        if reasons:
            return PlanOutcome("refusal", None, "the rectified plan has an invalid state machine", reasons, findings)
        return PlanOutcome("plan", plan, f"plan ready: {pi.experiment_name}", [], findings)

    def _check_alternatives(self, proto: Protocol, plan: Plan, scene: SceneInfo) -> tuple[list[str], list[str]]:
        """(missing, notes) for the protocol's groups of interchangeable means, as the plan uses them
        (read from its subtasks). A means the scene lacks is named alone when the bench offers another
        of its group (the plan insists on it, e.g. the instruction asked for a spatula), else the whole
        group is named ("spatula or solid reagent bottle"): neither way is possible on this bench."""
        primitives = {t.primitive for t in plan.task_decomposition}
        roles = {r.role: r.name for r in plan.parsed_instruction.entities.reagents}
        beaker = next((o for o in plan.parsed_instruction.entities.objects if scene.get(o) is not None
                       and o not in self.registry.beakers), None)
        offer = BenchOffer(scene, self.registry, self.library, roles, beaker)
        missing: list[str] = []
        notes: list[str] = []
        for group in proto.alternatives:
            chosen = group.chosen_by(primitives)
            if chosen is None:
                continue
            state = offer.available(chosen)
            if state is False:
                others = [o for o in group.options if o is not chosen and offer.available(o)]
                missing.append(chosen.display if others else group.missing_text())
            elif state is None:
                notes.append(f"{chosen.display}: as the instruction says; the scene cannot show it")
        return missing, notes

    def _reagent_text(self, name: str, conc: float | None) -> str:
        display = self.library.get(name).display_name if name in self.library else name
        return f"{conc:g} M {display}" if conc else display

    @staticmethod
    def _instrument_text(name: str) -> str:
        return INSTRUMENT_DISPLAY.get(name, name.replace("_", " "))


_DEFAULT: Planner | None = None


def plan_instruction(
    text: str | bytes,
    scene: SceneInfo | None = None,
    *,
    backend: str | PlannerBackend = "rules",
    experiment_id: str | None = None,
    max_repairs: int = 2,
    planner: Planner | None = None,
) -> PlanOutcome:
    """Plan one instruction with the default configuration (see the module docstring)."""
    global _DEFAULT
    if planner is None:
        if _DEFAULT is None:
            _DEFAULT = Planner()
        planner = _DEFAULT
    return planner.plan(text, scene, backend=backend, experiment_id=experiment_id, max_repairs=max_repairs)
