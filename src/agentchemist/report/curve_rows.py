"""Which readings make a run's titration curve: the settled ones, or the meter's continuous trace.

A run that waited for a settled reading after every drop (its plan's ``settle_each_drop``: the instruction
asked for it) has its curve in the recorder's ``ph_settled`` records (:func:`agentchemist.report.model.
titration_table`). Any other titration recorded every reading of the meter and every drop, and its curve is
the trace, drop-resolved with the reading's lags taken out (:mod:`agentchemist.chemistry.lag_curve`): a run
never ends without its curve because the instruction's wording did not ask for settling.

The lags are the dispenser's priors (stirred mixing 1 s, glass electrode 2 s; agentchemist.control.approach),
or ``reading_lags_s`` in the report options when the electrode is known to differ.
"""
from __future__ import annotations

import bisect
import math
from collections.abc import Mapping

from agentchemist.chemistry.lag_curve import drop_resolved_curve
from agentchemist.report.model import DropRow, RunData, titration_table

__all__ = ["DEFAULT_LAGS_S", "SETTLED", "TRACE", "curve_rows", "curve_source"]

DEFAULT_LAGS_S = (1.0, 2.0)
SETTLED = "settled readings"
TRACE = "meter trace"
#: raw reading flags that keep a reading out of the curve (the warming-up ones are the probe's first seconds)
_KEPT_OUT = {"late", "implausible_jump", "warming_up", "out_of_order"}


def _settles(run: RunData) -> bool | None:
    plan = run.experiment.get("plan")
    try:
        return bool(plan["module_instantiation"]["dispenser"]["settle_each_drop"])
    except (KeyError, TypeError):
        return None


def _flags(record: Mapping) -> set[str]:
    flags = record.get("flags") or record.get("quality_flags") or ()
    if isinstance(flags, str):
        flags = [flags]
    return {str(f).split(":")[0] for f in flags}


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def curve_source(run: RunData) -> str:
    """SETTLED when the plan settled every drop (or no plan says, and settled readings exist), else TRACE
    when the run has drops and meter readings, else SETTLED (whatever settled readings there are)."""
    settles = _settles(run)
    if settles:
        return SETTLED
    if settles is None and run.fused("ph_settled"):
        return SETTLED
    has_drops = bool(run.fused("titrant_volume"))
    has_readings = any(r.get("quantity") == "pH" and r.get("channel") == "sensor" for r in run.raw_observations)
    return TRACE if has_drops and has_readings else SETTLED


def curve_rows(run: RunData, options: Mapping | None = None) -> list[DropRow]:
    """The rows of the run's titration curve (see the module docstring)."""
    if curve_source(run) == SETTLED:
        return titration_table(run)
    lags = tuple(float(x) for x in ((options or {}).get("reading_lags_s") or DEFAULT_LAGS_S))
    readings = [r for r in run.raw_observations
                if r.get("quantity") == "pH" and r.get("channel") == "sensor" and _finite(r.get("value"))
                and not (_flags(r) & _KEPT_OUT)]
    drops = [r for r in run.fused("titrant_volume") if _finite(r.get("value"))]
    points = drop_resolved_curve([r["stamp"] for r in readings], [r["value"] for r in readings],
                                 [r["stamp"] for r in drops], [r["value"] for r in drops], lags)
    temperatures = [t for t in run.fused("temperature") if _finite(t.get("value"))]
    temperature_stamps = [t["stamp"] for t in temperatures]
    stamps = [r["stamp"] for r in readings]
    rows: list[DropRow] = []
    prev_v = prev_ph = math.nan
    for p in points:
        volume_rec = drops[p.drops - 1] if p.drops else None
        before = bisect.bisect_right(temperature_stamps, p.stamp)   # the latest temperature at the point
        flags = tuple(f"volume:{f}" for f in ((volume_rec or {}).get("quality_flags") or ()))
        at = bisect.bisect_right(stamps, p.stamp) - 1
        state = str(readings[at].get("fsm_state") or "") if at >= 0 else ""
        rows.append(DropRow(
            reading=len(rows) + 1, stamp=p.stamp, drops=p.drops, volume_ml=p.volume_ml,
            d_volume_ml=p.volume_ml - prev_v if rows else math.nan, ph=p.ph, d_ph=p.ph - prev_ph if rows else math.nan,
            ph_confidence=1.0 if p.n_readings >= 3 else p.n_readings / 3.0,
            volume_confidence=float(volume_rec["confidence"]) if volume_rec and _finite(volume_rec.get("confidence"))
            else math.nan,
            volume_channels={}, temperature_c=float(temperatures[before - 1]["value"]) if before else math.nan,
            flags=flags, fsm_state=state, usable=True))
        prev_v, prev_ph = p.volume_ml, p.ph
    return rows
