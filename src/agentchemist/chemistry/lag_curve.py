"""The titration curve from the meter's continuous trace: pH against volume, one point per drop, with the
reading's lags taken out.

A run that does not wait for a settled reading after every drop (the instruction did not ask for it) still
records every reading of the meter and every drop. The reading trails the beaker: a drop mixes in (stirred,
tau about 1 s) and the glass electrode follows (tau about 2 s), two first-order lags in series, the same
model the dispenser paces with (agentchemist.control.approach). So each reading is paired with the volume
*it shows*: the cumulative volume passed through the same two lags (for a step of s mL at t0 the cascade
shows s (1 - (t1 e^(-d/t1) - t2 e^(-d/t2)) / (t1 - t2)) after d = t - t0). Where the curve is straight over
the lags' span the pairing is exact; on a jump the controller goes one drop at a time and holds, so the
shown volume sits on a drop's volume for most of the readings that matter.

Drop-resolved: the readings are grouped by the drop whose volume the shown volume is nearest to (half a
drop either side), and each group gives one point, the drop's counted volume with the median of its
readings (robust to the meter's noise and to the few readings taken while the shown volume passed through).
A drop whose group holds no reading (drops faster than the meter reads) gives no point: the curve never
claims a finer volume resolution than the readings carry. Readings before the first drop are point 0 (the
initial pH, at 0 mL).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["TracePoint", "drop_resolved_curve", "shown_volume"]


@dataclass(frozen=True)
class TracePoint:
    """One drop's point: ``drops`` counted so far (0: before the first), their cumulative ``volume_ml``, the
    median ``ph`` of the ``n_readings`` readings that show it, their median ``stamp`` and the spread
    (half the interquartile range, pH) of those readings."""

    drops: int
    volume_ml: float
    ph: float
    n_readings: int
    stamp: float
    spread_ph: float


def _step_response(d: np.ndarray, lags_s: tuple[float, float]) -> np.ndarray:
    """The two-lag cascade's response to a unit step, ``d`` seconds after it (0 before)."""
    t1, t2 = (max(float(x), 1e-6) for x in lags_s)
    d = np.maximum(d, 0.0)
    if abs(t1 - t2) < 1e-6 * max(t1, t2):
        return 1.0 - (1.0 + d / t1) * np.exp(-d / t1)
    return 1.0 - (t1 * np.exp(-d / t1) - t2 * np.exp(-d / t2)) / (t1 - t2)


def shown_volume(stamps, drop_stamps, drop_volumes_ml, lags_s: tuple[float, float]) -> np.ndarray:
    """The cumulative volume (mL) the reading at each of ``stamps`` shows, the drops landing at
    ``drop_stamps`` with cumulative volumes ``drop_volumes_ml``."""
    t = np.asarray(stamps, dtype=float)
    td = np.asarray(drop_stamps, dtype=float)
    cumulative = np.asarray(drop_volumes_ml, dtype=float)
    if td.size == 0:
        return np.zeros_like(t)
    steps = np.diff(np.concatenate(([0.0], cumulative)))
    shown = np.zeros_like(t)
    # in blocks so a long run (thousands of readings x hundreds of drops) stays a few MB
    for start in range(0, t.size, 2048):
        block = t[start:start + 2048]
        shown[start:start + 2048] = _step_response(block[:, None] - td[None, :], lags_s) @ steps
    return shown


def drop_resolved_curve(stamps, ph, drop_stamps, drop_volumes_ml,
                        lags_s: tuple[float, float] = (1.0, 2.0)) -> list[TracePoint]:
    """One :class:`TracePoint` per drop (and the initial state) that readings show; see the module docstring.
    ``stamps``/``ph``: the meter's readings (finite ones are used); ``drop_stamps``/``drop_volumes_ml``: each
    drop's landing time and the cumulative volume after it, in time order."""
    t = np.asarray(stamps, dtype=float)
    y = np.asarray(ph, dtype=float)
    keep = np.isfinite(t) & np.isfinite(y)
    t, y = t[keep], y[keep]
    td = np.asarray(drop_stamps, dtype=float)
    vd = np.asarray(drop_volumes_ml, dtype=float)
    if td.size != vd.size:
        raise ValueError(f"{td.size} drop stamps but {vd.size} drop volumes")
    if not all(math.isfinite(x) and x >= 0 for x in lags_s):
        raise ValueError(f"reading lags must be finite and >= 0, got {lags_s!r}")
    if t.size == 0:
        return []
    order = np.argsort(t, kind="stable")
    t, y = t[order], y[order]
    shown = shown_volume(t, td, vd, lags_s)
    levels = np.concatenate(([0.0], vd))               # drop i's cumulative volume (0: before the first)
    edges = (levels[1:] + levels[:-1]) / 2.0             # half a drop either side
    group = np.searchsorted(edges, shown, side="right")  # the drop each reading shows
    points = []
    for i in np.unique(group):
        sel = group == i
        vals = y[sel]
        q1, q3 = np.percentile(vals, [25, 75])
        points.append(TracePoint(int(i), float(levels[i]), float(np.median(vals)), int(sel.sum()),
                                 float(np.median(t[sel])), float((q3 - q1) / 2.0)))
    return points
