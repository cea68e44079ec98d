"""Bench markers for rviz (agentchemist.sim.workcell_view): they follow the twin (moves, drops, colour, missing
items, stirrer, readings), stay finite, and put the bench where the robot's arms can reach it."""
import glob
import math
import xml.etree.ElementTree as ET

import pytest

from agentchemist.sim import workcell_view as bv
from agentchemist.sim.indicators import WATER_RGB
from agentchemist.sim.lab import LabTwin
from agentchemist.sim.scenario import load_scenario, read_scenario_yaml, scenario_from_dict
from tests.conftest import REPO

SCENARIOS = REPO / "config" / "scenarios"
PIPER_REACH_M = 0.626  # AgileX Piper's published working radius


def twin(name: str = "hcl_naoh", **changes) -> LabTwin:
    data = read_scenario_yaml(SCENARIOS / f"{name}.yaml")
    for key, value in changes.items():
        data[key] = value
    return LabTwin(scenario_from_dict(data))


def by_key(specs) -> dict[tuple[str, int], bv.MarkerSpec]:
    out = {(s.ns, s.id): s for s in specs}
    assert len(out) == len(specs), "two markers share a namespace and id"
    return out


def numbers(spec: bv.MarkerSpec) -> list[float]:
    return [*spec.position, *spec.orientation, *spec.scale, *spec.rgba]


def squeeze(tw: LabTwin, until: float) -> None:
    """Grasp the pipette, fill it and close the gripper slowly: drops fall into the beaker."""
    tw.command_gripper("right", 0.0605, 0.0)
    assert tw.draw("naoh", 30.0, 1.0).accepted
    x, t = 60.0, 1.0
    while t < until:
        x -= 0.01
        t = round(t + 0.05, 10)
        tw.command_gripper("right", x / 1000.0, t)


# ----------------------------------------------------------------------------------------------- structure
@pytest.mark.parametrize("path", sorted(glob.glob(str(SCENARIOS / "*.yaml"))), ids=lambda p: p.split("/")[-1])
def test_every_shipped_scenario_gives_complete_finite_markers(path):
    tw = LabTwin(load_scenario(path))
    tw.step(2.0)
    specs = bv.twin_markers(tw)
    markers = by_key(specs)
    assert markers[("bench", 0)].action == bv.ADD
    for item in tw.layout:
        mine = [markers[(item.id, slot)] for slot in range(bv.SLOTS)]  # every slot, every item
        added = [m for m in mine if m.action == bv.ADD]
        if item.present:
            assert markers[(item.id, bv.BODY)].action == bv.ADD and markers[(item.id, bv.LABEL)].text
        else:
            assert added == [], f"{item.id} is missing but still drawn"
    for spec in specs:
        assert spec.frame == bv.BASE_FRAME
        assert all(math.isfinite(v) for v in numbers(spec)), spec
        if spec.action == bv.ADD:
            assert min(spec.scale) > 0.0 and all(0.0 <= c <= 1.0 for c in spec.rgba), spec
            assert spec.shape in (bv.CUBE, bv.CYLINDER, bv.SPHERE, bv.TEXT)
            assert math.isclose(sum(q * q for q in spec.orientation), 1.0, rel_tol=1e-9)
            assert (spec.shape == bv.TEXT) == bool(spec.text)


def test_pixel_mapping_is_the_documented_linear_one():
    assert bv.pixel_to_bench(160, 212, 320) == (0.0, 0.0)
    # a camera twice as wide: the same place at twice the pixels
    assert bv.pixel_to_bench(320, 424, 640) == pytest.approx(bv.pixel_to_bench(160, 212, 320))
    x, y = bv.pixel_to_bench(160 - 46, 212 - 10, 320)  # one beaker width to the left, 10 rows back
    assert (x, y) == pytest.approx((10 * 0.003, 0.050))


def test_bench_frame_is_base_link_shifted_by_the_fixed_bench_pose():
    tw = twin()
    in_bench, in_base = bv.twin_markers(tw, frame=bv.BENCH_FRAME), bv.twin_markers(tw)
    assert {s.frame for s in in_bench} == {bv.BENCH_FRAME}
    for a, b in zip(in_bench, in_base):
        if a.action == bv.ADD:
            assert [p + o for p, o in zip(a.position, bv.BENCH_IN_BASE_LINK)] == pytest.approx(list(b.position))
    with pytest.raises(ValueError, match="frame"):
        bv.twin_markers(tw, frame="map")


