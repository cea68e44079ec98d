"""The dispenser controller under the twin's faults: a frozen pH meter (RESET, resume once it moves), the
supervisor's holds (no squeeze while held, the goal goes on after), and drops that nobody squeezed out.
Each one also on clean data, where it must stay silent."""
import numpy as np
import pytest

from agentchemist.control.dispenser import DispenseGoal, DispenserConfig, DispenserController, State
from agentchemist.fsm.endpoint import EndpointJudge, steer

CFG = DispenserConfig()
DROP = CFG.drop_volume_ml
SD = 0.005


class Bench:
    """An ideal bulb under an ideal gripper (a drop each time another drop volume has been squeezed past
    the high-water mark) and a meter like the twin's: noise sd 0.005 shown to three decimals, 5 Hz.
    `ph(volume)` is the solution; `frozen_at` freezes the display from that time on; `leak_at` makes a
    drop fall by itself at those times."""

    def __init__(self, controller, ph=lambda v: 3.0, seed=0):
        self.c, self.ph, self.rng = controller, ph, np.random.default_rng(seed)
        self.opening = self.deepest = 60.0
        self.expelled, self.fallen, self.t = 0.0, 0, 0.0
        self.frozen_at, self.frozen_until, self.frozen_value = None, None, None
        self.leak_at: list[float] = []
        self.silent = False  # the meter sends nothing (a dropout, a missing probe)
        self.stalled = False  # the gripper stops following its commands
        self.anomalies, self.transitions, self.out = [], [], None
        self.commands = []
        # the supervisor's endpoint judge, as the graph runs it: it holds, releases and cancels the controller
        goal = controller.goal
        self.judge = None if goal.target_ph is None else EndpointJudge(goal.target_ph, goal.ph_direction, 5.0)

    def reading(self):
        if self.frozen_at is not None and self.frozen_at <= self.t < (self.frozen_until or np.inf):
            if self.frozen_value is None:
                self.frozen_value = round(self.ph(self.fallen * DROP), 3)
            return self.frozen_value
        return round(self.ph(self.fallen * DROP) + SD * float(self.rng.standard_normal()), 3)

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
                self.c.on_drop(self.t)
            if self.leak_at and self.t >= self.leak_at[0]:
                self.leak_at.pop(0)
                self.fallen += 1
                self.expelled += DROP  # it left the bulb without a squeeze
                self.c.on_drop(self.t)
            if not self.silent and round(self.t / 0.2, 6) % 1 == 0:
                reading = self.reading()
                self.c.on_ph(self.t, reading, SD)
                if self.judge is not None:
                    steer(self.c, self.judge.update(self.t, reading))
            self.out = self.c.update(self.t, self.opening)
            self.commands.append(self.out.command_opening_mm)
            self.anomalies += self.out.anomalies
            self.transitions += [(self.t, *tr) for tr in self.out.transitions]
            if self.out.done:
                return self.out
        return self.out

    def kinds(self):
        return [a.kind for a in self.anomalies]

    def conditions(self):
        return [cond for _, _, cond, _ in self.transitions]


#: the Bench knows a drop when it leaves the tip and its gripper follows at once: no fall, no lag
IDEAL = DispenserConfig(drop_fall_s=0.0, gripper_lag_s=0.0)


def make(goal=None, config=IDEAL):
    return DispenserController(config, goal or DispenseGoal(target_ph=10.0, settle_each_drop=True),
                               start_opening_mm=60.0, now=0.0)


def curve(v):
    """Half of a strong-acid titration far from equivalence: 0.02 pH per drop."""
    return 1.0 + 0.4 * v


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_clean_titration_raises_nothing(seed):
    c = make(DispenseGoal(target_ph=1.3, settle_each_drop=True))
    bench = Bench(c, ph=curve, seed=seed)
    out = bench.run(400.0)
    # the goal ends where the supervisor's judge says: the endpoint, and the controller raised nothing
    assert out is not None and out.done and out.done.reason == "canceled", bench.kinds()
    assert bench.judge.reached_at is not None
    assert bench.kinds() == [] and bench.fallen > 10


def test_a_flat_buffer_for_minutes_is_not_a_frozen_meter():
    """The pH does not move at all (a strong buffer): only noise changes the reading, and that is enough."""
    c = make(DispenseGoal(target_volume_ml=2.0, settle_each_drop=True))
    bench = Bench(c, ph=lambda v: 4.76, seed=4)
    out = bench.run(600.0)
    assert out.done and out.done.success and "ph_stuck" not in bench.kinds(), bench.kinds()


def test_frozen_meter_resets_and_resumes_when_the_reading_moves():
    c = make()
    bench = Bench(c, ph=curve)
    bench.run(10.0)
    drops_before = bench.fallen
    bench.frozen_at, bench.frozen_until = bench.t, bench.t + 8.0
    frozen_from = bench.t
    bench.run(3.0)
    assert bench.kinds() == ["ph_stuck"] and c.state == State.RESET
    stuck = next(a for a in bench.anomalies if a.kind == "ph_stuck")
    assert stuck.stamp - frozen_from <= 2.5 and "identical readings" in stuck.description
    bench.run(4.0)
    assert c.state == State.RESET and "retracted_resume" not in bench.conditions()  # still frozen: waits
    bench.run(10.0)  # the meter follows again
    assert "retracted_resume" in bench.conditions() and bench.fallen > drops_before
    # the warning, then its resolution once the reading moves again (the record shows it closed)
    assert bench.kinds() == ["ph_stuck", "ph_stuck"]
    warning, resolution = [a for a in bench.anomalies if a.kind == "ph_stuck"]
    assert (warning.severity, warning.resolved) == ("warn", False)
    assert (resolution.severity, resolution.resolved, resolution.response) == ("info", True, "resume")
    assert resolution.stamp >= bench.frozen_until and "moves again" in resolution.description


