"""Fusion: hand-computed cases for each of the paper's gates, then properties over random inputs."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentchemist.record import ChannelEstimate, Failure, FusionConfig, RecordConfigError, fuse

E = ChannelEstimate
PROPS = settings(max_examples=100, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


def test_two_channels_weighted_by_confidence() -> None:
    r = fuse([E("statistical", 2.0, 0.9, 10.0), E("audio", 2.2, 0.6, 10.0)], operation_active=True, now=10.0)
    assert r.channels == ("statistical", "audio")
    assert r.weights == pytest.approx((0.6, 0.4))
    assert r.value == pytest.approx(0.6 * 2.0 + 0.4 * 2.2)
    assert r.confidence == pytest.approx(0.75)
    assert r.quality_flags == ()
    assert r.excluded == {}


def test_channels_listed_in_known_order_with_raw_values() -> None:
    r = fuse([E("vision", 1.0, 0.5, 0.0), E("audio", 1.02, 0.5, 0.0)], operation_active=True, now=0.0)
    assert r.channels == ("audio", "vision")
    assert r.channel_values == (1.02, 1.0)
    assert r.value == pytest.approx(1.01)


def test_gate1_idle_fsm_zeroes_channel_reporting_change() -> None:
    estimates = [E("statistical", 5.0, 0.9, 1.0, delta=0.0), E("audio", 5.046875, 0.95, 1.0, delta=0.046875)]
    r = fuse(estimates, operation_active=False, now=1.0)
    assert r.channel_confidences == (0.9, 0.0)
    assert r.weights == (1.0, 0.0)
    assert r.value == 5.0
    assert r.excluded == {"audio": "idle_nonzero_delta"}
    assert "idle_change:audio" in r.quality_flags
    # While the operation runs the same change is legitimate.
    assert fuse(estimates, operation_active=True, now=1.0).weights[1] > 0


def test_gate2_failure_in_window_scales_by_severity() -> None:
    estimates = [E("statistical", 2.0, 0.9, 10.0), E("audio", 2.2, 0.8, 10.0)]
    warn = Failure(stamp=11.5, kind="weak_drop", severity="warn", channel="audio")
    r = fuse(estimates, operation_active=True, failures=[warn], now=12.0)
    assert r.channel_confidences == pytest.approx((0.9, 0.4))
    assert r.value == pytest.approx((0.9 * 2.0 + 0.4 * 2.2) / 1.3)
    assert r.confidence == pytest.approx(0.65)
    assert "failure_gated:audio" in r.quality_flags


def test_gate2_failure_outside_window_or_other_channel_has_no_effect() -> None:
    estimates = [E("statistical", 2.0, 0.9, 10.0), E("audio", 2.2, 0.8, 10.0)]
    late = Failure(stamp=12.5, kind="x", severity="halt", channel="audio")  # 2.5 s > 2.0 s window
    other = Failure(stamp=10.0, kind="x", severity="halt", channel="vision")
    r = fuse(estimates, operation_active=True, failures=[late, other], now=13.0)
    assert r.channel_confidences == (0.9, 0.8)


def test_gate2_halt_for_all_channels_leaves_nothing() -> None:
    estimates = [E("statistical", 2.0, 0.9, 10.0), E("audio", 2.2, 0.8, 10.0)]
    r = fuse(estimates, operation_active=True, failures=[Failure(9.0, "sensor_timeout", "halt")], now=10.0)
    assert math.isnan(r.value) and r.confidence == 0.0
    assert r.excluded == {"statistical": "failure:sensor_timeout", "audio": "failure:sensor_timeout"}
    assert "all_below_tau" in r.quality_flags


def test_gate2_severity_mapping_is_configurable_and_failures_compound() -> None:
    config = FusionConfig(severity_factor={"info": 0.9, "warn": 0.5, "halt": 0.0})
    failures = [Failure(1.0, "a", "info", "audio"), Failure(1.5, "b", "warn", "audio")]
    r = fuse([E("audio", 1.0, 0.8, 1.0)], operation_active=True, failures=failures, now=2.0, config=config)
    assert r.channel_confidences == pytest.approx((0.8 * 0.9 * 0.5,))


def test_gate3_tau_drops_channel_and_renormalises() -> None:
    r = fuse([E("statistical", 3.0, 0.8, 0.0), E("audio", 9.0, 0.29, 0.0), E("vision", 3.1, 0.3, 0.0)],
             operation_active=True, now=0.0)
    assert r.weights == pytest.approx((0.8 / 1.1, 0.0, 0.3 / 1.1))
    assert r.excluded == {"audio": "below_tau"}
    assert r.confidence == pytest.approx(0.55)
    assert "divergence" not in r.quality_flags  # the far-off audio value did not survive


def test_all_below_tau_gives_nan_and_flag() -> None:
    r = fuse([E("statistical", 3.0, 0.1, 0.0), E("audio", 3.0, 0.2, 0.0)], operation_active=True, now=0.0)
    assert math.isnan(r.value)
    assert r.confidence == 0.0
    assert r.weights == (0.0, 0.0)
    assert "all_below_tau" in r.quality_flags
    assert fuse([], operation_active=True, now=0.0).quality_flags == ("all_below_tau",)


@pytest.mark.parametrize(
    ("a", "b", "diverges"),
    [(0.1, 0.14, False), (0.1, 0.16, True), (10.0, 10.9, False), (10.0, 11.2, True), (0.0, 0.05, False)],
)
def test_divergence_uses_absolute_and_relative_tolerance(a: float, b: float, diverges: bool) -> None:
    r = fuse([E("statistical", a, 0.9, 0.0), E("audio", b, 0.9, 0.0)], operation_active=True, now=0.0)
    assert ("divergence" in r.quality_flags) is diverges


def test_bad_input_is_excluded_with_reason_never_raised() -> None:
    estimates = [
        E("statistical", float("nan"), 0.9, 0.0),
        E("audio", 1.0, 1.2, 0.0),
        E("smell", 1.0, 0.9, 0.0),
        E("vision", 1.0, 0.9, float("inf")),
        E("sensor", 1.0, 0.9, 0.0),
    ]
    r = fuse(estimates, operation_active=True, now=0.0)
    assert r.excluded == {
        "statistical": "invalid_value",
        "audio": "invalid_confidence",
        "smell": "unknown_channel",
        "vision": "invalid_stamp",
    }
    assert r.channels == ("sensor",)
    assert r.value == 1.0
    for channel in ("statistical", "audio", "smell", "vision"):
        assert f"invalid_input:{channel}" in r.quality_flags


def test_anomalous_sensor_flag() -> None:
    good = E("statistical", 1.0, 0.9, 0.0)
    nan_sensor = fuse([good, E("sensor", float("nan"), 0.9, 0.0)], operation_active=True, now=0.0)
    assert "anomalous_sensor" in nan_sensor.quality_flags
    weak_sensor = fuse([good, E("sensor", 1.0, 0.1, 0.0)], operation_active=True, now=0.0)
    assert "anomalous_sensor" not in weak_sensor.quality_flags
    timed_out = fuse([good, E("sensor", 1.0, 0.9, 0.0)], operation_active=True,
                     failures=[Failure(0.5, "sensor_timeout", "warn", "sensor")], now=0.0)
    assert "anomalous_sensor" in timed_out.quality_flags


def test_duplicate_channel_newest_wins() -> None:
    r = fuse([E("audio", 2.0, 0.9, 5.0), E("audio", 1.0, 0.9, 4.0)], operation_active=True, now=5.0)
    assert r.value == 2.0 and r.channels == ("audio",)
    assert "duplicate_channel:audio" in r.quality_flags


def test_stale_estimates_excluded_when_max_age_set() -> None:
    config = FusionConfig(max_age_s=1.0)
    r = fuse([E("audio", 2.0, 0.9, 5.0), E("statistical", 2.01, 0.9, 3.0)], operation_active=True,
             now=5.5, config=config)
    assert r.excluded == {"statistical": "stale"}
    assert r.value == 2.0


def test_malformed_failure_is_flagged_and_treated_as_halt() -> None:
    r = fuse([E("audio", 2.0, 0.9, 5.0)], operation_active=True, failures=[Failure(5.0, "odd", "fatal", "audio")],
             now=5.0)
    assert "invalid_failure:odd" in r.quality_flags
    assert r.channel_confidences == (0.0,)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"tau": 0.0},
        {"tau": 1.5},
        {"tau": float("nan")},
        {"divergence_tolerance": -0.1},
        {"failure_window_s": float("inf")},
        {"severity_factor": {"info": 1.0, "warn": 0.5}},
        {"severity_factor": {"info": 1.0, "warn": 2.0, "halt": 0.0}},
        {"known_channels": ()},
        {"max_age_s": 0.0},
    ],
)
def test_config_validation(kwargs: dict) -> None:
    with pytest.raises(RecordConfigError):
        FusionConfig(**kwargs)
    assert issubclass(RecordConfigError, ValueError)


# ---- properties -----------------------------------------------------------------------------------
channels = st.sampled_from(["statistical", "audio", "sensor", "vision"])
anyfloat = st.floats(allow_nan=True, allow_infinity=True, width=64)
values = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)
confs = st.floats(min_value=0.0, max_value=1.0)


@st.composite
def clean_sets(draw: st.DrawFn) -> list[ChannelEstimate]:
    names = draw(st.lists(channels, min_size=1, max_size=4, unique=True))
    return [
        E(n, draw(values), draw(confs), draw(st.floats(0.0, 100.0)), draw(st.sampled_from([0.0, 0.046875])))
        for n in names
    ]


@PROPS
@given(
    st.lists(st.builds(E, st.sampled_from(["statistical", "audio", "sensor", "vision", "bogus"]),
                       anyfloat, anyfloat, anyfloat, anyfloat), max_size=6),
    st.booleans(),
    st.lists(st.builds(Failure, anyfloat, st.just("f"), st.sampled_from(["info", "warn", "halt", "bad"]),
                       st.sampled_from([None, "audio", "sensor", "nope"])), max_size=3),
)
def test_never_raises_and_outputs_are_well_formed(estimates, active, failures) -> None:
    r = fuse(estimates, operation_active=active, failures=failures, now=50.0)
    assert 0.0 <= r.confidence <= 1.0
    assert len(r.channels) == len(r.channel_values) == len(r.channel_confidences) == len(r.weights)
    assert all(w >= 0.0 for w in r.weights)
    if any(r.weights):
        assert math.fsum(r.weights) == pytest.approx(1.0)
        assert math.isfinite(r.value)
    else:
        assert math.isnan(r.value) and "all_below_tau" in r.quality_flags


@PROPS
@given(clean_sets(), st.floats(0.05, 1.0))
def test_value_is_convex_combination_and_confidence_is_mean(estimates, tau) -> None:
    config = FusionConfig(tau=tau)
    r = fuse(estimates, operation_active=True, now=100.0, config=config)
    surviving = [i for i, w in enumerate(r.weights) if w > 0]
    for i, c in enumerate(r.channel_confidences):
        assert (i in surviving) == (c >= tau)
    if surviving:
        vals = [r.channel_values[i] for i in surviving]
        assert min(vals) <= r.value <= max(vals)
        assert r.confidence == pytest.approx(sum(r.channel_confidences[i] for i in surviving) / len(surviving))
        for i in surviving:
            total = sum(r.channel_confidences[j] for j in surviving)
            assert r.weights[i] == pytest.approx(r.channel_confidences[i] / total)


@PROPS
@given(clean_sets(), st.randoms(use_true_random=False))
def test_permutation_invariant(estimates, rng) -> None:
    shuffled = list(estimates)
    rng.shuffle(shuffled)
    a = fuse(estimates, operation_active=True, now=100.0)
    b = fuse(shuffled, operation_active=True, now=100.0)
    assert a.channels == b.channels and a.weights == b.weights
    assert (math.isnan(a.value) and math.isnan(b.value)) or a.value == b.value


@PROPS
@given(clean_sets())
def test_idle_fsm_never_lets_a_changing_channel_contribute(estimates) -> None:
    r = fuse(estimates, operation_active=False, now=100.0)
    by_channel = {e.channel: e for e in estimates}
    for channel, weight, conf in zip(r.channels, r.weights, r.channel_confidences):
        if by_channel[channel].delta != 0.0:
            assert weight == 0.0 and conf == 0.0


@PROPS
@given(clean_sets(), channels, st.sampled_from(["info", "warn", "halt"]))
def test_failures_never_raise_confidence_and_halt_removes_channel(estimates, target, severity) -> None:
    stamp = estimates[0].stamp
    failures = [Failure(stamp, "f", severity, target)]
    plain = fuse(estimates, operation_active=True, now=100.0)
    gated = fuse(estimates, operation_active=True, failures=failures, now=100.0)
    for c0, c1 in zip(plain.channel_confidences, gated.channel_confidences):
        assert c1 <= c0
    if severity == "halt" and target == estimates[0].channel:
        assert gated.weights[gated.channels.index(target)] == 0.0


@PROPS
@given(clean_sets(), st.floats(0.1, 1.0))
def test_common_confidence_scale_does_not_move_value(estimates, scale) -> None:
    config = FusionConfig(tau=0.01)
    lifted = [E(e.channel, e.value, max(e.confidence, 0.2), e.stamp) for e in estimates]
    scaled = [E(e.channel, e.value, e.confidence * scale, e.stamp) for e in lifted]
    a = fuse(lifted, operation_active=True, now=100.0, config=config)
    b = fuse(scaled, operation_active=True, now=100.0, config=config)
    assert b.value == pytest.approx(a.value, rel=1e-9, abs=1e-9)


@PROPS
@given(clean_sets(), st.floats(0.0, 10.0))
def test_raising_one_channel_value_never_lowers_fused_value(estimates, bump) -> None:
    first = estimates[0]
    bumped = [E(first.channel, first.value + bump, first.confidence, first.stamp), *estimates[1:]]
    a = fuse(estimates, operation_active=True, now=100.0)
    b = fuse(bumped, operation_active=True, now=100.0)
    if not math.isnan(a.value):
        assert b.value >= a.value - 1e-9 * max(1.0, abs(a.value))


def test_stamp_order_flags_late_and_invalid_stamps_per_stream() -> None:
    from agentchemist.record import StampOrder

    order = StampOrder()
    assert order.check("audio", 10.0) is None
    assert order.check("audio", 10.0) == "out_of_order"
    assert order.check("audio", 9.0) == "out_of_order"
    assert order.check("statistical", 9.0) is None  # streams are independent
    assert order.check("audio", float("nan")) == "invalid_stamp"
    assert order.check("audio", 10.5) is None and order.last("audio") == 10.5
    order.reset("audio")
    assert order.check("audio", 1.0) is None
