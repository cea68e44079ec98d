"""Rubber-bulb pipette and drops: volumes and counts against ground truth, formation delay, empty pipette."""
import math

import numpy as np
import pytest

from agentchemist.chemistry.equilibrium import ph_of_mixture
from agentchemist.sim.lab import LabTwin
from agentchemist.sim.pipette import RubberBulbPipette
from agentchemist.sim.scenario import PipetteSpec, load_scenario, scenario_from_dict, read_scenario_yaml
from tests.conftest import REPO

SCENARIOS = REPO / "config" / "scenarios"


def twin(seed: int = 1, **pipette) -> LabTwin:
    data = read_scenario_yaml(SCENARIOS / "hcl_naoh.yaml")
    data["seed"] = seed
    data["pipette"].update(pipette)
    return LabTwin(scenario_from_dict(data))


def grasp_and_draw(tw: LabTwin, ml: float = 55.0) -> float:
    """Close the right gripper on the bulb (60.5 mm), draw; returns the time after."""
    tw.command_gripper("right", 0.0605, 0.0)
    assert tw.draw("naoh", ml, 1.0).accepted
    return 1.0


def squeeze(tw: LabTwin, t: float, from_mm: float, to_mm: float, rate_mm_s: float = 0.2, dt: float = 0.05) -> float:
    """Stream gripper commands closing from ``from_mm`` to ``to_mm`` at a constant rate; returns the end time."""
    x = from_mm
    while x > to_mm + 1e-12:
        x = max(to_mm, x - rate_mm_s * dt)
        t += dt
        tw.command_gripper("right", x / 1000.0, t)
    return t


@pytest.mark.parametrize("depth_mm, rate_mm_s, delay_s", [(0.5, 0.2, 0.02), (2.0, 0.1, 0.02), (5.0, 0.2, 0.0),
                                                         (5.0, 0.5, 0.05)])
def test_known_squeeze_gives_the_expected_number_of_drops(depth_mm, rate_mm_s, delay_s):
    tw = twin(formation_delay_s=delay_s)
    t = grasp_and_draw(tw)
    t = squeeze(tw, t, 60.5, 60.0 - depth_mm, rate_mm_s=rate_mm_s)
    tw.step(t + 5.0)  # let the last drops form and land
    truth = tw.truth()
    expelled = 1.0 * depth_mm  # k = 1 mL/mm, linear bulb
    assert truth["expelled_ml"] == pytest.approx(expelled, abs=1e-9)
    # each drop is its Tate volume plus the flow during the neck's pinch-off (module docstring)
    per_drop = 0.046875 + (rate_mm_s * 1.0) * delay_s
    assert abs(truth["drops_landed"] - expelled / per_drop) <= 1.0
    # conservation: drops + what still hangs at the tip = what left the bulb
    assert truth["dispensed_ml"] + truth["pipette"]["pendant_ml"] == pytest.approx(expelled, abs=1e-9)
    assert truth["beaker_volume_ml"] == pytest.approx(25.0 + truth["dispensed_ml"], abs=1e-9)


def test_drop_volumes_follow_the_configured_mean_and_spread():
    tw = twin(seed=7, formation_delay_s=0.0)
    t = grasp_and_draw(tw)
    t = squeeze(tw, t, 60.5, 50.0, rate_mm_s=1.0)
    tw.step(t + 5.0)
    vols = np.array([d["volume_ml"] for d in tw.truth()["drops"]])
    assert len(vols) > 200
    assert vols.mean() == pytest.approx(0.046875, abs=3 * 0.0015 / math.sqrt(len(vols)))
    assert vols.std(ddof=1) == pytest.approx(0.0015, rel=0.25)


def test_drop_ground_truth_has_landing_after_detach_and_matching_beaker_moles():
    tw = twin()
    t = grasp_and_draw(tw)
    t = squeeze(tw, t, 60.5, 59.0)
    tw.step(t + 3.0)
    truth = tw.truth()
    fall = math.sqrt(2 * 0.05 / 9.81)
    for d in truth["drops"]:
        assert d["time"] - d["detach_time"] == pytest.approx(fall)
        assert d["reagent"] == "naoh" and d["fate"] == "beaker"
    naoh = sum(d["volume_ml"] for d in truth["drops"]) / 1000.0 * 0.1
    assert truth["beaker_moles"]["naoh"] == pytest.approx(naoh, rel=1e-12)
    # the twin's true pH is the equilibrium solver's pH of those moles (activity, as a glass electrode)
    expect = ph_of_mixture(truth["beaker_moles"], truth["beaker_volume_ml"] / 1000.0, 25.0, activity=True)
    assert truth["true_ph"] == pytest.approx(expect, abs=1e-9)


