"""Records produced by the audio detector."""
from __future__ import annotations

from dataclasses import dataclass

DETECTED_KINDS = ("droplet", "contact", "pour", "noise")


@dataclass(frozen=True)
class EventFeatures:
    """Acoustic features of one segmented event (computed on the band-passed signal unless noted).

    duration_s: onset to end, s. snr_db: peak frame energy over the noise floor, dB.
    peak_frequency_hz: frequency of the largest excess of the event's raw spectrum over the background
        spectrum just before it, Hz. decay_s: amplitude time constant from a line fitted to the dB
        envelope after the peak, s (10 s = no decay). decay_r2: R^2 of that fit (1 = clean exponential).
    attack_s: onset to the first envelope point within 3 dB of the peak, s.
    hold_s: time the 10 ms envelope spends within 6 dB of its peak, s (exponential decay: about
        0.69 * decay_s; stationary sounds: their length).
    centroid_s: energy-weighted mean time of the energy above the floor, from the onset, s
        (exponential decay: decay_s / 2; a cluster of grains or a burst: half its length).
    pre_level_db: band energy over the 30 ms before the onset relative to the floor, dB (about 0 when
        the event starts from quiet).
    flatness: spectral flatness of the excess spectrum in the detection band (0 tonal .. 1 white).
    low_fraction: share of the excess energy below 600 Hz (thuds).
    granularity_db: median absolute step of the 1 ms envelope, dB (grains make it jitter).
    clip_fraction: share of raw samples at or above the clip level in the event and the 30 ms before it.
    faded_db: how far the 10 ms envelope's last point lies below its peak, dB (how much of the sound has
        died away by the end of what was heard: an impulse judged while it still rings has faded; a
        sustained sound has not).
    """

    duration_s: float
    snr_db: float
    peak_frequency_hz: float
    decay_s: float
    decay_r2: float
    attack_s: float
    hold_s: float
    centroid_s: float
    pre_level_db: float
    flatness: float
    low_fraction: float
    granularity_db: float
    clip_fraction: float
    faded_db: float = 0.0


@dataclass(frozen=True)
class DetectedEvent:
    """One segmented acoustic event.

    event_id: unique in the detector's stream. start/end: segment bounds, s (stream time). onset:
    refined impact time, s. kind: one of DETECTED_KINDS. margin: classifier margin 0..1 (top class
    probability minus the runner-up). snr_db: peak frame energy over the noise floor, dB.
    peak_frequency_hz, decay_s: see EventFeatures. confidence: 0..1 from class probability, SNR and
    signal quality. flags: quality notes ("clipped", "truncated" by a stream gap, "continued" after
    max_event_s, "backend_error"). features: all measured features.
    """

    event_id: str
    start: float
    end: float
    onset: float
    kind: str
    margin: float
    snr_db: float
    peak_frequency_hz: float
    decay_s: float
    confidence: float
    flags: tuple[str, ...] = ()
    features: EventFeatures | None = None


@dataclass(frozen=True)
class OngoingSound:
    """A sound still going on (the detector's open event), judged on what has been heard of it so far.

    start: when it began, s (stream time). duration_s: how long it has lasted so far, s. kind: the rule
    classifier's verdict on it so far (one of DETECTED_KINDS). flatness: spectral flatness of its excess
    over the background just before it, in the detection band (0 tonal .. 1 white). level_db: its peak
    frame energy over the noise floor, dB. continued: it continues a sound cut at max_event_s (kind and
    flatness then describe only its continuation).
    """

    start: float
    duration_s: float
    kind: str
    flatness: float
    level_db: float
    continued: bool = False
