"""The vision supervisor's weighing decisions (agentchemist.experiments.weighing.mass, Supervision.on_mass /
on_dissolution) on the plan the planner makes for the NaCl scenario."""
import math

import numpy as np
import pytest

from agentchemist.fsm.commands import Abort, Apply, Report, StopDispensing, name
from agentchemist.fsm.supervision import Supervision
from agentchemist.experiments.weighing.mass import MassConfig, MassSupervision
from agentchemist.perception.ph_stability import ReadingError
from tests.factories import HCL_NAOH, planned


def feed(sup, t0, t1, grams, step=0.2, noise=0.0, rng=None):
    """Balance readings every `step` s from t0 to t1 (grams: value or function of t); returns commands."""
    out = []
    t = t0
    while t <= t1 + 1e-9:
        g = grams(t) if callable(grams) else grams
        if noise:
            g = round(g + rng.normal(0, noise), 2)
        out += sup.on_mass(t, g)
        t = round(t + step, 6)
    return out


def symbols(commands):
    return [c.symbol if isinstance(c, Apply) else name(c) for c in commands]


def run_to(sup, symbol_list, t):
    for s in symbol_list:
        assert sup.apply(s, t) is not None, (s, sup.machine.state)
        t += 1.0
    return t


def test_config_comes_from_the_plan(weighing_plan):
    cfg = MassConfig.from_plan(weighing_plan)
    assert cfg.target_g == pytest.approx(2.5)
    assert cfg.tolerance_g == pytest.approx(0.1)
    assert cfg.settle_window_s == pytest.approx(2.0)
    with pytest.raises(ValueError):
        MassConfig(target_g=math.nan, tolerance_g=0.1)


def test_tare_ok_needs_the_tare_and_a_settled_zero(weighing_plan):
    sup = Supervision(weighing_plan, 0.0)
    t = run_to(sup, ["place_ok", "grasp_ok"], 1.0)
    # 98 g of beaker and water, settled: no tare_ok before the balance was told to tare
    assert symbols(feed(sup, t, t + 5, 98.02)) == []
    sup.mass.tare_sent(t + 5)
    # the display still settles towards zero for a moment: nothing until zero holds over the window
    cmds = feed(sup, t + 5.2, t + 6.0, lambda x: 0.3 * math.exp(-(x - t - 5) / 0.2))
    assert "tare_ok" not in symbols(cmds)
    rng = np.random.default_rng(1)
    cmds = feed(sup, t + 6.2, t + 10, 0.0, noise=0.003, rng=rng)
    assert symbols(cmds).count("tare_ok") == 1


def test_pulses_target_mass_and_out_of_tolerance(weighing_plan):
    sup = Supervision(weighing_plan, 0.0)
    t = run_to(sup, ["place_ok", "grasp_ok", "tare_ok", "dose"], 1.0)
    assert sup.machine.state == "dosing"
    sup.apply("tap", t)
    assert sup.machine.state == "waiting_mass"
    # still rising: not settled
    assert symbols(feed(sup, t, t + 1.0, lambda x: 0.5 * (x - t))) == []
    cmds = feed(sup, t + 1.2, t + 4, 0.52)
    assert symbols(cmds)[0] == "mass_stable"
    # the supervisor does not call the target on its own: the dispenser must report it first
    sup.apply("mass_stable", t + 4)
    assert symbols(feed(sup, t + 4.2, t + 8, 2.49)) == []
    sup.mass.dispenser_finished()
    cmds = feed(sup, t + 8.2, t + 9, 2.49)
    assert symbols(cmds) == ["target_mass"]
    assert cmds[0].detail["error_g"] == pytest.approx(-0.01, abs=1e-6)
    # another run: the dispenser says done but the balance shows 2.75 g: abort, not target_mass
    sup2 = Supervision(weighing_plan, 0.0)
    t = run_to(sup2, ["place_ok", "grasp_ok", "tare_ok", "dose"], 1.0)
    sup2.mass.dispenser_finished()
    cmds = feed(sup2, t, t + 3, 2.75)
    assert [name(c) for c in cmds] == ["abort"]
    assert cmds[0].kind == "mass_out_of_tolerance"


def test_bad_balance_readings_never_advance(weighing_plan):
    sup = Supervision(weighing_plan, 0.0)
    t = run_to(sup, ["place_ok", "grasp_ok", "tare_ok", "dose", "tap"], 1.0)
    for bad in (math.nan, math.inf, 1e6):
        with pytest.raises(ReadingError):
            sup.on_mass(t, bad)
    feed(sup, t, t + 3, 1.0)
    with pytest.raises(ReadingError):  # time going backwards
        sup.on_mass(t, 1.0)
    assert sup.machine.state == "waiting_mass"


def test_dissolved_then_verified_after_the_hold(weighing_plan):
    sup = Supervision(weighing_plan, 0.0)
    t = run_to(sup, ["place_ok", "grasp_ok", "tare_ok", "dose"], 1.0)
    sup.mass.dispenser_finished()
    t0 = t
    cmds = feed(sup, t0, t0 + 3, 2.51)
    assert symbols(cmds) == ["target_mass"]
    sup.apply("target_mass", t0 + 3)
    t = run_to(sup, ["transfer_ok", "stir_ok"], t0 + 4)
    stir_at = t - 1.0
    assert sup.on_dissolution(t, True, False) == []           # crystals still seen
    cmds = sup.on_dissolution(t + 30, False, True)
    assert symbols(cmds) == ["dissolved"]
    assert cmds[0].detail["dissolution_time_s"] == pytest.approx(t + 30 - stir_at)
    sup.apply("dissolved", t + 30)
    assert sup.machine.state == "solution_ready"
    assert sup.on_dissolution(t + 32, False, True) == []      # hold not over yet
    cmds = sup.on_dissolution(t + 30 + sup.verify_hold_s, False, True)
    assert symbols(cmds) == ["verified"]
    assert cmds[0].detail["mass_g"] == pytest.approx(2.51)


def test_crystals_seen_again_during_verification_abort(weighing_plan):
    sup = Supervision(weighing_plan, 0.0)
    sup.mass.weighed_g = 2.5
    t = run_to(sup, ["place_ok", "grasp_ok", "tare_ok", "dose", "target_mass", "transfer_ok", "stir_ok",
                     "dissolved"], 1.0)
    cmds = sup.on_dissolution(t, True, False)
    assert [name(c) for c in cmds] == ["abort"]
    assert cmds[0].kind == "endpoint_not_verified"


def test_titration_plans_have_no_mass_supervision():
    sup = Supervision(planned(HCL_NAOH), 0.0)
    assert sup.mass is None
    assert sup.on_mass(1.0, math.nan) == []  # the balance is not this experiment's instrument


def test_mass_supervision_alone_settles_on_the_window_mean():
    ms = MassSupervision(MassConfig(target_g=1.0, tolerance_g=0.05))
    ms.dispenser_finished()
    out = []
    for i, g in enumerate([1.03, 1.04, 1.03, 1.04, 1.03, 1.04, 1.03, 1.04, 1.03, 1.04, 1.03, 1.04]):
        out += ms.on_mass(0.2 * i, g, "dosing")
    assert out and out[0][0] == "target_mass"
    assert out[0][1]["mass_g"] == pytest.approx(1.035, abs=0.006)
    assert ms.verify() is None
