"""Classification backends and the rule classifier behind them."""
from __future__ import annotations

import importlib.util
from dataclasses import replace

import numpy as np
import pytest

from agentchemist.perception.audio import (AudioBackend, BackendUnavailableError, DetectedEvent, DetectorConfigError,
                                           EmbeddingBackend, EventFeatures, RuleBackend, RuleClassifierConfig,
                                           StreamingDetector, class_probabilities, decide)
from agentchemist.sim.audio import AudioEventTruth, ContactAudioConfig, ContactAudioSynth

SR = 48000

DROP = EventFeatures(duration_s=0.05, snr_db=20.0, peak_frequency_hz=2500.0, decay_s=0.02, decay_r2=0.95,
                     attack_s=0.001, hold_s=0.015, centroid_s=0.01, pre_level_db=0.0, flatness=0.01,
                     low_fraction=0.0, granularity_db=0.6, clip_fraction=0.0)


def _events_and_audio(kind: str, seed: int = 3) -> tuple[list[DetectedEvent], np.ndarray]:
    s = ContactAudioSynth(ContactAudioConfig(seed=seed, snr_db=25.0))
    s.schedule(AudioEventTruth(0.5, kind, 0.5 if kind in ("motor_whine", "noise_burst") else 0.0))
    audio = s.render(0.0, int(2.5 * SR))
    det = StreamingDetector()
    return det.process(audio, 0.0) + det.flush(), audio


@pytest.mark.parametrize("features,kind", [
    (DROP, "droplet"),
    (replace(DROP, decay_s=0.22, centroid_s=0.11, hold_s=0.15, duration_s=0.7), "contact"),  # glass clink
    (replace(DROP, peak_frequency_hz=250.0, low_fraction=0.9), "contact"),  # thud
    (replace(DROP, decay_s=0.001, centroid_s=0.001, hold_s=0.003), "contact"),  # a click, too short to ring
    (replace(DROP, hold_s=0.5, duration_s=0.6, granularity_db=2.5, decay_r2=0.1, centroid_s=0.3), "pour"),
    (replace(DROP, hold_s=0.4, duration_s=0.4, granularity_db=0.4, decay_s=10.0, decay_r2=0.0,
             attack_s=0.02, centroid_s=0.2), "noise"),  # motor whine
    (replace(DROP, pre_level_db=5.0, granularity_db=2.0), "pour"),  # a drop-like blip amid grains
    (replace(DROP, pre_level_db=5.0), "noise"),  # ... amid a smooth sound: a fragment of it
])
def test_rule_classifier_on_feature_vectors(features, kind):
    probs = class_probabilities(features)
    assert sum(probs.values()) == pytest.approx(1.0)
    got, margin = decide(probs)
    assert got == kind and 0.0 < margin <= 1.0


def test_continuations_and_clipping_are_not_droplets():
    assert decide(class_probabilities(DROP, continued=True))[0] != "droplet"
    assert decide(class_probabilities(replace(DROP, clip_fraction=0.2)))[0] != "droplet"


def test_margin_shrinks_near_a_boundary():
    _, clear = decide(class_probabilities(DROP))
    _, near = decide(class_probabilities(replace(DROP, decay_s=0.07, centroid_s=0.035)))
    assert near < clear


def test_rule_classifier_config_is_validated():
    with pytest.raises(DetectorConfigError, match="drop_decay_s"):
        RuleClassifierConfig(drop_decay_s=(0.05, 0.01))
    with pytest.raises(DetectorConfigError, match="ramp width"):
        RuleClassifierConfig(granular_w=0.0)


@pytest.mark.parametrize("kind,expected", [("droplet", "droplet"), ("clink", "contact"), ("motor_whine", "noise")])
def test_rule_backend_on_a_clip_agrees_with_the_detector(kind, expected):
    events, audio = _events_and_audio(kind)
    assert len(events) == 1 and events[0].kind == expected
    ev = events[0]
    a = int(round((ev.onset - 0.1) * SR))
    clip = audio[a:int(round(ev.end * SR))]
    backend = RuleBackend()
    assert isinstance(backend, AudioBackend)
    got, margin = backend.classify(clip, SR, ev)
    assert got == expected and 0.0 <= margin <= 1.0


def test_rule_backend_refuses_bad_clips():
    events, audio = _events_and_audio("droplet")
    with pytest.raises(ValueError, match="44100"):
        RuleBackend().classify(audio[:4800], 44100, events[0])
    with pytest.raises(ValueError, match="int16"):
        RuleBackend().classify(audio[:4800].astype(float), SR, events[0])


class _FixedBackend:
    def __init__(self, answer):
        self.answer = answer
        self.clips: list[np.ndarray] = []

    def classify(self, samples, sample_rate, event):
        self.clips.append(samples)
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def test_detector_uses_a_backend_and_falls_back_when_it_fails():
    s = ContactAudioSynth(ContactAudioConfig(seed=3, snr_db=25.0))
    s.schedule(AudioEventTruth(0.5, "droplet"))
    audio = s.render(0.0, SR)
    override = _FixedBackend(("contact", 0.9))
    ev = StreamingDetector(backend=override).process(audio, 0.0)
    assert [e.kind for e in ev] == ["contact"] and ev[0].margin == pytest.approx(0.9)
    clip = override.clips[0]
    assert clip.dtype == np.int16 and clip.size / SR == pytest.approx(0.1 + ev[0].end - ev[0].onset, abs=1e-3)
    for bad in (RuntimeError("model crashed"), ("splash", 0.5), ("droplet", 3.0)):
        ev = StreamingDetector(backend=_FixedBackend(bad)).process(audio, 0.0)
        assert [e.kind for e in ev] == ["droplet"] and "backend_error" in ev[0].flags


def test_embedding_backend_needs_a_local_model(tmp_path):
    with pytest.raises(BackendUnavailableError, match="does not exist"):
        EmbeddingBackend(tmp_path / "no-such-model", {"drip": "droplet"})
    with pytest.raises(BackendUnavailableError, match="label_map"):
        EmbeddingBackend(tmp_path, {"drip": "splash"})


@pytest.mark.skipif(importlib.util.find_spec("torch") is not None, reason="torch is installed")
def test_embedding_backend_without_torch_says_so(tmp_path):
    backend = EmbeddingBackend(tmp_path, {"drip": "droplet"})
    events, audio = _events_and_audio("droplet")
    with pytest.raises(BackendUnavailableError, match="torch"):
        backend.classify(audio[:4800], SR, events[0])