def test_faster_squeezing_makes_fewer_larger_drops():
    sizes = {}
    for rate in (0.05, 2.0):
        tw = twin(formation_delay_s=0.05, drop_volume_sd=0.0)
        t = grasp_and_draw(tw)
        t = squeeze(tw, t, 60.0, 57.0, rate_mm_s=rate, dt=0.01)
        tw.step(t + 5.0)
        vols = [d["volume_ml"] for d in tw.truth()["drops"]]
        sizes[rate] = float(np.median(vols))
    assert sizes[0.05] == pytest.approx(0.046875 + 0.05 * 0.05, rel=0.02)
    assert sizes[2.0] == pytest.approx(0.046875 + 2.0 * 0.05, rel=0.05)


def test_a_burst_squeeze_detaches_after_the_pinch_off_time():
    tw = twin(formation_delay_s=0.4, drop_volume_sd=0.0)
    t = grasp_and_draw(tw)
    tw.step(t + 1.0)
    tw.command_gripper("right", 0.0599, t + 1.0)  # 0.1 mL at once: about two drops' worth
    tw.step(t + 5.0)
    drops = tw.truth()["drops"]
    assert len(drops) == 1
    assert drops[0]["volume_ml"] == pytest.approx(0.1, abs=1e-3)  # all of it left while the neck formed
    # the gripper closes 0.6 mm with its 50 ms lag: the bulb has given one drop's worth when the
    # remaining error is 0.1 - 0.046875 mm; the drop falls 0.4 s after that
    reach = 0.05 * math.log(0.6 / (0.1 - 0.046875))
    assert drops[0]["detach_time"] == pytest.approx(t + 1.0 + reach + 0.4, abs=0.011)


def test_slow_single_drop_falls_one_formation_delay_after_reaching_its_size():
    tw = twin(formation_delay_s=0.5, drop_volume_sd=0.0)
    t = grasp_and_draw(tw)
    tw.command_gripper("right", 0.060, t)
    tw.step(t + 1.0)
    t_start = t + 1.0
    t_end = squeeze(tw, t_start, 60.0, 60.0 - 0.08, rate_mm_s=0.01, dt=0.01)
    tw.step(t_end + 3.0)
    drops = tw.truth()["drops"]
    assert len(drops) == 1
    # size reached 0.046875 mm into the ramp plus the gripper's ramp lag (tau = 0.05 s) ...
    reached = t_start + 0.046875 / 0.01 + 0.05
    assert drops[0]["detach_time"] == pytest.approx(reached + 0.5, abs=0.02)
    # ... and the drop carries what flowed in while its neck formed (0.01 mL/s for 0.5 s)
    assert drops[0]["volume_ml"] == pytest.approx(0.046875 + 0.01 * 0.5, abs=2e-4)


def test_empty_pipette_stops_dripping():
    tw = twin()
    t = grasp_and_draw(tw, ml=1.0)
    t = squeeze(tw, t, 60.5, 55.0, rate_mm_s=1.0)
    tw.step(t + 5.0)
    truth = tw.truth()
    assert truth["expelled_ml"] == pytest.approx(1.0, abs=1e-12)
    assert truth["pipette"]["content_ml"] == pytest.approx(0.0, abs=1e-12)
    assert truth["dispensed_ml"] <= 1.0 and truth["dispensed_ml"] > 1.0 - 0.06
    n = truth["drops_landed"]
    t = squeeze(tw, t + 5.0, 55.0, 40.0, rate_mm_s=1.0)
    tw.step(t + 5.0)
    assert tw.truth()["drops_landed"] == n  # squeezing air


def test_reopening_lets_air_in_and_the_next_squeeze_pushes_it_out_first():
    tw = twin()
    t = grasp_and_draw(tw)
    t = squeeze(tw, t, 60.5, 58.0, rate_mm_s=0.5)
    tw.step(t + 1.0)  # let the gripper's lag settle
    t += 1.0
    before = tw.truth()["expelled_ml"]
    assert before == pytest.approx(2.0, abs=1e-9)
    tw.command_gripper("right", 0.0615, t + 0.1)  # open to 61.5 mm: still gripping (tolerance 2 mm)
    tw.step(t + 2.0)
    assert tw.pipette_held
    t = squeeze(tw, t + 2.0, 61.5, 58.0, rate_mm_s=0.5)
    assert tw.truth()["expelled_ml"] == pytest.approx(before, abs=1e-12)
    t = squeeze(tw, t, 58.0, 57.0, rate_mm_s=0.5)
    tw.step(t + 1.0)
    assert tw.truth()["expelled_ml"] == pytest.approx(before + 1.0, abs=1e-9)


