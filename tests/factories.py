"""Shared test factories: plans for the HCl/NaOH titration and for the scenario library's experiments.

Fixtures built on these are in tests/conftest.py (`ph_plan`, `ca_plan`, `weighing_plan`); tests that need a
variant (another family, other values, a raw dict to break) call the factories directly.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
TEST_SCENARIOS = REPO / "tests" / "data" / "scenarios"
LIBRARY_SCENARIOS = REPO / "config" / "scenarios"

HCL_SHORT = TEST_SCENARIOS / "hcl_short.yaml"          #: HCl/NaOH, short (the replay bags' scenario)
HCL_NAOH = LIBRARY_SCENARIOS / "hcl_naoh.yaml"         #: the paper's worked example
CA_EDTA = LIBRARY_SCENARIOS / "ca_edta.yaml"           #: complexometric (colour endpoint)
NACL_WEIGHING = LIBRARY_SCENARIOS / "nacl_weighing.yaml"
#: what the camera reports on the weighing bench (the planner's environment check needs the balance)
WEIGHING_SCENE = {"objects": [{"id": "balance", "kind": "balance"}, {"id": "beaker_main", "kind": "beaker"},
                              {"id": "stirrer", "kind": "stirrer"}, {"id": "solid_bottle", "kind": "solid_bottle"}]}

#: protocol values of the HCl/NaOH titration: 25 mL of 0.1 M HCl with 0.1 M NaOH up to pH 12.5
TITRATION_VALUES: dict[str, Any] = dict(
    experiment_name="acid-base titration of 0.1 M hydrochloric acid with 0.1 M sodium hydroxide",
    analyte_name="hcl",
    analyte_display="hydrochloric acid",
    titrant_name="naoh",
    titrant_display="sodium hydroxide",
    analyte_concentration_m=0.1,
    titrant_concentration_m=0.1,
    analyte_volume_ml=25.0,
    target_ph=12.5,
    draw_volume_ml=54.4,
    max_volume_ml=54.4,
    output_format=["report"],
    settle_each_drop=True,
)


@lru_cache(maxsize=1)
def protocols():
    """The shipped protocol library (loaded once per session)."""
    from agentchemist.plan.protocols import ProtocolLibrary
    return ProtocolLibrary.load()


def titration_plan_dict(family: str = "acid_base_titration", experiment_id: str = "exp-test",
                        **values) -> dict:
    """The five-field plan object, as JSON data, for the HCl/NaOH titration filled from `family`'s protocol
    (`values` override TITRATION_VALUES). A fresh dict each call: mutate it freely."""
    proto = protocols().for_family(family)
    filled = proto.fill({**TITRATION_VALUES, **values})
    return {
        "experiment_id": experiment_id,
        "protocol": {"id": proto.id, "version": proto.version},
        "parsed_instruction": {
            "experiment_name": filled["experiment_name"],
            "family": family,
            "entities": {
                "instruments": list(proto.required_instruments),
                "reagents": [
                    {"name": "naoh", "role": "titrant", "concentration_m": 0.1},
                    {"name": "hcl", "role": "analyte", "concentration_m": 0.1, "volume_ml": 25.0},
                ],
                "objects": [],
            },
            "initial_conditions": {"initial_ph": 1.06, "analyte_volume_ml": 25.0},
            "target_conditions": {"target_ph": 12.5},
            "operation_intent": "titrate",
        },
        "environment_check": {"satisfied": True},
        "state_machine": filled["state_machine"],
        "task_decomposition": filled["task_decomposition"],
        "module_instantiation": filled["module_instantiation"],
    }


def titration_plan(family: str = "acid_base_titration", experiment_id: str = "exp-test", **values):
    """`titration_plan_dict` validated into a Plan."""
    from agentchemist.plan.schema import Plan
    return Plan.model_validate(titration_plan_dict(family, experiment_id, **values))


def planned(scenario: Path | str, scene: dict | None = None):
    """The Plan the rules planner makes for a scenario file's instruction (with `scene` as the camera's
    scene description when given); fails the test when the planner does not answer with a plan."""
    from agentchemist.plan.planner import plan_instruction
    from agentchemist.plan.scene import SceneInfo
    from agentchemist.sim.scenario import load_scenario

    outcome = plan_instruction(load_scenario(Path(scenario)).instruction,
                               SceneInfo.from_dict(scene) if scene is not None else None)
    assert outcome.kind == "plan" and outcome.plan is not None, outcome.message
    return outcome.plan
