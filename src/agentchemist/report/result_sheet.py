"""The result sheet: what an autotitrator's report (Metrohm tiamo, Mettler LabX) always has on its first page,
from the run's record only: sample id and size, method and version, titrant and its titer, electrode and its
calibration, operator, the stated results (rounded to their uncertainty), where replicates come from, and a
review/signature block left blank for the people who sign it. A field the run does not record says so;
nothing is filled in from defaults.
"""
from __future__ import annotations

from collections.abc import Mapping

import agentchemist

__all__ = ["NOT_RECORDED", "result_sheet"]

NOT_RECORDED = "not recorded"


def _reagent(reagents, role: str) -> Mapping:
    return next((r for r in reagents or [] if isinstance(r, Mapping) and r.get("role") == role), {})


def result_sheet(experiment: Mapping, results: Mapping, stated: list[dict], origin: str,
                 banner: str | None, titrant_rel_sd: float | None = None) -> dict:
    """The sheet's fields (JSON-ready); ``results`` is the results section, ``stated`` the rounded list,
    ``titrant_rel_sd`` the titer's relative standard uncertainty the budgets used."""
    setup = results.get("setup") or {}
    reagents = experiment.get("reagents") or []
    analyte = _reagent(reagents, "analyte")
    titrant = _reagent(reagents, "titrant")
    u_rel = titrant_rel_sd
    titrant_m = setup.get("titrant_m") if setup.get("titrant_m") is not None else titrant.get("concentration_m")
    size = setup.get("analyte_volume_ml") if setup.get("analyte_volume_ml") is not None else analyte.get("volume_ml")
    electrode = experiment.get("electrode") if isinstance(experiment.get("electrode"), Mapping) else {}
    fitted = results.get("electrode_fit") or {}
    method = ("potentiometric acid-base titration: equivalence points from the first and second derivative, refined "
              "by the equilibrium model fitted across each jump and checked by Gran functions; pKa from the "
              "equilibrium-model fit (Davies activities)") if setup.get("titrant") else NOT_RECORDED
    return {
        "banner": banner,
        "data_origin": origin,
        "sample": {"id": experiment.get("sample_id") or experiment.get("experiment_id") or NOT_RECORDED,
                   "analyte": setup.get("analyte") or analyte.get("name") or NOT_RECORDED,
                   "size": f"{size:g} mL" if isinstance(size, (int, float)) else NOT_RECORDED},
        "method": {"name": method, "software": f"agentchemist {agentchemist.__version__}",
                   "configuration": experiment.get("config_hash") or NOT_RECORDED,
                   "protocol": experiment.get("protocol") or NOT_RECORDED},
        "titrant": {"name": setup.get("titrant") or titrant.get("name") or NOT_RECORDED,
                    "titer_m": titrant_m if titrant_m is not None else NOT_RECORDED,
                    "titer_relative_u": u_rel if u_rel is not None else NOT_RECORDED,
                    "titer_date": experiment.get("titer_date") or titrant.get("titer_date") or NOT_RECORDED,
                    "batch": titrant.get("batch") or NOT_RECORDED},
        "electrode": {"id": electrode.get("probe") or NOT_RECORDED,
                      "slope_pct": electrode.get("slope_pct", NOT_RECORDED),
                      "offset_mv": electrode.get("offset_mv", NOT_RECORDED),
                      "calibration_date": electrode.get("calibration_date", NOT_RECORDED),
                      "source": electrode.get("source") or NOT_RECORDED,
                      "fitted_with_the_curve": ({"offset_ph": fitted.get("offset_ph"), "slope": fitted.get("slope")}
                                                if fitted else None)},
        "operator": experiment.get("operator") or NOT_RECORDED,
        "results": stated,
        "replicates": "single run: `agentchemist report RUN RUN ... --replicates` gives mean, SD and RSD",
        "sign_off": {"analysed_by": experiment.get("operator") or "", "reviewed_by": "", "date": "", "signature": ""},
    }
