"""The results aspect of a family: what the report's results section (:mod:`agentchemist.report.results`)
and the scenario scoring (:mod:`agentchemist.scoring.run_score`) ask a family's
``experiments/<folder>/results.py``.

The host (``report.results.compute_results``) resolves the run's setup (what was titrated or weighed),
states what every run shows (final pH, titrant volume, drops, temperatures, an interruption), then hands
the run to its family's :func:`FamilyResults.compute`, which adds the family's results to the JSON-ready
dict and says what it concluded and what it could not. A run whose record names no family is the
family whose ``RECORDED_AS`` quantities it recorded (registry order); a run that says it is of an
``unknown`` family but has settled pH readings is analysed by the family marked ``ANALYSES_UNLABELLED``.

The result contract: ``DELIVERS`` lists the results (keys of the results dict) the family can deliver;
the scoring reads what a run found through :func:`FamilyResults.found_equivalences` and
:func:`FamilyResults.measured_concentration`, never through the family's own keys.

What the instruction asked for (optional, per family): ``asked_for(plan, results)`` names the results the
run's instruction asked for (a curve, an equivalence point, a pKa, a concentration, a mass), and
``lacking(result, results)`` says why the results do not deliver one (None when they do). The host's
:func:`missing_results` is what the one outcome judge (agentchemist.record.outcome.delivered) reads: a run
that ends without one of them is not "completed".
"""
from __future__ import annotations

from collections.abc import Mapping
from types import ModuleType
from typing import Any, Callable, Protocol

from agentchemist.experiments import FAMILIES, Family

__all__ = ["UNKNOWN", "FamilyResults", "missing_results", "recognised_from", "results_of", "unlabelled",
           "unlabelled_family"]

#: the family of a run neither its record nor its data name
UNKNOWN = "unknown"


class FamilyResults(Protocol):
    """The module-level names of ``experiments/<folder>/results.py``."""

    #: the result keys the family's computation can add to the results dict
    DELIVERS: tuple[str, ...]
    #: whether the run adds titrant and reads pH: the setup's titrant fields are facts, and a run without
    #: a final pH or a titrant volume is told so (a weighing has neither, and no titrant to name)
    TITRANT: bool
    #: fused quantities by which a run whose record names no family is recognised as this family (optional)
    RECORDED_AS: tuple[str, ...]
    #: this family analyses a run of an unknown family that has settled pH readings (optional; one family)
    ANALYSES_UNLABELLED: bool

    def compute(self, run: Any, setup: Any, opts: Mapping[str, Any], out: dict, ctx: Any) -> None:
        """(``run`` a report.model.RunData, ``setup`` a report.results.TitrationSetup, ``ctx`` its
        ResultsContext: typed loosely, since the report imports this module.) Add the family's results to ``out`` (ctx.results) from the run's record; append to
        ``ctx.concluded`` / ``ctx.not_concluded``; set ``ctx.analysis`` / ``ctx.curve`` for the charts.
        Never raises on bad data: what cannot be concluded is said, with the reason."""

    def found_equivalences(self, results: Mapping[str, Any]) -> list[float]:
        """The equivalence (or endpoint) volumes (mL) a run's results state, in order."""

    def measured_concentration(self, results: Mapping[str, Any]) -> float | None:
        """The analyte concentration (mol/L) a run's results state, or None."""


def results_of(name: str | None) -> ModuleType | None:
    """The results aspect of the family ``name``; None for a name no family registers (or without one)."""
    fam = FAMILIES.get(str(name)) if name else None
    return fam.part("results") if fam is not None else None


def missing_results(family_name: str | None, plan: Mapping[str, Any], results: Mapping[str, Any]
                    ) -> list[tuple[str, str]]:
    """(result, why) for each result the run's instruction asked for that ``results`` do not deliver; [] for
    a family without a result contract (``asked_for``) or a run without a plan."""
    part = results_of(family_name)
    asked = getattr(part, "asked_for", None) if part is not None else None
    if asked is None or not isinstance(plan, Mapping) or not plan:
        return []
    missing = []
    for result in asked(plan, results):
        why = part.lacking(result, results)
        if why is not None:
            missing.append((result, why))
    return missing


def recognised_from(recorded: Callable[[str], bool]) -> str | None:
    """The first family (registry order) with a quantity the run recorded among its RECORDED_AS;
    ``recorded(quantity)``: whether the run has fused records of it."""
    for fam in FAMILIES.values():
        part = fam.part("results")
        if part is not None and any(recorded(q) for q in getattr(part, "RECORDED_AS", ())):
            return fam.name
    return None


def unlabelled_family() -> Family | None:
    """The family that analyses (and reports) a run of an unknown family with settled pH readings."""
    for fam in FAMILIES.values():
        part = fam.part("results")
        if part is not None and getattr(part, "ANALYSES_UNLABELLED", False):
            return fam
    return None


def unlabelled() -> ModuleType | None:
    """The results aspect of :func:`unlabelled_family`."""
    fam = unlabelled_family()
    return fam.part("results") if fam is not None else None
