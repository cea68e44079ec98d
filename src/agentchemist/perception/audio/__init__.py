"""Audio supervisor core: streaming contact-audio event detection, classification and drop context.

Public API::

    StreamingDetector, DetectorConfig, DetectedEvent, EventFeatures   # chunks -> events
    DropContext, ContextConfig, ClassifiedEvent                       # events -> expected / anomalous / timeout
    NoiseMonitor, NoiseConfig, NoiseEpisode, OngoingSound             # noise that deafens the microphone
    AudioBackend, RuleBackend, EmbeddingBackend                       # classification backends
"""
from .backends import AudioBackend, EmbeddingBackend, RuleBackend
from .classifier import RuleClassifierConfig, class_probabilities, decide
from .config import DetectorConfig
from .context import CLASSIFICATIONS, ClassifiedEvent, ContextConfig, DropContext
from .detector import StreamingDetector
from .errors import (AudioInputError, AudioPerceptionError, BackendUnavailableError, ContextError,
                     DetectorConfigError)
from .events import DETECTED_KINDS, DetectedEvent, EventFeatures, OngoingSound
from .noise import NoiseConfig, NoiseEpisode, NoiseMonitor

__all__ = [
    "CLASSIFICATIONS", "DETECTED_KINDS", "AudioBackend", "AudioInputError", "AudioPerceptionError",
    "BackendUnavailableError", "ClassifiedEvent", "ContextConfig", "ContextError", "DetectedEvent", "DetectorConfig",
    "DetectorConfigError", "DropContext", "EmbeddingBackend", "EventFeatures", "NoiseConfig", "NoiseEpisode",
    "NoiseMonitor", "OngoingSound", "RuleBackend", "RuleClassifierConfig",
    "StreamingDetector", "class_probabilities", "decide",
]
