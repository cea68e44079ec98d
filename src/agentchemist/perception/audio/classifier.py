"""Transparent rule classifier: droplet / other contact / pour / noise from event features.

Each class gets a score that is a product of soft conditions (logistic ramps over one feature, so a
feature near a boundary gives a graded answer instead of a flip). Scores are normalised into
probabilities; the margin is the top probability minus the runner-up.

Why these conditions (the physics of a contact microphone on the gripper):
- a droplet hitting liquid is an impulse: it reaches its peak within ~10 ms of the onset (later only
  when close partials beat) and its
  energy is concentrated in the first tens of ms (short ``hold``), ringing at 1-6 kHz resonances that
  decay in 2-70 ms;
- other contacts are impulses that fail the droplet test: thuds (energy below ~600 Hz), clinks of glass
  (long, clean exponential ring, 100-300 ms), or clicks too short to be a resonance;
- pouring is sustained and granular (the envelope jitters as grains land);
- noise is anything sustained and smooth (motor whine, hiss, bursts) or without a sharp onset.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields

from .errors import DetectorConfigError
from .events import DETECTED_KINDS, EventFeatures


@dataclass(frozen=True)
class RuleClassifierConfig:
    """Boundaries of the soft conditions (s, Hz, dB); each ``*_w`` is the logistic ramp width.

    short_hold_s: events whose envelope stays within 6 dB of the peak for less than this are impulses.
    drop_centroid_s: (min, max) droplet energy centroid after the onset (a single grain is shorter, a
    burst or a cluster of grains longer).
    sharp_attack_s: impulses reach 3 dB below their peak within this time of the onset.
    drop_decay_s: (min, max) droplet ring time constant. drop_freq_hz: (min, max) droplet peak frequency.
    ring_decay_s: clean exponential rings slower than this are glass clinks (contact). ring_r2: minimum
    R^2 of the decay fit for a clean ring. quiet_before_db: droplets start from quiet: the band energy in
    the 30 ms before the onset is at most this far above the floor (else: a fragment of a longer sound).
    granular_db: envelope jitter (median 1 ms step) above this is pouring (for sustained events).
    drop_max_granularity_db: a droplet's envelope decays smoothly: jitter above this is a cluster of grains.
    low_fraction: events with more than this share of energy below 600 Hz are thuds. max_clip: droplets
    with more clipped samples than this share are implausible (a saturated click is not a drop).
    floor: probability mass added to every class before normalising (keeps margins finite).
    early_attack_s, early_faded_db: a sound judged while it still rings (partial) is a droplet only
    with an impact's attack (within early_attack_s of the onset), a fitted ring no longer than a
    droplet's (no credit from a short energy centroid: what was heard is cut short, so it is short)
    and an envelope already early_faded_db below its peak: the start of a pour or a whine has not faded.
    """

    short_hold_s: float = 0.06
    short_hold_w: float = 0.008
    sharp_attack_s: float = 0.015
    sharp_attack_w: float = 0.003
    drop_decay_s: tuple[float, float] = (0.0035, 0.07)
    drop_decay_w: tuple[float, float] = (0.0005, 0.012)
    drop_centroid_s: tuple[float, float] = (0.003, 0.035)
    drop_centroid_w: tuple[float, float] = (0.0007, 0.004)
    drop_freq_hz: tuple[float, float] = (700.0, 8000.0)
    drop_freq_w: tuple[float, float] = (100.0, 600.0)
    ring_decay_s: float = 0.07
    ring_decay_w: float = 0.015
    ring_r2: float = 0.7
    ring_r2_w: float = 0.08
    granular_db: float = 1.2
    granular_w: float = 0.2
    drop_max_granularity_db: float = 3.0
    drop_max_granularity_w: float = 0.3
    quiet_before_db: float = 1.5
    quiet_before_w: float = 0.3
    low_fraction: float = 0.5
    low_fraction_w: float = 0.1
    max_clip: float = 0.02
    max_clip_w: float = 0.005
    floor: float = 0.01
    early_attack_s: float = 0.006
    early_attack_w: float = 0.001
    early_faded_db: float = 2.0
    early_faded_w: float = 0.5

    def __post_init__(self) -> None:
        for fld in fields(self):
            v = getattr(self, fld.name)
            vals = v if isinstance(v, tuple) else (v,)
            if not all(isinstance(x, (int, float)) and math.isfinite(x) and x >= 0 for x in vals):
                raise DetectorConfigError(f"RuleClassifierConfig.{fld.name} must be finite and >= 0, got {v!r}")
            if fld.name.endswith("_w") and not all(x > 0 for x in vals):
                raise DetectorConfigError(f"RuleClassifierConfig.{fld.name} (ramp width) must be > 0, got {v!r}")
        for name in ("drop_decay_s", "drop_centroid_s", "drop_freq_hz"):
            lo, hi = getattr(self, name)
            if not lo < hi:
                raise DetectorConfigError(f"RuleClassifierConfig.{name} must be (min, max) with min < max")


def _above(x: float, edge: float, width: float) -> float:
    """Soft x > edge."""
    z = (x - edge) / width
    return 1.0 / (1.0 + math.exp(-z)) if z > -60 else 0.0


def _below(x: float, edge: float, width: float) -> float:
    """Soft x < edge."""
    return _above(-x, -edge, width)


def class_probabilities(f: EventFeatures, *, continued: bool = False, reonset: bool = False, partial: bool = False,
                        config: RuleClassifierConfig = RuleClassifierConfig()) -> dict[str, float]:
    """Probabilities of the DETECTED_KINDS for one event's features (sum to 1).

    continued: the event is the continuation of one cut at max_event_s (it has no onset of its own,
    so it cannot be a droplet or a contact). reonset: the event is a second impact that rose sharply
    out of the decaying ring of the one before (the segmenter's reonset test): the sound before its
    onset is that ring, so the quiet-before test that rejects fragments of sustained sounds does not
    apply. partial: the sound still rings; ``f`` describes what has been heard of it so far (see
    RuleClassifierConfig.early_attack_s)."""
    c = config
    short = _below(f.hold_s, c.short_hold_s, c.short_hold_w)
    sharp = _below(f.attack_s, c.sharp_attack_s, c.sharp_attack_w)
    # rings longer than a grain (fitted decay), and not as long as glass: the upper test also accepts
    # twice the energy centroid (the time constant of a pure exponential), because at low SNR a decay
    # fit over noise can come out long
    drop_decay = (_above(f.decay_s, c.drop_decay_s[0], c.drop_decay_w[0])
                  * _below(min(f.decay_s, 2.0 * f.centroid_s), c.drop_decay_s[1], c.drop_decay_w[1]))
    drop_centroid = (_above(f.centroid_s, c.drop_centroid_s[0], c.drop_centroid_w[0])
                     * _below(f.centroid_s, c.drop_centroid_s[1], c.drop_centroid_w[1]))
    drop_freq = (_above(f.peak_frequency_hz, c.drop_freq_hz[0], c.drop_freq_w[0])
                 * _below(f.peak_frequency_hz, c.drop_freq_hz[1], c.drop_freq_w[1]))
    thud = _above(f.low_fraction, c.low_fraction, c.low_fraction_w)
    ring = (_above(f.decay_s, c.ring_decay_s, c.ring_decay_w) * _above(f.decay_r2, c.ring_r2, c.ring_r2_w)
            * _below(f.decay_s, 2.0, 0.3))
    granular = _above(f.granularity_db, c.granular_db, c.granular_w)
    quiet_before = 1.0 if reonset else _below(f.pre_level_db, c.quiet_before_db, c.quiet_before_w)
    unclipped = _below(f.clip_fraction, c.max_clip, c.max_clip_w)
    onset = 0.0 if continued else 1.0

    smooth = _below(f.granularity_db, c.drop_max_granularity_db, c.drop_max_granularity_w)
    droplet_like = drop_decay * drop_centroid * drop_freq * smooth * (1.0 - thud)
    if partial:
        droplet_like *= (_below(f.decay_s, c.drop_decay_s[1], c.drop_decay_w[1])
                         * _below(f.attack_s, c.early_attack_s, c.early_attack_w)
                         * _above(f.faded_db, c.early_faded_db, c.early_faded_w))
    amid = 1.0 - quiet_before  # the event starts inside another sound: a fragment of it
    sustained = max(1.0 - short, amid)
    clean_ring = ring * sharp
    scores = {
        "droplet": onset * short * sharp * droplet_like * quiet_before * unclipped,
        "contact": onset * sharp * max(short * quiet_before * (1.0 - droplet_like * unclipped),
                                       (1.0 - short) * ring, thud),
        "pour": sustained * granular * (1.0 - clean_ring),
        "noise": sustained * (1.0 - granular) * (1.0 - clean_ring) + (1.0 - sharp) * short * (1.0 - thud),
    }
    total = sum(scores.values()) + c.floor * len(scores)
    return {k: (scores[k] + c.floor) / total for k in DETECTED_KINDS}


def decide(probabilities: dict[str, float]) -> tuple[str, float]:
    """(kind, margin) from class probabilities: the top class and its lead over the runner-up."""
    ranked = sorted(probabilities.items(), key=lambda kv: (-kv[1], DETECTED_KINDS.index(kv[0])))
    margin = ranked[0][1] - (ranked[1][1] if len(ranked) > 1 else 0.0)
    return ranked[0][0], float(min(1.0, max(0.0, margin)))
