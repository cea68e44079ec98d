"""The dispenser controller's adaptive rate, high-water mark, estimate accounting and RESET recovery."""
import math

import pytest

from agentchemist.control.dispenser import (TRANSITIONS, DispenseGoal, DispenserConfig, DispenserController,
                                            State)
from agentchemist.fsm.endpoint import EndpointJudge, steer

CFG = DispenserConfig()
DROP = CFG.drop_volume_ml


class Bulb:
    """An ideal bulb under an ideal gripper: a drop falls each time another drop volume has been squeezed
    past the high-water mark; the pH follows `ph(volume)` with no lag."""

    def __init__(self, controller, ph=None, opening=60.0):
        self.c, self.ph, self.opening = controller, ph, opening
        self.deepest, self.expelled, self.fallen, self.t = opening, 0.0, 0, 0.0
        self.transitions, self.estimates, self.anomalies, self.out = [], [], [], None
        self.stalled = False
        self.drop_times = []
        # the supervisor's endpoint judge, as the graph runs it: it holds, releases and cancels the controller
        goal = controller.goal
        self.judge = None if goal.target_ph is None else EndpointJudge(goal.target_ph, goal.ph_direction, 5.0)

    def run(self, seconds, dt=0.05):
        end = self.t + seconds
        while self.t < end - 1e-9:
            self.t = round(self.t + dt, 9)
            if not self.stalled:
                self.opening = self.out.command_opening_mm if self.out else self.opening
            if self.opening < self.deepest:
                self.expelled += (self.deepest - self.opening) * CFG.k_ml_per_mm
                self.deepest = self.opening
            while self.expelled >= (self.fallen + 1) * DROP:
                self.fallen += 1
                self.drop_times.append(self.t)
                self.c.on_drop(self.t)
            if self.ph is not None and round(self.t / 0.2, 6) % 1 == 0:
                self.c.on_ph(self.t, self.ph(self.fallen * DROP))
                if self.judge is not None:
                    steer(self.c, self.judge.update(self.t, self.ph(self.fallen * DROP)))
            self.out = self.c.update(self.t, self.opening)
            self.transitions += [(self.t, *tr) for tr in self.out.transitions]
            self.estimates += self.out.estimates
            self.anomalies += self.out.anomalies
            if self.out.done:
                return self.out
        return self.out

    def conditions(self):
        return [cond for _, _, cond, _ in self.transitions]


def make(goal, config=CFG, opening=60.0):
    return DispenserController(config, goal, start_opening_mm=opening, now=0.0)


def test_new_table_row_is_unique_and_documented():
    rows = {(s, cond): (dst, action) for s, cond, dst, action in TRANSITIONS}
    assert rows[(State.RESET, "retract_timeout")][0] == State.DONE


def test_steep_curve_goes_one_drop_at_a_time_far_below_the_target_ph():
    """A strong-acid-like curve: 0.1 pH per drop from 4.0 on, far below the target 7 (beyond near_target_ph)."""
    c = make(DispenseGoal(target_ph=7.0))
    bulb = Bulb(c, ph=lambda v: 4.0 + 0.1 * v / DROP)
    # Steep from the start: after the first settled hold the secant says 0.1 pH per drop.
    bulb.run(40.0)
    assert c.sensitivity_ph_per_ml * DROP == pytest.approx(0.1, rel=0.2)
    assert "near_target_drop" in bulb.conditions()
    holds = [t for t, _, cond, _ in bulb.transitions if cond == "near_target_drop"]
    assert len(holds) >= 3
    # One drop per hold: exactly one drop fell between two consecutive holds.
    for a, b in zip(holds, holds[1:]):
        assert sum(a < t <= b for t in bulb.drop_times) == 1


def test_gentle_band_is_crossed_in_shrinking_increments():
    """0.01 pH per drop; the band 6.5..7.0 holds 50 drops: far fewer holds than drops."""
    c = make(DispenseGoal(target_ph=7.0))
    bulb = Bulb(c, ph=lambda v: 6.4 + 0.01 * v / DROP)
    out = bulb.run(400.0)
    assert out.done is not None and out.done.reason == "canceled" and bulb.judge.reached_at is not None
    holds = [t for t, _, cond, _ in bulb.transitions if cond == "near_target_drop"]
    assert bulb.fallen >= 55
    assert len(holds) <= 20
    assert bulb.ph(bulb.fallen * DROP) - 7.0 <= 0.03  # at most a few drops past


def test_one_drop_per_hold_when_increments_are_disabled():
    c = make(DispenseGoal(target_ph=7.0), config=DispenserConfig(approach_fraction=1e-6))
    bulb = Bulb(c, ph=lambda v: 6.8 + 0.01 * v / DROP)
    bulb.run(60.0)
    holds = [t for t, _, cond, _ in bulb.transitions if cond == "near_target_drop"]
    assert holds and bulb.fallen <= len(holds) + 1


def test_settle_window_starts_after_the_hold():
    """A reading that has not moved yet right after a drop is not a settled one."""
    c = make(DispenseGoal(target_ph=12.0, settle_each_drop=True))
    bulb = Bulb(c, ph=lambda v: 3.0)
    bulb.run(6.0)
    waits = [t for t, _, cond, _ in bulb.transitions if cond == "drop_landed_settle"]
    settles = [t for t, _, cond, _ in bulb.transitions if cond == "settled"]
    assert waits and settles
    for w in waits:
        nxt = min(s for s in settles if s > w) if any(s > w for s in settles) else math.inf
        assert nxt - w >= CFG.settle_delay_s + CFG.settle.window_s - 1e-9


