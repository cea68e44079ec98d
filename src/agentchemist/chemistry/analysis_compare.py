"""Measured results compared with theory (the equilibrium model at nominal concentrations) and with
literature constants (the reagent library's ``literature`` block, with its source).

deviation = measured - reference; relative_deviation = deviation / |reference| (NaN for a zero
reference). A comparison is listed even when the measured claim is unsupported, marked as such, so
the report can say why it is not a finding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .analysis_types import DEFAULT_ACTIVITY, AnalysisInputError, TitrationAnalysis
from .equilibrium import equivalence_volumes_ml, titration_curve
from .reagents import ReagentLibrary, default_library

__all__ = ["CurveComparison", "Deviation", "compare_with_references"]


@dataclass(frozen=True)
class Deviation:
    """One measured quantity against one reference value (units in ``unit``)."""

    quantity: str
    unit: str
    measured: float
    measured_uncertainty: float
    method: str
    reference: float
    reference_kind: str  # "theory" | "literature" | "nominal"
    source: str
    deviation: float
    relative_deviation: float
    supported: bool
    note: str = ""


@dataclass(frozen=True)
class CurveComparison:
    """Measured pH against the theoretical curve at the measured volumes (pH units)."""

    n_points: int
    rms_ph: float
    mean_ph: float
    max_abs_ph: float
    source: str
    theory_ph: np.ndarray


def _deviation(quantity, unit, measured, u, method, reference, kind, source, supported, note="") -> Deviation:
    dev = measured - reference
    rel = dev / abs(reference) if reference != 0 else math.nan
    return Deviation(quantity, unit, measured, u, method, reference, kind, source, dev, rel, supported, note)


def compare_with_references(
    analysis: TitrationAnalysis,
    *,
    analyte_m: float | None = None,
    temperature_c: float = 25.0,
    activity: bool = DEFAULT_ACTIVITY,
    library: ReagentLibrary | None = None,
) -> tuple[list[Deviation], CurveComparison | None]:
    """Deviations of equivalence volumes, concentration and pKa values, and the point-by-point curve.

    ``analyte_m`` is the nominal analyte concentration (mol/L) stated in the instruction; theory needs
    it plus the titrant concentration and analyte volume recorded in ``analysis``.
    """
    if analyte_m is not None and not (math.isfinite(analyte_m) and analyte_m > 0):
        raise AnalysisInputError(f"nominal analyte concentration must be > 0 mol/L, got {analyte_m!r}")
    lib = library or default_library()
    out: list[Deviation] = []
    curve = None
    analyte = lib.get(analysis.analyte) if analysis.analyte else None
    known = analyte is not None and analyte_m is not None and analysis.titrant_m and analysis.analyte_volume_ml
    if known:
        analyte_map = {analyte.name: analyte_m}
        titrant_map = {analysis.titrant: analysis.titrant_m}
        source = (f"equilibrium model: {analyte_m:g} M {analyte.display_name}, {analysis.analyte_volume_ml:g} mL, "
                  f"titrated with {analysis.titrant_m:g} M {lib.get(analysis.titrant).display_name}")
        theory_v = equivalence_volumes_ml(analyte_map, analysis.analyte_volume_ml, titrant_map, library=lib)
        for eq in analysis.equivalence_points:
            if eq.index <= len(theory_v):
                out.append(_deviation(f"equivalence volume {eq.index}", "mL", eq.volume_ml, eq.uncertainty_ml,
                                      eq.method, theory_v[eq.index - 1], "theory", source, eq.supported))
                # The pH of the theoretical curve at its own equivalence volume (7.00 for HCl/NaOH at 25 degC).
                theory_ph = float(titration_curve(analyte_map, analysis.analyte_volume_ml, titrant_map,
                                                  np.array([theory_v[eq.index - 1]]), temperature_c=temperature_c,
                                                  activity=activity, library=lib)[0])
                if math.isfinite(eq.ph):
                    out.append(_deviation(f"equivalence pH {eq.index}", "", eq.ph, math.nan, eq.method, theory_ph,
                                          "theory", source, eq.supported))
        if analysis.fit is not None:
            for k, v in enumerate(analysis.fit.equivalence_volumes_ml[: len(theory_v)], start=1):
                u = v * analysis.fit.uncertainties.get("analyte_m", math.nan) / analysis.fit.parameters["analyte_m"]
                out.append(_deviation(f"equivalence volume {k}", "mL", v, u, "curve_fit", theory_v[k - 1], "theory",
                                      source, analysis.fit.converged))
        conc = analysis.concentration
        if conc is not None:
            out.append(_deviation("analyte concentration", "mol/L", conc["analyte_m"], conc["uncertainty_m"],
                                  conc["method"], analyte_m, "nominal", "concentration stated in the instruction",
                                  bool(conc["supported"])))
            fit_c = conc.get("curve_fit")
            if fit_c:
                out.append(_deviation("analyte concentration", "mol/L", fit_c["analyte_m"], fit_c["uncertainty_m"],
                                      "curve_fit", analyte_m, "nominal", "concentration stated in the instruction",
                                      bool(fit_c["converged"])))
        if analysis.volume_ml.size:
            theory_ph = titration_curve(analyte_map, analysis.analyte_volume_ml, titrant_map, analysis.volume_ml,
                                        temperature_c=temperature_c, activity=activity, library=lib)
            diff = analysis.ph - theory_ph
            curve = CurveComparison(int(diff.size), float(np.sqrt(np.mean(diff**2))), float(np.mean(diff)),
                                    float(np.max(np.abs(diff))), source, theory_ph)
    if analyte is not None and analyte.literature is not None:
        lit = analyte.literature
        # Literature may list a strong first proton the model leaves out (H2SO4: -3, 1.99 vs 1.99).
        offset = max(len(lit.pka) - len(analyte.pka), 0)
        for est in analysis.pka:
            if not math.isfinite(est.value) or est.index + offset > len(lit.pka) or not analyte.pka:
                continue
            note = "" if activity else ("literature pKa is thermodynamic (activities); the fit used concentrations"
                                        if est.method == "curve_fit" else "")
            out.append(_deviation(f"pKa{est.index}", "", est.value, est.uncertainty, est.method,
                                  lit.pka[est.index + offset - 1], "literature", lit.source, est.supported, note))
    return out, curve
