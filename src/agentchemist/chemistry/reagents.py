"""Reagent library: what each chemical is, as far as the equilibrium solver and the planner need to know.

Every reagent is a *component* of a mixture that contributes

* spectator ions (Na+ of NaOH, Cl- of HCl, 2 Na+ of Na2CO3, Ca2+ and 2 Cl- of CaCl2), which enter the
  charge balance and the ionic strength but take no part in proton transfer;
* optionally one weak acid-base system, described by the pKa values of its fully protonated form, the
  charge of that form, and how many of its dissociable protons the substance carries as added
  (acetic acid 1 of 1, sodium acetate 0 of 1, ammonia 0 of 1 with NH4+ charge +1);
* ``strong_protons``: H+ released completely on dissolution (HCl +1, H2SO4 +1 for its first proton),
  negative for OH- released (NaOH -1).

These three parts must make the formula unit electrically neutral; the library refuses an entry that
is not, which catches most transcription mistakes in ``config/reagents.yaml``.

Example::

    >>> lib = default_library()
    >>> lib.get("Caustic Soda").name
    'naoh'
    >>> [r.name for r, _, _ in lib.find_in_text("titrate 0.1 M acetic acid with sodium hydroxide")]
    ['acetic_acid', 'naoh']
"""

from __future__ import annotations

import difflib
import functools
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

import yaml

from agentchemist.limits import InputLimitError, load_yaml, read_text

__all__ = [
    "KINDS",
    "Literature",
    "Reagent",
    "ReagentConfigError",
    "ReagentLibrary",
    "SpectatorIon",
    "UnknownReagentError",
    "default_library",
    "default_reagents_path",
    "normalise_name",
]

KINDS = frozenset(
    {
        "strong_acid",
        "strong_base",
        "weak_acid",
        "weak_base",
        "salt",
        "solvent",
        "chelator",
        "metal_salt",
        "indicator",
    }
)
PHASES = frozenset({"solid", "liquid", "gas"})


class UnknownReagentError(ValueError):
    """A reagent name or alias that the library does not know; the message lists close matches."""

    def __init__(self, name: str, suggestions: Iterable[str] = ()) -> None:
        self.name = name
        self.suggestions = tuple(suggestions)
        hint = f"; did you mean {', '.join(repr(s) for s in self.suggestions)}?" if self.suggestions else ""
        super().__init__(f"unknown reagent {name!r}{hint}")


class ReagentConfigError(ValueError):
    """An invalid reagent definition (in code or in the YAML file); the message names file and key."""


def normalise_name(name: str) -> str:
    """Lower-case, treat '_' as a space, collapse whitespace: how names and aliases are compared."""
    return " ".join(name.replace("_", " ").lower().split())


@dataclass(frozen=True)
class SpectatorIon:
    """An ion that a reagent releases and that takes no part in acid-base chemistry.

    ``count`` is ions per formula unit of the reagent; ``charge`` in elementary charges.
    """

    symbol: str
    charge: int
    count: float = 1.0

    def __post_init__(self) -> None:
        if not self.symbol:
            raise ReagentConfigError("spectator ion needs a symbol")
        if self.charge == 0:
            raise ReagentConfigError(f"spectator ion {self.symbol!r} has charge 0; it is not an ion")
        if not (math.isfinite(self.count) and self.count > 0):
            raise ReagentConfigError(f"spectator ion {self.symbol!r}: count must be > 0, got {self.count}")


@dataclass(frozen=True)
class Literature:
    """Published constants quoted by the report summariser, with where they come from."""

    pka: tuple[float, ...]
    source: str
    log_kf: tuple[tuple[str, float], ...] = ()  # (metal, log10 formation constant) pairs

    def __post_init__(self) -> None:
        if not self.source.strip():
            raise ReagentConfigError("literature block needs a non-empty source")


@dataclass(frozen=True)
class Hazard:
    """A handling note that applies from a concentration up (mol/L): the planner adds it to the plan."""

    above_m: float
    note: str

    def __post_init__(self) -> None:
        if not (math.isfinite(self.above_m) and self.above_m > 0):
            raise ReagentConfigError(f"hazard.above_m must be a concentration > 0 mol/L, got {self.above_m!r}")
        if not self.note.strip():
            raise ReagentConfigError("hazard block needs a non-empty note")