def test_change_rate_needs_a_filled_window():
    """Two noisy readings 0.2 s apart differ by 0.02 pH (0.1 pH/s): no hold on that alone."""
    c = make(DispenseGoal(target_volume_ml=5.0, target_ph=12.0))
    c.on_ph(0.2, 3.00)
    c.on_ph(0.4, 3.02)
    out = c.update(0.45, 60.0)
    assert out.state == State.MOTION and not out.transitions


def test_increments_add_up_to_q_stat_and_a_stop_flushes_the_rest():
    c = make(DispenseGoal(target_volume_ml=1.0, rate_mm_s=0.5))
    bulb = Bulb(c)
    out = bulb.run(30.0)
    assert out.done.success
    assert sum(e.delta_ml for e in bulb.estimates) == pytest.approx(out.done.dispensed_ml, abs=1e-12)
    assert bulb.estimates[-1].value_ml == pytest.approx(out.done.dispensed_ml, abs=1e-12)


def test_reset_flushes_and_re_squeezing_air_adds_nothing():
    """A stall RESETs (flushing the estimate); after the retract the controller closes back to the
    deepest opening fast, and only closing past it counts again."""
    c = make(DispenseGoal(target_volume_ml=2.0, rate_mm_s=0.2))
    bulb = Bulb(c)
    bulb.run(3.0)
    q_before, deepest = c.q_stat, c.deepest_mm
    bulb.stalled = True
    bulb.run(3.0)
    assert [a.kind for a in bulb.anomalies] == ["gripper_stall"]
    assert bulb.estimates[-1].value_ml == pytest.approx(c.q_stat)   # flushed at the anomaly
    bulb.stalled = False
    bulb.run(1.0)
    assert "retracted_resume" in bulb.conditions()
    resumed = next(t for t, _, cond, _ in bulb.transitions if cond == "retracted_resume")
    while bulb.opening > deepest + 0.002 and bulb.t < resumed + 10.0:
        bulb.run(0.05)
    assert c.q_stat == pytest.approx(q_before, abs=1e-9)  # 62 mm back to the deepest: air only
    assert bulb.t - resumed <= (CFG.safe_opening_mm - deepest) / CFG.reapproach_rate_mm_s + 0.2
    out = bulb.run(30.0)
    assert out.done.success and not any(a.kind == "no_drop" for a in bulb.anomalies)
    assert sum(e.delta_ml for e in bulb.estimates) == pytest.approx(out.done.dispensed_ml, abs=1e-12)


def test_sensor_timeout_waits_for_the_meter_before_resuming():
    c = make(DispenseGoal(target_volume_ml=2.0, target_ph=12.0))
    bulb = Bulb(c, ph=lambda v: 3.0)
    bulb.run(2.0)
    bulb.ph = None                      # the meter goes silent
    bulb.run(8.0)
    assert [a.kind for a in bulb.anomalies] == ["sensor_timeout"]
    assert c.state == State.RESET and "retracted_resume" not in bulb.conditions()
    bulb.ph = lambda v: 3.0             # and comes back
    bulb.run(1.0)
    assert "retracted_resume" in bulb.conditions()


def test_sensor_that_never_returns_gives_up_after_the_recovery_timeout():
    c = make(DispenseGoal(target_volume_ml=2.0, target_ph=12.0), config=DispenserConfig(recovery_timeout_s=5.0))
    bulb = Bulb(c, ph=lambda v: 3.0)
    bulb.run(2.0)
    bulb.ph = None
    out = bulb.run(20.0)
    assert out.done is not None and not out.done.success and out.done.reason == "anomaly"
    assert bulb.conditions()[-1] == "retracted_give_up"


def test_stall_during_retract_times_out():
    c = make(DispenseGoal(target_volume_ml=2.0), config=DispenserConfig(retract_timeout_s=2.0))
    bulb = Bulb(c)
    bulb.run(2.0)
    bulb.stalled = True
    out = bulb.run(10.0)
    assert bulb.conditions()[-1] == "retract_timeout"
    assert not out.done.success and "did not retract" in out.done.message


@pytest.mark.parametrize("field, value", [("fine_ph_per_drop", 0.0), ("approach_fraction", 1.5),
                                          ("max_increment_drops", 0), ("settle_delay_s", -1.0),
                                          ("reapproach_rate_mm_s", float("nan"))])
def test_new_parameters_are_validated(field, value):
    with pytest.raises(ValueError, match=field):
        DispenserConfig(**{field: value})


def test_an_increment_with_neither_bound_in_sight_is_the_most_drops():
    """A distance without bound (the readings span no curve yet: infinite) plans the largest increment, not
    an OverflowError from floor(inf) (the course check's hcl_naoh run hit it once drops were heard sooner)."""
    c = make(DispenseGoal(target_ph=7.0))
    assert c._whole_drops(float("inf")) == CFG.max_increment_drops
    assert c._whole_drops(float("nan")) == 1 and c._whole_drops(-float("inf")) == 1
    assert c._whole_drops(2.7) == 2 and c._whole_drops(0.2) == 1
