"""The report aspect of a family: what the report (:mod:`agentchemist.report`) asks a family's
``experiments/<folder>/report.py``.

The report is a generic host: its sections (summary, plan, machine, data, events, anomalies, results,
reproducibility) hold what every run records. A family adds its own rows to the results section's
key-value block (:func:`FamilyReport.key_values`), its own charts (:func:`FamilyReport.charts`), and
names the snapshots a chemist expects to see of its run (``SNAPSHOTS``). A run of the ``unknown`` family
is reported by the family that analyses it (agentchemist.experiments.results.unlabelled_family).
"""
from __future__ import annotations

from types import ModuleType
from typing import Any, Callable, Protocol

from agentchemist.experiments import FAMILIES
from agentchemist.experiments.results import UNKNOWN, unlabelled_family

__all__ = ["DEFAULT_SNAPSHOTS", "FamilyReport", "report_of", "reported_as"]

#: the moments a chemist wants to see of a run whose family names none: the bench at the start and at the end point
DEFAULT_SNAPSHOTS = ("start", "endpoint")

#: the writer's chart maker: attempt(name, build) draws build() into <name>.png, or notes why it could not
Attempt = Callable[[str, Callable[[], Any]], None]


class FamilyReport(Protocol):
    """The module-level names of ``experiments/<folder>/report.py`` (all optional but key_values)."""

    #: the snapshot labels a run of the family should have (the report lists those missing)
    SNAPSHOTS: tuple[str, ...]
    #: the four titration-curve charts are expected: when they cannot be drawn the report says why
    TITRATION_CURVE: bool

    def key_values(self, results: dict, rows: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """The results block's (label, text) rows: ``rows`` are the host's rows of what a titration run
        measures (final pH, titrant volume, drops, initial pH, temperatures); ``results`` is the results
        section (sections.results of report.json). Return the family's rows: those it keeps, then its own."""

    def charts(self, run: Any, ctx: Any, attempt: Attempt, titrant_label: str) -> None:
        """Draw the family's charts with ``attempt`` (``run`` a report.model.RunData, ``ctx`` a
        report.results.ResultsContext)."""


def report_of(name: str | None) -> ModuleType | None:
    """The report aspect of the family ``name``; None for a name no family registers (or without one)."""
    fam = FAMILIES.get(str(name)) if name else None
    return fam.part("report") if fam is not None else None


def reported_as(name: str | None) -> ModuleType | None:
    """The report aspect the results block of a run of family ``name`` uses: the family's own, or for the
    ``unknown`` family the one of the family that analyses it."""
    if name == UNKNOWN:
        fam = unlabelled_family()
        return fam.part("report") if fam is not None else None
    return report_of(name)
