"""pH settled / endpoint detection, and the scene check on the twin's front camera."""

import numpy as np
import pytest

from agentchemist.perception.ph_stability import (EndpointConfig, EndpointDetector, PhStabilityDetector,
                                                  ReadingError, StabilityConfig)
from agentchemist.perception.scene import describe_scene
from agentchemist.plan import HardwareRegistry, SceneInfo
from agentchemist.sim.lab import LabTwin
from agentchemist.sim.scenario import load_scenario
from tests.conftest import REPO


def feed(det, values, t0=0.0, dt=0.1):
    for i, v in enumerate(values):
        det.add(t0 + i * dt, v)


def test_stable_needs_a_covered_window():
    det = PhStabilityDetector(StabilityConfig(window_s=1.0))
    feed(det, [7.0] * 5)           # 0.4 s of readings: not enough
    assert not det.is_stable()
    feed(det, [7.0] * 8, t0=0.5)
    assert det.is_stable()


def test_slope_and_spread_block_stability():
    det = PhStabilityDetector(StabilityConfig(window_s=1.0, max_slope=0.01, max_spread=0.03))
    feed(det, [3.0 + 0.05 * i for i in range(30)])     # 0.5 pH/s drift
    assert not det.is_stable()
    assert det.slope() == pytest.approx(0.5, rel=1e-6)
    det2 = PhStabilityDetector(StabilityConfig(window_s=1.0, max_slope=0.5, max_spread=0.03))
    feed(det2, [7.0, 7.1] * 15)                         # zero slope, 0.1 spread
    assert not det2.is_stable()


@pytest.mark.parametrize("value", [float("nan"), float("inf"), 16.0, -2.0])
def test_bad_readings_raise(value):
    det = PhStabilityDetector()
    with pytest.raises(ReadingError):
        det.add(0.0, value)


def test_time_going_backwards_raises():
    det = PhStabilityDetector()
    det.add(1.0, 7.0)
    with pytest.raises(ReadingError, match="older"):
        det.add(0.5, 7.0)


def test_endpoint_needs_target_and_more_than_hold_seconds():
    det = EndpointDetector(EndpointConfig(target_ph=12.5, hold_s=5.0))
    times = np.arange(0, 20, 0.1)
    hits = [det.update(t, 11.0 if t < 5 else 12.55) for t in times]
    first = times[hits.index(True)]
    # reached at 5 s, stable window 2 s, then more than 5 s of hold
    assert 11.9 <= first <= 12.6
    det2 = EndpointDetector(EndpointConfig(target_ph=12.5, hold_s=5.0))
    assert not any(det2.update(t, 12.0) for t in times)


def test_endpoint_direction_for_falling_ph():
    det = EndpointDetector(EndpointConfig(target_ph=4.0, direction=-1, hold_s=1.0))
    assert det.reached(3.9) and not det.reached(4.5)


def twin_frame(name):
    twin = LabTwin(load_scenario(REPO / "config" / "scenarios" / name))
    twin.step(1.0)
    return twin.render_camera("front", 1.0)


def test_scene_check_passes_on_the_standard_bench():
    desc = describe_scene(twin_frame("hcl_naoh.yaml"))
    kinds = {o.kind for o in desc.objects}
    assert {"beaker", "pipette", "stirrer", "ph_probe", "ph_meter"} <= kinds
    assert desc.checks == {"beaker_on_stirrer": True, "probe_immersed": True, "pipette_in_beaker": True}
    scene = desc.as_scene_dict()
    # the scene keeps the bench's kind ("stirrer"); the planner reads it as its magnetic_stirrer
    assert any(o["kind"] == "stirrer" for o in scene["objects"])
    assert SceneInfo.from_dict(scene).of_kinds(HardwareRegistry.load().kinds_for("magnetic_stirrer"))


def test_scene_check_fails_without_the_pipette():
    desc = describe_scene(twin_frame("missing_pipette.yaml"))
    assert "pipette" not in {o.kind for o in desc.objects}
    assert desc.checks["pipette_in_beaker"] is False
    assert "no pipette" in desc.reasons["pipette_in_beaker"]


def test_scene_check_refuses_a_non_rgb_image():
    with pytest.raises(ValueError):
        describe_scene(np.zeros((10, 10), dtype=np.uint8))
