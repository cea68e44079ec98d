"""What an acid-base titration's instruction asked for, and whether the run's results deliver it.

Asked, whatever the wording:
- the **titration curve** (pH against volume): every titration yields it;
- the **equivalence point**, when the run goes to it: the plan says "to the equivalence point", stops on an
  indicator's colour, determines an unknown concentration, or its pH target lies past the equivalence pH the
  plan's reagents predict (a target before it, e.g. acetic acid to pH 8.2 where the equivalence is at 8.7,
  asks for the endpoint volume only, and the report says why no equivalence is stated);
- the **pKa**, when the instruction asks for it (the plan's output ``pka``) and the analyte has one: a strong
  acid such as HCl has no measurable pKa (the paper's worked example asks for one), and the report says so
  instead of stating a number;
- the **analyte concentration**, for an unknown analyte (a determination).

A result is delivered when the report states it as a finding (supported); otherwise its reason is the
report's own ("not stated: ...").
"""
from __future__ import annotations

import math
from collections.abc import Mapping

from agentchemist.chemistry.equilibrium import equivalence_volumes_ml, titration_curve
from agentchemist.chemistry.reagents import default_library

__all__ = ["CURVE", "EQUIVALENCE", "PKA", "CONCENTRATION", "asked_for", "lacking", "predicted_equivalence_ph"]

CURVE, EQUIVALENCE, PKA, CONCENTRATION = "titration curve", "equivalence point", "pKa", "analyte concentration"
#: distinct volumes a curve needs to be one (the analysis's own minimum)
MIN_CURVE_POINTS = 8


def _parsed(plan: Mapping) -> Mapping:
    pi = plan.get("parsed_instruction") if isinstance(plan, Mapping) else None
    return pi if isinstance(pi, Mapping) else {}


def predicted_equivalence_ph(setup: Mapping) -> float | None:
    """The pH at the last equivalence volume the setup's reagents predict (as the electrode reads it), or None."""
    try:
        analyte = {setup["analyte"]: float(setup["analyte_m"])}
        titrant = {setup["titrant"]: float(setup["titrant_m"])}
        va = float(setup["analyte_volume_ml"])
        veq = equivalence_volumes_ml(analyte, va, titrant)[-1]
        return float(titration_curve(analyte, va, titrant, [veq], activity=True)[0])
    except (KeyError, TypeError, ValueError, ArithmeticError, IndexError):
        return None


def _has_pka(name: str | None) -> bool:
    """Whether the analyte has a pKa a titration with the meter can measure (a weak step in 0-14); True
    when the library does not know it (the report then says what it could not state)."""
    if not name:
        return True
    try:
        return any(0.0 < p < 14.0 for p in default_library().get(name).pka)
    except (KeyError, ValueError, LookupError):
        return True


def asked_for(plan: Mapping, results: Mapping) -> tuple[str, ...]:
    """The results the run's instruction asked for (see the module docstring)."""
    pi = _parsed(plan)
    target = pi.get("target_conditions") if isinstance(pi.get("target_conditions"), Mapping) else {}
    outputs = {str(x) for x in pi.get("output_format") or ()}
    reagents = [r for r in (pi.get("entities") or {}).get("reagents") or () if isinstance(r, Mapping)]
    unknown_analyte = any(r.get("role") == "analyte" and r.get("unknown") for r in reagents)
    asked = [CURVE]
    goes_to_equivalence = bool(target.get("to_equivalence") or target.get("colour_change") or unknown_analyte)
    target_ph = target.get("target_ph")
    if not goes_to_equivalence and isinstance(target_ph, (int, float)) and math.isfinite(target_ph):
        setup = results.get("setup") if isinstance(results.get("setup"), Mapping) else {}
        # the family's results computed it once; a results dict without it (no curve rows) computes it here
        eq_ph = (results["equivalence_ph_predicted"] if "equivalence_ph_predicted" in results
                 else predicted_equivalence_ph(setup))
        start = results.get("initial_ph_measured")
        if eq_ph is not None and isinstance(start, (int, float)) and math.isfinite(start):
            rising = target_ph > start
            goes_to_equivalence = target_ph >= eq_ph if rising else target_ph <= eq_ph
    if goes_to_equivalence:
        asked.append(EQUIVALENCE)
    analyte = next((str(r.get("name")) for r in reagents if r.get("role") == "analyte"), None)
    if "pka" in outputs and _has_pka(analyte):
        asked.append(PKA)
    if unknown_analyte:
        asked.append(CONCENTRATION)
    return tuple(asked)


def _first_reason(results: Mapping, *words: str) -> str:
    for line in results.get("not_concluded") or ():
        if all(w.lower() in str(line).lower() for w in words):
            return str(line)
    return ""


def lacking(result: str, results: Mapping) -> str | None:
    """None when ``results`` deliver ``result``; else why not (the report's own reason where it gave one)."""
    if result == CURVE:
        distinct = results.get("curve_points")
        if isinstance(distinct, int) and distinct >= MIN_CURVE_POINTS:
            return None
        return _first_reason(results, "distinct volume") or f"only {distinct or 0} distinct volume(s) with a pH"
    if result == EQUIVALENCE:
        if any(e.get("supported") for e in results.get("equivalence_points") or ()):
            return None
        return _first_reason(results, "equivalence") or "no equivalence point was located"
    if result == PKA:
        if any(p.get("supported") for p in results.get("pka") or ()):
            return None
        return _first_reason(results, "pka") or "no pKa could be stated"
    if result == CONCENTRATION:
        conc = results.get("concentration")
        if isinstance(conc, Mapping) and conc.get("supported"):
            return None
        return _first_reason(results, "concentration") or "no concentration could be stated"
    return None
