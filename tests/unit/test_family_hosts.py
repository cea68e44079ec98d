"""The planner, results and report as generic hosts of the experiment families (issue 36): each family's
planning, results and report aspects implement their interface, the host picks a family by the
families' own claims, and the plan's family is one the registry knows."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
from pydantic import ValidationError

from agentchemist.chemistry.reagents import default_library
from agentchemist.experiments import FAMILIES, Family
from agentchemist.experiments.planning import EXPLICIT, IMPLIED, SPECIFIC, Claim
from agentchemist.experiments.results import UNKNOWN, unlabelled_family
from agentchemist.plan import roles
from agentchemist.plan.parse import parse_instruction
from agentchemist.plan.schema import Plan
from agentchemist.experiments.acid_base.sample_run import synthetic_titration_run
from agentchemist.report.results import compute_results

PLANNING = ("recognise", "assign_roles", "draft", "instrument_findings", "capacity_findings", "REQUIRED_INSTRUMENTS",
            "DISPENSES_DROPS")
RESULTS = ("DELIVERS", "TITRANT", "compute", "found_equivalences", "measured_concentration")


@pytest.mark.parametrize("name", list(FAMILIES))
def test_every_aspect_a_family_has_implements_its_interface(name):
    fam = FAMILIES[name]
    for aspect, required in (("planning", PLANNING), ("results", RESULTS), ("report", ("key_values",))):
        part = fam.part(aspect)
        if part is not None:
            missing = [n for n in required if not hasattr(part, n)]
            assert not missing, f"{name}.{aspect} lacks {missing}"


def test_one_family_analyses_the_runs_of_an_unknown_family():
    flagged = [n for n, f in FAMILIES.items() if getattr(f.part("results"), "ANALYSES_UNLABELLED", False)]
    assert len(flagged) == 1 and unlabelled_family().name == flagged[0]


def _fake(name: str, claim: Claim | None) -> Family:
    planning = SimpleNamespace(recognise=lambda parse: claim)
    fam = Family(name=name, label=name, package=f"fake.{name}")
    object.__setattr__(fam, "part", lambda aspect: planning)  # frozen dataclass: the fake's parts only
    return fam


@pytest.mark.parametrize("claims, expected", [
    ({"a": Claim(IMPLIED), "b": Claim(EXPLICIT), "c": None}, "b"),               # the strongest claim
    ({"a": Claim(EXPLICIT), "b": Claim(EXPLICIT)}, "a"),                          # a tie: registry order
    ({"a": Claim(EXPLICIT + 10, "one at a time"), "b": Claim(EXPLICIT)}, None),   # a refusal wins as a claim
    ({"a": Claim(EXPLICIT + 10, "one at a time"), "b": Claim(SPECIFIC)}, "b"),    # ... unless outclaimed
    ({"a": None, "b": None}, None),
])
def test_the_family_with_the_strongest_claim_is_the_instructions(monkeypatch, claims, expected):
    monkeypatch.setattr(roles, "FAMILIES", {n: _fake(n, c) for n, c in claims.items()})
    parse = SimpleNamespace(refusals=[])
    assert roles.detect_family(parse) == expected
    refused = [c.refusal for c in claims.values() if c is not None and c.refusal]
    assert parse.refusals == (refused if expected is None and refused else [])


def test_the_shipped_families_claim_their_instructions():
    cases = {
        "Titrate 25 mL of 0.1 M HCl with 0.1 M NaOH until pH 7": "acid_base_titration",
        "Titrate 25 mL of 0.01 M calcium chloride with 0.01 M EDTA using calconcarboxylic acid": "complexometric_titration",
        "Weigh 2.5 g of sodium chloride and dissolve it in 50 mL of water": "weighing_dissolution",
    }
    for text, family in cases.items():
        assert roles.detect_family(parse_instruction(text, default_library())) == family, text
    parse = parse_instruction("Weigh 2.5 g of sodium chloride, dissolve it in 50 mL water and titrate it with 0.1 M NaOH",
                              default_library())
    assert roles.detect_family(parse) is None and "weighing and a titration" in parse.refusals[0]


def test_a_plan_names_a_registered_family():
    from agentchemist.plan import plan_instruction

    plan = plan_instruction("Titrate 25 mL of 0.1 M HCl with 0.1 M NaOH until pH 7").plan
    data = plan.model_dump(mode="json")
    data["parsed_instruction"]["family"] = "back_titration"
    with pytest.raises(ValidationError, match="acid_base_titration"):
        Plan.model_validate(data)


def test_an_unknown_familys_settled_readings_are_analysed_by_the_flagged_family():
    run = synthetic_titration_run(seed=1)
    unknown = compute_results(run, {"family": UNKNOWN}).results
    unregistered = compute_results(run, {"family": "not_a_family"}).results
    assert unknown["equivalence_points"] and "equivalence_points" not in unregistered
