"""Which beaker the instruction means on a bench with several: from what it says (where the beaker
stands, what it holds, its size, its id) and what the scene shows (positions, relations, contents,
sizes). Asks only when the scene still leaves more than one."""

from __future__ import annotations

import pytest

from agentchemist.perception.scene import describe_scene
from agentchemist.plan import Planner, SceneError, SceneInfo
from agentchemist.plan.parse_text import vessel_location
from agentchemist.sim.lab import LabTwin
from agentchemist.sim.scenario import load_scenario
from tests.conftest import REPO

PLANNER = Planner()
TITRATE = (
    "Titrate 5 mL of 0.1 M hydrochloric acid in the beaker on the magnetic stirrer with 0.1 M sodium "
    "hydroxide using the rubber-headed pipette until the pH reaches 11."
)
WEIGH = (
    "Weigh 2.50 g of NaCl solid from the reagent bottle into the beaker containing 50 mL of deionized water on "
    "the balance, place the beaker on the magnetic stirrer, start the stirrer and stir until the solid is "
    "completely dissolved."
)
# Tag centres (px) in the twin's 320 x 240 front image of config/scenarios/titration_cluttered.yaml:
# beaker_main stands on the stirrer, the other three beakers on the bench around it.
TITRATION_BENCH = [
    {"id": "stirrer", "kind": "magnetic_stirrer", "u": 129.5, "v": 201.5},
    {"id": "beaker_main", "kind": "beaker", "u": 164.5, "v": 162.5},
    {"id": "beaker_small", "kind": "beaker", "u": 226.5, "v": 193.5},
    {"id": "beaker_medium", "kind": "beaker", "u": 292.5, "v": 124.5},
    {"id": "beaker_large", "kind": "beaker", "u": 48.5, "v": 125.5},
    {"id": "pipette", "kind": "pipette", "u": 201.5, "v": 138.5},
    {"id": "ph_probe", "kind": "ph_probe", "u": 136.5, "v": 112.5},
    {"id": "ph_meter", "kind": "ph_meter", "u": 22.5, "v": 198.5},
    {"id": "titrant_bottle", "kind": "reagent_bottle", "u": 251.5, "v": 188.5},
]
BEAKERS = ("beaker_main", "beaker_small", "beaker_medium", "beaker_large")


def scene(objects, **extra) -> SceneInfo:
    return SceneInfo.from_dict({"objects": objects, **extra})


def without_positions(objects):
    return [{k: v for k, v in o.items() if k not in ("u", "v")} for o in objects]


# ---------------------------------------------------------------------------------------------- resolved
def test_the_beaker_on_the_stirrer_is_taken_among_spare_beakers():
    outcome = PLANNER.plan(TITRATE, scene(TITRATION_BENCH))
    assert outcome.kind == "plan", outcome.message
    objects = outcome.plan.parsed_instruction.entities.objects
    assert "beaker_main" in objects and not {"beaker_small", "beaker_medium", "beaker_large"} & set(objects)
    # the size is not seen: the plan says what it assumed
    assert any("size of beaker_main" in w for w in outcome.plan.warnings)


def test_a_relation_reported_by_the_scene_wins_over_positions():
    objects = [dict(o) for o in TITRATION_BENCH]
    for o in objects:
        if o["id"] == "beaker_small":
            o["on"] = "stirrer"  # a describer (a VLM) says so; the tags say beaker_main
        if o["id"] == "beaker_main":
            o["on"] = "stand"
    outcome = PLANNER.plan(TITRATE, scene(objects + [{"id": "stand", "kind": "stand"}]))
    assert outcome.kind == "plan" and "beaker_small" in outcome.plan.parsed_instruction.entities.objects


