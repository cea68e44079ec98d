"""Twin contact-audio synthesis: determinism across chunkings, levels, events, truth, bad input."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import signal

from agentchemist.sim.audio import (EVENT_KINDS, AudioEventTruth, AudioSynthError, ContactAudioConfig,
                                    ContactAudioSynth, drop_train)

SR = 48000


def _synth(events=(), **cfg) -> ContactAudioSynth:
    s = ContactAudioSynth(ContactAudioConfig(**cfg))
    for e in events:
        s.schedule(e)
    return s


def _mixed_events() -> list[AudioEventTruth]:
    return [AudioEventTruth(0.3, "droplet", 0.0, "d1"), AudioEventTruth(0.75, "clink", 0.0, "c"),
            AudioEventTruth(1.9, "motor_whine", 0.4, "m"), AudioEventTruth(2.5, "pour", 0.6, "p"),
            AudioEventTruth(3.3, "noise_burst", 0.1, "n"), AudioEventTruth(3.6, "bump", 0.0, "b"),
            AudioEventTruth(4.0, "droplet", 0.0, "d2")]


def test_same_seed_is_bit_identical_however_chunked():
    n = int(4.5 * SR)
    whole = _synth(_mixed_events(), seed=7).render(0.0, n)
    rng = np.random.default_rng(3)
    s = _synth(_mixed_events(), seed=7)
    parts, pos = [], 0
    while pos < n:
        k = int(min(rng.integers(1, 9000), n - pos))
        parts.append(s.render(pos / SR, k))
        pos += k
    chunked = np.concatenate(parts)
    assert chunked.dtype == np.int16
    assert np.array_equal(whole, chunked)
    assert np.array_equal(whole, _synth(_mixed_events(), seed=7).render(0.0, n))


def test_different_seed_differs():
    a = _synth(_mixed_events(), seed=1).render(0.0, SR)
    b = _synth(_mixed_events(), seed=2).render(0.0, SR)
    assert not np.array_equal(a, b)


def test_events_may_be_scheduled_while_rendering():
    events = _mixed_events()
    whole = _synth(events, seed=5).render(0.0, int(4.5 * SR))
    s = _synth(seed=5)
    out = []
    pos = 0
    for e in events:  # schedule each event just before the chunk that contains its onset
        start = int(math.ceil(e.time * SR))
        out.append(s.render(pos / SR, start - pos))
        pos = start
        s.schedule(e)
    out.append(s.render(pos / SR, int(4.5 * SR) - pos))
    assert np.array_equal(np.concatenate(out), whole)


def test_event_spanning_a_chunk_boundary_continues():
    e = AudioEventTruth(0.5, "clink", 0.0, "c")
    s = _synth([e], seed=0, room_noise_dbfs=-110.0, stirrer_on=False, snr_db=80.0)
    first = s.render(0.0, int(0.55 * SR)).astype(float)
    second = s.render(0.55, int(0.2 * SR)).astype(float)
    assert np.abs(first[int(0.5 * SR):]).max() > 100
    assert np.abs(second[:480]).max() > 0.2 * np.abs(first[int(0.5 * SR):]).max()  # still ringing


def test_room_noise_level_and_snr():
    quiet = _synth(seed=3, stirrer_on=False, room_noise_dbfs=-40.0).render(0.0, 2 * SR).astype(float) / 32767
    assert 20 * np.log10(quiet.std()) == pytest.approx(-40.0, abs=0.5)
    # a drop's level (peak 5 ms RMS) sits snr_db above the room noise RMS, within the level spread
    s = _synth([AudioEventTruth(0.2, "droplet", 0.0, "d")], seed=3, stirrer_on=False, room_noise_dbfs=-120.0,
               snr_db=80.0, drop_level_spread_db=0.0)
    x = s.render(0.0, SR).astype(float) / 32767
    win = int(0.005 * SR)
    peak_rms = math.sqrt(np.max(np.convolve(x * x, np.ones(win) / win, mode="same")))
    assert 20 * np.log10(peak_rms) == pytest.approx(-40.0, abs=0.3)


def test_stirrer_hum_is_at_the_configured_frequency():
    on = _synth(seed=1, room_noise_dbfs=-70.0, stirrer_hum_hz=60.0).render(0.0, 2 * SR).astype(float)
    f, p = signal.welch(on, fs=SR, nperseg=SR // 2)
    assert f[np.argmax(p)] == pytest.approx(60.0, abs=2.0)
    off = _synth(seed=1, room_noise_dbfs=-70.0, stirrer_on=False).render(0.0, 2 * SR).astype(float)
    assert off.std() < 0.2 * on.std()


@pytest.mark.parametrize("kind,band", [("droplet", (1000, 6500)), ("clink", (4000, 9500)),
                                       ("bump", (80, 450)), ("motor_whine", (900, 14000))])
def test_event_spectra_are_where_they_should_be(kind, band):
    s = _synth([AudioEventTruth(0.1, kind, 0.5 if kind == "motor_whine" else 0.0, kind)], seed=11,
               room_noise_dbfs=-110.0, stirrer_on=False, snr_db=70.0)
    x = s.render(0.0, SR).astype(float)
    f, p = signal.welch(x, fs=SR, nperseg=4096)
    assert band[0] <= f[np.argmax(p)] <= band[1]


def test_durations_and_decays():
    s = _synth([AudioEventTruth(0.1, "droplet"), AudioEventTruth(1.0, "clink"), AudioEventTruth(3.0, "pour", 0.8),
                AudioEventTruth(4.0, "motor_whine"), AudioEventTruth(5.5, "noise_burst")], seed=2)
    truth = {t.kind: t for t in s.truth()}
    assert truth["droplet"].duration < 0.3  # 60 dB of ring for decays up to 40 ms
    assert 0.6 < truth["clink"].duration < 2.1
    assert truth["pour"].duration == pytest.approx(0.8)
    assert 0.2 <= truth["motor_whine"].duration <= 1.0  # drawn when not given
    assert 0.05 <= truth["noise_burst"].duration <= 0.4


def test_truth_is_sorted_and_labelled():
    events = list(reversed(_mixed_events()))
    s = _synth(events, seed=0)
    truth = s.truth()
    assert [t.time for t in truth] == sorted(e.time for e in events)
    assert {t.label for t in truth} == {e.label for e in events}


def test_drop_train_intervals_and_distractors():
    evs = drop_train(200, seed=4, distractor_rate=0.3)
    drops = [e.time for e in evs if e.kind == "droplet"]
    assert len(drops) == 200
    gaps = np.diff(drops)
    assert gaps.min() >= 0.2 - 1e-6 and gaps.max() <= 4.5
    kinds = {e.kind for e in evs}
    assert {"bump", "clink", "motor_whine", "noise_burst", "pour"} <= kinds
    assert drop_train(10, seed=4) == drop_train(10, seed=4)


def test_bad_input_is_refused():
    with pytest.raises(AudioSynthError, match="kind"):
        AudioEventTruth(1.0, "splash")
    with pytest.raises(AudioSynthError, match="time"):
        AudioEventTruth(float("nan"), "droplet")
    with pytest.raises(AudioSynthError, match="duration"):
        AudioEventTruth(1.0, "pour", -1.0)
    with pytest.raises(AudioSynthError, match="snr_db"):
        ContactAudioConfig(snr_db=float("inf"))
    with pytest.raises(AudioSynthError, match="sample_rate"):
        ContactAudioConfig(sample_rate=1000)
    with pytest.raises(AudioSynthError, match="pink_taps"):
        ContactAudioConfig(pink_taps=1024)
    s = _synth(seed=0)
    with pytest.raises(AudioSynthError, match="n_samples"):
        s.render(0.0, -5)
    with pytest.raises(AudioSynthError, match="t0"):
        s.render(-1.0, 10)
    s.render(0.0, SR)
    with pytest.raises(AudioSynthError, match="before the audio already rendered"):
        s.schedule(AudioEventTruth(0.5, "droplet"))
    with pytest.raises(AudioSynthError, match="distractor"):
        drop_train(5, seed=0, distractors=("splash",))
    assert set(EVENT_KINDS) == {"droplet", "bump", "clink", "motor_whine", "pour", "noise_burst"}


def test_render_zero_samples_and_long_times():
    s = _synth([AudioEventTruth(3600.0, "droplet")], seed=1)
    assert s.render(0.0, 0).size == 0
    x = s.render(3599.99, SR // 10).astype(float)  # an hour in: hum phase stays precise, drop is there
    assert np.abs(x[int(0.01 * SR):]).max() > 3 * np.abs(x[: int(0.009 * SR)]).max()
