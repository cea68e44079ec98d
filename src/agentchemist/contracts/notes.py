"""What one agent tells another in an AgentMessage's payload: one frozen dataclass per note symbol.

Each note class names its :class:`Symbol` and is registered in :data:`NOTES`, the one registry. A note's
fields are its payload's keys, in the order they go on the wire (``to_payload()`` keeps that order and the
values as given, so the JSON text stays what the agents sent before the notes were typed);
:func:`note_from` builds a note from a received payload and refuses garbage with a ValueError that says
which symbol, which key and what was wrong: a missing key without a default, an unknown key (a misspelt
one would otherwise read as "absent"), a value of the wrong type or a non-finite number.

``None`` is a value only where a field says ``| None``: the pH of a colour endpoint's ``verified``, a
dissolution time when stirring was never seen to start, a pour pulse's plan when it had none.
"""
from __future__ import annotations

import math
from collections import abc
import types
import typing
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, ClassVar, Mapping, Union

from agentchemist.contracts.outcome import outcome_kind
from agentchemist.contracts.symbols import Symbol, symbol as symbol_named

__all__ = ["NOTES", "Artifact", "Dispatch", "Dissolved", "Drop", "Endpoint", "Hold", "MassSettled", "Note",
           "PhStable", "RecordClosed", "Release", "ReportFailed", "ReportWritten", "Resume", "Tap", "Verified",
           "note_from"]


@dataclass(frozen=True)
class Note:
    """Base of every note; subclasses set ``SYMBOL`` and are registered with :func:`_registered`."""
    SYMBOL: ClassVar[Symbol]

    def to_payload(self) -> dict[str, Any]:
        """The payload dict, keys in field order, values as given (dicts copied)."""
        return {f.name: dict(v) if isinstance(v := getattr(self, f.name), Mapping) else v for f in fields(self)}

    def __post_init__(self) -> None:
        _check(type(self), {f.name: getattr(self, f.name) for f in fields(self)})


#: symbol -> its note class: the one registry (built by the decorator below, read-only afterwards)
NOTES: dict[Symbol, type[Note]] = {}


def _registered(cls: type[Note]) -> type[Note]:
    if cls.SYMBOL in NOTES:
        raise TypeError(f"two notes for {cls.SYMBOL!r}: {NOTES[cls.SYMBOL].__name__} and {cls.__name__}")
    NOTES[cls.SYMBOL] = cls
    return cls


# ---------------------------------------------------------------------------------- to the dispenser
@_registered
@dataclass(frozen=True)
class Hold(Note):
    """Supervisor -> dispenser: keep the goal, squeeze nothing, until this reason is released."""
    SYMBOL: ClassVar[Symbol] = Symbol.HOLD
    reason: str = ""


@_registered
@dataclass(frozen=True)
class Release(Note):
    """Supervisor -> dispenser: the hold with this reason is over."""
    SYMBOL: ClassVar[Symbol] = Symbol.RELEASE
    reason: str = ""


@_registered
@dataclass(frozen=True)
class Resume(Note):
    """Supervisor -> dispenser: the solution settled after the drop, squeeze the next one."""
    SYMBOL: ClassVar[Symbol] = Symbol.RESUME


# ---------------------------------------------------------------------------------- to the supervisor
@_registered
@dataclass(frozen=True)
class Drop(Note):
    """Audio supervisor -> vision supervisor: an expected droplet heard (its event, the audio total so far)."""
    SYMBOL: ClassVar[Symbol] = Symbol.DROP
    event_id: str
    total_ml: float


@_registered
@dataclass(frozen=True)
class Tap(Note):
    """Dispenser -> vision supervisor: one pour pulse of a solid pour, ended."""
    SYMBOL: ClassVar[Symbol] = Symbol.TAP
    index: int
    kind: str
    duration_s: float
    planned_g: float | None
    tilt_deg: float


# ---------------------------------------------------------------------------------- to the recorder
@_registered
@dataclass(frozen=True)
class PhStable(Note):
    """Supervisor -> recorder: the pH settled after a drop at this value (None: not known)."""
    SYMBOL: ClassVar[Symbol] = Symbol.PH_STABLE
    ph: float | None = None


@_registered
@dataclass(frozen=True)
class MassSettled(Note):
    """Supervisor -> recorder: the balance settled at this mass; ``final``: the weighed mass of the pour."""
    SYMBOL: ClassVar[Symbol] = Symbol.MASS_SETTLED
    mass_g: float | None = None
    final: bool = False


@_registered
@dataclass(frozen=True)
class Dissolved(Note):
    """Supervisor -> recorder: the solid dissolved, this long after stirring started (None: not seen start)."""
    SYMBOL: ClassVar[Symbol] = Symbol.DISSOLVED
    dissolution_time_s: float | None = None


@_registered
@dataclass(frozen=True)
class Endpoint(Note):
    """Supervisor -> recorder: the endpoint, with the pH and temperature at that moment (None: not measured)."""
    SYMBOL: ClassVar[Symbol] = Symbol.ENDPOINT
    ph: float | None = None
    temperature_c: float | None = None


