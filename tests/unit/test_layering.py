"""Issue 36: which core package may import which (docs/architecture.md, "Core layering"), and where the
experiment families' names may appear.

A package may import packages of its own layer or below, never above: a change in a host (the planner,
the executor, the report) cannot need a change in a foundation, and a family plugs into its hosts without
the hosts importing it. The experiments package is three things on three layers: its registry
(``experiments``, ``experiments.family``) is a foundation everything may read; its interfaces
(``experiments.procedure``, ``planning``, ``titration_planning``, ``results``, ``report``) sit with the
host that calls them; the family folders (``experiments.<folder>``) sit above every host, and the hosts
reach them only through the registry at run time (``Family.part``), never by a static import.
Imports under ``if TYPE_CHECKING:`` are annotations, not dependencies, and are not counted."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.conftest import REPO

CORE = REPO / "src" / "agentchemist"
NODES = REPO / "ros2_ws" / "src" / "agentchemist_ros" / "agentchemist_ros"

#: lowest first; a unit may import its own layer and the layers before it
LAYERS: tuple[frozenset[str], ...] = tuple(frozenset(s.split()) for s in (
    "limits names params paths exit_codes contracts experiments experiments.family",   # foundations
    "chemistry workcell",                                                   # science and the bench, as data
    "perception hardware record bag viz",                                   # senses, devices, the record, bags
    "policy fsm experiments.procedure",                                     # the arms; the executor's host
    "control",                                                              # the dispenser (reads fsm's node watch)
    "plan experiments.planning experiments.titration_planning",             # the planner's host
    "report experiments.results experiments.report",                        # the report's host
    "experiments.<family>",                                                 # the families, above their hosts
    "scoring sim",                                                          # the twin and its scoring
    "cli vla_cli analyze_cli console",                                      # entry points
))


def layer_of(unit: str) -> int:
    for i, units in enumerate(LAYERS):
        if unit in units:
            return i
    raise KeyError(f"{unit} has no layer in test_layering.LAYERS: place it (and in docs/architecture.md)")


def unit_of(parts: tuple[str, ...]) -> str:
    """The layering unit of a module path under agentchemist (parts without the .py suffix)."""
    if parts[0] != "experiments":
        return parts[0]
    if len(parts) == 1 or parts[1] == "__init__":
        return "experiments"
    if (CORE / "experiments" / parts[1]).is_dir():
        return "experiments.<family>"
    return f"experiments.{parts[1]}"


def runtime_imports(source: str) -> list[str]:
    """Absolute agentchemist imports outside `if TYPE_CHECKING:` blocks."""
    tree = ast.parse(source)
    typing_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If)
                   and "TYPE_CHECKING" in ast.unparse(block.test) for n in ast.walk(block)}
    names: list[str] = []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return [n for n in names if n.startswith("agentchemist.")]


def layering_violations(root: Path) -> list[str]:
    out = []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        here = unit_of(parts)
        for name in runtime_imports(path.read_text()):
            there = unit_of(tuple(name.split(".")[1:]))
            if there != here and layer_of(there) > layer_of(here):
                out.append(f"{path.relative_to(root)} ({here}, layer {layer_of(here)}) imports {name} "
                           f"({there}, layer {layer_of(there)})")
    return out


def test_every_core_package_has_a_layer():
    units = {unit_of(p.relative_to(CORE).with_suffix("").parts) for p in CORE.rglob("*.py")}
    units -= {"__init__", "__main__"}
    assert units >= {"fsm", "plan", "report", "experiments.<family>", "contracts"}
    for unit in units:
        layer_of(unit)


def test_the_core_imports_only_downwards():
    assert layering_violations(CORE) == []


def test_layering_check_catches_an_upward_import(tmp_path, monkeypatch):
    root = tmp_path / "agentchemist"
    (root / "fsm").mkdir(parents=True)
    (root / "fsm" / "bad.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "from agentchemist.plan.schema import Plan\n"                  # fsm -> plan: upward
        "if TYPE_CHECKING:\n    from agentchemist.report.model import X\n"   # annotation only: allowed
        "from agentchemist.experiments import family\n")             # the registry: allowed
    (root / "fsm" / "host.py").write_text("from agentchemist.experiments.acid_base.procedure import P\n")
    found = layering_violations(root)
    assert len(found) == 2
    assert any("imports agentchemist.plan.schema" in f for f in found)
    assert any("experiments.acid_base.procedure" in f and "experiments.<family>" in f for f in found)


# ---------------------------------------------------------------- family names stay in their folders
#: Files outside experiments/ (and the twin, which plays the chemistry) that may still name a family, each
#: with why. The issue's bound is 4.
FAMILY_NAME_ALLOWED = {
    # the recorder's plausibility gate compares a reading with the acid-base curve only; it reads the
    # plan's family as data, and a record must not depend on the planner's registry being importable
    "src/agentchemist/record/plausibility.py",
}


def family_name_files(roots: list[Path], names: list[str], base: Path = REPO) -> list[str]:
    """Files under `roots` (outside their experiments/ and sim/) naming a family or testing pour_solid."""
    pattern = re.compile("|".join([re.escape(n) for n in names] + [r"[\"']pour_solid[\"']"]))
    return sorted(str(p.relative_to(base)) for root in roots for p in root.rglob("*.py")
                  if p.relative_to(root).parts[0] not in ("experiments", "sim") and pattern.search(p.read_text()))


def test_family_names_appear_only_in_their_folders():
    from agentchemist.experiments import family_names
    names = list(family_names())
    assert len(names) >= 4
    found = family_name_files([CORE, NODES], names)
    assert len(FAMILY_NAME_ALLOWED) <= 4
    assert set(found) <= FAMILY_NAME_ALLOWED, f"family names outside experiments/: {sorted(set(found) - FAMILY_NAME_ALLOWED)}"


def test_family_name_check_catches_a_host_that_branches(tmp_path):
    (tmp_path / "fsm").mkdir()
    (tmp_path / "fsm" / "x.py").write_text("if task.primitive == 'pour_solid':\n    pass\n")
    (tmp_path / "experiments" / "weighing").mkdir(parents=True)
    (tmp_path / "experiments" / "weighing" / "p.py").write_text("NAME = 'weighing_dissolution'\n")
    (tmp_path / "report.py").write_text("if fam == 'weighing_dissolution': pass\n")
    assert family_name_files([tmp_path], ["weighing_dissolution"], base=tmp_path) == ["fsm/x.py", "report.py"]