@dataclass(frozen=True)
class Reagent:
    """One chemical as a component of an aqueous mixture (see the module docstring).

    ``pka`` are the pKa values (25 C, ascending) of the weak acid-base system's fully protonated form,
    e.g. (9.25,) for ammonia (NH4+) and (6.35, 10.33) for carbonate (H2CO3); empty when the reagent has
    no weak system. Protons released completely (strong acids) are counted in ``strong_protons`` instead.
    ``molar_mass_g_mol`` is for the formula as supplied (g/mol).
    """

    name: str
    display_name: str
    formula: str
    aliases: tuple[str, ...]
    kind: str
    pka: tuple[float, ...]
    molar_mass_g_mol: float
    charge_fully_protonated: int = 0
    protons_as_added: int = 0
    strong_protons: int = 0
    spectator_ions: tuple[SpectatorIon, ...] = ()
    phase: str = "solid"
    log_kf: tuple[tuple[str, float], ...] = ()
    literature: Literature | None = None
    hazard: Hazard | None = None

    def __post_init__(self) -> None:
        where = f"reagent {self.name!r}"
        if not re.fullmatch(r"[a-z][a-z0-9_]*", self.name):
            raise ReagentConfigError(f"{where}: name must be a lower-case identifier")
        if self.kind not in KINDS:
            raise ReagentConfigError(f"{where}: kind {self.kind!r} is not one of {sorted(KINDS)}")
        if self.phase not in PHASES:
            raise ReagentConfigError(f"{where}: phase {self.phase!r} is not one of {sorted(PHASES)}")
        if not (math.isfinite(self.molar_mass_g_mol) and self.molar_mass_g_mol > 0):
            raise ReagentConfigError(f"{where}: molar_mass_g_mol must be > 0, got {self.molar_mass_g_mol}")
        if any(not math.isfinite(p) for p in self.pka):
            raise ReagentConfigError(f"{where}: pka values must be finite, got {self.pka}")
        if list(self.pka) != sorted(self.pka):
            raise ReagentConfigError(f"{where}: pka values must be ascending, got {self.pka}")
        n = len(self.pka)
        if not 0 <= self.protons_as_added <= n:
            raise ReagentConfigError(
                f"{where}: protons_as_added={self.protons_as_added} outside 0..{n} (number of pKa values)"
            )
        if n == 0 and (self.protons_as_added or self.charge_fully_protonated):
            raise ReagentConfigError(f"{where}: no pKa values, so no acid-base system charge/protons allowed")
        for alias in self.aliases:
            if alias != normalise_name(alias) or not alias:
                raise ReagentConfigError(f"{where}: alias {alias!r} must be lower-case, single-spaced")
        for metal, log_k in self.log_kf:
            if not math.isfinite(log_k):
                raise ReagentConfigError(f"{where}: log_kf for {metal!r} must be finite")
        # Electroneutrality of the formula unit as added: catches sign and count slips in the YAML.
        net = self.spectator_charge_per_mol + self.strong_protons + self.system_charge_as_added
        if abs(net) > 1e-9:
            raise ReagentConfigError(
                f"{where}: formula unit is not neutral (spectators {self.spectator_charge_per_mol:+g}, "
                f"strong protons {self.strong_protons:+d}, acid-base species {self.system_charge_as_added:+d})"
            )
        expectations = {
            "strong_acid": self.strong_protons > 0,
            "strong_base": self.strong_protons < 0,
            "weak_acid": n > 0 and self.protons_as_added > 0,
            "weak_base": n > 0 and self.protons_as_added < n,
        }
        if not expectations.get(self.kind, True):
            raise ReagentConfigError(f"{where}: acid-base description does not fit kind {self.kind!r}")

    @property
    def has_acid_base_system(self) -> bool:
        """True when the reagent carries a weak acid-base system (at least one pKa)."""
        return bool(self.pka)

    @property
    def system_charge_as_added(self) -> int:
        """Charge of the acid-base species in the form added (0 when there is no system)."""
        if not self.pka:
            return 0
        return self.charge_fully_protonated - (len(self.pka) - self.protons_as_added)

    @property
    def spectator_charge_per_mol(self) -> float:
        """Net spectator charge per mole of reagent (mol of charge / mol)."""
        return float(sum(ion.charge * ion.count for ion in self.spectator_ions))

    @property
    def spectator_cation_charge_per_mol(self) -> float:
        """Positive spectator charge per mole of reagent (2 for Na2CO3 and for CaCl2)."""
        return float(sum(ion.charge * ion.count for ion in self.spectator_ions if ion.charge > 0))

    @property
    def spectator_anion_charge_per_mol(self) -> float:
        """Negative spectator charge per mole of reagent, as a positive number (2 for CaCl2)."""
        return float(-sum(ion.charge * ion.count for ion in self.spectator_ions if ion.charge < 0))

    @property
    def spectator_ionic_strength_per_mol(self) -> float:
        """Sum of count * z^2 over the spectator ions (per mole of reagent), for the ionic strength."""
        return float(sum(ion.count * ion.charge**2 for ion in self.spectator_ions))

    def log_kf_for(self, metal: str) -> float:
        """log10 formation constant of this reagent's complex with ``metal`` (e.g. 'Ca2+')."""
        for m, value in self.log_kf:
            if m.lower() == metal.lower():
                return value
        raise KeyError(f"reagent {self.name!r} has no formation constant for {metal!r}")


