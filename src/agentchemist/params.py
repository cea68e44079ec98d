"""Configuration fields that know their unit, range and description (no ROS here).

A config dataclass is the one place a setting is defined: its default, unit, allowed range and what it
means. A node declares its ROS parameters from it (agentchemist_ros.common.params.declare_config), the
shipped YAML is checked against it (tests/unit/test_params_yaml.py), and core code builds it directly.

    @dataclass(frozen=True)
    class RecorderConfig:
        ph_record_period: float = param(1.0, unit="s", low=0.0, high=60.0,
                                        description="Time between smoothed pH records")
        store_url: str = param("", description="'' = SQLite in the run folder; or postgresql://...")
        internal: int = 3       # no metadata: not a parameter, the dataclass default stands

Only fields made with :func:`param` (or :func:`nested`) are parameters. The parameter name is the field
name unless ``name=`` says otherwise, behind the prefix the caller gives and any prefix a :func:`nested`
field adds (``nested(FrozenConfig, prefix="ph_")`` turns its ``resolution`` into ``ph_resolution``).
Sequence parameters are tuples in the dataclass (frozen and hashable) and lists on the ROS side.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Mapping

PARAM_KEY = "agentchemist.param"
NESTED_KEY = "agentchemist.nested"


class ParameterError(ValueError):
    """A parameter value the config refuses; the message names the parameter."""


@dataclass(frozen=True)
class ParamMeta:
    description: str
    unit: str = ""
    low: float | None = None
    high: float | None = None
    choices: tuple | None = None
    name: str | None = None


@dataclass(frozen=True)
class ParamSpec:
    """One parameter of a config class, as declared: full name, field path and the field's metadata."""
    name: str            # parameter name: prefix + (metadata name or field name)
    path: tuple          # field names from the top config class down to this field
    default: Any
    meta: ParamMeta

    @property
    def description(self) -> str:
        """The description with unit, range and choices, as `ros2 param describe` shows it."""
        text = self.meta.description
        if self.meta.unit:
            text += f" [{self.meta.unit}]"
        return text

    @property
    def constraints(self) -> str:
        parts = []
        if self.meta.low is not None or self.meta.high is not None:
            parts.append(f"range {_fmt(self.meta.low)} .. {_fmt(self.meta.high)}")
        if self.meta.choices is not None:
            parts.append("one of: " + ", ".join(str(c) for c in self.meta.choices))
        return "; ".join(parts)

    def problem(self, value) -> str | None:
        """Why `value` is not acceptable for this parameter, or None. Types follow ROS: the value has the
        default's type (an int where a float is expected is refused: write 10.0, not 10)."""
        expected = _kind(self.default)
        got = _kind(value)
        if got != expected:
            hint = " (write it with a decimal point)" if expected == "float" and got == "int" else ""
            return f"expected {expected}, got {got} {value!r}{hint}"
        sequence = isinstance(value, (list, tuple))
        for item in value if sequence else [value]:
            what = f"{item!r} (in {list(value)!r})" if sequence else repr(item)
            if isinstance(item, float) and not math.isfinite(item):
                return f"{what} is not a finite number"
            low, high = self.meta.low, self.meta.high
            if low is not None and item < low or high is not None and item > high:
                return f"{what} is outside {_fmt(self.meta.low)} .. {_fmt(self.meta.high)}{_unit(self.meta.unit)}"
            if self.meta.choices is not None and item not in self.meta.choices:
                return f"{what} is not one of {', '.join(repr(c) for c in self.meta.choices)}"
        return None


def param(default, *, description: str, unit: str = "", low=None, high=None, choices=None, name: str | None = None):
    """A dataclass field that is also a parameter (see the module docstring). `low`/`high` bound numbers
    (inclusive, either may be None), `choices` lists the allowed values of a string (or of each item of
    a tuple); `name` replaces the field name as the parameter name."""
    if isinstance(default, list):
        raise TypeError("param(): a sequence default must be a tuple (dataclass defaults are shared)")
    kind = _kind(default)
    if kind is None:
        raise TypeError(f"param(): default {default!r} is not a bool, int, float, str or a tuple of one of them")
    if not description:
        raise TypeError("param(): a description is required")
    if (low is not None or high is not None) and kind not in ("int", "float", "list[int]", "list[float]"):
        raise TypeError(f"param(): a range needs a number default, got {default!r}")
    meta = ParamMeta(description=description, unit=unit, low=low, high=high,
                     choices=tuple(choices) if choices is not None else None, name=name)
    spec = ParamSpec(name or "?", (), default, meta)
    if (problem := spec.problem(default)) is not None:
        raise ValueError(f"param(): the default itself is refused: {problem}")
    return dataclasses.field(default=default, metadata={PARAM_KEY: meta})


