"""Protocol library: vetted, versioned plan templates (config/protocols/*.yaml), one per family.

The planner retrieves a template and fills its ``{placeholders}`` from the parsed instruction before
anything is generated from scratch; LLM backends get the retrieved template as a hint. Placeholder
rules: a value that is exactly ``"{name}"`` becomes the typed value (number, bool, list, null); a
``{name}`` inside a longer string is formatted as text (numbers with ``%g``).

Variants. Any list item that is a mapping with ``when: {key: value}`` (a transition, a subtask, or
``{item: x, when: ...}`` standing for the plain value x) is kept only when every key matches the fill
values. States and symbols used only by dropped transitions leave the machine (with their timeouts), and
a subtask depending on a dropped one depends on what that one depended on. ``alternatives`` lists groups
of interchangeable means (a solid poured from its bottle or tapped from a spatula): each option is an
instrument that must be on the bench or a condition the instruction or scene must establish, names the
subtask primitive that uses it (so a plan's choice can be read back from its subtasks) and may set fill
``values``; the group's name is the fill key that selects the option.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import yaml

from agentchemist.fsm.validation import unknown_symbols
from agentchemist.limits import load_yaml_file
from agentchemist.paths import config_dir

__all__ = [
    "Alternative",
    "AlternativeGroup",
    "CONDITIONS",
    "Protocol",
    "ProtocolError",
    "ProtocolLibrary",
    "default_protocols_dir",
]

_FULL = re.compile(r"^\{([a-z_][a-z0-9_]*)\}$")
_PART = re.compile(r"\{([a-z_][a-z0-9_]*)\}")
_TOP_KEYS = {
    "id",
    "version",
    "family",
    "keywords",
    "experiment_name",
    "required_instruments",
    "preconditions",
    "operation_primitives",
    "defaults",
    "state_machine",
    "subtasks",
    "module_instantiation",
}
_OPTIONAL_KEYS = {"alternatives"}
#: Conditions an alternative may stand for (checked in code: agentchemist.plan.alternatives).
CONDITIONS = frozenset({"water_in_beaker"})


class ProtocolError(ValueError):
    """A malformed protocol file, an unknown protocol, or a placeholder with no value."""


def default_protocols_dir() -> Path:
    """``<config>/protocols``, with the config folder found by :func:`agentchemist.paths.config_dir`."""
    return config_dir() / "protocols"


def _text(value: Any) -> str:
    if value is None:
        return "unspecified"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, (list, tuple)):
        return ", ".join(_text(v) for v in value)
    return str(value)


def _placeholders(node: Any, found: set[str]) -> None:
    if isinstance(node, str):
        found.update(_PART.findall(node))
    elif isinstance(node, Mapping):
        for value in node.values():
            _placeholders(value, found)
    elif isinstance(node, list):
        for value in node:
            _placeholders(value, found)


def _matches(cond: Any, ctx: Mapping[str, Any]) -> bool:
    return all(ctx.get(k) == v for k, v in (cond or {}).items())


def _select(items: list[Any], ctx: Mapping[str, Any]) -> list[Any]:
    """The list items whose ``when`` matches ``ctx``, with ``when`` removed and ``{item: x}`` unwrapped."""
    out = []
    for item in items:
        if isinstance(item, Mapping) and "when" in item:
            if not _matches(item["when"], ctx):
                continue
            item = {k: v for k, v in item.items() if k != "when"}
            if set(item) == {"item"}:
                item = item["item"]
        out.append(item)
    return out


@dataclass(frozen=True)
class Alternative:
    """One option of an :class:`AlternativeGroup`: an ``instrument`` (registry name) or a ``condition``
    (one of :data:`CONDITIONS`); ``primitive`` is the subtask primitive that uses it (None: no subtask
    does, e.g. water already in the beaker); ``or_holding`` a reagent role whose container counts as
    the instrument (a bottle the scene says holds the solid); ``cue`` a regular expression for an
    instruction that asks for this option; ``values`` fill values it sets."""

    value: str
    display: str
    instrument: str | None = None
    condition: str | None = None
    primitive: str | None = None
    or_holding: str | None = None
    cue: str | None = None
    values: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class AlternativeGroup:
    """Interchangeable means of one step; ``name`` is the fill key that holds the chosen option's value."""

    name: str
    options: tuple[Alternative, ...]

    def option(self, value: Any) -> Alternative | None:
        return next((o for o in self.options if o.value == value), None)

    def chosen_by(self, primitives: set[str]) -> Alternative | None:
        """The option a plan uses, read from its subtasks' primitives: the option whose primitive it
        has, else the one that needs no subtask. None when the plan matches no option."""
        for o in self.options:
            if o.primitive is not None and o.primitive in primitives:
                return o
        return next((o for o in self.options if o.primitive is None), None)

    def missing_text(self) -> str:
        """What the user is told the bench lacks when no option is there: 'a or b', the things that can
        be put on the bench first, then the conditions (water already in the beaker)."""
        ordered = [o for o in self.options if o.instrument] + [o for o in self.options if not o.instrument]
        return " or ".join(o.display for o in ordered)


