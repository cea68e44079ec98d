"""The registry of experiment families (see :mod:`agentchemist.experiments.family`).

Adding a family: one folder beside these with an ``__init__`` defining ``FAMILY`` and its aspect modules,
and one line in ``_FOLDERS`` below.
"""
from __future__ import annotations

import importlib

from agentchemist.experiments.family import ASPECTS, Family

__all__ = ["ASPECTS", "FAMILIES", "Family", "UnknownFamilyError", "family", "family_names"]

#: one line per family: the folder under agentchemist/experiments/
_FOLDERS = ("acid_base", "complexometric", "weighing", "standardisation")


class UnknownFamilyError(KeyError):
    """A family name no folder registers."""

    def __str__(self) -> str:
        return f"unknown experiment family {self.args[0]!r}; known: {', '.join(family_names())}"


def _load() -> dict[str, Family]:
    out: dict[str, Family] = {}
    for folder in _FOLDERS:
        fam = importlib.import_module(f"{__name__}.{folder}").FAMILY
        if fam.name in out:
            raise RuntimeError(f"two experiment families are named {fam.name!r}")
        out[fam.name] = fam
    return out


#: name -> Family, in registry order
FAMILIES: dict[str, Family] = _load()


def family_names() -> tuple[str, ...]:
    return tuple(FAMILIES)


def family(name: str) -> Family:
    try:
        return FAMILIES[name]
    except KeyError:
        raise UnknownFamilyError(name) from None
