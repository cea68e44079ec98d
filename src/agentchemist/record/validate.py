"""Argument checks for the store's add_* methods; each returns the normalised value or raises
:class:`RecordInputError` naming the field.

What is checked is what a store cannot record meaningfully (a NaN timestamp cannot be ordered, a dict that
is not JSON cannot be stored). Measured values themselves may be NaN or inf: bad measurements are data.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from agentchemist.record.errors import RecordInputError, UnknownExperimentError

__all__ = ["RecordInputError", "UnknownExperimentError"]


def _is_real(value: object) -> bool:
    kind = type(value)
    if kind is float or kind is int:  # fast path: this runs several times per record
        return True
    return isinstance(value, (int, float)) and not isinstance(value, bool) or _is_numpy_real(value)


def _is_numpy_real(value: object) -> bool:
    kind = getattr(getattr(value, "dtype", None), "kind", None)
    return kind in ("f", "i", "u") and getattr(value, "shape", None) == ()


def text(field: str, value: object) -> str:
    if not isinstance(value, str):
        raise RecordInputError(f"{field} must be a str, got {type(value).__name__}: {value!r}")
    return value


def name(field: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise RecordInputError(f"{field} must be a non-empty str, got {value!r}")
    return value


def stamp(field: str, value: object) -> float:
    if not _is_real(value) or not math.isfinite(float(value)):  # type: ignore[arg-type]
        raise RecordInputError(f"{field} must be a finite time in seconds, got {value!r}")
    return float(value)  # type: ignore[arg-type]


def any_float(field: str, value: object) -> float:
    """A measured value: any real number including NaN/inf (stored as given)."""
    if not _is_real(value):
        raise RecordInputError(f"{field} must be a real number (NaN allowed), got {type(value).__name__}: {value!r}")
    return float(value)  # type: ignore[arg-type]


def unit_interval(field: str, value: object) -> float:
    number = any_float(field, value)
    if not 0.0 <= number <= 1.0:
        raise RecordInputError(f"{field} must be in [0, 1], got {value!r}")
    return number


def boolean(field: str, value: object) -> bool:
    if not isinstance(value, bool) and type(value).__name__ != "bool_":
        raise RecordInputError(f"{field} must be a bool, got {value!r}")
    return bool(value)


def choice(field: str, value: object, allowed: Sequence[str]) -> str:
    if value not in allowed:
        raise RecordInputError(f"{field} must be one of {list(allowed)}, got {value!r}")
    return str(value)


def str_list(field: str, values: object) -> list[str]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise RecordInputError(f"{field} must be a sequence of str, got {values!r}")
    if all(type(item) is str for item in values):
        return list(values)
    return [text(f"{field}[{i}]", item) for i, item in enumerate(values)]


def float_list(field: str, values: object) -> list[float]:
    if isinstance(values, (str, bytes)) or not hasattr(values, "__len__") or not hasattr(values, "__iter__"):
        raise RecordInputError(f"{field} must be a sequence of numbers, got {values!r}")
    if all(type(item) is float for item in values):  # type: ignore[attr-defined]
        return list(values)  # type: ignore[call-overload]
    return [any_float(f"{field}[{i}]", item) for i, item in enumerate(values)]  # type: ignore[attr-defined]


def same_length(**lists: Sequence[Any]) -> None:
    lengths = {key: len(value) for key, value in lists.items()}
    if len(set(lengths.values())) > 1:
        raise RecordInputError(f"aligned lists differ in length: {lengths}")


def json_value(field: str, value: Any) -> Any:
    """Any JSON-serialisable value (NaN allowed); returned as a plain JSON copy."""
    try:
        return json.loads(json.dumps(value, allow_nan=True))
    except (TypeError, ValueError) as exc:
        raise RecordInputError(f"{field} must be JSON-serialisable: {exc}") from exc


def json_dict(field: str, value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise RecordInputError(f"{field} must be a dict or None, got {type(value).__name__}")
    return json_value(field, value)
