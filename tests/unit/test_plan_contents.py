"""The bench's contents against the plan (plan/contents.py): the camera finds the tags, the inventory says
what the containers hold, the planner refuses what the bench contradicts and names the container."""
from __future__ import annotations

import pytest

from agentchemist.workcell.inventory import inventory_from_dict, load_inventory
from agentchemist.chemistry.reagents import default_library
from agentchemist.perception.scene import describe_scene
from agentchemist.plan import plan_instruction
from agentchemist.plan.contents import contents_mismatches
from agentchemist.plan.scene import SceneError, SceneInfo
from agentchemist.plan.schema import ReagentEntity
from agentchemist.sim.lab import LabTwin
from agentchemist.sim.scenario import load_scenario
from tests.conftest import REPO

HCL = load_scenario(REPO / "config" / "scenarios" / "hcl_naoh.yaml")
BENCH = [{"id": "beaker_main", "kind": "beaker"}, {"id": "stirrer", "kind": "stirrer"},
         {"id": "ph_probe", "kind": "ph_probe"}, {"id": "ph_meter", "kind": "ph_meter"},
         {"id": "pipette", "kind": "pipette"}]
WANT = [ReagentEntity(name="naoh", role="titrant", concentration_m=0.1),
        ReagentEntity(name="hcl", role="analyte", concentration_m=0.1)]


def scene(*extra):
    return SceneInfo.from_dict({"objects": [*BENCH, *extra]})


def bottle(reagent, conc, ident="titrant_bottle"):
    return {"id": ident, "kind": "reagent_bottle", "reagent": reagent, "concentration_m": conc}


def test_another_base_at_another_concentration_is_named():
    wrong = contents_mismatches(scene(bottle("koh", 0.5)), WANT, default_library())
    assert wrong == ["titrant_bottle holds 0.5 M potassium hydroxide; the instruction asks for 0.1 M sodium "
                     "hydroxide as the titrant"]


@pytest.mark.parametrize("extra, n", [
    ((bottle("naoh", 0.1023),), 0),                         # a standardised 0.1 M: the same solution
    ((bottle("naoh", 0.5),), 1),                            # the right base, five times too strong
    ((bottle("koh", 0.1),), 1),                             # another base
    ((bottle("hcl", 1.0, "acid_bottle"), bottle("naoh", 0.1)), 0),  # another bottle beside the right one
    ((), 0),                                                # no bottle carries a record: not judged here
    ((bottle("disodium_edta", 0.1),), 1),                   # a chelator is not a base
    (({"id": "titrant_bottle", "kind": "reagent_bottle", "label": "KOH"},), 0),  # a label is not a record
])
def test_what_counts_as_a_mismatch(extra, n):
    assert len(contents_mismatches(scene(*extra), WANT, default_library())) == n


def test_a_swapped_sample_in_the_beaker_is_named():
    objects = [{**o, "reagent": "acetic_acid", "concentration_m": 0.1} if o["id"] == "beaker_main" else o
               for o in BENCH]
    wrong = contents_mismatches(SceneInfo.from_dict({"objects": objects}), WANT, default_library())
    assert wrong == ["beaker_main holds 0.1 M acetic acid; the instruction asks for 0.1 M hydrochloric acid "
                     "as the analyte"]


@pytest.mark.parametrize("bad", [{"reagent": ""}, {"concentration_m": float("nan")}, {"concentration_m": 0},
                                 {"concentration_m": 25.0}, {"concentration_m": True}])
def test_bad_contents_in_a_scene_are_refused(bad):
    with pytest.raises(SceneError):
        scene({"id": "titrant_bottle", "kind": "reagent_bottle", **bad})


def test_from_the_camera_image_to_the_refusal():
    """The twin's front image -> tags -> inventory -> the planner's scene: the shipped inventory agrees with
    hcl_naoh's instruction; a bench whose titrant bottle holds 0.5 M KOH is refused before anything moves."""
    frame = LabTwin(HCL).render_camera("front", 0.5)
    desc = describe_scene(frame, inventory=load_inventory())
    assert desc.contents["titrant_bottle"]["reagent"] == "naoh"
    as_dict = desc.as_scene_dict()
    bottle_seen = next(o for o in as_dict["objects"] if o["id"] == "titrant_bottle")
    assert (bottle_seen["reagent"], bottle_seen["concentration_m"]) == ("naoh", 0.1)
    assert plan_instruction(HCL.instruction, SceneInfo.from_dict(as_dict)).kind == "plan"
    koh = load_inventory().merged(inventory_from_dict({"items": {"titrant_bottle": {
        "reagent": "koh", "concentration": 0.5}}}))
    outcome = plan_instruction(HCL.instruction,
                               SceneInfo.from_dict(describe_scene(frame, inventory=koh).as_scene_dict()))
    assert outcome.kind == "refusal" and outcome.plan is None
    assert "titrant_bottle holds 0.5 M potassium hydroxide" in outcome.message
    assert "0.1 M sodium hydroxide" in outcome.message


def test_edta_in_the_instruction_is_the_edta_salt_in_the_bottle():
    want = [ReagentEntity(name="edta", role="titrant", concentration_m=0.01)]
    assert contents_mismatches(scene(bottle("disodium_edta", 0.01)), want, default_library()) == []
    assert len(contents_mismatches(scene(bottle("disodium_edta", 0.05)), want, default_library())) == 1