def test_bulb_nonlinearity_is_what_the_docstring_says():
    spec = PipetteSpec(k_ml_per_mm=1.2, nonlinearity=0.2, contact_opening_mm=60.0)
    p = RubberBulbPipette(spec, np.random.default_rng(0))
    assert p.squeezed_volume(0.0) == 0.0 and p.squeezed_volume(-3.0) == 0.0
    assert p.squeezed_volume(30.0) == pytest.approx(1.2 * 30.0 * (1.0 + 0.2 * 0.5))


def test_drawing_needs_a_grasped_pipette_and_a_known_reservoir():
    tw = twin()
    res = tw.draw("naoh", 10.0, 0.0)
    assert not res.accepted and "not grasped" in res.reason
    tw.command_gripper("right", 0.0605, 0.1)
    tw.step(1.0)
    assert not tw.draw("hcl", 10.0, 1.0).accepted  # no HCl reservoir in this scenario
    res = tw.draw("naoh", 100.0, 1.1)
    assert res.accepted and res.clamped and res.accepted_value == pytest.approx(60.0)
    from agentchemist.sim.errors import SimCommandError

    with pytest.raises(SimCommandError):
        tw.draw("naoh", float("nan"), 1.2)
    with pytest.raises(SimCommandError):
        tw.draw("naoh", -1.0, 1.2)
    with pytest.raises(SimCommandError, match="unknown reagent"):
        tw.draw("sodium hydroxyde", 1.0, 1.2)


def test_opening_the_gripper_releases_the_pipette():
    tw = twin()
    grasp_and_draw(tw)
    assert tw.pipette_held
    tw.command_gripper("right", 0.07, 2.0)
    tw.step(3.0)
    assert not tw.pipette_held
    assert [e["kind"] for e in tw.truth()["events"]].count("pipette_released") == 1


def test_full_titration_reaches_the_equivalence_and_target_ph():
    """25 mL of 0.1 M HCl with 0.1 M NaOH: the truth passes pH 7 near 25 mL (about 533 drops)."""
    sc = load_scenario(SCENARIOS / "hcl_naoh.yaml")
    tw = LabTwin(sc)
    t = grasp_and_draw(tw)
    t = squeeze(tw, t, 60.5, 60.0 - 48.5, rate_mm_s=0.1, dt=0.05)
    tw.step(t + 10.0)
    truth = tw.truth()
    hist = np.array(truth["ph_history"])
    vol = np.concatenate([[0.0], np.cumsum([d["volume_ml"] for d in truth["drops"] if d["fate"] == "beaker"])])
    assert len(vol) == len(hist)
    v_eq = np.interp(7.0, hist[:, 1], vol)
    assert v_eq == pytest.approx(25.0, abs=0.1)
    per_drop = 0.046875 + 0.1 * sc.pipette.formation_delay_s  # 0.1 mL/s into the tip
    assert abs(np.searchsorted(hist[:, 1], 7.0) - 25.0 / per_drop) <= 3
    assert truth["true_ph"] > 12.5 - 0.1


def test_refill_cycle_over_the_titrant_bottle_returns_liquid_to_it():
    tw = twin()
    t = grasp_and_draw(tw, ml=5.0)
    t = squeeze(tw, t, 60.5, 59.0, rate_mm_s=0.5)
    tw.step(t + 2.0)
    in_beaker = tw.truth()["beaker_volume_ml"]
    tw.move_labware("pipette", t + 2.0, on="titrant_bottle")
    t = squeeze(tw, t + 2.0, 59.0, 40.0, rate_mm_s=5.0)  # empty the rest back into the bottle
    tw.step(t + 2.0)
    truth = tw.truth()
    assert truth["beaker_volume_ml"] == pytest.approx(in_beaker)
    assert truth["pipette"]["content_ml"] == pytest.approx(0.0, abs=1e-12)
    assert {d["fate"] for d in truth["drops"]} == {"beaker", "returned"}
    tw.command_gripper("right", 0.0605, t + 2.0)  # release the bulb (still gripping): it refills
    tw.step(t + 3.0)
    assert tw.draw("naoh", 20.0, t + 3.0).accepted_value == pytest.approx(20.0)
    assert tw.truth()["pipette"]["high_water_mm"] == pytest.approx(0.0, abs=1e-6)
    tw.move_labware("pipette", t + 3.0, on="beaker_main")
    img_ok = tw.render_camera("front", t + 3.5)
    assert img_ok.shape == (240, 320, 3)
