"""pH probe (mixing + electrode lag, noise, offset, drift), balance (resolution, settling), beaker overflow."""
import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from agentchemist.sim.instruments import Balance, PhProbe
from agentchemist.sim.lab import LabTwin
from agentchemist.sim.scenario import BalanceSpec, ProbeSpec, scenario_from_dict, read_scenario_yaml
from tests.conftest import REPO

SCENARIOS = REPO / "config" / "scenarios"


def scenario_data(name: str = "hcl_naoh") -> dict:
    return read_scenario_yaml(SCENARIOS / f"{name}.yaml")


def burst_drop(tw: LabTwin, t: float, mm: float = 2.0) -> float:
    """Grasp, draw and squeeze ``mm`` at once; returns the landing time of the (single, big) drop.

    The scenario's formation delay must be long (0.5 s) so that the whole squirt leaves as one drop.
    """
    tw.command_gripper("right", 0.0605, t)
    tw.draw("naoh", 55.0, t + 1.0)
    tw.command_gripper("right", (60.0 - mm) / 1000.0, t + 1.0)
    tw.step(t + 3.0)
    drops = tw.truth()["drops"]
    assert len(drops) == 1
    return drops[0]["time"]


@pytest.mark.parametrize("a, b", [(1.0, 2.0), (2.0, 2.0), (0.3, 5.0)])
def test_probe_cascade_matches_numerical_integration(a, b):
    probe = PhProbe(ProbeSpec(tau_s=b), initial_ph=3.0, rng=np.random.default_rng(0))
    probe.set_bulk(9.0)
    times = [0.5, 1.0, 3.0, 7.5]
    got = []
    for t in times:
        probe.advance(t, a)
        got.append((probe.mixed, probe.sensed))
    sol = solve_ivp(lambda _t, y: [(9.0 - y[0]) / a, (y[0] - y[1]) / b], (0, 7.5), [3.0, 3.0],
                    t_eval=times, rtol=1e-11, atol=1e-12)
    assert np.allclose(np.array(got).T, sol.y, atol=1e-8)


def test_probe_advance_is_exact_for_any_step_length():
    fine = PhProbe(ProbeSpec(tau_s=2.0), 2.0, np.random.default_rng(0))
    coarse = PhProbe(ProbeSpec(tau_s=2.0), 2.0, np.random.default_rng(0))
    fine.set_bulk(7.0)
    coarse.set_bulk(7.0)
    for k in range(1, 601):
        fine.advance(k * 0.01, 1.0)
    coarse.advance(6.0, 1.0)
    assert fine.sensed == pytest.approx(coarse.sensed, abs=1e-12)


def test_probe_time_constant_in_the_twin():
    data = scenario_data()
    data["probe"].update(noise_sd=0.0, tau_s=2.0)
    data["pipette"]["formation_delay_s"] = 0.5
    data["stirrer"].update(mixing_tau_s=1e-3)  # near-instant mixing: the electrode's own lag shows
    tw = LabTwin(scenario_from_dict(data))
    land = burst_drop(tw, 0.0)
    before = tw.truth()["ph_history"][0][1]
    after = tw.truth()["true_ph"]
    r = tw.read_ph(land + 2.0).value
    frac = (r - before) / (after - before)
    assert frac == pytest.approx(1.0 - math.exp(-1.0), abs=0.005)
    r = tw.read_ph(land + 20.0).value
    assert r == pytest.approx(after, abs=0.001)


def test_slower_mixing_without_the_stirrer():
    fractions = {}
    for on in (True, False):
        data = scenario_data()
        data["probe"]["noise_sd"] = 0.0
        data["pipette"]["formation_delay_s"] = 0.5
        data["stirrer"]["on"] = on
        tw = LabTwin(scenario_from_dict(data))
        land = burst_drop(tw, 0.0)
        before = tw.truth()["ph_history"][0][1]
        after = tw.truth()["true_ph"]
        fractions[on] = (tw.read_ph(land + 4.0).value - before) / (after - before)
    def cascade(a: float, b: float, t: float) -> float:  # step response of mixing (a) then electrode (b)
        return 1.0 - (math.exp(-t / b) + a / (a - b) * (math.exp(-t / a) - math.exp(-t / b)))

    assert fractions[True] == pytest.approx(cascade(1.0, 2.0, 4.0), abs=0.01)  # about 0.75
    assert fractions[False] == pytest.approx(cascade(20.0, 2.0, 4.0), abs=0.01)  # about 0.11


