"""Protocol library: vetted, versioned plan templates (config/protocols/*.yaml), one per family.

The planner retrieves a template and fills its ``{placeholders}`` from the parsed instruction before
anything is generated from scratch; LLM backends get the retrieved template as a hint. Placeholder
rules: a value that is exactly ``"{name}"`` becomes the typed value (number, bool, list, null); a
``{name}`` inside a longer string is formatted as text (numbers with ``%g``). Transitions with
``when: {key: value}`` are kept only when every key matches the fill values.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import yaml

from agentchemist.paths import config_dir

__all__ = ["Protocol", "ProtocolError", "ProtocolLibrary", "default_protocols_dir"]

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


@dataclass(frozen=True)
class Protocol:
    """One template. ``fill(values)`` returns the plan fragments (state_machine, task_decomposition,
    module_instantiation, experiment_name) as plain dicts ready for the schema."""

    id: str
    version: str
    family: str
    keywords: tuple[str, ...]
    experiment_name: str
    required_instruments: tuple[str, ...]
    preconditions: tuple[str, ...]
    operation_primitives: tuple[str, ...]
    defaults: Mapping[str, Any]
    state_machine: Mapping[str, Any]
    subtasks: tuple[Mapping[str, Any], ...]
    module_instantiation: Mapping[str, Any]
    source: str = "<code>"
    placeholders: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        if not re.fullmatch(r"\d+\.\d+\.\d+", self.version):
            raise ProtocolError(f"{self.source}: version {self.version!r} must look like 1.2.3")
        found: set[str] = set()
        for part in (self.experiment_name, self.state_machine, list(self.subtasks), self.module_instantiation):
            _placeholders(part, found)
        object.__setattr__(self, "placeholders", frozenset(found))

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
        """Fill the template with ``values`` over ``defaults``; ProtocolError names a missing value."""
        ctx = {**self.defaults, **values}
        missing = sorted(p for p in self.placeholders if p not in ctx)
        if missing:
            raise ProtocolError(f"protocol {self.id!r}: no value for placeholder(s) {missing}")
        machine = dict(self.state_machine)
        transitions = []
        for t in machine.get("transitions", []):
            cond = t.get("when") or {}
            if all(ctx.get(k) == v for k, v in cond.items()):
                transitions.append({k: v for k, v in t.items() if k != "when"})
        machine["transitions"] = transitions
        return {
            "experiment_name": self._resolve(self.experiment_name, ctx),
            "state_machine": self._resolve(machine, ctx),
            "task_decomposition": self._resolve(list(self.subtasks), ctx),
            "module_instantiation": self._resolve(dict(self.module_instantiation), ctx),
        }

    def hint(self) -> dict[str, Any]:
        """The unfilled template as a dict: what an LLM backend is shown as the vetted starting point."""
        return {
            "protocol": {"id": self.id, "version": self.version},
            "family": self.family,
            "required_instruments": list(self.required_instruments),
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
    unknown = sorted(set(doc) - _TOP_KEYS)
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
        operation_primitives=tuple(str(p) for p in doc["operation_primitives"]),
        defaults=dict(doc["defaults"]),
        state_machine=dict(doc["state_machine"]),
        subtasks=tuple(dict(s) for s in doc["subtasks"]),
        module_instantiation=dict(doc["module_instantiation"]),
        source=source,
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
                doc = yaml.safe_load(file.read_text(encoding="utf-8"))
            except (OSError, yaml.YAMLError) as exc:
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
