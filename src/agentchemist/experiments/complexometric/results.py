"""Complexometric (Ca/EDTA) titration results: the titrant volume at the colour endpoint and the calcium
concentration it gives (1:1 complex), with its deviation from the stated concentration.
"""
from __future__ import annotations

from collections.abc import Mapping

from agentchemist.chemistry.analysis import ca_concentration_from_endpoint
from agentchemist.report.model import RunData, series
from agentchemist.report.results import ResultsContext, TitrationSetup, finite

DELIVERS = ("endpoint_volume_ml", "endpoint_stamp", "calcium_m", "calcium_relative_deviation")
TITRANT = True


def compute(run: RunData, setup: TitrationSetup, opts: Mapping, out: dict, ctx: ResultsContext) -> None:
    endpoint = next((t for t in run.transitions if t.get("symbol") == "endpoint"), None)
    stamps, volumes = series(run, "titrant_volume")
    if endpoint is None or not volumes.size:
        ctx.not_concluded.append("no complexometric endpoint: " + (
            "no 'endpoint' transition was recorded" if endpoint is None else "no titrant volume was recorded"))
        return
    before = stamps <= float(endpoint["stamp"])
    if not before.any():
        ctx.not_concluded.append("no titrant volume was recorded before the endpoint")
        return
    v_ep = float(volumes[before][-1])
    out["endpoint_volume_ml"] = v_ep
    out["endpoint_stamp"] = float(endpoint["stamp"])
    sample = finite(opts.get("sample_volume_ml")) or setup.analyte_volume_ml
    if setup.titrant_m is None or sample is None or v_ep <= 0:
        ctx.not_concluded.append("no Ca2+ concentration: the EDTA concentration or the sample volume is not recorded")
        return
    c = ca_concentration_from_endpoint(setup.titrant_m, v_ep, sample)
    out["calcium_m"] = c
    ctx.concluded.append(f"Ca2+ concentration {c:.5f} mol/L from the endpoint at {v_ep:.3f} mL")
    if setup.analyte_m:
        out["calcium_relative_deviation"] = (c - setup.analyte_m) / setup.analyte_m


def found_equivalences(results: Mapping) -> list[float]:
    return [results["endpoint_volume_ml"]] if finite(results.get("endpoint_volume_ml")) is not None else []


def measured_concentration(results: Mapping) -> float | None:
    return finite(results.get("calcium_m"))
