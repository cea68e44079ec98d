"""Rules first, a model where the rules are unsure: the model's plan passes the same schema, machine and
rule-engine checks, and may not state numbers the instruction does not. The model here is a local
object that returns JSON (there is no network in the test environment); what is tested is the routing
and the checks, not a model's skill."""

from __future__ import annotations

import copy
import json

import pytest

from agentchemist.plan import Planner
from agentchemist.plan.backends import BackendConfig, BackendOutputError
from agentchemist.plan.routing import RulesThenModel, ungrounded_numbers

PLANNER = Planner()
UNSURE = "HCl 0.1 M and NaOH 0.1 M, titration to pH 7."  # the rules ask which one is the titrant
CLEAR = "Titrate 25 mL of 0.1 M HCl with 0.1 M NaOH to pH 7."


class JsonModel:
    """A stand-in model: answers every request with the JSON text it was given."""

    name = "fake"

    def __init__(self, answer: str) -> None:
        self.answer, self.calls = answer, 0

    def propose(self, text, scene, hint):
        self.calls += 1
        try:
            return json.loads(self.answer)
        except json.JSONDecodeError as exc:
            raise BackendOutputError(str(exc), self.answer) from None


def _plan_json(text: str, **reagent_changes) -> str:
    raw = PLANNER._rules.propose(text, None, None)
    raw = copy.deepcopy(raw)
    for r in raw["parsed_instruction"]["entities"]["reagents"]:
        r.update(reagent_changes.get(r["role"], {}))
    return json.dumps(raw)


def test_clear_instruction_never_reaches_the_model():
    model = JsonModel(_plan_json(CLEAR))
    out = PLANNER.plan(CLEAR, backend=RulesThenModel(model))
    assert out.kind == "plan" and model.calls == 0


def test_model_answers_where_the_rules_ask_and_its_plan_is_verified():
    assert PLANNER.plan(UNSURE).kind == "question"
    model = JsonModel(_plan_json(CLEAR))
    out = PLANNER.plan(UNSURE, backend=RulesThenModel(model))
    assert model.calls == 1
    assert out.kind == "plan", out.message
    assert out.plan.reagent("titrant").name == "naoh" and out.plan.reagent("analyte").name == "hcl"
    assert any("planned by the fake backend" in w for w in out.plan.warnings)


def test_a_model_inventing_a_concentration_is_not_used():
    model = JsonModel(_plan_json(CLEAR, titrant={"concentration_m": 0.25}))
    out = PLANNER.plan(UNSURE, backend=RulesThenModel(model))
    assert out.kind == "question"
    assert any("0.25 is not in the instruction" in r for r in out.reasons)


@pytest.mark.parametrize("answer", ["not json at all", '{"parsed_instruction": 3}', '{"refusal": "no"}'])
def test_garbage_or_invalid_model_output_leaves_the_rules_question(answer):
    out = PLANNER.plan(UNSURE, backend=RulesThenModel(JsonModel(answer)))
    assert out.kind == "question" and "titrant" in out.message


def test_a_model_plan_failing_the_rule_engine_is_refused():
    # grounded numbers, valid schema, but the registry's limits: 150 mL does not fit the beaker
    text = "HCl 0.1 M (150 mL) and NaOH 0.1 M, titration to pH 7."
    raw = json.loads(_plan_json(CLEAR, analyte={"volume_ml": 150.0}))
    raw["parsed_instruction"]["initial_conditions"]["analyte_volume_ml"] = 150.0
    out = PLANNER.plan(text, backend=RulesThenModel(JsonModel(json.dumps(raw))))
    assert out.kind == "refusal" and out.plan is None
    assert any(r.startswith("HALT OVERFLOW") for r in out.reasons)


def test_rules_refusals_are_never_sent_to_the_model():
    model = JsonModel(_plan_json(CLEAR))
    out = PLANNER.plan("Make me a cup of coffee.", backend=RulesThenModel(model))
    assert out.kind == "refusal" and model.calls == 0


def test_ungrounded_numbers_lists_what_the_text_lacks():
    plan = PLANNER.plan(CLEAR).plan
    assert ungrounded_numbers(plan, CLEAR) == []
    assert ungrounded_numbers(plan, "Titrate 25 mL of 0.2 M HCl with 0.1 M NaOH to pH 8.") != []


def test_backend_config_builds_the_routing_backend():
    backend = BackendConfig(backend="rules+openai", llm_model="m").create()
    assert isinstance(backend, RulesThenModel) and backend.model.name == "openai"
    assert BackendConfig().create() == "rules"