def _alternatives(doc: Any, source: str) -> tuple[AlternativeGroup, ...]:
    if doc is None:
        return ()
    if not isinstance(doc, list):
        raise ProtocolError(f"{source}: alternatives must be a list of groups")
    groups = []
    for i, g in enumerate(doc):
        if not isinstance(g, Mapping) or set(g) != {"group", "options"} or not isinstance(g["options"], list):
            raise ProtocolError(f"{source}: alternatives[{i}] must be {{group, options: [...]}}")
        options = []
        for j, o in enumerate(g["options"]):
            where = f"{source}: alternatives[{i}].options[{j}]"
            allowed = {"value", "display", "instrument", "condition", "primitive", "or_holding", "cue", "values"}
            if not isinstance(o, Mapping) or not {"value", "display"} <= set(o) or set(o) - allowed:
                raise ProtocolError(f"{where}: needs value and display; allowed keys {sorted(allowed)}")
            if ("instrument" in o) == ("condition" in o):
                raise ProtocolError(f"{where}: give exactly one of instrument or condition")
            if "condition" in o and o["condition"] not in CONDITIONS:
                raise ProtocolError(f"{where}: unknown condition {o['condition']!r}; known: {sorted(CONDITIONS)}")
            if "cue" in o:
                try:
                    re.compile(o["cue"])
                except re.error as exc:
                    raise ProtocolError(f"{where}: cue is not a regular expression: {exc}") from None
            options.append(
                Alternative(
                    value=str(o["value"]),
                    display=str(o["display"]),
                    instrument=o.get("instrument"),
                    condition=o.get("condition"),
                    primitive=o.get("primitive"),
                    or_holding=o.get("or_holding"),
                    cue=o.get("cue"),
                    values=dict(o.get("values") or {}),
                )
            )
        values = [o.value for o in options]
        if len(options) < 2 or len(set(values)) != len(values):
            raise ProtocolError(f"{source}: alternatives[{i}] needs two or more options with distinct values")
        if sum(o.primitive is None for o in options) > 1:
            raise ProtocolError(f"{source}: alternatives[{i}]: at most one option may have no primitive")
        groups.append(AlternativeGroup(str(g["group"]), tuple(options)))
    return tuple(groups)


