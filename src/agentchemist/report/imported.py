"""A measured curve from a file as a run the report writes: `agentchemist analyze FILE`.

The report is written from :class:`~agentchemist.report.model.RunData`; an imported curve becomes one
with a titrant-volume record and a pH record per row of the file (stamps are the row numbers: the file
has no clock), the reagents the chemist named, and ``data_origin = "imported"``, which the report prints
on its first line and which keeps the robot's own corrections out:

- the readings were not gated by the robot's settle test, so there is no settling-lag correction
  (``settle_lag_bound_ph`` 0);
- the volume came from the instrument the chemist names (:data:`INCREMENTS`), not counted in drops: its
  budget is that instrument's (a burette's calibration tolerance and reading, a pump's calibration and
  step scatter, a dropper's drop calibration and scatter), and the report says "additions".

Instrument figures (standard uncertainties), and why:

- ``burette``: class A 50 mL burettes are within +-0.05 mL (ISO 385), 0.1 % of 50 mL taken as the
  relative calibration uncertainty (class B is twice that: covered with the reading term); each
  reading is uncertain by the larger of 0.03 mL (a tenth of a 0.1 mL graduation read by eye, with
  parallax and drainage) and the resolution the volumes were written with / sqrt(12); an equivalence
  volume is the difference of two readings, so sqrt(2) readings. No random walk: a burette reads the
  cumulative volume directly.
- ``pump``: a stepper or peristaltic pump counted in steps: 1 % calibration (a gravimetric check), 2 %
  scatter of each addition, which adds as a random walk.
- ``dropper``: a counted dropper, the twin pipette's figures (1 % calibration, 3.2 % drop scatter).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .curve_file import CurveTable
from .model import RunData

__all__ = ["INCREMENTS", "ImportRequest", "imported_run", "increment_uncertainty"]

#: kind -> (relative calibration sd, relative scatter per addition, reading sd mL, what it is)
INCREMENTS = {
    "burette": (0.001, 0.0, 0.03, "burette: cumulative volume read at each addition"),
    "pump": (0.01, 0.02, 0.0, "pump: volume counted in pump steps"),
    "dropper": (0.01, 0.032, 0.0, "dropper: volume counted in drops"),
}


@dataclass(frozen=True)
class ImportRequest:
    """What the chemist says about the measured curve (concentrations mol/L, volumes mL)."""

    analyte: str
    analyte_volume_ml: float
    titrant: str
    titrant_m: float
    analyte_m: float | None = None
    increment: str = "burette"
    titrant_rel_u: float | None = None     # relative standard uncertainty of titrant_m (None: 0.5 %)
    temperature_c: float | None = None
    sample_id: str | None = None
    operator: str | None = None


def increment_uncertainty(kind: str, resolution_ml: float, titrant_rel_u: float | None = None) -> dict:
    """The UncertaintyInputs fields for volumes measured with ``kind`` (see :data:`INCREMENTS`)."""
    if kind not in INCREMENTS:
        raise ValueError(f"--increment {kind!r}: one of {', '.join(INCREMENTS)}")
    calibration, scatter, reading, _ = INCREMENTS[kind]
    if reading:
        reading = max(reading, resolution_ml / math.sqrt(12.0))
    out = {"drop_volume_rel_sd": calibration, "drop_scatter_rel_sd": scatter, "volume_reading_sd_ml": reading,
           "settle_lag_bound_ph": 0.0, "volume_increment": {"burette": "addition", "pump": "pump step"}.get(kind, "drop")}
    if titrant_rel_u is not None:
        out["titrant_rel_sd"] = titrant_rel_u
    return out


def _positive(name: str, value) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    if not (math.isfinite(x) and x > 0):
        raise ValueError(f"{name} must be a number > 0, got {value!r}")
    return x


def imported_run(curve: CurveTable, request: ImportRequest) -> tuple[RunData, dict]:
    """(the run, the analysis options) for ``curve`` as ``request`` describes it. Raises ValueError on a
    request that cannot be analysed (an unknown reagent, a volume <= 0 ...)."""
    from agentchemist.chemistry.reagents import default_library

    library = default_library()
    analyte = library.get(request.analyte)   # UnknownReagentError (a ValueError) names the reagent
    titrant = library.get(request.titrant)
    if titrant.strong_protons == 0:
        raise ValueError(f"--titrant {request.titrant!r} is not a strong acid or base")
    v_a = _positive("--analyte-volume", request.analyte_volume_ml)
    c_t = _positive("--titrant-molarity", request.titrant_m)
    c_a = _positive("--analyte-molarity", request.analyte_m) if request.analyte_m is not None else None
    if request.titrant_rel_u is not None and not (0 <= request.titrant_rel_u < 0.5):
        raise ValueError(f"--titrant-rel-u must be a fraction 0..0.5, got {request.titrant_rel_u!r}")
    uncertainty = increment_uncertainty(request.increment, curve.volume_resolution_ml, request.titrant_rel_u)
    records: list[dict] = []
    temperatures = curve.temperature_c
    for i, (v, ph) in enumerate(zip(curve.volume_ml, curve.ph)):
        stamp = float(i)
        if i > 0 or v > 0:
            records.append({"stamp": stamp, "quantity": "titrant_volume", "value": float(v), "unit": "mL",
                            "confidence": 1.0, "quality_flags": []})
        if temperatures is not None and math.isfinite(temperatures[i]):
            records.append({"stamp": stamp + 0.25, "quantity": "temperature", "value": float(temperatures[i]),
                            "unit": "degC", "confidence": 1.0, "quality_flags": []})
        records.append({"stamp": stamp + 0.5, "quantity": "ph_settled", "value": float(ph), "unit": "pH",
                        "confidence": 1.0, "quality_flags": []})
    temperature = request.temperature_c
    if temperature is None and temperatures is not None and np.isfinite(temperatures).any():
        temperature = float(np.nanmedian(temperatures))
    conditions = {"temperature_start_c": temperature} if temperature is not None else {}
    if temperatures is not None and np.isfinite(temperatures).any():
        conditions["temperature_end_c"] = float(temperatures[np.isfinite(temperatures)][-1])
    reagents = [{"name": analyte.name, "role": "analyte", "volume_ml": v_a,
                 **({"concentration_m": c_a} if c_a is not None else {"unknown": True})},
                {"name": titrant.name, "role": "titrant", "concentration_m": c_t}]
    experiment = {
        "experiment_id": request.sample_id or f"import-{curve.path.stem}",
        "instruction": "", "operator": request.operator, "status": "completed", "started": 0.0,
        "finished": float(len(curve.volume_ml)), "data_origin": "imported",
        "source_file": {"path": str(curve.path), "volume_column": curve.volume_column, "ph_column": curve.ph_column,
                        "volume_unit": curve.volume_unit, "rows": int(curve.volume_ml.size),
                        "volume_resolution_ml": curve.volume_resolution_ml, "ph_resolution": curve.ph_resolution,
                        "increment": request.increment, "increment_note": INCREMENTS[request.increment][3],
                        "notes": list(curve.notes)},
        "reagents": reagents, "conditions": conditions,
        "parameters": {"increment": request.increment},
    }
    options = {"analyte": analyte.name, "analyte_volume_ml": v_a, "titrant": titrant.name, "titrant_m": c_t,
               "uncertainty": uncertainty, "imported": True}
    if c_a is not None:
        options["analyte_m"] = c_a
    if temperature is not None:
        options["temperature_c"] = temperature
    return RunData(experiment=experiment, fused_records=records), options
