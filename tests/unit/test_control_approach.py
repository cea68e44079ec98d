"""The dispenser's curve prediction (agentchemist.control.approach): the squeeze through the reading's lags,
the log law's bound on the volume left to an equivalence jump, and the curvature that tells a jump ahead from
a curve flattening out. Synthetic curves with the lags of the prior; no twin."""
from __future__ import annotations

import math

import pytest

from agentchemist.control.approach import CurveTracker, JumpWatch

LAGS = (1.0, 2.0)
DROP = 0.046875


def strong_acid(v: float, veq: float = 25.0, v0: float = 25.0, c: float = 0.1) -> float:
    """pH of 25 mL 0.1 M HCl after v mL of 0.1 M NaOH, before the equivalence (acid side only)."""
    return -math.log10(c * (veq - v) / (v0 + v))


def weak_acid(v: float, veq: float = 25.0, pka: float = 4.76) -> float:
    return pka + math.log10(v / (veq - v))


def lagged_ramp(curve, v_start: float, rate: float, seconds: float, lags=LAGS, tick=0.05, every=0.2):
    """Squeeze at `rate` mL/s from v_start; the reading is the curve at the volume through two lags (the
    beaker mixing, then the electrode), which is what the tracker assumes: returns the tracker and q."""
    tracker = CurveTracker(lags, +1, q0=v_start, t0=0.0)
    mixed = seen = v_start
    a, b = lags
    t, q, next_reading = 0.0, v_start, 0.0
    while t < seconds - 1e-9:
        t = round(t + tick, 9)
        q += rate * tick
        mixed += (q - mixed) * (1 - math.exp(-tick / a))
        seen += (mixed - seen) * (1 - math.exp(-tick / b))
        tracker.advance(t, q)
        if t >= next_reading - 1e-9:
            next_reading += every
            tracker.add(t, curve(seen), q)
    return tracker, q


def test_seen_volume_trails_a_ramp_by_the_sum_of_the_lags():
    tracker, q = lagged_ramp(lambda v: 3.0 + 0.1 * v, 1.0, 0.25, 20.0)
    assert tracker.in_flight(q) == pytest.approx(0.25 * sum(LAGS), rel=0.05)


@pytest.mark.parametrize("curve", [strong_acid, weak_acid], ids=["strong", "weak"])
def test_log_law_bounds_the_volume_left_to_the_jump(curve):
    """Squeezing at 0.25 mL/s towards 25 mL: at every point of the last 3 mL the bound is at most the true
    volume left (never more: increments planned on it cannot reach the jump) and at least a third of it
    within the last 10 drops (not so loose that it stops the squeeze far away)."""
    for end in (22.0, 23.5, 24.3, 24.6, 24.75):
        tracker, q = lagged_ramp(curve, end - 4.0, 0.25, 16.0)
        fit = tracker.fit(3 * DROP)
        assert fit is not None and fit.convex
        left = fit.remaining_to_jump_ml() - tracker.in_flight(q)
        true_left = 25.0 - q
        assert left <= true_left
        if true_left <= 10 * DROP:
            assert left >= true_left / 3


def watch_along(curve, v_start: float, v_end: float, rate: float = 0.03):
    """A slow squeeze (the fits keep up with it) with a JumpWatch on every new fit: the seen volumes where
    it set the bound aside, and whether it was set aside at the end."""
    tracker = CurveTracker(LAGS, +1, q0=v_start, t0=0.0)
    watch = JumpWatch(4 * DROP, 3 * DROP)
    mixed = seen = q = v_start
    t, past = 0.0, []
    while q < v_end:
        t = round(t + 0.05, 9)
        q += rate * 0.05
        mixed += (q - mixed) * (1 - math.exp(-0.05 / LAGS[0]))
        seen += (mixed - seen) * (1 - math.exp(-0.05 / LAGS[1]))
        if round(t / 0.2, 6) % 1 == 0:
            tracker.add(t, curve(seen), q)
            fit = tracker.fit(3 * DROP)
            if fit is not None:
                watch.to_jump(fit, tracker.in_flight(q))
                past.append(watch.past)
    return watch, past


def test_the_bound_is_set_aside_past_a_gentle_inflection():
    """A diprotic acid's first equivalence: the slope peaks at 12.5 mL and falls again (2 pH over 1 mL)."""
    watch, past = watch_along(lambda v: 4.0 + 1.0 * math.tanh((v - 12.5) / 0.35), 11.8, 13.4)
    assert watch.set_aside_at and 12.5 < watch.set_aside_at[0] < 12.9
    assert any(past) and not any(past[:10])


@pytest.mark.parametrize("curve", [strong_acid, weak_acid], ids=["strong", "weak"])
def test_the_bound_stays_towards_a_real_jump(curve):
    watch, past = watch_along(curve, 23.0, 24.95)
    assert not any(past) and not watch.set_aside_at


def test_no_prediction_until_the_readings_span_the_curve():
    tracker = CurveTracker(LAGS, +1)
    for k in range(10):
        tracker.add(0.2 * (k + 1), 3.0, 0.0)   # a hold before anything was squeezed
    assert tracker.fit(3 * DROP) is None
