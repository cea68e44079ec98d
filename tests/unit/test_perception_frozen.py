"""The frozen-meter detector: a stuck pH reading is told apart from a flat titration curve, from a
noise-free meter and from a silent one."""
import math

import numpy as np
import pytest

from agentchemist.perception.frozen_reading import FrozenConfig, FrozenReadingDetector

SD = 0.005    # the twin's probe noise (pH)
RATE = 5.0    # readings per second (lab_sim ph_rate_hz)


def meter(true_ph, rng, sd=SD):
    """A reading as the twin's meter shows it: noise, then three decimals."""
    return round(true_ph + (sd * float(rng.standard_normal()) if sd > 0 else 0.0), 3)


def test_required_run_follows_the_noise_model():
    d = FrozenReadingDetector()
    # p(same value twice) <= 0.001 / (0.005 sqrt(2 pi)) = 0.080; 0.080^9 < 1e-9 < 0.080^8
    assert d.required_run(0.005) == 10
    assert d.required_run(0.02) < d.required_run(0.005)       # noisier: fewer identical readings suffice
    assert d.required_run(0.0) is None and d.required_run(0.0004) is None  # identical readings are normal
    # a coarse display (0.01) with the same noise: identical values are common, the run must be long
    assert FrozenReadingDetector(FrozenConfig(resolution=0.01)).required_run(0.005) > 50
    assert FrozenReadingDetector(FrozenConfig(resolution=0.01)).required_run(0.004) is None


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_flat_solution_for_two_hours_never_looks_frozen(seed):
    """Worst case for the identity test: the pH does not move at all (a settled, well-buffered solution
    between drops), read 36,000 times."""
    rng = np.random.default_rng(seed)
    d = FrozenReadingDetector()
    longest = 0
    for i in range(36_000):
        assert not d.add(i / RATE, meter(4.760, rng), SD), d.describe()
        longest = max(longest, d.run)
    assert longest < d.required_run(SD)


def test_a_buffered_titration_with_a_noise_free_meter_is_not_frozen():
    """No noise: identical readings between drops are normal; each drop moves the pH by 0.0008 (25 mL of
    0.1 M HCl, far from equivalence), less than a display step, and still the display changes well
    within max_drops drops."""
    d = FrozenReadingDetector()
    ph, t = 1.060, 0.0
    for drop in range(300):
        for _ in range(10):  # two seconds of readings after each drop
            t += 1 / RATE
            assert not d.add(t, round(ph, 3), 0.0), d.describe()
        d.on_drop(t)
        ph += 0.0008
    assert not d.suspicious  # without noise, identical readings raise no suspicion at all


def test_a_stuck_noisy_meter_is_frozen_within_two_seconds_and_clears_when_it_moves():
    rng = np.random.default_rng(7)
    d = FrozenReadingDetector()
    t = 0.0
    for _ in range(50):
        t += 1 / RATE
        d.add(t, meter(3.2, rng), SD)
    stuck_at, stuck = t, 3.204
    while not d.add(t, stuck, SD):
        t += 1 / RATE
        assert t - stuck_at < 2.5, "not detected"
    assert d.run == 10 and d.frozen and d.suspicious
    assert "10 identical readings (3.204)" in d.describe()
    t += 1 / RATE
    assert not d.add(t, meter(3.25, rng), SD)  # the readings move again
    assert not d.frozen and d.describe() == ""


def test_suspicion_comes_before_the_anomaly():
    d = FrozenReadingDetector()
    for i in range(3):
        d.add(i * 0.2, 5.0, SD)
    assert d.suspicious and not d.frozen


def test_a_noise_free_meter_that_ignores_twenty_drops_is_frozen():
    d = FrozenReadingDetector()
    t = 0.0
    d.add(t, 2.5, 0.0)
    for drop in range(19):
        t += 1.0
        d.on_drop(t)
        assert not d.add(t + 0.5, 2.5, 0.0)
    t += 1.0
    d.on_drop(t)
    assert d.add(t + 0.5, 2.5, 0.0)
    assert "20 drops landed and the reading stayed at 2.5" in d.describe()


def test_drops_while_the_meter_is_silent_are_not_evidence():
    """A silent meter (a dropout) is another fault; drops that no reading followed prove nothing."""
    d = FrozenReadingDetector()
    d.add(0.0, 2.5, 0.0)
    for i in range(50):
        d.on_drop(1.0 + i)
    assert not d.frozen
    assert not d.add(60.0, 2.6, 0.0)


def test_min_run_time_guards_fast_meters():
    """A meter read at 100 Hz repeats itself ten times within 0.1 s more easily: the run must also last."""
    d = FrozenReadingDetector(FrozenConfig(min_run_s=1.0))
    for i in range(30):
        d.add(i * 0.01, 7.0, SD)
    assert not d.frozen
    d.add(1.05, 7.0, SD)
    assert d.frozen


@pytest.mark.parametrize("bad", [dict(resolution=0.0), dict(false_alarm_p=1.0), dict(min_run_s=math.nan),
                                 dict(suspicious_run=1), dict(max_drops=0)])
def test_bad_config_is_refused(bad):
    with pytest.raises(ValueError):
        FrozenConfig(**bad)