@dataclass(frozen=True)
class Protocol:
    """One template. ``fill(values)`` returns the plan fragments (state_machine, task_decomposition,
    module_instantiation, experiment_name, operation_primitives) as plain values ready for the schema."""

    id: str
    version: str
    family: str
    keywords: tuple[str, ...]
    experiment_name: str
    required_instruments: tuple[str, ...]
    preconditions: tuple[str, ...]
    operation_primitives: tuple[Any, ...]  # names, or {item: name, when: {...}} for one variant only
    defaults: Mapping[str, Any]
    state_machine: Mapping[str, Any]
    subtasks: tuple[Mapping[str, Any], ...]
    module_instantiation: Mapping[str, Any]
    source: str = "<code>"
    alternatives: tuple[AlternativeGroup, ...] = ()
    placeholders: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        if not re.fullmatch(r"\d+\.\d+\.\d+", self.version):
            raise ProtocolError(f"{self.source}: version {self.version!r} must look like 1.2.3")
        found: set[str] = set()
        for part in (
            self.experiment_name,
            self.state_machine,
            list(self.subtasks),
            self.module_instantiation,
            list(self.operation_primitives),
        ):
            _placeholders(part, found)
        object.__setattr__(self, "placeholders", frozenset(found))
        misspelt = unknown_symbols(self.state_machine, self.subtasks)
        if misspelt:
            raise ProtocolError(f"{self.source}: " + "; ".join(misspelt))
        for group in self.alternatives:
            default = self.defaults.get(group.name)
            if default is not None and group.option(default) is None:
                raise ProtocolError(
                    f"{self.source}: default {group.name}={default!r} is not one of its options "
                    f"{[o.value for o in group.options]}"
                )

    def alternative_instruments(self) -> set[str]:
        """Every instrument named by an alternative (checked per group, not as a required instrument)."""
        return {o.instrument for g in self.alternatives for o in g.options if o.instrument}

    def _resolve(self, node: Any, ctx: Mapping[str, Any]) -> Any:
        if isinstance(node, str):
            full = _FULL.match(node)
            if full:
                return copy.deepcopy(self._lookup(full.group(1), ctx))
            return _PART.sub(lambda m: _text(self._lookup(m.group(1), ctx)), node)
        if isinstance(node, Mapping):
            return {k: self._resolve(v, ctx) for k, v in node.items()}
        if isinstance(node, list):
            return [self._resolve(v, ctx) for v in node]
        return node

    def _lookup(self, name: str, ctx: Mapping[str, Any]) -> Any:
        if name not in ctx:
            raise ProtocolError(f"protocol {self.id!r}: no value for placeholder {{{name}}}")
        return ctx[name]

    def fill(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """Fill the template with ``values`` over ``defaults`` (and over the values of the chosen
        alternatives); ProtocolError names a missing value or an unknown alternative."""
        ctx = {**self.defaults, **values}
        implied: dict[str, Any] = {}
        for group in self.alternatives:
            chosen = group.option(ctx.get(group.name))
            if chosen is None:
                raise ProtocolError(
                    f"protocol {self.id!r}: {group.name}={ctx.get(group.name)!r} is not one of "
                    f"{[o.value for o in group.options]}"
                )
            implied.update(chosen.values)
        ctx = {**self.defaults, **implied, **values}
        missing = sorted(p for p in self.placeholders if p not in ctx)
        if missing:
            raise ProtocolError(f"protocol {self.id!r}: no value for placeholder(s) {missing}")
        machine = dict(self.state_machine)
        every = list(machine.get("transitions", []))
        kept = _select(every, ctx)
        machine["transitions"] = kept
        # States and symbols that only dropped transitions used are not part of this variant; anything
        # else unused stays, so that the machine validator still reports a template mistake.
        dropped = [t for t in every if isinstance(t, Mapping) and "when" in t and not _matches(t["when"], ctx)]
        used_states = {x for t in kept for x in (t["source"], t["target"])}
        used_symbols = {t["symbol"] for t in kept}
        gone_states = {x for t in dropped for x in (t["source"], t["target"])} - used_states
        gone_symbols = {t["symbol"] for t in dropped} - used_symbols
        gone_states -= {machine.get("initial_state"), *machine.get("accepting_states", [])}
        machine["states"] = [x for x in machine.get("states", []) if x not in gone_states]
        machine["input_symbols"] = [x for x in machine.get("input_symbols", []) if x not in gone_symbols]
        if "state_timeouts_s" in machine:
            machine["state_timeouts_s"] = {k: v for k, v in machine["state_timeouts_s"].items() if k not in gone_states}
        return {
            "experiment_name": self._resolve(self.experiment_name, ctx),
            "state_machine": self._resolve(machine, ctx),
            "task_decomposition": self._resolve(self._subtasks(ctx), ctx),
            "module_instantiation": self._resolve(self._selected(dict(self.module_instantiation), ctx), ctx),
            "operation_primitives": self._resolve(_select(list(self.operation_primitives), ctx), ctx),
        }

    def _selected(self, node: Any, ctx: Mapping[str, Any]) -> Any:
        if isinstance(node, Mapping):
            return {k: self._selected(v, ctx) for k, v in node.items()}
        if isinstance(node, list):
            return [self._selected(v, ctx) for v in _select(node, ctx)]
        return node

    def _subtasks(self, ctx: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The variant's subtasks; a dependency on a dropped subtask becomes that one's dependencies."""
        every = [dict(t) for t in self.subtasks]
        kept = [
            {k: self._selected(v, ctx) for k, v in t.items() if k != "when"}
            for t in every
            if _matches(t.get("when"), ctx)
        ]
        kept_ids = {t["id"] for t in kept}
        deps_of: dict[str, list[str]] = {}
        for t in every:  # a dropped subtask's dependencies (the first variant that defines its id)
            deps_of.setdefault(t["id"], list(t.get("dependencies", [])))

        def live(dep: str, seen: frozenset[str]) -> list[str]:
            if dep in kept_ids or dep in seen or dep not in deps_of:
                return [dep]
            return [x for d in deps_of[dep] for x in live(d, seen | {dep})]

        for t in kept:
            deps = t.get("dependencies", [])
            if any(d not in kept_ids for d in deps):
                t["dependencies"] = list(dict.fromkeys(x for d in deps for x in live(d, frozenset())))
        return kept

    def hint(self) -> dict[str, Any]:
        """The unfilled template as a dict: what an LLM backend is shown as the vetted starting point."""
        return {
            "protocol": {"id": self.id, "version": self.version},
            "family": self.family,
            "required_instruments": list(self.required_instruments),
            "alternatives": [
                {
                    "group": g.name,
                    "options": [
                        {"value": o.value, "means": o.display, "instrument": o.instrument, "primitive": o.primitive}
                        for o in g.options
                    ],
                }
                for g in self.alternatives
            ],
            "defaults": dict(self.defaults),
            "state_machine": copy.deepcopy(dict(self.state_machine)),
            "subtasks": copy.deepcopy(list(self.subtasks)),
            "module_instantiation": copy.deepcopy(dict(self.module_instantiation)),
        }

    def keyword_score(self, text: str) -> int:
        """How many of this protocol's keywords occur in ``text`` (case-insensitive)."""
        low = text.lower()
        return sum(1 for k in self.keywords if k in low)


def _protocol_from_doc(doc: Any, source: str) -> Protocol:
    if not isinstance(doc, Mapping):
        raise ProtocolError(f"{source}: expected a mapping at the top level")
    unknown = sorted(set(doc) - _TOP_KEYS - _OPTIONAL_KEYS)
    if unknown:
        raise ProtocolError(f"{source}: unknown key(s) {unknown}")
    missing = sorted(k for k in _TOP_KEYS if k not in doc)
    if missing:
        raise ProtocolError(f"{source}: missing key(s) {missing}")
    if not isinstance(doc["subtasks"], list) or not doc["subtasks"]:
        raise ProtocolError(f"{source}: subtasks must be a non-empty list")
    if not isinstance(doc["defaults"], Mapping):
        raise ProtocolError(f"{source}: defaults must be a mapping")
    return Protocol(
        id=str(doc["id"]),
        version=str(doc["version"]),
        family=str(doc["family"]),
        keywords=tuple(str(k).lower() for k in doc["keywords"]),
        experiment_name=str(doc["experiment_name"]),
        required_instruments=tuple(str(i) for i in doc["required_instruments"]),
        preconditions=tuple(str(p) for p in doc["preconditions"]),
        operation_primitives=tuple(p if isinstance(p, Mapping) else str(p) for p in doc["operation_primitives"]),
        defaults=dict(doc["defaults"]),
        state_machine=dict(doc["state_machine"]),
        subtasks=tuple(dict(s) for s in doc["subtasks"]),
        module_instantiation=dict(doc["module_instantiation"]),
        source=source,
        alternatives=_alternatives(doc.get("alternatives"), source),
    )


@dataclass(frozen=True)
class ProtocolLibrary:
    """Protocols by id; one per family."""

    protocols: Mapping[str, Protocol]

    @classmethod
    def load(cls, directory: str | Path | None = None) -> "ProtocolLibrary":
        """Load every ``*.yaml`` in ``directory`` (default :func:`default_protocols_dir`)."""
        folder = Path(directory) if directory is not None else default_protocols_dir()
        files = sorted(folder.glob("*.yaml"))
        if not files:
            raise ProtocolError(f"no protocol files (*.yaml) in {folder}")
        protocols: dict[str, Protocol] = {}
        for file in files:
            try:
                doc = load_yaml_file(file)
            except (OSError, ValueError, yaml.YAMLError) as exc:
                raise ProtocolError(f"{file}: cannot read protocol: {exc}") from None
            proto = _protocol_from_doc(doc, str(file))
            if proto.id in protocols:
                raise ProtocolError(f"{file}: protocol id {proto.id!r} defined twice")
            protocols[proto.id] = proto
        families = [p.family for p in protocols.values()]
        if len(set(families)) != len(families):
            raise ProtocolError(f"{folder}: more than one protocol per family: {sorted(families)}")
        return cls(protocols)

    def get(self, protocol_id: str) -> Protocol:
        try:
            return self.protocols[protocol_id]
        except KeyError:
            raise ProtocolError(f"unknown protocol {protocol_id!r}; known: {sorted(self.protocols)}") from None

    def for_family(self, family: str) -> Protocol:
        for proto in self.protocols.values():
            if proto.family == family:
                return proto
        raise ProtocolError(f"no protocol for family {family!r}; known: {sorted(self.families())}")

    def families(self) -> list[str]:
        return sorted(p.family for p in self.protocols.values())

    def retrieve(self, text: str) -> list[tuple[Protocol, int]]:
        """Protocols ranked by keyword score for ``text`` (best first; zero scores dropped)."""
        scored = [(p, p.keyword_score(text)) for p in self.protocols.values()]
        return sorted((s for s in scored if s[1] > 0), key=lambda s: (-s[1], s[0].id))
