"""Grading detected events against ground truth (the twin's event list): droplet P/R/F1, onset error,
and what each distractor was heard as.

Truth events are anything with ``time`` (onset, s), ``kind`` (twin kinds: droplet, bump, clink,
motor_whine, pour, noise_burst) and ``duration`` (s); ``agentchemist.sim.audio.AudioEventTruth`` fits.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Protocol, Sequence

import numpy as np

from .errors import AudioInputError
from .events import DetectedEvent

#: the detected kind each twin kind should be heard as
EXPECTED_KIND = {"droplet": "droplet", "bump": "contact", "clink": "contact", "motor_whine": "noise",
                 "pour": "pour", "noise_burst": "noise"}


class TruthEvent(Protocol):
    time: float
    kind: str
    duration: float


@dataclass(frozen=True)
class DropScore:
    """Droplet detection quality. onset_errors_s: detected minus true onset of each matched drop, s.
    confusion: (truth kind, detected kind) -> count, every detection attributed to the truth event it
    overlaps ("none" when it overlaps nothing)."""

    true_positives: int
    false_positives: int
    false_negatives: int
    precision: float
    recall: float
    f1: float
    onset_errors_s: tuple[float, ...]
    confusion: dict[tuple[str, str], int] = field(default_factory=dict)

    @property
    def max_onset_error_s(self) -> float:
        return max((abs(e) for e in self.onset_errors_s), default=0.0)


def score_droplets(truth: Sequence[TruthEvent], detected: Sequence[DetectedEvent], *,
                   onset_tol_s: float = 0.01, ring_s: float = 0.05) -> DropScore:
    """Match droplet detections one-to-one to true droplets whose onset is within ``onset_tol_s``.

    A droplet detection with no true droplet nearby is a false positive (whatever it really was); a
    true droplet without a droplet detection is a false negative. ``ring_s``: how long after a
    distractor's duration a detection is still attributed to it in the confusion table."""
    if not (isinstance(onset_tol_s, (int, float)) and math.isfinite(onset_tol_s) and onset_tol_s > 0):
        raise AudioInputError(f"onset_tol_s must be > 0 s, got {onset_tol_s!r}")
    drops = sorted(t.time for t in truth if t.kind == "droplet")
    det_drops = sorted((d for d in detected if d.kind == "droplet"), key=lambda d: d.onset)
    used = np.zeros(len(drops), dtype=bool)
    arr = np.asarray(drops)
    errors: list[float] = []
    for d in det_drops:
        if arr.size == 0:
            break
        i = int(np.searchsorted(arr, d.onset))
        best = None
        for j in (i - 1, i, i + 1):
            if 0 <= j < arr.size and not used[j] and abs(arr[j] - d.onset) <= onset_tol_s:
                if best is None or abs(arr[j] - d.onset) < abs(arr[best] - d.onset):
                    best = j
        if best is not None:
            used[best] = True
            errors.append(d.onset - float(arr[best]))
    tp = len(errors)
    fp = len(det_drops) - tp
    fn = len(drops) - tp
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return DropScore(tp, fp, fn, precision, recall, f1, tuple(errors),
                     _confusion(truth, detected, onset_tol_s, ring_s))


def _confusion(truth: Sequence[TruthEvent], detected: Sequence[DetectedEvent], tol: float,
               ring_s: float) -> dict[tuple[str, str], int]:
    out: dict[tuple[str, str], int] = {}
    for d in detected:
        owner = "none"
        best = math.inf
        for t in truth:
            if t.kind == "droplet":
                gap = abs(d.onset - t.time)
                if gap <= tol and gap < best:
                    owner, best = t.kind, gap
            elif d.start <= t.time + t.duration + ring_s and d.end >= t.time - tol and owner == "none":
                owner = t.kind
        out[(owner, d.kind)] = out.get((owner, d.kind), 0) + 1
    return out
