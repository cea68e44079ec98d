"""Complexometric titration in the report: the endpoint volume and the calcium concentration, and the
colour (hue the front camera measured) against the titrant volume."""
from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from agentchemist.report import charts as ch
from agentchemist.report.document import fmt_sig
from agentchemist.report.model import RunData, series
from agentchemist.report.results import ResultsContext


def key_values(results: dict, rows: list[tuple[str, str]]) -> list[tuple[str, str]]:
    out = list(rows)
    for key, label in (("endpoint_volume_ml", "Endpoint volume (mL)"), ("calcium_m", "Ca2+ (mol/L)")):
        if key in results:
            out.append((label, fmt_sig(results[key], 5)))
    return out


def _colour_against_volume(run: RunData) -> tuple[np.ndarray, np.ndarray] | None:
    """(titrant volume, hue) at each hue the camera measured: the volume is the last fused record at or
    before the frame (0 before the first drop)."""
    obs = [(float(o["stamp"]), float(o["value"])) for o in run.raw_observations
           if o.get("quantity") == "colour_hue" and isinstance(o.get("value"), (int, float))
           and math.isfinite(o["value"]) and isinstance(o.get("stamp"), (int, float))]
    s_v, v_v = series(run, "titrant_volume")
    if not obs or not v_v.size:
        return None
    stamps = np.array([o[0] for o in obs])
    hues = np.array([o[1] for o in obs])
    i = np.searchsorted(s_v, stamps, side="right") - 1
    volumes = np.where(i >= 0, v_v[np.clip(i, 0, None)], 0.0)
    return volumes, hues


def _colour_change(run: RunData) -> tuple[str, str] | None:
    plan = run.experiment.get("plan") if isinstance(run.experiment.get("plan"), Mapping) else {}
    change = ((plan.get("parsed_instruction") or {}).get("target_conditions") or {}).get("colour_change")
    if isinstance(change, Mapping) and change.get("from_colour") and change.get("to_colour"):
        return str(change["from_colour"]), str(change["to_colour"])
    return None


def charts(run: RunData, ctx: ResultsContext, attempt, titrant_label: str) -> None:
    colour = _colour_against_volume(run)
    if colour is not None:
        change = _colour_change(run)
        attempt("colour_curve", lambda: ch.colour_curve_figure(
            colour[0], colour[1], endpoint_ml=ctx.results.get("endpoint_volume_ml"), titrant_label=titrant_label,
            colour_change=change))