_ENTRY_KEYS = {
    "display_name",
    "formula",
    "aliases",
    "kind",
    "molar_mass_g_mol",
    "acid_base",
    "strong_protons",
    "spectator_ions",
    "phase",
    "log_kf",
    "literature",
    "hazard",
}
_ACID_BASE_KEYS = {"pka", "charge_fully_protonated", "protons_as_added"}


def default_reagents_path() -> Path:
    """``$AGENTCHEMIST_CONFIG_DIR/reagents.yaml`` if set, else ``<repo>/config/reagents.yaml``."""
    config_dir = os.environ.get("AGENTCHEMIST_CONFIG_DIR")
    if config_dir:
        return Path(config_dir) / "reagents.yaml"
    # src/agentchemist/chemistry/reagents.py -> parents[3] is the repository root.
    return Path(__file__).resolve().parents[3] / "config" / "reagents.yaml"


def _check_keys(mapping: Mapping[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(set(mapping) - allowed)
    if unknown:
        hints = []
        for key in unknown:
            close = difflib.get_close_matches(key, sorted(allowed), n=1)
            hints.append(f"{key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        raise ReagentConfigError(f"{where}: unknown key(s) {', '.join(hints)}")


def _reagent_from_entry(name: str, entry: Any, source: str) -> Reagent:
    where = f"{source}: reagents.{name}"
    if not isinstance(entry, Mapping):
        raise ReagentConfigError(f"{where}: expected a mapping, got {type(entry).__name__}")
    _check_keys(entry, _ENTRY_KEYS, where)
    for required in ("display_name", "formula", "kind", "molar_mass_g_mol", "literature"):
        if required not in entry:
            raise ReagentConfigError(f"{where}: missing required key {required!r}")
    acid_base = entry.get("acid_base") or {}
    if not isinstance(acid_base, Mapping):
        raise ReagentConfigError(f"{where}.acid_base: expected a mapping")
    _check_keys(acid_base, _ACID_BASE_KEYS, f"{where}.acid_base")
    try:
        ions = tuple(
            SpectatorIon(symbol=str(ion["ion"]), charge=int(ion["charge"]), count=float(ion.get("count", 1)))
            for ion in entry.get("spectator_ions") or ()
        )
        lit_entry = entry.get("literature")
        literature = None
        if lit_entry is not None:
            _check_keys(lit_entry, {"pka", "source", "log_kf"}, f"{where}.literature")
            literature = Literature(
                pka=tuple(float(p) for p in lit_entry.get("pka") or ()),
                source=str(lit_entry.get("source", "")),
                log_kf=tuple((str(k), float(v)) for k, v in (lit_entry.get("log_kf") or {}).items()),
            )
        hazard = None
        if entry.get("hazard") is not None:
            _check_keys(entry["hazard"], {"above_m", "note"}, f"{where}.hazard")
            hazard = Hazard(above_m=float(entry["hazard"]["above_m"]), note=str(entry["hazard"].get("note", "")))
        display_name = str(entry["display_name"])
        raw_aliases = entry.get("aliases") or ()
        if not isinstance(raw_aliases, (list, tuple)) or not all(isinstance(a, str) for a in raw_aliases):
            raise ReagentConfigError(f"aliases must be a list of strings, got {raw_aliases!r}")
        aliases = {normalise_name(a) for a in raw_aliases}
        aliases |= {normalise_name(name), normalise_name(display_name), normalise_name(str(entry["formula"]))}
        return Reagent(
            name=name,
            display_name=display_name,
            formula=str(entry["formula"]),
            aliases=tuple(sorted(aliases)),
            kind=str(entry["kind"]),
            pka=tuple(float(p) for p in acid_base.get("pka") or ()),
            molar_mass_g_mol=float(entry["molar_mass_g_mol"]),
            charge_fully_protonated=int(acid_base.get("charge_fully_protonated", 0)),
            protons_as_added=int(acid_base.get("protons_as_added", 0)),
            strong_protons=int(entry.get("strong_protons", 0)),
            spectator_ions=ions,
            phase=str(entry.get("phase", "solid")),
            log_kf=tuple((str(k), float(v)) for k, v in (entry.get("log_kf") or {}).items()),
            literature=literature,
            hazard=hazard,
        )
    except ReagentConfigError as exc:
        raise ReagentConfigError(f"{where}: {exc}") from None
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ReagentConfigError(f"{where}: malformed entry ({type(exc).__name__}: {exc})") from None


@dataclass(frozen=True)
class ReagentLibrary:
    """A set of reagents addressable by canonical name or any alias (case-insensitive)."""

    reagents: Mapping[str, Reagent]
    source: str = "<code>"
    _by_alias: dict[str, Reagent] = field(init=False, repr=False, compare=False)
    _pattern: re.Pattern[str] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_alias: dict[str, Reagent] = {}
        for key, reagent in self.reagents.items():
            if key != reagent.name:
                raise ReagentConfigError(f"{self.source}: key {key!r} differs from reagent name {reagent.name!r}")
            for alias in (*reagent.aliases, normalise_name(reagent.name)):
                other = by_alias.get(alias)
                if other is not None and other.name != reagent.name:
                    raise ReagentConfigError(
                        f"{self.source}: alias {alias!r} used by both {other.name!r} and {reagent.name!r}"
                    )
                by_alias[alias] = reagent
        object.__setattr__(self, "_by_alias", by_alias)
        # Longest alias first so that the regex alternation prefers "sodium hydroxide" over "hydroxide".
        aliases = sorted(by_alias, key=lambda a: (-len(a), a))
        body = "|".join(r"[\s_]+".join(re.escape(word) for word in a.split(" ")) for a in aliases)
        pattern = re.compile(rf"(?<![\w])(?:{body})(?![\w])", re.IGNORECASE) if aliases else None
        object.__setattr__(self, "_pattern", pattern)

    @classmethod
    def load(cls, path: str | Path | None = None) -> "ReagentLibrary":
        """Load a library from YAML (default: :func:`default_reagents_path`)."""
        file = Path(path) if path is not None else default_reagents_path()
        try:
            text = read_text(file)
        except OSError as exc:
            raise ReagentConfigError(f"cannot read reagent library {file}: {exc.strerror or exc}") from None
        except InputLimitError as exc:
            raise ReagentConfigError(str(exc)) from None
        try:
            doc = load_yaml(text, str(file))
        except InputLimitError as exc:
            raise ReagentConfigError(str(exc)) from None
        except yaml.YAMLError as exc:
            raise ReagentConfigError(f"{file}: invalid YAML: {exc}") from None
        if not isinstance(doc, Mapping) or not isinstance(doc.get("reagents"), Mapping):
            raise ReagentConfigError(f"{file}: expected a top-level 'reagents:' mapping")
        _check_keys(doc, {"schema_version", "reagents"}, str(file))
        reagents = {
            str(name): _reagent_from_entry(str(name), entry, str(file)) for name, entry in doc["reagents"].items()
        }
        return cls(reagents=reagents, source=str(file))

    def get(self, name_or_alias: str) -> Reagent:
        """The reagent with this canonical name or alias (case-insensitive); UnknownReagentError otherwise."""
        if not isinstance(name_or_alias, str):
            raise UnknownReagentError(repr(name_or_alias))
        key = normalise_name(name_or_alias)
        try:
            return self._by_alias[key]
        except KeyError:
            close = difflib.get_close_matches(key, list(self._by_alias), n=6, cutoff=0.6)
            names = list(dict.fromkeys(self._by_alias[c].name for c in close))[:3]
            raise UnknownReagentError(name_or_alias, names) from None

    def __contains__(self, name_or_alias: object) -> bool:
        return isinstance(name_or_alias, str) and normalise_name(name_or_alias) in self._by_alias

    def find_in_text(self, text: str) -> list[tuple[Reagent, int, int]]:
        """Reagent mentions in free text as (reagent, start, end) character spans, left to right.

        Matching is case-insensitive on whole words; where aliases overlap the longest one wins
        ("sodium acetate" is one mention, not "acetate"). '_' and runs of whitespace match a space.
        """
        if self._pattern is None:
            return []
        found = []
        for match in self._pattern.finditer(text):
            found.append((self._by_alias[normalise_name(match.group(0))], match.start(), match.end()))
        return found

    def names(self) -> list[str]:
        """Canonical reagent names, sorted."""
        return sorted(self.reagents)


@functools.lru_cache(maxsize=1)
def default_library() -> ReagentLibrary:
    """The library from the default config path, loaded once (``default_library.cache_clear()`` reloads)."""
    return ReagentLibrary.load()
