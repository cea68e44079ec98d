"""The curve from the meter's continuous trace (chemistry.lag_curve) and the equivalence bracketed by the last
drop (chemistry.jump_step): on a simulated electrode the points lie on the true curve, one per drop."""
import math

import numpy as np
import pytest

from agentchemist.chemistry.equilibrium import titration_curve
from agentchemist.chemistry.jump_step import bracketed_equivalence
from agentchemist.chemistry.lag_curve import drop_resolved_curve, shown_volume

DROP = 0.05


def _meter(drop_t, drop_v, true_ph, lags=(1.0, 2.0), t_end=None, dt=0.01, period=0.1, noise=0.0, seed=0):
    """Readings of a meter behind a mixing lag and an electrode lag (Euler at dt), every ``period`` s."""
    rng = np.random.default_rng(seed)
    t_end = t_end if t_end is not None else drop_t[-1] + 15.0
    mixed = electrode = true_ph(0.0)
    stamps, values, k, volume = [], [], 0, 0.0
    for step in range(int(t_end / dt)):
        t = step * dt
        while k < len(drop_t) and drop_t[k] <= t:
            volume = drop_v[k]
            k += 1
        mixed += (true_ph(volume) - mixed) * dt / lags[0]
        electrode += (mixed - electrode) * dt / lags[1]
        if step % int(round(period / dt)) == 0:
            stamps.append(t)
            values.append(electrode + rng.normal(0, noise))
    return np.array(stamps), np.array(values)


_GRID = np.linspace(0.0, 20.0, 801)
_TRUTH = titration_curve({"acetic_acid": 0.1}, 25.0, {"naoh": 0.1}, _GRID, activity=True)


def _acetic(volume):
    """The twin chemistry's pH (0-20 mL, on a 0.025 mL grid: the buffer region is smooth)."""
    return float(np.interp(volume, _GRID, _TRUTH))


def test_the_shown_volume_trails_by_the_sum_of_the_lags_on_a_ramp():
    drop_t = np.arange(0.0, 60.0, 0.25)
    drop_v = DROP * np.arange(1, drop_t.size + 1)
    shown = shown_volume([40.0], drop_t, drop_v, (1.0, 2.0))[0]
    # a ramp of 0.2 mL/s seen through 1 s + 2 s lags: 3 s behind, 0.6 mL
    assert shown == pytest.approx(DROP * (40.0 / 0.25 + 1) - 0.6, abs=0.06)


def test_points_lie_on_the_true_curve_where_a_naive_pairing_does_not():
    # 2 drops/s through the buffer region, as the adaptive controller goes there
    drop_t = 5.0 + 0.5 * np.arange(300)
    drop_v = DROP * np.arange(1, 301)
    stamps, ph = _meter(drop_t, drop_v, _acetic, noise=0.003)
    points = drop_resolved_curve(stamps, ph, drop_t, drop_v)
    assert points[0].drops == 0 and points[0].volume_ml == 0.0
    assert len(points) >= 280                      # drop-resolved: nearly every drop has readings
    errors = [abs(p.ph - _acetic(p.volume_ml)) for p in points if 1.0 < p.volume_ml < 14.0]
    assert max(errors) < 0.02
    # the same readings paired with the volume counted at their stamp lag the truth by 3 s of titrant
    counted = np.interp(stamps, drop_t, drop_v, left=0.0)
    naive = [abs(y - _acetic(v)) for t, y, v in zip(stamps, ph, counted) if 1.0 < v < 14.0]
    assert np.median(naive) > 3 * np.median(errors)


def test_a_hold_gives_one_point_and_no_reading_means_no_point():
    drop_t = np.array([5.0, 5.1, 5.2, 20.0])
    drop_v = DROP * np.arange(1, 5)
    stamps, ph = _meter(drop_t, drop_v, _acetic, period=1.0)
    points = drop_resolved_curve(stamps, ph, drop_t, drop_v)
    assert [p.drops for p in points][-1] == 4
    assert points[-1].n_readings >= 10            # the hold after the last drop: one point of many readings
    assert all(abs(p.ph - _acetic(p.volume_ml)) < 0.02 for p in points)
    with pytest.raises(ValueError, match="drop stamps"):
        drop_resolved_curve(stamps, ph, drop_t, drop_v[:2])
    assert drop_resolved_curve([], [], drop_t, drop_v) == []


