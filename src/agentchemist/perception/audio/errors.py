"""Typed errors of the audio supervisor core (all are ValueErrors: bad input or configuration)."""
from __future__ import annotations


class AudioPerceptionError(ValueError):
    """Base class for audio-perception errors."""


class DetectorConfigError(AudioPerceptionError):
    """A DetectorConfig field is out of range or inconsistent."""


class AudioInputError(AudioPerceptionError):
    """A call argument that is a programming error rather than a sensor fault (e.g. NaN chunk time)."""


class ContextError(AudioPerceptionError):
    """Bad arguments to the drop context (NaN time, negative interval, unknown kind ...)."""


class BackendUnavailableError(AudioPerceptionError):
    """A model backend cannot be used: model files absent or torch/transformers not installed."""
