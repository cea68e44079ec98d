"""Drop context: expected / anomalous / timeout, drop quantity and running total, confidence."""
from __future__ import annotations

import math

import numpy as np
import pytest

from agentchemist.perception.audio import (ClassifiedEvent, ContextConfig, ContextError, DetectedEvent, DropContext,
                                           StreamingDetector)
from agentchemist.sim.audio import AudioEventTruth, ContactAudioConfig, ContactAudioSynth

SR = 48000


def _event(onset: float, kind: str = "droplet", confidence: float = 0.9, n: int = 0) -> DetectedEvent:
    return DetectedEvent(event_id=f"aud-{n:06d}", start=onset, end=onset + 0.05, onset=onset, kind=kind, margin=0.8,
                         snr_db=20.0, peak_frequency_hz=3000.0, decay_s=0.02, confidence=confidence)


def _dispensing(ctx: DropContext, now: float = 0.0, interval: float | None = 1.0) -> None:
    ctx.set_expectation(active=True, subtask_id="titrate-1", fsm_state="titrating", expected_interval_s=interval,
                        now=now)


def test_droplet_while_dispensing_is_an_expected_drop():
    ctx = DropContext()
    _dispensing(ctx)
    r = ctx.classify(_event(1.0))
    assert (r.classification, r.symbol, r.kind) == ("expected", "drop", "droplet")
    assert r.quantity_ml == pytest.approx(0.046875) and r.total_ml == pytest.approx(0.046875) and r.drops == 1
    assert r.subtask_id == "titrate-1" and r.fsm_state == "titrating"
    assert r.confidence == pytest.approx(0.9)
    for i in range(2, 11):
        r = ctx.classify(_event(float(i), n=i))
    assert ctx.drops == 10 and ctx.total_ml == pytest.approx(0.46875)
    assert r.total_sd_ml == pytest.approx(math.sqrt(10) * 0.0015)


def test_droplet_while_idle_is_anomalous_and_not_counted():
    ctx = DropContext()
    ctx.set_expectation(active=False, subtask_id="wait-ph", fsm_state="waiting_ph", expected_interval_s=None, now=0.0)
    r = ctx.classify(_event(5.0))
    assert r.classification == "anomalous" and r.symbol == "" and r.quantity_ml == 0.0
    assert ctx.drops == 0 and ctx.total_ml == 0.0
    assert "no dispensing" in r.reason and "waiting_ph" in r.reason


@pytest.mark.parametrize("kind", ["contact", "pour", "noise"])
def test_non_droplet_events_are_never_drops(kind):
    ctx = DropContext()
    _dispensing(ctx)
    r = ctx.classify(_event(1.0, kind))
    assert r.classification == "anomalous" and r.symbol == "" and r.quantity_ml == 0.0 and ctx.drops == 0


def test_a_pour_expected_by_a_weighing_subtask_is_expected_but_not_a_drop():
    ctx = DropContext()
    ctx.set_expectation(active=True, subtask_id="weigh", fsm_state="pouring", expected_interval_s=None, now=0.0,
                        expected_kinds=("pour",))
    r = ctx.classify(_event(1.0, "pour"))
    assert r.classification == "expected" and r.symbol == "" and r.quantity_ml == 0.0
    assert ctx.classify(_event(2.0, "droplet")).classification == "anomalous"
    assert ctx.check_timeout(100.0) is None  # no droplets expected: no drop timeout


def test_silence_while_dispensing_times_out_once_per_window():
    ctx = DropContext(ContextConfig(priming_timeout_s=0.0))
    _dispensing(ctx, now=10.0, interval=1.0)  # window max(3, 4 x 1) = 4 s
    assert ctx.timeout_window() == pytest.approx(4.0)
    assert ctx.check_timeout(13.9) is None
    r = ctx.check_timeout(14.1)
    assert isinstance(r, ClassifiedEvent) and r.classification == "timeout" and r.event is None
    assert "no drop heard" in r.reason and r.subtask_id == "titrate-1"
    assert ctx.check_timeout(15.0) is None  # not again until another window passes
    assert ctx.check_timeout(18.2).classification == "timeout"


def test_priming_allows_longer_before_the_first_drop():
    ctx = DropContext(ContextConfig(priming_timeout_s=20.0))
    _dispensing(ctx, now=0.0, interval=0.5)
    assert ctx.timeout_window() == pytest.approx(20.0)
    assert ctx.check_timeout(15.0) is None      # still priming: no false alarm
    ctx.classify(_event(16.0, n=0))
    assert ctx.timeout_window() == pytest.approx(3.0)
    assert ctx.check_timeout(19.5).classification == "timeout"


def test_drops_keep_the_timeout_away_and_min_timeout_applies():
    ctx = DropContext(ContextConfig(priming_timeout_s=0.0))
    _dispensing(ctx, now=0.0, interval=0.2)  # 4 x 0.2 = 0.8 s < min 3 s
    assert ctx.timeout_window() == pytest.approx(3.0)
    for i, t in enumerate(np.arange(0.5, 20.0, 0.5)):
        ctx.classify(_event(float(t), n=i))
        assert ctx.check_timeout(float(t) + 0.1) is None
    assert ctx.check_timeout(22.6).classification == "timeout"