def test_the_equivalence_inside_the_last_drop_is_stated_only_for_a_jump():
    v = 0.013 + DROP * np.arange(0, 501)   # the drops do not land on the equivalence volume
    ph = titration_curve({"hcl": 0.1}, 25.0, {"naoh": 0.1}, v)
    cut = int(np.argmax(ph > 9.0)) + 1        # the run stopped on the first drop past pH 9
    found = bracketed_equivalence(v[:cut], ph[:cut], expected_ph=7.0)
    assert found is not None and found.low_ml < 25.0 <= found.high_ml
    assert found.u_bracket_ml == pytest.approx(DROP / (2 * math.sqrt(3)))
    assert bracketed_equivalence(v[:cut - 1], ph[:cut - 1]) is None      # stopped before the jump
    assert bracketed_equivalence(v[:cut], ph[:cut], expected_ph=12.5) is None  # not the jump the plan expects
    assert bracketed_equivalence(v[:cut], ph[:cut]) is not None          # without a prediction: by its size
    assert bracketed_equivalence(v[:200], ph[:200]) is None              # a flat end
    # 5 mL of 0.1 M HCl: the steps before the jump are already large (1.3 pH), the last spans pH 7
    v5 = 0.013 + DROP * np.arange(0, 120)
    ph5 = titration_curve({"hcl": 0.1}, 5.0, {"naoh": 0.1}, v5)
    cut5 = int(np.argmax(ph5 > 9.0)) + 1
    found5 = bracketed_equivalence(v5[:cut5], ph5[:cut5], expected_ph=7.0)
    assert found5 is not None and found5.low_ml < 5.0 <= found5.high_ml
    # the run went one drop on past the jump (its target lay above the drop that crossed it)
    found6 = bracketed_equivalence(v5[:cut5 + 1], ph5[:cut5 + 1], expected_ph=7.0)
    assert found6 == found5


def _run_data(settles: bool):
    from agentchemist.report.model import RunData
    drop_t = 5.0 + 0.5 * np.arange(100)
    drop_v = DROP * np.arange(1, 101)
    stamps, ph = _meter(drop_t, drop_v, _acetic)
    raw = [{"stamp": float(t), "channel": "sensor", "sensor": "ph_meter", "quantity": "pH", "value": float(y),
            "flags": []} for t, y in zip(stamps, ph)]
    raw[3]["flags"] = ["warming_up"]
    fused = [{"stamp": float(t), "quantity": "titrant_volume", "value": float(v), "confidence": 0.9,
              "quality_flags": []} for t, v in zip(drop_t, drop_v)]
    fused += [{"stamp": 4.0, "quantity": "ph_settled", "value": 2.88, "quality_flags": ["initial"]},
              {"stamp": 70.0, "quantity": "ph_settled", "value": 4.0, "quality_flags": []}]
    plan = {"module_instantiation": {"dispenser": {"settle_each_drop": settles}}}
    return RunData(experiment={"plan": plan, "status": "completed"}, raw_observations=raw, fused_records=fused)


def test_the_report_takes_the_trace_unless_every_drop_was_settled():
    from agentchemist.report.curve_rows import SETTLED, TRACE, curve_rows, curve_source
    trace = _run_data(settles=False)
    assert curve_source(trace) == TRACE
    rows = curve_rows(trace)
    assert len(rows) > 90 and rows[0].volume_ml == 0.0 and rows[-1].drops == 100
    assert all(abs(r.ph - _acetic(r.volume_ml)) < 0.02 for r in rows)
    settled = _run_data(settles=True)
    assert curve_source(settled) == SETTLED and [r.ph for r in curve_rows(settled)] == [2.88, 4.0]