def nested(cls, *, prefix: str = ""):
    """A field holding another config dataclass whose parameters are declared too, behind `prefix`."""
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"nested(): {cls!r} is not a dataclass")
    return dataclasses.field(default_factory=cls, metadata={NESTED_KEY: (cls, prefix)})


def parameter_specs(cls, prefix: str = "") -> list[ParamSpec]:
    """Every parameter of config class `cls` (nested ones included), in field order."""
    return _specs(cls, prefix, ())


def _specs(cls, prefix: str, path: tuple) -> list[ParamSpec]:
    out = []
    for f in dataclasses.fields(cls):
        if PARAM_KEY in f.metadata:
            meta = f.metadata[PARAM_KEY]
            out.append(ParamSpec(prefix + (meta.name or f.name), path + (f.name,), f.default, meta))
        elif NESTED_KEY in f.metadata:
            inner, inner_prefix = f.metadata[NESTED_KEY]
            out.extend(_specs(inner, prefix + inner_prefix, path + (f.name,)))
    names = [s.name for s in out]
    if len(names) != len(set(names)):
        repeated = sorted(n for n in set(names) if names.count(n) > 1)
        raise TypeError(f"{cls.__name__}: parameter names repeat: {repeated}")
    return out


def build_config(cls, values: Mapping[str, Any], *, prefix: str = "", overrides: Mapping[str, Any] | None = None,
                 owner: str = ""):
    """`cls` from parameter values by parameter name (missing ones keep their default), checked against
    the declared types, ranges and choices, then against the dataclass's own validation. `overrides` are
    constructor values by field name (top level) that are not parameters. Any refusal is a
    :class:`ParameterError` that names the parameter; `owner` (a node name) prefixes the message."""
    overrides = dict(overrides or {})
    specs = parameter_specs(cls, prefix)
    unknown = set(values) - {s.name for s in specs}
    if unknown:
        raise ParameterError(f"{_who(owner)}{cls.__name__} has no parameter {', '.join(sorted(unknown))}")
    kwargs: dict[tuple, Any] = {}
    for spec in specs:
        if spec.path[0] in overrides or spec.name not in values:
            continue
        value = values[spec.name]
        if isinstance(value, list):
            value = tuple(value)
        if (problem := spec.problem(value)) is not None:
            raise ParameterError(f"{_who(owner)}parameter '{spec.name}': {problem} ({spec.meta.description})")
        kwargs[spec.path] = value
    return _construct(cls, (), kwargs, overrides, specs, owner)


def _construct(cls, path: tuple, kwargs: dict, overrides: dict, specs: list[ParamSpec], owner: str):
    args = dict(overrides) if not path else {}
    for f in dataclasses.fields(cls):
        if f.name in args:
            continue
        if NESTED_KEY in f.metadata and any(p[:len(path) + 1] == path + (f.name,) for p in kwargs):
            args[f.name] = _construct(f.metadata[NESTED_KEY][0], path + (f.name,), kwargs, {}, specs, owner)
        elif path + (f.name,) in kwargs:
            args[f.name] = kwargs[path + (f.name,)]
    try:
        return cls(**args)
    except (ValueError, TypeError) as exc:
        # The dataclass's own check: name the parameters of the fields its message mentions.
        mine = [s for s in specs if s.path[:-1] == path and s.path[-1] in str(exc)]
        named = ", ".join(f"'{s.name}'" for s in mine) or "of " + cls.__name__
        raise ParameterError(f"{_who(owner)}parameter {named} refused by {cls.__name__}: {exc}") from None


def _kind(value) -> str | None:
    if isinstance(value, bool):
        return "bool"
    for t in (int, float, str):
        if isinstance(value, t):
            return t.__name__
    if isinstance(value, (list, tuple)) and value:
        kinds = {_kind(v) for v in value}
        if len(kinds) == 1 and next(iter(kinds)) in ("bool", "int", "float", "str"):
            return f"list[{next(iter(kinds))}]"
    return None


def _fmt(x) -> str:
    return "" if x is None else f"{x:g}"


def _unit(unit: str) -> str:
    return f" {unit}" if unit else ""


def _who(owner: str) -> str:
    return f"{owner}: " if owner else ""