def test_probe_noise_offset_and_drift():
    data = scenario_data()
    data["probe"].update(noise_sd=0.02, offset=0.1, drift_per_h=0.36)
    tw = LabTwin(scenario_from_dict(data))
    true0 = tw.truth()["true_ph"]
    vals = np.array([tw.read_ph(0.5 + 0.01 * k).value for k in range(2000)])
    assert vals.std(ddof=1) == pytest.approx(0.02, rel=0.1)
    assert vals.mean() == pytest.approx(true0 + 0.1 + 0.36 * 10.5 / 3600, abs=0.002)
    late = np.array([tw.read_ph(3600.0 + 0.01 * k).value for k in range(500)])
    assert late.mean() == pytest.approx(true0 + 0.1 + 0.36, abs=0.005)


def test_temperature_reading():
    data = scenario_data()
    data["probe"].update(temperature_c=21.5, temperature_noise_sd=0.05)
    tw = LabTwin(scenario_from_dict(data))
    temps = np.array([tw.read_temperature(0.1 * k).value for k in range(1, 500)])
    assert temps.mean() == pytest.approx(21.5, abs=0.01)
    r = tw.read_temperature(60.0)
    assert r.unit == "degC" and r.self_check_ok


def test_balance_resolution_and_settling():
    bal = Balance(BalanceSpec(resolution_g=0.01, settle_tau_s=0.8, noise_sd_g=0.0), 0.0, np.random.default_rng(0))
    bal.set_load(2.5)
    bal.advance(0.8)
    assert bal.display_g == pytest.approx(2.5 * (1 - math.exp(-1)), abs=1e-12)
    assert bal.reading() == pytest.approx(round(2.5 * (1 - math.exp(-1)), 2), abs=1e-12)
    bal.advance(20.0)
    assert bal.reading() == 2.5
    bal.tare()
    assert bal.reading() == 0.0
    noisy = Balance(BalanceSpec(noise_sd_g=0.004), 12.3456, np.random.default_rng(1))
    values = [noisy.reading() for _ in range(200)]
    assert all(abs(v * 100 - round(v * 100)) < 1e-9 for v in values)  # 0.01 g steps
    assert 12.33 <= min(values) and max(values) <= 12.36


def test_balance_overload_fails_self_check():
    data = scenario_data("nacl_weighing")
    data["balance"]["capacity_g"] = 50.0
    tw = LabTwin(scenario_from_dict(data))
    r = tw.read_balance(5.0)
    assert r.value == pytest.approx(50.0) and not r.self_check_ok


def test_overflow_is_recorded_and_the_twin_keeps_running():
    data = scenario_data()
    data["beaker"]["capacity_ml"] = 27.0
    tw = LabTwin(scenario_from_dict(data))
    tw.command_gripper("right", 0.0605, 0.0)
    tw.draw("naoh", 10.0, 1.0)
    x = 60.0
    t = 1.0
    while x > 55.0:
        x -= 0.05
        t += 0.1
        tw.command_gripper("right", x / 1000.0, t)
    tw.step(t + 5.0)
    truth = tw.truth()
    assert truth["beaker_volume_ml"] == pytest.approx(27.0)
    assert truth["overflow_ml"] == pytest.approx(25.0 + truth["dispensed_ml"] - 27.0, abs=1e-9)
    kinds = [e["kind"] for e in truth["events"]]
    assert "overflow" in kinds
    assert any(d["fate"] == "overflow" for d in truth["drops"])
    # each overflow carries the mixed solution away: replay the drops to check the bookkeeping
    vol, hcl, naoh = 25.0, 25.0e-4, 0.0
    for d in sorted(truth["drops"], key=lambda d: d["time"]):
        vol += d["volume_ml"]
        naoh += d["volume_ml"] * 1e-4
        if vol > 27.0:
            hcl, naoh, vol = hcl * 27.0 / vol, naoh * 27.0 / vol, 27.0
    assert truth["beaker_moles"]["hcl"] == pytest.approx(hcl, rel=1e-12)
    assert truth["beaker_moles"]["naoh"] == pytest.approx(naoh, rel=1e-12)
    assert tw.read_ph(t + 6.0) is not None
