"""Single-source filter (pH/temperature) and the per-drop join."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentchemist.record import (
    PH_FILTER,
    DropJoinConfig,
    DropJoiner,
    RecordConfigError,
    SingleSourceConfig,
    SingleSourceFilter,
)


def feed(f: SingleSourceFilter, xs, start: float = 0.0, noise: float = 0.01):
    return [f.update(float(x), start + i, True, noise) for i, x in enumerate(xs)]


def test_spike_rejected_and_estimate_unmoved() -> None:
    f = SingleSourceFilter(PH_FILTER)
    out = feed(f, [7.00, 7.01, 6.99, 7.00, 7.01, 9.8, 7.00])
    spike = out[5]
    assert spike.outlier and spike.excluded and spike.confidence == 0.0
    assert "outlier" in spike.flags and "anomalous_sensor" in spike.flags
    assert spike.value == pytest.approx(out[4].value)
    assert not out[6].outlier and out[6].value == pytest.approx(7.0, abs=0.01)


def test_real_level_shift_is_accepted_after_confirmation() -> None:
    # Equivalence-point jump: 4.2 -> 9.1 and it stays there.
    f = SingleSourceFilter(PH_FILTER)
    out = feed(f, [4.20, 4.21, 4.19, 4.20, 9.10, 9.11, 9.12, 9.10])
    assert out[4].outlier  # a lone jump is held back ...
    assert not out[5].outlier and "level_shift" in out[5].flags  # ... until a second reading agrees
    assert out[7].value == pytest.approx(9.11, abs=0.02)


def test_alternating_spikes_are_not_a_level_shift() -> None:
    f = SingleSourceFilter(PH_FILTER)
    out = feed(f, [7.0, 7.0, 7.01, 7.0, 11.0, 3.0, 7.0])
    assert out[4].outlier and out[5].outlier
    assert "level_shift" not in out[5].flags
    assert out[6].value == pytest.approx(7.0, abs=0.01)


def test_smoothing_reduces_noise() -> None:
    rng = np.random.default_rng(3)
    truth = 6.5
    xs = truth + rng.normal(0, 0.02, 200)
    f = SingleSourceFilter(SingleSourceConfig(smoothing="ema", ema_alpha=0.2, min_sigma=0.01))
    est = np.array([r.value for r in feed(f, xs)])[20:]
    assert np.std(est - truth) < 0.6 * np.std(xs[20:] - truth)


def test_confidence_from_self_check_and_noise() -> None:
    f = SingleSourceFilter(PH_FILTER)
    ok = f.update(7.0, 0.0, True, 0.0)
    failed = f.update(7.0, 1.0, False, 0.0)
    noisy = f.update(7.0, 2.0, True, 0.05)
    assert ok.confidence == pytest.approx(1.0)
    # the instrument's own word that the value is bad: excluded, not down-weighted into the channel
    assert failed.excluded and failed.confidence == 0.0 and failed.value == pytest.approx(7.0)
    assert "self_check_failed" in failed.flags and "anomalous_sensor" in failed.flags
    assert noisy.confidence == pytest.approx(0.5)  # noise == noise_ref halves the confidence


def test_out_of_order_and_invalid_inputs_flagged_and_excluded() -> None:
    f = SingleSourceFilter(PH_FILTER)
    f.update(7.0, 10.0)
    late = f.update(7.0, 9.0)
    same = f.update(7.0, 10.0)
    nan = f.update(float("nan"), 11.0)
    bad_stamp = f.update(7.0, float("inf"))
    implausible = f.update(25.0, 12.0)
    for r, flag in ((late, "out_of_order"), (same, "out_of_order"), (nan, "invalid_value"),
                    (bad_stamp, "invalid_stamp"), (implausible, "out_of_range")):
        assert r.excluded and r.confidence == 0.0 and flag in r.flags
    assert implausible.outlier
    assert f.estimate == pytest.approx(7.0)
    bad_noise = f.update(7.0, 13.0, True, -1.0)
    assert "invalid_noise" in bad_noise.flags and bad_noise.confidence == 0.0 and not bad_noise.excluded


@pytest.mark.parametrize(
    "kwargs",
    [{"window": 2}, {"min_samples": 1}, {"n_sigmas": 0}, {"shift_confirm": 1}, {"smoothing": "kalman"},
     {"ema_alpha": 0.0}, {"valid_range": (5.0, 1.0)}, {"min_sigma": 0.0}],
)
def test_single_source_config_validation(kwargs: dict) -> None:
    with pytest.raises(RecordConfigError):
        SingleSourceConfig(**kwargs)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=40),
       st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=40))
def test_filter_never_raises_and_confidence_in_range(values, stamps) -> None:
    f = SingleSourceFilter(PH_FILTER)
    for x, t in zip(values, stamps):
        r = f.update(x, t, True, 0.01)
        assert 0.0 <= r.confidence <= 1.0
        assert r.excluded or math.isfinite(r.value)


# ---- per-drop join -----------------------------------------------------------------------------------
DROP = 0.046875


def test_each_drop_joined_with_first_reading_after_settle() -> None:
    j = DropJoiner()
    assert j.mark_settled(0.0) == []
    initial = j.add_ph(0.5, 1.06)
    assert [(r.drop_index, r.cumulative_volume, r.ph, r.flags) for r in initial] == [(0, 0.0, 1.06, ("initial",))]
    rows = []
    for k in range(1, 4):
        t = 10.0 * k
        rows += j.add_drop(k * DROP, t)
        rows += j.add_ph(t + 1.0, 9.9)  # still changing: not settled yet, ignored
        rows += j.mark_settled(t + 4.0)
        rows += j.add_ph(t + 3.9, 9.8)  # older than the declaration: ignored
        rows += j.add_ph(t + 4.2, 1.06 + 0.01 * k)
    assert [(r.drop_index, r.cumulative_volume, r.ph) for r in rows] == [
        (1, DROP, pytest.approx(1.07)), (2, 2 * DROP, pytest.approx(1.08)), (3, 3 * DROP, pytest.approx(1.09))]
    assert rows[0].ph_stamp == 14.2 and rows[0].settle_stamp == 14.0
    assert rows[0].settle_delay_s == pytest.approx(4.2)
    assert j.rows == initial + rows


def test_settled_event_with_ph() -> None:
    j = DropJoiner()
    j.add_drop(DROP, 1.0)
    (row,) = j.settled(3.0, 2.5)
    assert (row.drop_index, row.ph, row.ph_stamp) == (1, 2.5, 3.0)


def test_no_drop_lost_superseded_timeout_and_end() -> None:
    j = DropJoiner(DropJoinConfig(max_wait_s=5.0))
    j.add_drop(DROP, 1.0)
    (superseded,) = j.add_drop(2 * DROP, 2.0)  # second drop before the first settled
    assert superseded.drop_index == 1 and math.isnan(superseded.ph) and superseded.flags == ("superseded_before_settle",)
    j.mark_settled(3.0)
    assert j.poll(7.0) == []
    (timed_out,) = j.poll(8.5)
    assert timed_out.drop_index == 2 and timed_out.flags == ("no_ph_after_settle",)
    j.add_drop(3 * DROP, 10.0)
    (last,) = j.finish(20.0)
    assert last.drop_index == 3 and last.flags == ("unsettled_at_end",)
    assert [r.drop_index for r in j.rows] == [1, 2, 3]


def test_bad_drops_recorded_as_rejected_rows() -> None:
    j = DropJoiner()
    j.add_drop(2 * DROP, 5.0)
    (older,) = j.add_drop(3 * DROP, 4.0)
    (shrinking,) = j.add_drop(DROP, 6.0)
    (nan,) = j.add_drop(float("nan"), 7.0)
    assert [r.flags for r in (older, shrinking, nan)] == [("out_of_order",), ("out_of_order",), ("invalid_input",)]
    assert all(r.drop_index == -1 for r in (older, shrinking, nan))
    (good,) = j.settled(8.0, 3.3)
    assert good.drop_index == 1 and good.cumulative_volume == 2 * DROP


def test_drop_join_config_validation() -> None:
    with pytest.raises(RecordConfigError):
        DropJoinConfig(max_wait_s=0.0)
