"""Rules first, a model where the rules are unsure (issue 21).

``RulesThenModel`` plans with the rule parser; when the rules end in a question (a reagent they do not
know, roles or a stop condition they cannot read), the configured model backend is asked instead. Its
plan is taken only when it validates against the schema and the machine validator (the same
``propose_validated`` every backend goes through) and every number in it is one the instruction
states: a model must not fill in a concentration the chemist did not give. Otherwise the rules'
question stands. The planner then runs the environment check and the rule engine over the hardware
registry on whatever is returned, as for any backend. Refusals from the rules (safety, limits,
infeasible targets) are never sent to the model.
"""

from __future__ import annotations

import math
import re
from typing import Any

from agentchemist.plan.backends import BackendError, PlannerBackend, PlanValidationError, propose_validated
from agentchemist.plan.scene import SceneInfo
from agentchemist.plan.schema import Plan
from agentchemist.plan.units import QuantityError, find_ph_mentions, find_quantities

__all__ = ["RulesThenModel", "ungrounded_numbers"]

# Values a plan may hold that the instruction need not state: the protocol's default analyte volume.
_DEFAULT_VOLUMES_ML = (25.0,)


def _stated(text: str) -> tuple[dict[str, list[float]], list[float]]:
    try:
        quantities = find_quantities(text)
    except QuantityError:
        quantities = []
    by_kind: dict[str, list[float]] = {}
    for q in quantities:
        by_kind.setdefault(q.kind, []).append(q.value)
    return by_kind, [p.value for p in find_ph_mentions(text)]


def _among(value: float, values: list[float] | tuple[float, ...]) -> bool:
    return any(math.isclose(value, v, rel_tol=1e-6, abs_tol=1e-9) for v in values)


def ungrounded_numbers(plan: Plan, text: str) -> list[str]:
    """The plan's concentrations, volumes, masses and pH values that the instruction does not state
    (an unknown's concentration is an estimate and exempt)."""
    stated, ph = _stated(text)
    pi = plan.parsed_instruction
    bad = []
    for r in pi.entities.reagents:
        checks = (("concentration", r.concentration_m if not r.unknown else None, ()),
                  ("volume", r.volume_ml, _DEFAULT_VOLUMES_ML), ("mass", r.mass_g, ()))
        for kind, value, defaults in checks:
            if value is not None and not _among(value, [*stated.get(kind, []), *defaults]):
                bad.append(f"{r.name} {kind} {value:g} is not in the instruction")
    if re.search(r"\bneutral\b", text, re.I):
        ph.append(7.0)  # "until neutral" is pH 7, as the rules read it
    for what, value in (("target pH", pi.target_conditions.target_ph),
                        ("initial pH", pi.initial_conditions.initial_ph)):
        if value is not None and not _among(value, ph):
            bad.append(f"{what} {value:g} is not in the instruction")
    return bad


class RulesThenModel:
    """A PlannerBackend: the rule parser, and ``model`` where the rules ask a question."""

    def __init__(self, model: PlannerBackend, rules: PlannerBackend | None = None, *, max_repairs: int = 2) -> None:
        self.model = model
        self.rules = rules
        self.max_repairs = max_repairs
        self.name = f"rules+{getattr(model, 'name', 'model')}"
        self.last_route = "rules"  # which backend produced the last answer (for logs and tests)

    def with_rules(self, rules: PlannerBackend) -> "RulesThenModel":
        return RulesThenModel(self.model, rules, max_repairs=self.max_repairs)

    def propose(self, text: str, scene: SceneInfo | None, protocol_hint: dict[str, Any] | None) -> dict[str, Any]:
        if self.rules is None:
            raise BackendError("RulesThenModel has no rules backend (the Planner supplies its own)")
        raw = self.rules.propose(text, scene, protocol_hint)
        self.last_route = "rules"
        if "question" not in raw:
            return raw
        try:
            proposal = propose_validated(self.model, text, scene, protocol_hint, max_repairs=self.max_repairs,
                                         defaults={"warnings": []})
        except (PlanValidationError, BackendError) as exc:
            why = f"the {self.model_name} backend gave no valid plan: {exc}"
            return {**raw, "reasons": [*raw.get("reasons", []), why]}
        if proposal.kind != "plan" or proposal.plan is None:
            return raw
        bad = ungrounded_numbers(proposal.plan, text)
        if bad:
            return {**raw, "reasons": [*raw.get("reasons", []),
                                       f"the {self.model_name} backend's plan was not used: " + "; ".join(bad)]}
        self.last_route = "model"
        out = proposal.plan.model_dump(mode="json")
        out["warnings"] = [*out.get("warnings", []),
                           f"planned by the {self.model_name} backend: the rules asked {raw['question']!r}"]
        return out

    @property
    def model_name(self) -> str:
        return str(getattr(self.model, "name", "model"))