def test_a_meter_that_stays_frozen_ends_the_goal_with_the_reason():
    c = make(config=DispenserConfig(recovery_timeout_s=5.0, drop_fall_s=0.0, gripper_lag_s=0.0))
    bench = Bench(c, ph=curve)
    bench.run(5.0)
    bench.frozen_at = bench.t
    out = bench.run(30.0)
    assert out.done is not None and not out.done.success and out.done.reason == "anomaly"
    assert "frozen" in out.done.message and "did not clear" in out.done.message


def test_hold_stops_the_squeeze_and_release_goes_on_with_the_same_goal():
    c = make(DispenseGoal(target_volume_ml=3.0, rate_mm_s=0.2))
    bench = Bench(c, ph=lambda v: 3.0)  # a flat curve: MOTION all along
    bench.run(3.0)
    assert c.state == State.MOTION
    c.hold("labware")
    bench.run(0.2)
    assert c.state == State.WAIT and bench.conditions()[-1] == "hold_command"
    held_at, q = bench.commands[-1], c.q_stat
    bench.run(20.0)  # a long hold: no squeeze, no settle timeout, no anomaly
    assert set(bench.commands[-300:]) == {held_at} and c.q_stat == q and bench.kinds() == []
    c.hold("audio_noise")
    c.release("labware")
    bench.run(1.0)
    assert c.state == State.WAIT  # one reason is still in force
    c.release("audio_noise")
    bench.run(0.2)
    assert c.state == State.MOTION and bench.conditions()[-1] == "released"
    out = bench.run(60.0)
    assert out.done and out.done.success and out.done.dispensed_ml == pytest.approx(3.0, abs=DROP)


def test_hold_during_a_settle_wait_leaves_it_as_usual():
    c = make(DispenseGoal(target_ph=10.0, settle_each_drop=True))
    bench = Bench(c, ph=curve)
    while "drop_landed_settle" not in bench.conditions():
        bench.run(0.05)
    c.hold("labware")
    bench.run(5.0)
    assert c.state == State.WAIT
    c.release("labware")
    bench.run(3.0)
    assert bench.conditions().count("settled") >= 1 and "released" not in bench.conditions()


def test_held_without_readings_is_not_a_sensor_timeout_until_released():
    """A missing probe holds dispensing; the silence it causes is reported only if it outlasts the hold."""
    c = make()
    bench = Bench(c, ph=curve)
    bench.run(3.0)
    c.hold("labware")
    bench.silent = True
    bench.run(10.0)
    assert "sensor_timeout" not in bench.kinds()
    c.release("labware")
    bench.run(2.5)  # the meter gets its full timeout again from the release ...
    assert bench.kinds() == [] and c.state == State.WAIT
    bench.run(1.0)  # ... and no more
    assert bench.kinds() == ["sensor_timeout"]


def test_a_probe_that_comes_back_with_the_release_raises_nothing():
    """The camera sees the probe back a moment before its first reading arrives: no sensor_timeout."""
    c = make()
    bench = Bench(c, ph=curve)
    bench.run(3.0)
    c.hold("labware")
    bench.silent = True
    bench.run(8.0)
    c.release("labware")
    bench.run(0.1)
    bench.silent = False
    bench.run(5.0)
    assert bench.kinds() == []


def test_a_drop_that_falls_by_itself_is_an_unexpected_drop():
    c = make(DispenseGoal(target_volume_ml=3.0, settle_each_drop=True))
    bench = Bench(c, ph=curve)
    bench.run(10.0)
    while "drop_landed_settle" not in bench.conditions()[-1:]:
        bench.run(0.05)
    bench.leak_at = [bench.t + 0.5]  # in the settle hold, right after a drop
    bench.run(2.0)
    assert bench.kinds() == ["unexpected_drop"]
    a = bench.anomalies[0]
    assert a.response == "adjustment" and "leaking" in a.description
    assert c.state != State.RESET  # nothing to undo: it is counted


@pytest.mark.parametrize("rate", [0.2, 0.05])
def test_a_gripper_that_stops_following_is_a_stall_within_about_a_second(rate):
    """Whatever the rate: at the fine rate the gap to the command would take 7 s to pass the tolerance,
    while the missing drops would be noticed after 3 s."""
    c = make(DispenseGoal(target_volume_ml=3.0, rate_mm_s=rate))
    bench = Bench(c, ph=lambda v: 3.0)
    bench.run(4.0)
    assert c.state == State.MOTION and bench.kinds() == []
    bench.stalled, stalled_at = True, bench.t
    bench.run(3.0)
    stall = next(a for a in bench.anomalies if a.kind == "gripper_stall")
    assert stall.stamp - stalled_at <= 1.3 and "does not follow" in stall.description
    assert bench.kinds()[0] == "gripper_stall"