def test_the_beaker_holding_the_analyte_or_of_the_stated_size_or_named_by_id_is_taken():
    bench = without_positions(TITRATION_BENCH)
    # a scene that reports contents is checked for every reagent: the bottle's label names the titrant
    holding = [dict(o, contains="hcl") if o["id"] == "beaker_large" else dict(o, label="NaOH 0.1 M")
               if o["id"] == "titrant_bottle" else o for o in bench]
    out = PLANNER.plan(TITRATE, scene(holding))
    assert out.kind == "plan" and "beaker_large" in out.plan.parsed_instruction.entities.objects

    sized = [dict(o, capacity_ml={"beaker_small": 50, "beaker_medium": 100, "beaker_large": 250}[o["id"]])
             if o["id"] in BEAKERS[1:] else o for o in bench]
    text = TITRATE.replace("in the beaker on the magnetic stirrer", "in the 250 mL beaker")
    out = PLANNER.plan(text, scene(sized))
    assert out.kind == "plan" and "beaker_large" in out.plan.parsed_instruction.entities.objects
    # a size the scene shows is evidence, an unseen one is not: beaker_medium, not beaker_main
    out = PLANNER.plan(text.replace("250 mL", "100 mL"), scene(sized))
    assert out.kind == "plan" and "beaker_medium" in out.plan.parsed_instruction.entities.objects
    # no beaker of the stated size is seen: only those whose size is not seen remain
    out = PLANNER.plan(text.replace("250 mL", "150 mL"), scene(sized))
    assert out.kind == "plan" and "beaker_main" in out.plan.parsed_instruction.entities.objects
    assert "beaker_150ml" in out.plan.parsed_instruction.entities.objects  # the size the instruction gives

    out = PLANNER.plan(TITRATE.replace("the beaker on the magnetic stirrer", "beaker_medium"), scene(bench))
    assert out.kind == "plan" and "beaker_medium" in out.plan.parsed_instruction.entities.objects


def test_a_beaker_too_small_for_the_liquid_is_not_a_candidate():
    bench = [
        {"id": "b_small", "kind": "beaker_50ml"},
        {"id": "b_big", "kind": "beaker_250ml"},
        *[o for o in without_positions(TITRATION_BENCH) if o["id"] not in BEAKERS],
    ]
    text = "Titrate 40 mL of 0.1 M HCl with 0.1 M NaOH until the pH reaches 7 using the pipette."
    out = PLANNER.plan(text, scene(bench))  # 40 mL + about 40 mL of titrant: only the 250 mL beaker holds it
    assert out.kind == "plan" and "b_big" in out.plan.parsed_instruction.entities.objects


# ---------------------------------------------------------------------------------------------- still asks
def test_without_positions_or_relations_the_planner_asks_and_says_why():
    out = PLANNER.plan(TITRATE, scene(without_positions(TITRATION_BENCH)))
    assert out.kind == "question"
    assert out.message.startswith("Which beaker should be used: beaker_main (size not seen), beaker_small")
    assert "does not show which one stands on the magnetic stirrer" in out.message


def test_two_beakers_on_the_stirrer_or_none_is_a_question():
    bench = without_positions(TITRATION_BENCH)
    two = [dict(o, on="stirrer") if o["id"] in ("beaker_main", "beaker_small") else dict(o, on="bench")
           if o["id"] in BEAKERS else o for o in bench]
    out = PLANNER.plan(TITRATE, scene(two))
    assert out.kind == "question" and "Several stand on the magnetic stirrer" in out.message
    assert "beaker_main" in out.message and "beaker_small" in out.message and "beaker_large" not in out.message

    # every beaker's place is known (positions), none is on the stirrer: moved away from it
    away = [dict(o, u=o["u"] + 120 if o["u"] < 200 else o["u"]) if o["id"] in BEAKERS else o for o in TITRATION_BENCH]
    out = PLANNER.plan(TITRATE, scene(away))
    assert out.kind == "question" and "None of them is seen on the magnetic stirrer" in out.message


def test_where_the_beaker_is_to_be_put_does_not_pick_it():
    # "place the beaker on the magnetic stirrer" is where it goes: the beaker that stands there now is not
    # meant, and nothing else in the instruction or scene tells the two apart
    bench = [
        {"id": "balance", "kind": "balance"},
        {"id": "stirrer", "kind": "magnetic_stirrer"},
        {"id": "beaker_a", "kind": "beaker", "on": "stirrer"},
        {"id": "beaker_b", "kind": "beaker"},
        {"id": "solid_bottle", "kind": "solid_bottle"},
    ]
    text = ("Weigh 2.5 g of NaCl from the bottle into the beaker, dissolve it in 50 mL water and place the beaker "
            "on the stirrer.")
    out = PLANNER.plan(text, scene(bench))
    assert out.kind == "question" and "beaker_a" in out.message and "beaker_b" in out.message


