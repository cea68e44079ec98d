"""What an experiment family is to the generic hosts (planner, executor, report, dispenser session).

A family is one folder, ``agentchemist/experiments/<folder>/``, whose ``__init__`` defines ``FAMILY``, plus
one line in :mod:`agentchemist.experiments` (the registry). The hosts never test a family's name: they ask
the family for the part they host, by aspect, and the folder holds one module per aspect:

- ``planning``: the planning context the family adds to a parsed instruction, its reagent roles and
  capacity checks (the planner's host, :mod:`agentchemist.plan`);
- ``procedure``: what the executor watches while the plan runs (a pH endpoint, a colour endpoint with its
  hold and resume, a mass and a dissolution) (:mod:`agentchemist.fsm.executor`);
- ``results``: the result contract (what the family can deliver, what the instruction asked for) and its
  computation from a run's record (:mod:`agentchemist.report.results`);
- ``report``: the family's blocks in the report (:mod:`agentchemist.report.document`).

Aspects are imported when a host first asks for them, so the registry stays import-light (the schema and
the hosts import it without cycles) and a family may leave out an aspect it has nothing for: the host then
gets None and uses its generic behaviour.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from types import ModuleType

ASPECTS = ("planning", "procedure", "results", "report")


@dataclass(frozen=True)
class Family:
    """One experiment family. ``name`` is the plan's ``parsed_instruction.family`` and the protocol's family."""

    name: str
    label: str                      #: how a chemist reads it: "acid-base titration"
    package: str                    #: the folder's module, agentchemist.experiments.<folder>
    recording: tuple[str, ...] = field(default=())   #: data every run of the family records

    def part(self, aspect: str) -> ModuleType | None:
        """The family's module for ``aspect`` (one of ASPECTS), or None when the family has none."""
        if aspect not in ASPECTS:
            raise ValueError(f"unknown family aspect {aspect!r}; known: {', '.join(ASPECTS)}")
        name = f"{self.package}.{aspect}"
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:  # the aspect exists but something it imports does not: a real error
                raise
            return None
