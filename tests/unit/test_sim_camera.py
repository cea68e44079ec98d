"""Camera images: every present item's ArUco tag is found again; missing and moved items; solution colour."""
import cv2
import numpy as np
import pytest

from agentchemist.sim.errors import SimCommandError
from agentchemist.sim.lab import LabTwin
from agentchemist.sim.markers import MARKER_TABLE, detect_markers, marker_image
from agentchemist.sim.scenario import load_scenario, scenario_from_dict, read_scenario_yaml
from tests.conftest import REPO

SCENARIOS = REPO / "config" / "scenarios"


def detect(img: np.ndarray) -> dict[int, tuple[float, float]]:
    """Independent detection with OpenCV's ArUco detector (not the twin's helper)."""
    det = cv2.aruco.ArucoDetector(cv2.aruco.getPredefinedDictionary(cv2.aruco.DICT_4X4_50),
                                  cv2.aruco.DetectorParameters())
    corners, ids, _ = det.detectMarkers(cv2.cvtColor(img, cv2.COLOR_RGB2GRAY))
    if ids is None:
        return {}
    return {int(i): tuple(c.reshape(-1, 2).mean(axis=0)) for c, i in zip(corners, ids.ravel())}


@pytest.mark.parametrize("name", ["hcl_naoh", "ca_edta", "nacl_weighing", "acetic_naoh", "missing_pipette"])
def test_front_image_shows_every_present_item_tag(name):
    tw = LabTwin(load_scenario(SCENARIOS / f"{name}.yaml"))
    img = tw.render_camera("front", 0.0)
    assert img.shape == (240, 320, 3) and img.dtype == np.uint8
    want = {i.marker_id for i in tw.layout if i.present}
    absent = {i.marker_id for i in tw.layout if not i.present}
    found = detect(img)
    assert set(found) == want
    assert not (absent & set(found))
    # tags sit on their items: each is near the item's layout position (same column, above its base)
    for item in tw.layout:
        if item.present and item.kind in ("beaker", "stirrer", "reagent_bottle", "ph_meter", "balance"):
            u, v = found[item.marker_id]
            assert abs(u - item.position[0]) < 35 and item.position[1] - 70 < v <= item.position[1] + 5


def test_marker_table_matches_the_helper_and_ids_are_unique():
    ids = list(MARKER_TABLE)
    assert len(ids) == len(set(ids)) and all(0 <= i < 50 for i in ids)
    assert len({m.labware_id for m in MARKER_TABLE.values()}) == len(ids)
    img = np.full((60, 60, 3), 255, np.uint8)
    img[12:48, 12:48] = marker_image(7, 6)[:, :, None]
    assert detect_markers(img).keys() == {7} == detect(img).keys()


def test_wrist_images_have_the_configured_size():
    tw = LabTwin(load_scenario(SCENARIOS / "hcl_naoh.yaml"))
    for name in ("left_wrist", "right_wrist"):
        img = tw.render_camera(name, 0.5)
        assert img.shape == (240, 320, 3) and img.dtype == np.uint8
    with pytest.raises(SimCommandError):
        tw.render_camera("top", 0.5)


def test_right_wrist_sees_the_pipette_and_beaker_while_dispensing():
    tw = LabTwin(load_scenario(SCENARIOS / "hcl_naoh.yaml"))
    tw.command_gripper("right", 0.0605, 0.0)
    tw.step(1.0)
    found = detect(tw.render_camera("right_wrist", 1.0))
    assert {1, 2} <= set(found)  # beaker and pipette tags, seen close up


def test_missing_item_is_not_drawn_and_moved_item_is_drawn_where_it_is():
    tw = LabTwin(load_scenario(SCENARIOS / "hcl_naoh.yaml"))
    before = detect(tw.render_camera("front", 0.0))
    tw.inject_fault("labware_missing", 1.0, id="titrant_bottle")
    tw.inject_fault("labware_moved", 1.0, id="ph_meter", offset=[0, -30])
    after = detect(tw.render_camera("front", 1.0))
    assert 6 in before and 6 not in after
    assert after[5][0] == pytest.approx(before[5][0], abs=1.0)
    assert after[5][1] == pytest.approx(before[5][1] - 30.0, abs=1.0)
    assert [i.position for i in tw.layout if i.id == "ph_meter"][0] == (40.0, 182.0)


def test_configured_resolution_scales_the_drawing():
    data = read_scenario_yaml(SCENARIOS / "hcl_naoh.yaml")
    data["cameras"] = {"width": 640, "height": 480}
    for item in data["layout"]["items"]:
        item["position"] = [2 * item["position"][0], 2 * item["position"][1]]
    tw = LabTwin(scenario_from_dict(data))
    img = tw.render_camera("front", 0.0)
    assert img.shape == (480, 640, 3)
    assert set(detect(img)) == {i.marker_id for i in tw.layout if i.present}


def liquid_pixel(tw: LabTwin, img: np.ndarray) -> np.ndarray:
    """Mean colour of a patch of liquid at the bottom-left of the working beaker."""
    beaker = next(i for i in tw.layout if i.id == "beaker_main")
    u, base = beaker.position[0], 212 - 24  # on the stirrer: base at the plate's top
    patch = img[int(base - 10):int(base - 6), int(u - 20):int(u - 14)]
    return patch.reshape(-1, 3).mean(axis=0)


def test_ca_edta_solution_turns_from_magenta_to_blue():
    tw = LabTwin(load_scenario(SCENARIOS / "ca_edta.yaml"))
    start = liquid_pixel(tw, tw.render_camera("front", 0.0))
    assert start[0] > start[2] + 30  # red over blue: magenta / fuchsin
    tw.command_gripper("right", 0.0605, 0.0)
    assert tw.draw("disodium_edta", 55.0, 1.0).accepted
    x, t = 60.0, 1.0
    while x > 32.0:  # about 28 mL of 0.01 M EDTA: past the 25 mL equivalence
        x -= 0.1
        t += 0.05
        tw.command_gripper("right", x / 1000.0, t)
    end = liquid_pixel(tw, tw.render_camera("front", t + 5.0))
    assert end[2] > end[0] + 60  # sapphire blue
    assert tw.beaker.hue_deg(tw.truth()["true_ph"]) == pytest.approx(228.0, abs=15)


def test_colourless_titration_shows_a_light_clear_liquid():
    tw = LabTwin(load_scenario(SCENARIOS / "hcl_naoh.yaml"))
    px = liquid_pixel(tw, tw.render_camera("front", 0.0))
    assert px.min() > 150 and px.max() - px.min() < 40  # pale blue-grey, near transparent
