"""Event classification backends behind one interface: the rule classifier, or an audio model.

Clip convention: ``samples`` handed to ``classify`` are the event's int16 audio from some pre-roll
before ``event.onset`` up to ``event.end``; the pre-roll length is
``len(samples) / sample_rate - (event.end - event.onset)``.
"""
from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np
from scipy import signal

from .chunks import INT16_FULL_SCALE
from .classifier import RuleClassifierConfig, class_probabilities, decide
from .config import DetectorConfig
from .errors import AudioInputError, BackendUnavailableError
from .events import DETECTED_KINDS
from .features import extract_features, frame_energy_db

if TYPE_CHECKING:
    from .events import DetectedEvent


@runtime_checkable
class AudioBackend(Protocol):
    """Classifies one event clip into (kind in DETECTED_KINDS, margin 0..1)."""

    def classify(self, samples: np.ndarray, sample_rate: int, event: DetectedEvent) -> tuple[str, float]:
        ...


def _onset_index(samples: np.ndarray, sample_rate: int, event: DetectedEvent) -> int:
    n_event = int(round((event.end - event.onset) * sample_rate))
    return max(0, samples.size - n_event)


class RuleBackend:
    """The feature rule classifier applied to a clip on its own (re-filters it, measures the floor from
    the clip's pre-roll, extracts features and applies the rules)."""

    def __init__(self, config: DetectorConfig = DetectorConfig(),
                 rules: RuleClassifierConfig = RuleClassifierConfig()) -> None:
        self.config = config
        self.rules = rules
        self._sos = signal.butter(config.filter_order, config.band_hz, btype="bandpass",
                                  fs=config.sample_rate, output="sos")

    def classify(self, samples: np.ndarray, sample_rate: int, event: DetectedEvent) -> tuple[str, float]:
        c = self.config
        if sample_rate != c.sample_rate:
            raise AudioInputError(f"RuleBackend: clip at {sample_rate} Hz, configured for {c.sample_rate} Hz")
        a = np.asarray(samples)
        if a.ndim != 1 or a.dtype.kind not in "iu" or a.size == 0:
            raise AudioInputError(f"RuleBackend: need a non-empty 1-D int16 clip, got {a.dtype} {a.shape}")
        raw = a.astype(np.float64) / INT16_FULL_SCALE
        filt, _ = signal.sosfilt(self._sos, raw, zi=signal.sosfilt_zi(self._sos) * raw[0])
        onset = _onset_index(raw, sample_rate, event)
        settle = c.samples(c.settle_s)
        pre = frame_energy_db(filt[settle:max(settle, onset - c.hop)], c.frame, c.hop)
        frames = frame_energy_db(filt[onset:], c.frame, c.hop)
        peak = float(np.max(frames)) if frames.size else float(10 * np.log10(np.mean(filt[onset:] ** 2) + 1e-20))
        floor = float(np.median(pre)) if pre.size else peak - event.snr_db
        feats = extract_features(raw, filt, onset, raw.size, sample_rate, floor, peak, c.band_hz,
                                 c.clip_level / INT16_FULL_SCALE)
        return decide(class_probabilities(feats, continued="continued" in event.flags,
                                                  reonset="reonset" in event.flags, config=self.rules))


class EmbeddingBackend:
    """Wraps a local transformers audio-classification model (e.g. an AST or wav2vec2 fine-tuned on
    contact sounds). Nothing is downloaded: ``model_path`` must be a local directory.

    label_map: model label -> one of DETECTED_KINDS; labels not in the map are ignored. torch and
    transformers are imported on first use; their absence raises BackendUnavailableError.
    """

    def __init__(self, model_path: str | Path, label_map: dict[str, str], *, device: str = "cpu") -> None:
        path = Path(model_path)
        if not path.is_dir():
            raise BackendUnavailableError(f"EmbeddingBackend: model directory {str(path)!r} does not exist; "
                                          f"give a local transformers audio-classification model")
        bad = {k: v for k, v in label_map.items() if v not in DETECTED_KINDS}
        if not label_map or bad:
            raise BackendUnavailableError(f"EmbeddingBackend: label_map must map model labels to {DETECTED_KINDS}, "
                                          f"got {bad or label_map!r}")
        self.model_path = path
        self.label_map = dict(label_map)
        self.device = device
        self._model = None
        self._extractor = None
        self._torch = None

    def _load(self) -> None:
        try:
            torch = importlib.import_module("torch")
            tf = importlib.import_module("transformers")
        except ImportError as exc:
            raise BackendUnavailableError(f"EmbeddingBackend needs torch and transformers installed ({exc})") from exc
        self._torch = torch
        self._extractor = tf.AutoFeatureExtractor.from_pretrained(str(self.model_path), local_files_only=True)
        self._model = tf.AutoModelForAudioClassification.from_pretrained(
            str(self.model_path), local_files_only=True).to(self.device).eval()

    def classify(self, samples: np.ndarray, sample_rate: int, event: DetectedEvent) -> tuple[str, float]:
        if self._model is None:
            self._load()
        torch, ext, model = self._torch, self._extractor, self._model
        x = np.asarray(samples).astype(np.float32) / INT16_FULL_SCALE
        target = int(ext.sampling_rate)
        if target != sample_rate:
            g = np.gcd(target, sample_rate)
            x = signal.resample_poly(x, target // g, sample_rate // g).astype(np.float32)
        inputs = ext(x, sampling_rate=target, return_tensors="pt")
        with torch.no_grad():
            logits = model(**{k: v.to(self.device) for k, v in inputs.items()}).logits[0]
        probs = torch.softmax(logits, dim=-1).cpu().numpy()
        per_kind = dict.fromkeys(DETECTED_KINDS, 0.0)
        for i, p in enumerate(probs):
            kind = self.label_map.get(model.config.id2label[i])
            if kind is not None:
                per_kind[kind] += float(p)
        total = sum(per_kind.values())
        if total <= 0:
            raise BackendUnavailableError("EmbeddingBackend: no model label maps to a detected kind")
        return decide({k: v / total for k, v in per_kind.items()})
