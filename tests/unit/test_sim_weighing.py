"""Solid weighing: pouring by tilt, the balance, pour audio, dissolution with and without stirring."""
import math

import numpy as np
import pytest

from agentchemist.sim.lab import LabTwin
from agentchemist.sim.scenario import WeighingSpec, load_scenario
from agentchemist.sim.weighing import Dissolver, SolidBottle
from tests.conftest import REPO

SCENARIOS = REPO / "config" / "scenarios"


def spec(**kw) -> WeighingSpec:
    base = dict(reagent="nacl", bottle_content_g=100.0, flow_cv=0.0)
    base.update(kw)
    return WeighingSpec(**base)


def test_no_flow_below_the_threshold_tilt():
    bottle = SolidBottle(spec(), np.random.default_rng(0))
    bottle.set_tilt_rate(10.0)
    assert bottle.advance(0.0, 3.4) == 0.0  # 34 deg < 35 deg
    assert bottle.advance(3.4, 4.0) > 0.0


def test_flow_follows_the_documented_law_and_the_threshold_rises_as_it_empties():
    bottle = SolidBottle(spec(flow_g_s=1.5), np.random.default_rng(0))
    bottle.tilt_deg = 65.0  # 30 deg past the threshold of a full bottle
    assert bottle.flow_g_s() == pytest.approx(1.5)
    bottle.tilt_deg = 50.0
    assert bottle.flow_g_s() == pytest.approx(1.5 * 0.5**1.5)
    bottle.content_g = 50.0  # half empty: threshold 35 + 40 * 0.5 = 55 deg
    assert bottle.threshold_deg == pytest.approx(55.0) and bottle.flow_g_s() == 0.0
    poured = bottle.advance(0.0, 1.0)  # tilt rate 0, still no flow
    assert poured == 0.0


def test_pour_is_chunking_independent_and_fluctuates():
    a = SolidBottle(spec(flow_cv=0.4), np.random.default_rng(5))
    b = SolidBottle(spec(flow_cv=0.4), np.random.default_rng(5))
    for bottle in (a, b):
        bottle.tilt_deg = 60.0
    total_a = sum(a.advance(0.01 * k, 0.01 * (k + 1)) for k in range(300))
    total_b = b.advance(0.0, 3.0)
    assert total_a == pytest.approx(total_b, rel=1e-12)
    c = SolidBottle(spec(flow_cv=0.4), np.random.default_rng(5))
    c.tilt_deg = 60.0
    per_slot = [c.advance(0.05 * k, 0.05 * (k + 1)) for k in range(40)]
    assert np.std(per_slot) / np.mean(per_slot) == pytest.approx(0.4, abs=0.15)


def test_dissolution_time_matches_the_shrinking_particle_law():
    d = Dissolver(spec(dissolution_time_stirred_s=30.0, solubility_g_l=1e6), 58.443)  # far from saturation
    d.add_solid(2.5)
    d.advance(0.0, 15.0, stirred=True, volume_ml=50.0)
    # m^(1/3) falls linearly in time: half way, 1/8 of the mass is left
    assert d.solid_g == pytest.approx(2.5 * 0.5**3, rel=1e-4)
    d.advance(15.0, 40.0, stirred=True, volume_ml=50.0)
    assert d.solid_g == 0.0 and d.dissolved_fraction == pytest.approx(1.0)
    assert d.complete_at == pytest.approx(30.0, abs=0.01)
    slow = Dissolver(spec(dissolution_time_unstirred_s=600.0), 58.443)
    slow.add_solid(2.5)
    slow.advance(0.0, 40.0, stirred=False, volume_ml=50.0)
    assert 0.1 < slow.dissolved_fraction < 0.25


def test_saturation_stops_dissolution():
    d = Dissolver(spec(solubility_g_l=20.0), 58.443)
    d.add_solid(2.0)  # 1 g dissolves in 50 mL at 20 g/L
    d.advance(0.0, 600.0, stirred=True, volume_ml=50.0)
    assert d.dissolved_g == pytest.approx(1.0, abs=0.02) and d.solid_g > 0.95


def test_weighing_and_dissolving_nacl_in_the_twin():
    tw = LabTwin(load_scenario(SCENARIOS / "nacl_weighing.yaml"))
    first = tw.read_balance(3.0)
    assert first.value == pytest.approx(98.0, abs=0.011)  # 48 g beaker + 50 mL water
    tw.tare_balance(3.0)
    assert tw.read_balance(3.1).value == pytest.approx(0.0, abs=0.011)
    assert not tw.pour("right", 5.0, 3.2).accepted  # the bottle is in the left gripper
    assert tw.pour("left", 120.0, 3.2).clamped
    tw.pour("left", 10.0, 3.2)
    t = 3.2
    while tw.read_balance(t).value < 2.0:
        t += 0.05
        assert t < 30.0
    tw.pour("left", -60.0, t)
    tw.step(t + 5.0)
    truth = tw.truth()["weighing"]
    assert truth["tilt_deg"] == 0.0
    r = tw.read_balance(t + 5.0)
    assert r.value == pytest.approx(truth["poured_g"], abs=0.011)  # settled, 0.01 g readability
    assert [e.kind for e in tw.audio_truth("left")].count("pour") >= 2
    assert all(e.kind != "pour" for e in tw.audio_truth("right"))
    # move to the stirrer and stir: dissolves in about the stirred time
    tw.move_labware("beaker_main", t + 6.0, on="stirrer")
    tw.set_stirrer(True, t + 6.0)
    tw.step(t + 6.0 + 45.0)
    truth = tw.truth()["weighing"]
    assert truth["dissolved_fraction"] == pytest.approx(1.0)
    # 30 s at infinite dilution, a little longer as NaCl builds up (2.5 g of 18 g soluble in 50 mL)
    assert t + 6.0 + 25.0 < truth["dissolution_complete_at"] < t + 6.0 + 40.0
    moles = tw.truth()["beaker_moles"]["nacl"]
    assert moles == pytest.approx(truth["poured_g"] / 58.443, rel=1e-9)
    assert tw.read_balance(t + 60.0).value == pytest.approx(-98.0, abs=0.011)  # beaker gone, tare kept
    assert math.isclose(tw.truth()["true_ph"], 7.0, abs_tol=0.05)
