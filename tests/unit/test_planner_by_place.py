"""Issue 37 item 4: the paper's formal example names its reagents by where they are ("draw up the alkaline
solution", "the liquid in the beaker"). With a scene that says what the containers hold it is planned as
the titration it describes, each resolved phrase stated in a warning; otherwise the planner asks for what
is missing, and only that."""

from __future__ import annotations

from agentchemist.plan import Planner, SceneInfo

PLANNER = Planner()
FORMAL = ("Grab the rubber-tipped pipette, close the gripper tightly, and draw up the alkaline solution. Adjust the pH "
          "of the liquid in the beaker on the magnetic stirrer to 12.5")
BENCH = [
    {"id": "beaker_main", "kind": "beaker_100ml", "contains": "hcl", "label": "HCl 0.1 M"},
    {"id": "titrant_bottle", "kind": "reagent_bottle", "label": "NaOH 0.1 M"},
    {"id": "pipette", "kind": "pipette"},
    {"id": "stirrer", "kind": "magnetic_stirrer"},
    {"id": "ph_meter", "kind": "ph_meter"},
]


def test_the_formal_example_is_planned_from_what_the_scene_says_the_containers_hold():
    out = PLANNER.plan(FORMAL, SceneInfo.from_dict({"objects": BENCH}))
    assert out.kind == "plan", out.message
    plan = out.plan
    assert (plan.reagent("titrant").name, plan.reagent("titrant").concentration_m) == ("naoh", 0.1)
    assert (plan.reagent("analyte").name, plan.reagent("analyte").concentration_m) == ("hcl", 0.1)
    assert plan.parsed_instruction.target_conditions.target_ph == 12.5
    assert any("'the alkaline solution' as the 0.1 M sodium hydroxide" in w and "titrant_bottle" in w
               for w in plan.warnings)
    assert any("'the liquid in the beaker' as the 0.1 M hydrochloric acid" in w for w in plan.warnings)


def test_two_bases_on_the_bench_or_no_scene_leave_the_question():
    two = BENCH + [{"id": "koh_bottle", "kind": "reagent_bottle", "label": "KOH 0.1 M"}]
    for scene in (SceneInfo.from_dict({"objects": two}), None):
        out = PLANNER.plan(FORMAL, scene)
        assert out.kind == "question", out.message
        assert "pH 12.5" in out.message and "alkaline solution" in out.message


def test_a_beaker_of_unknown_contents_is_asked_about():
    unlabelled = [dict(o) for o in BENCH]
    unlabelled[0] = {"id": "beaker_main", "kind": "beaker_100ml"}
    out = PLANNER.plan(FORMAL, SceneInfo.from_dict({"objects": unlabelled}))
    assert out.kind == "question" and "liquid in the beaker" in out.message
