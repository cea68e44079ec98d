"""Two drops landing tens of ms apart (a leak beside a squeezed drop, issue 24's fault_extra_drop seeds
16 and 18) ring as one sound with two impacts: the detector must hear two droplets, and must not split
a single drop's own beating ring or a pour's grains into drops."""
from __future__ import annotations

import pytest

from agentchemist.perception.audio import DetectorConfig, StreamingDetector
from agentchemist.sim.audio import AudioEventTruth, ContactAudioConfig, ContactAudioSynth, drop_train

SR = 48000


def _detect(events: list[AudioEventTruth], seed: int, seconds: float, config: DetectorConfig = DetectorConfig()):
    synth = ContactAudioSynth(ContactAudioConfig(seed=seed, snr_db=20.0))
    for ev in events:
        synth.schedule(ev)
    audio = synth.render(0.0, int(seconds * SR))
    det = StreamingDetector(config)
    out = []
    for i in range(0, audio.size, 4800):
        out += det.process(audio[i:i + 4800], i / SR)
    return out + det.flush()


# (seed, gap s): pairs the twin renders, 30-60 ms apart (seed 18's scenario pair was 29 ms apart)
PAIRS = [(3, 0.032), (4, 0.045), (5, 0.06), (11, 0.038)]


@pytest.mark.parametrize("seed,gap", PAIRS)
def test_two_drops_in_one_ring_are_two_droplets(seed, gap):
    truth = [AudioEventTruth(0.5, "droplet"), AudioEventTruth(0.5 + gap, "droplet")]
    events = _detect(truth, seed, 1.2)
    drops = [e for e in events if e.kind == "droplet"]
    assert len(drops) == 2, [(round(e.onset, 4), e.kind, e.flags) for e in events]
    assert "reonset" in drops[1].flags and "reonset" not in drops[0].flags
    assert drops[0].onset == pytest.approx(0.5, abs=0.003)
    assert drops[1].onset == pytest.approx(0.5 + gap, abs=0.003)
    # without the reonset split the same sound is one event, and not a droplet: the drop is lost
    merged = _detect(truth, seed, 1.2, DetectorConfig(reonset_db=0.0))
    assert [e.kind for e in merged if e.kind == "droplet"] != ["droplet", "droplet"]


def test_a_single_drop_with_beating_partials_is_one_droplet():
    """Seed 8's drop 9 has a beat null 18 ms after its peak and rises 8.5 dB out of it: only to 4 dB
    below its peak, which a second drop would not stop at (reonset_level_db)."""
    truth = drop_train(30, seed=8, distractor_rate=0.3)
    events = _detect(truth, 8, truth[-1].time + 2.5)
    drops = [e for e in events if e.kind == "droplet"]
    assert len(drops) == sum(t.kind == "droplet" for t in truth) == 30
    assert not any("reonset" in e.flags for e in events)


@pytest.mark.parametrize("expected", [False, True])
def test_a_ring_rising_again_within_reonset_after_of_its_onset_is_one_droplet(expected):
    """Seed 37's drop at 28.978 s rises out of a beat null 12 ms in, as a second drop would, and both parts
    sound like drops; but the second part's impact (its refined onset) lies 3 ms after the first's, sooner
    than any second impact can (reonset_after_s): one drop, not two (the adaptive dispensing bench's seed 2
    at 0.3 mm/s counted one drop too many this way, with an unexpected_drop anomaly)."""
    truth = [t for t in drop_train(60, seed=37, distractor_rate=0.0) if t.time < 29.5]
    synth = ContactAudioSynth(ContactAudioConfig(seed=37, snr_db=20.0))
    for ev in truth:
        synth.schedule(ev)
    audio = synth.render(0.0, int(29.5 * SR))
    det = StreamingDetector(DetectorConfig())
    det.drops_expected = expected
    events = [e for i in range(0, audio.size, 4800) for e in det.process(audio[i:i + 4800], i / SR)] + det.flush()
    near = [round(e.onset, 4) for e in events if e.kind == "droplet" and 28.9 < e.onset < 29.1]
    assert near == [pytest.approx(28.978, abs=0.002)]
    assert sum(e.kind == "droplet" for e in events) == len(truth)


def test_reonset_settings_are_checked():
    with pytest.raises(ValueError):
        DetectorConfig(reonset_db=-1.0)
    with pytest.raises(ValueError):
        DetectorConfig(reonset_level_db=float("nan"))


def test_drops_135_ms_apart_are_each_heard():
    """A fast squeeze (0.4 mm/s) lands a drop every 120-150 ms: the ring of one still sounds 1-3 dB over
    the floor when the next lands. That is the ring of the droplet just heard (its expected tail is taken
    out of the level before the onset, and only the last 30 ms are compared), not a sustained sound the
    next one would be a fragment of. With the old 50 ms window and no ring taken out, 98 of these 150 were
    heard (133 with the 30 ms window alone, 142 with the ring alone, 144 with both)."""
    import numpy as np

    from agentchemist.perception.audio.evaluation import score_droplets

    tp = fp = fn = 0
    for seed in range(5):
        rng = np.random.default_rng(seed)
        truth = [AudioEventTruth(1.0 + k * 0.135 + rng.uniform(-0.01, 0.01), "droplet") for k in range(30)]
        score = score_droplets(truth, _detect(truth, seed, truth[-1].time + 1.0))
        tp, fp, fn = tp + score.true_positives, fp + score.false_positives, fn + score.false_negatives
    assert fp == 0 and tp >= 0.95 * 150, (tp, fp, fn)