def _urdf_arm_bases() -> list[tuple[float, float, float]]:
    """Arm base positions in base_link from the URDF (deck joint + arm mount joints)."""
    root = ET.parse(REPO / "urdf" / "agentchemist_aloha.urdf").getroot()
    joints = {j.get("name"): [float(v) for v in j.find("origin").get("xyz").split()] for j in root.findall("joint")}
    deck = joints["deck_joint"]
    return [tuple(d + m for d, m in zip(deck, joints[f"{side}_arm_mount"])) for side in ("left", "right")]


@pytest.mark.parametrize("name", ["hcl_naoh", "nacl_weighing", "titration_cluttered", "nacl_weighing_cluttered"])
def test_items_stand_in_front_of_the_deck_within_reach_of_an_arm(name):
    bases = _urdf_arm_bases()
    deck_front = 0.685 / 2  # base_length / 2 in the xacro
    tw = LabTwin(load_scenario(SCENARIOS / f"{name}.yaml"))
    markers = bv.twin_markers(tw)
    top = by_key(markers)[("bench", 0)]
    assert top.position[0] - top.scale[0] / 2 > deck_front  # the bench starts in front of the deck
    assert top.position[2] + top.scale[2] / 2 == pytest.approx(bv.BENCH_IN_BASE_LINK[2])
    bodies = [s for s in markers if s.ns != "bench" and s.id == bv.BODY and s.action == bv.ADD]
    assert bodies
    for body in bodies:
        x, y, z = body.position
        assert x > deck_front + 0.05, f"{body.ns} at x={x:.3f} is over the deck"
        reach = min(math.dist((x, y, z), base) for base in bases)
        assert reach < PIPER_REACH_M, f"{body.ns} is {reach:.2f} m from the nearer arm"
        assert z >= bv.BENCH_IN_BASE_LINK[2]  # on (not in) the bench


# ----------------------------------------------------------------------------------------------- behaviour
def test_markers_follow_a_moved_item():
    tw = twin()
    before = by_key(bv.twin_markers(tw))
    tw.move_labware("titrant_bottle", 1.0, position=(218.0, 192.0))  # 40 px left, 20 rows back
    tw.move_labware("beaker_main", 1.0, position=(140.0, 188.0))     # 20 px left, still on the stirrer
    after = by_key(bv.twin_markers(tw))
    (x0, y0, z0), (x1, y1, z1) = before[("titrant_bottle", 0)].position, after[("titrant_bottle", 0)].position
    assert (x1 - x0, y1 - y0, z1 - z0) == pytest.approx((20 * bv.DEPTH_M_PER_PX, 40 * bv.M_PER_PX, 0.0))
    for slot in (bv.BODY, bv.CONTENT):  # the liquid goes with its beaker
        b, a = before[("beaker_main", slot)].position, after[("beaker_main", slot)].position
        assert (a[0] - b[0], a[1] - b[1], a[2] - b[2]) == pytest.approx((0.0, 20 * bv.M_PER_PX, 0.0))
    # the beaker stands on the stirrer's top, not on the bench
    stirrer = after[("stirrer", 0)]
    beaker = after[("beaker_main", 0)]
    assert beaker.position[2] - beaker.scale[2] / 2 == pytest.approx(stirrer.position[2] + stirrer.scale[2] / 2)


def test_liquid_rises_as_drops_land():
    tw = twin()
    before = by_key(bv.twin_markers(tw))[("beaker_main", bv.CONTENT)]
    squeeze(tw, until=6.0)
    truth = tw.truth_summary()
    assert truth["drops_landed"] > 5
    after = by_key(bv.twin_markers(tw))[("beaker_main", bv.CONTENT)]
    grown = after.scale[2] - before.scale[2]
    assert grown > 0.0
    # the column's height is proportional to the volume (the drawing's rule), so it grew by the same share
    assert after.scale[2] / before.scale[2] == pytest.approx(truth["beaker_volume_ml"] / 25.0, rel=1e-9)
    assert after.position[2] - after.scale[2] / 2 == pytest.approx(before.position[2] - before.scale[2] / 2)


def test_liquid_colour_is_the_solution_colour_and_differs_between_acid_and_base():
    indicator = {"name": "phenolphthalein", "conc_M": 2.0e-5}
    acid = twin("acetic_naoh")
    base_beaker = dict(read_scenario_yaml(SCENARIOS / "acetic_naoh.yaml")["beaker"],
                       solution={"naoh": 0.05}, indicator=indicator)
    base = twin("acetic_naoh", beaker=base_beaker)
    colours = {}
    for name, tw in (("acid", acid), ("base", base)):
        liquid = by_key(bv.twin_markers(tw))[("beaker_main", bv.CONTENT)]
        rgb = tuple(round(c * 255) for c in liquid.rgba[:3])
        assert rgb == tw.scene_state()["solution_rgb"]  # the colour the camera draws
        colours[name] = rgb
    assert colours["acid"] == pytest.approx(WATER_RGB, abs=3)  # phenolphthalein is colourless in acid
    r, g, b = colours["base"]
    assert g < r - 40 and g < b - 40, f"basic phenolphthalein should be magenta, got {colours['base']}"