# ---------------------------------------------------------------------------------------------- the twin
@pytest.mark.parametrize("name", ["titration_cluttered", "nacl_weighing_cluttered"])
def test_the_twins_cluttered_benches_resolve_from_the_tags_positions(name):
    """The scene as DescribeScene reports it (tag ids, kinds and image positions) picks the working beaker."""
    sc = load_scenario(REPO / "config" / "scenarios" / f"{name}.yaml")
    desc = describe_scene(LabTwin(sc).render_camera("front", 0.5))
    info = scene(
        [{"id": o.id, "kind": o.kind, "u": o.u, "v": o.v} for o in desc.objects],
        preconditions=dict(desc.checks),
        image_size=[sc.cameras.width, sc.cameras.height],
    )
    out = PLANNER.plan(sc.instruction, info)
    assert out.kind == "plan", out.message
    objects = set(out.plan.parsed_instruction.entities.objects)
    assert sc.beaker.id in objects and not objects & {it.id for it in sc.layout.clutter}


# ---------------------------------------------------------------------------------------------- pieces
@pytest.mark.parametrize(
    ("text", "where"),
    [
        (TITRATE, ["magnetic_stirrer"]),
        ("use 0.1M sodium hydroxide solution to titrate the 0.1M hydrochloric acid with an initial pH of 1.06 "
         "placed on the magnetic stirrer, and terminate the titration", ["magnetic_stirrer"]),
        (WEIGH, ["balance"]),  # and not the stirrer it is to be placed on
        ("Please weigh out 2.5 g sodium chloride on the balance, then dissolve it.", []),  # no vessel
        ("Put the beaker on the stir plate and titrate the HCl.", []),
        ("Move the beaker onto the stirrer.", []),
        ("Titrate the acid in the beaker that is standing on the stir plate.", ["magnetic_stirrer"]),
        ("Use the beaker sitting on the scale.", ["balance"]),
    ],
)
def test_vessel_location_reads_where_the_vessel_stands_not_where_it_goes(text, where):
    assert vessel_location(text) == where


def test_standing_on_from_points_boxes_and_image_size():
    stirrer = {"id": "stirrer", "kind": "magnetic_stirrer", "u": 130.0, "v": 200.0}
    on = {"id": "a", "kind": "beaker", "u": 160.0, "v": 162.0}  # 30 px right, 38 px up: on it
    behind = {"id": "b", "kind": "beaker", "u": 140.0, "v": 120.0}  # aligned but 80 px up: behind it
    beside = {"id": "c", "kind": "beaker", "u": 200.0, "v": 190.0}  # 70 px right: beside it
    s = scene([stirrer, on, behind, beside])
    plate = [s.get("stirrer")]
    assert [s.standing_on(s.get(i), plate) for i in "abc"] == [plate[0], None, None]
    # the same bench in a 1920 x 1440 image: positions scale with the image size the scene gives
    big = scene([{**o, "u": o["u"] * 6, "v": o["v"] * 6} for o in (stirrer, on, behind)], image_size=[1920, 1440])
    assert big.standing_on(big.get("a"), [big.get("stirrer")]) is big.get("stirrer")
    assert big.standing_on(big.get("b"), [big.get("stirrer")]) is None
    # boxes: the base (bottom edge) on the platform's top, the centre over it
    boxed = scene([
        {"id": "stirrer", "kind": "magnetic_stirrer", "u": 160, "v": 200, "width": 92, "height": 24},
        {"id": "a", "kind": "beaker", "u": 170, "v": 160, "width": 46, "height": 56},  # base 188, top 188
        {"id": "b", "kind": "beaker", "u": 170, "v": 120, "width": 46, "height": 56},  # base 148: above it
    ])
    assert boxed.standing_on(boxed.get("a"), [boxed.get("stirrer")]).id == "stirrer"
    assert boxed.standing_on(boxed.get("b"), [boxed.get("stirrer")]) is None
    bare = scene([{"id": "x", "kind": "beaker"}, {"id": "stirrer", "kind": "magnetic_stirrer"}])
    assert not bare.knows_support(bare.get("x")) and bare.standing_on(bare.get("x"), [bare.get("stirrer")]) is None


def test_scene_positions_are_validated():
    with pytest.raises(SceneError, match="both u and v"):
        scene([{"id": "a", "kind": "beaker", "u": 3.0}])
    with pytest.raises(SceneError, match="finite"):
        scene([{"id": "a", "kind": "beaker", "u": float("nan"), "v": 1.0}])
    with pytest.raises(SceneError, match="another object"):
        scene([{"id": "a", "kind": "beaker", "on": "a"}])
    with pytest.raises(SceneError, match="image_size"):
        scene([], image_size=[320])
    with pytest.raises(SceneError, match="unknown key"):
        scene([{"id": "a", "kind": "beaker", "depth_m": 0.4}])
