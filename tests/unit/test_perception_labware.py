"""Watching the bench during a run: the twin's labware faults, seen by the front camera, are told apart
(missing vs moved, an item that moves with its host is a consequence), and a clean run with drops
falling past the beaker's tag shows nothing."""
import pytest

from agentchemist.perception.scene import LabwareWatch, LabwareWatchConfig
from agentchemist.perception.tags import detect_markers
from agentchemist.sim.lab import LabTwin
from agentchemist.sim.scenario import load_scenario
from tests.conftest import REPO

SCENARIO = REPO / "tests" / "data" / "scenarios" / "hcl_short.yaml"


@pytest.fixture(scope="module")
def scenario():
    return load_scenario(SCENARIO)


def bench(scenario):
    twin = LabTwin(scenario)
    twin.step(1.0)
    return twin, LabwareWatch(detect_markers(twin.render_camera("front", 1.0)))


def frame(twin, t):
    return detect_markers(twin.render_camera("front", t))


def test_clean_bench_with_drops_falling_past_the_tag(scenario):
    """The pipette squeezed over the beaker, a frame every 0.07 s for 8 s: drops in flight are drawn
    behind the beaker's front tag (they fall inside it), so the tag is never lost."""
    twin, watch = bench(scenario)
    side = scenario.pipette.held_by
    twin.command_gripper(side, scenario.pipette.contact_opening_mm / 1000.0, 1.0)
    twin.step(3.0)
    assert twin.pipette_held
    twin.draw("naoh", 10.0, 3.0)
    twin.command_gripper(side, 0.050, 3.0)  # squeeze steadily: a drop every fraction of a second
    in_flight, t = 0, 3.0
    while t < 11.0:
        t = round(t + 0.07, 6)
        in_flight += bool(twin.scene_state()["falling"])
        assert watch.update(t, frame(twin, t)) == [], t
    assert in_flight > 5 and twin.truth()["drops_landed"] > 10


@pytest.mark.parametrize("fault, params, kind, primary", [
    ("labware_missing", {"id": "titrant_bottle"}, "labware_missing", ["titrant_bottle"]),
    ("labware_missing", {"id": "ph_probe"}, "labware_missing", ["ph_probe"]),
    ("labware_missing", {"id": "beaker_main"}, "labware_missing", ["beaker_main"]),  # the probe moves with it
    ("labware_moved", {"id": "beaker_main", "offset": [40, 0]}, "labware_moved", ["beaker_main"]),
    ("labware_moved", {"id": "stirrer", "offset": [30, 0]}, "labware_moved", ["stirrer"]),
    ("labware_moved", {"id": "stand", "offset": [15, 0]}, "labware_moved", ["stand", "stirrer"]),  # hides the stirrer
])
def test_each_labware_fault_is_confirmed_with_its_kind_and_restored(scenario, fault, params, kind, primary):
    twin, watch = bench(scenario)
    assert watch.update(2.0, frame(twin, 2.0)) == []
    twin.inject_fault(fault, 2.5, duration_s=6.0, **params)
    first = watch.update(3.0, frame(twin, 3.0))
    assert [e.kind for e in first] == ["suspect"]  # the first frame holds, says nothing yet
    second = watch.update(5.0, frame(twin, 5.0))
    assert [e.kind for e in second] == ["confirmed"]
    event = second[0]
    assert event.anomaly_kind == kind and event.since == 3.0
    assert sorted(c.id for c in event.primary) == primary
    assert watch.update(7.0, frame(twin, 7.0)) == []  # still changed: nothing new
    back = watch.update(9.0, frame(twin, 9.0))        # the window ended: back in place
    assert [e.kind for e in back] == ["restored"]


def test_one_frame_occlusion_is_cleared_without_an_anomaly():
    watch = LabwareWatch({1: (164.5, 162.5), 3: (129.5, 201.5), 4: (136.5, 112.5)})
    assert [e.kind for e in watch.update(1.0, {3: (129.5, 201.5), 4: (136.5, 112.5)})] == ["suspect"]
    assert [e.kind for e in watch.update(3.0, {1: (164.9, 162.0), 3: (129.5, 201.5), 4: (136.5, 112.5)})] == ["cleared"]
    assert watch.state == "ok"


def test_small_jitter_is_not_a_move():
    watch = LabwareWatch({6: (251.5, 188.5)})
    for i, du in enumerate((0.0, 1.5, -2.0, 3.0, -1.0)):
        assert watch.update(float(i), {6: (251.5 + du, 188.5 - du)}) == []


def test_an_item_that_does_not_come_back_times_out_once():
    watch = LabwareWatch({6: (251.5, 188.5)}, LabwareWatchConfig(return_timeout_s=10.0))
    kinds = []
    for t in range(0, 30, 2):
        kinds += [e.kind for e in watch.update(float(t), {})]
    assert kinds == ["suspect", "confirmed", "timeout"]


def test_the_held_pipette_may_move_but_not_vanish():
    ref = {2: (190.0, 120.0), 1: (164.5, 162.5)}
    watch = LabwareWatch(ref)
    assert watch.update(1.0, {2: (201.5, 105.5), 1: (164.5, 162.5)}) == []  # grasped and lifted: fine
    events = watch.update(3.0, {1: (164.5, 162.5)}) + watch.update(5.0, {1: (164.5, 162.5)})
    assert [e.kind for e in events] == ["suspect", "confirmed"] and events[-1].anomaly_kind == "labware_missing"