@_registered
@dataclass(frozen=True)
class Verified(Note):
    """Supervisor -> recorder: the result verified, with the pH and temperature then (None: not measured)."""
    SYMBOL: ClassVar[Symbol] = Symbol.VERIFIED
    ph: float | None = None
    temperature_c: float | None = None


@_registered
@dataclass(frozen=True)
class Artifact(Note):
    """An agent -> recorder: a file that belongs to the run (a snapshot ...)."""
    SYMBOL: ClassVar[Symbol] = Symbol.ARTIFACT
    kind: str = "file"
    path: str = ""
    label: str = ""


# ---------------------------------------------------------------------------------- to the other agents
@_registered
@dataclass(frozen=True)
class Dispatch(Note):
    """Supervisor -> a subtask's agent: the subtask is dispatched (its primitive and parameters)."""
    SYMBOL: ClassVar[Symbol] = Symbol.DISPATCH
    primitive: str
    parameters: Mapping[str, Any] = field(default_factory=dict)


@_registered
@dataclass(frozen=True)
class RecordClosed(Note):
    """Recorder -> summarizer (and the planner, who reads the verdict): the run's store is closed ('' store:
    the default one), with the run's status in the store and the run's outcome as the recorder judged it
    (agentchemist.record.outcome; '' outcome: not judged, as from a recorder before the verdict was sent)."""
    SYMBOL: ClassVar[Symbol] = Symbol.RECORD_CLOSED
    store: str = ""
    status: str = ""
    outcome: str = ""
    message: str = ""

    def __post_init__(self) -> None:
        super().__post_init__()
        try:  # a misspelt outcome fails where the note is built or read, not where it is acted on
            outcome_kind(self.outcome) if self.outcome else None
        except ValueError as exc:
            raise ValueError(f"{self.SYMBOL.value} note: outcome={self.outcome!r}: {exc}") from None


@dataclass(frozen=True)
class _ReportDocuments(Note):
    report: str = ""   #: the markdown report's absolute path ('' when none was written)
    html: str = ""
    json: str = ""
    status: str = ""   #: the run's status as the recorder closed it
    outcome: str = ""  #: the report's verdict (agentchemist.report.delivery): '' when it states none
    message: str = ""  #: and its message (what is missing and why)


@_registered
@dataclass(frozen=True)
class ReportWritten(_ReportDocuments):
    """Summarizer -> planner: the report's documents."""
    SYMBOL: ClassVar[Symbol] = Symbol.REPORT_WRITTEN


@_registered
@dataclass(frozen=True)
class ReportFailed(_ReportDocuments):
    """Summarizer -> planner: no report (the paths are '')."""
    SYMBOL: ClassVar[Symbol] = Symbol.REPORT_FAILED


# ---------------------------------------------------------------------------------- reading
def note_from(symbol: Symbol | str, payload: Mapping[str, Any]) -> Note:
    """The note of ``symbol`` from a received payload; ValueError on an unknown symbol, a symbol that
    carries no note, or a payload that is not this note's (see the module docstring)."""
    sym = symbol_named(str(symbol))
    cls = NOTES.get(sym)
    if cls is None:
        raise ValueError(f"symbol {sym.value!r} carries no note; notes: {', '.join(sorted(NOTES))}")
    if not isinstance(payload, Mapping):
        raise ValueError(f"{sym.value} note: the payload must be an object, got {type(payload).__name__}")
    names = [f.name for f in fields(cls)]
    unknown = [k for k in payload if k not in names]
    if unknown:
        raise ValueError(f"{sym.value} note: unknown key(s) {', '.join(map(repr, unknown))}; "
                         f"it has {', '.join(names) or 'none'}")
    missing = [f.name for f in fields(cls)
               if f.name not in payload and f.default is MISSING and f.default_factory is MISSING]
    if missing:
        raise ValueError(f"{sym.value} note: missing key(s) {', '.join(map(repr, missing))}")
    return cls(**payload)


def _check(cls: type[Note], values: Mapping[str, Any]) -> None:
    hints = typing.get_type_hints(cls)
    for name, value in values.items():
        problem = _wrong(hints[name], value)
        if problem:
            raise ValueError(f"{cls.SYMBOL.value} note: {name}={value!r}: {problem}")


def _wrong(hint, value) -> str:
    """Why ``value`` is not a ``hint`` ('' when it is)."""
    if typing.get_origin(hint) in (Union, types.UnionType):
        options = typing.get_args(hint)
        if value is None and type(None) in options:
            return ""
        hint = next(o for o in options if o is not type(None))
    if value is None:
        return "must not be null"
    if hint is bool:
        return "" if isinstance(value, bool) else "must be true or false"
    if hint is int:
        return "" if isinstance(value, int) and not isinstance(value, bool) else "must be an integer"
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return "must be a number"
        return "" if math.isfinite(value) else "must be a finite number"
    if hint is str:
        return "" if isinstance(value, str) else "must be a string"
    if typing.get_origin(hint) is abc.Mapping:
        return "" if isinstance(value, Mapping) and all(isinstance(k, str) for k in value) else \
            "must be an object"
    raise TypeError(f"a note field of type {hint!r} is not supported")