def test_no_timeout_when_idle():
    ctx = DropContext()
    assert ctx.check_timeout(1000.0) is None
    _dispensing(ctx, now=0.0)
    ctx.set_expectation(active=False, subtask_id="wait", fsm_state="waiting_ph", expected_interval_s=None, now=1.0)
    assert ctx.check_timeout(100.0) is None


def test_late_events_are_judged_at_their_onset_with_a_grace():
    ctx = DropContext()
    _dispensing(ctx, now=0.0)
    ctx.set_expectation(active=False, subtask_id="wait", fsm_state="waiting_ph", expected_interval_s=None, now=2.0)
    # detected after the FSM moved on, but it landed while dispensing, or just after (drop formation)
    assert ctx.classify(_event(1.98)).classification == "expected"
    late = ctx.classify(_event(2.3))
    assert late.classification == "expected" and "just after" in late.reason
    assert ctx.classify(_event(2.7)).classification == "anomalous"
    assert ctx.drops == 2


def test_confidence_combines_event_confidence_and_state_consistency():
    ctx = DropContext()
    _dispensing(ctx, interval=1.0)
    a = ctx.classify(_event(1.0, confidence=0.8))
    b = ctx.classify(_event(1.1, confidence=0.8))  # 0.1 s after the previous, expected every 1 s
    assert a.confidence == pytest.approx(0.8)
    assert b.confidence == pytest.approx(0.8 * 0.6) and "after the previous drop" in b.reason
    assert b.classification == "expected" and ctx.drops == 2  # still counted, flagged as doubtful


def test_calibration_changes_the_drop_volume():
    ctx = DropContext()
    assert ctx.calibrate(2.5, 50, sd_ml=0.002) == pytest.approx(0.05)
    _dispensing(ctx)
    assert ctx.classify(_event(1.0)).quantity_ml == pytest.approx(0.05)
    ctx.reset_totals()
    assert ctx.drops == 0 and ctx.total_ml == 0.0


def test_bad_input_is_refused():
    ctx = DropContext()
    with pytest.raises(ContextError, match="now"):
        _dispensing(ctx, now=float("nan"))
    with pytest.raises(ContextError, match="expected_interval_s"):
        _dispensing(ctx, interval=-1.0)
    with pytest.raises(ContextError, match="expected_kinds"):
        ctx.set_expectation(active=True, subtask_id="x", fsm_state="y", expected_interval_s=1.0, now=0.0,
                            expected_kinds=("splash",))
    _dispensing(ctx, now=5.0)
    with pytest.raises(ContextError, match="before the previous"):
        _dispensing(ctx, now=4.0)
    with pytest.raises(ContextError, match="kind"):
        ctx.classify(_event(6.0, kind="splash"))
    with pytest.raises(ContextError, match="onset"):
        ctx.classify(_event(float("inf")))
    with pytest.raises(ContextError, match="drops"):
        ctx.calibrate(1.0, 0)
    with pytest.raises(ContextError, match="drop_volume_ml"):
        ContextConfig(drop_volume_ml=-0.05)
    with pytest.raises(ContextError, match="timeout_factor"):
        ContextConfig(timeout_factor=float("nan"))


def test_twin_drops_through_detector_and_context():
    """Dispensing 0-6 s (6 drops expected), idle 6-10 s with one stray drop, a clink while dispensing."""
    synth = ContactAudioSynth(ContactAudioConfig(seed=21, snr_db=15.0))
    for t in (0.7, 1.6, 3.2, 4.0, 4.8, 5.6):
        synth.schedule(AudioEventTruth(t, "droplet"))
    synth.schedule(AudioEventTruth(2.1, "clink"))  # the gripper touches the glass between drops
    synth.schedule(AudioEventTruth(8.0, "droplet", label="stray"))
    audio = synth.render(0.0, 10 * SR)
    det, ctx = StreamingDetector(), DropContext()
    _dispensing(ctx, now=0.0, interval=0.9)
    records, switched = [], False
    for i in range(0, audio.size, 960):
        now = (i + 960) / SR
        if not switched and now >= 6.0:
            ctx.set_expectation(active=False, subtask_id="wait", fsm_state="waiting_ph", expected_interval_s=None,
                                now=6.0)
            switched = True
        records += [ctx.classify(e) for e in det.process(audio[i:i + 960], i / SR)]
        assert ctx.check_timeout(now) is None
    records += [ctx.classify(e) for e in det.flush()]
    expected = [r for r in records if r.classification == "expected"]
    assert [r.symbol for r in expected] == ["drop"] * 6 and ctx.drops == 6
    assert ctx.total_ml == pytest.approx(6 * 0.046875)
    anomalous = [r for r in records if r.classification == "anomalous"]
    assert sorted(r.kind for r in anomalous) == ["contact", "droplet"]
    assert [r.time for r in anomalous if r.kind == "droplet"] == [pytest.approx(8.0, abs=0.005)]