def test_a_missing_item_is_deleted_and_comes_back():
    tw = twin()
    assert by_key(bv.twin_markers(tw))[("pipette", bv.BODY)].action == bv.ADD
    tw.inject_fault("labware_missing", 1.0, duration_s=2.0, id="pipette")
    gone = by_key(bv.twin_markers(tw))
    assert all(gone[("pipette", slot)].action == bv.DELETE for slot in range(bv.SLOTS))
    assert gone[("beaker_main", bv.BODY)].action == bv.ADD
    tw.step(4.0)
    assert by_key(bv.twin_markers(tw))[("pipette", bv.BODY)].action == bv.ADD
    never = by_key(bv.twin_markers(LabTwin(load_scenario(SCENARIOS / "missing_pipette.yaml"))))
    assert {never[("pipette", slot)].action for slot in range(bv.SLOTS)} == {bv.DELETE}


def test_an_emptied_beaker_loses_its_liquid_marker():
    beaker = dict(read_scenario_yaml(SCENARIOS / "hcl_naoh.yaml")["beaker"], volume_ml=0.0, solution={})
    markers = by_key(bv.twin_markers(twin(beaker=beaker)))
    assert markers[("beaker_main", bv.BODY)].action == bv.ADD
    assert markers[("beaker_main", bv.CONTENT)].action == bv.DELETE


def test_stirrer_state_ph_and_balance_readings_are_shown():
    tw = twin()
    on = by_key(bv.twin_markers(tw))
    assert on[("stirrer", bv.READOUT)].text == "stirring"
    ph_text = on[("ph_meter", bv.READOUT)].text
    assert ph_text == f"pH {tw.scene_state()['meter_text'].strip()}" and 0.9 < float(ph_text.split()[1]) < 1.3
    tw.set_stirrer(False, 1.0)
    off = by_key(bv.twin_markers(tw))
    assert off[("stirrer", bv.READOUT)].text == "stirrer off"
    assert off[("stirrer", bv.LIGHT)].rgba != on[("stirrer", bv.LIGHT)].rgba
    tw.inject_fault("ph_dropout", 1.0, duration_s=5.0)
    assert by_key(bv.twin_markers(tw))[("ph_meter", bv.READOUT)].text == "pH ----"

    weighing = LabTwin(load_scenario(SCENARIOS / "nacl_weighing.yaml"))
    weighing.step(5.0)  # the balance settles on the beaker
    shown = by_key(bv.twin_markers(weighing))[("balance", bv.READOUT)].text
    assert shown == weighing.scene_state()["balance_text"].strip() and shown.endswith(" g")


def test_pipette_is_drawn_held_over_the_beaker_or_resting_in_it():
    tw = twin()
    resting = by_key(bv.twin_markers(tw))
    assert "held" not in resting[("pipette", bv.LABEL)].text
    assert resting[("pipette", bv.BODY)].orientation != (0.0, 0.0, 0.0, 1.0)  # leaning in the beaker
    squeeze(tw, until=2.0)
    held = by_key(bv.twin_markers(tw))
    assert held[("pipette", bv.LABEL)].text.endswith("(held)")
    tube, beaker = held[("pipette", bv.BODY)], held[("beaker_main", bv.BODY)]
    assert tube.orientation == (0.0, 0.0, 0.0, 1.0)
    assert tube.position[2] - tube.scale[2] / 2 > beaker.position[2] + beaker.scale[2] / 2  # tip above the rim
    assert held[("pipette", bv.CONTENT)].action == bv.ADD  # it holds titrant now


def test_a_tilted_solid_bottle_leans_over_the_beaker():
    tw = LabTwin(load_scenario(SCENARIOS / "nacl_weighing.yaml"))
    upright = by_key(bv.twin_markers(tw))[("solid_bottle", bv.BODY)]
    assert tw.grasp_bottle("left", 1.0).accepted and tw.tilt_bottle("left", 60.0, 1.0).accepted
    tw.step(3.0)
    markers = by_key(bv.twin_markers(tw))
    tilted, beaker = markers[("solid_bottle", bv.BODY)], markers[("beaker_main", bv.BODY)]
    assert tilted.orientation != upright.orientation
    assert abs(tilted.position[1] - beaker.position[1]) < abs(upright.position[1] - beaker.position[1])
    assert all(math.isfinite(v) for v in numbers(tilted))
