"""Read a measured titration curve (pH against titrant volume) from a CSV or TSV file.

A chemist's export has a header row naming the columns, often with the unit: ``volume_ml,ph``,
``Volume (mL);pH``, ``V [µL]<TAB>pH``. The volume and pH columns are found from the header (or named by
the caller, by header text or 1-based position), the volume unit from the header (mL, µL or L; none:
mL, and the reader says so), the delimiter from the first lines (comma, tab or semicolon; a semicolon
file may use the decimal comma, as European instruments write). A temperature column (``temp``,
``temperature``, in degC) is read when there is one. Lines starting with ``#`` are comments.

Every problem is a :class:`CurveFileError` (a ValueError) with one line naming the file, line and cell:
the command line prints it without a traceback.

The instrument's resolution is read from the data as written: the finest decimal place used in the
volume column (0.1 mL typed from a burette, 0.001 mL from a pump) and in the pH column; the report
never states a volume finer than the reading it rests on.
"""
from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = ["CurveFileError", "CurveTable", "read_curve"]

#: unit words of a volume header, as the factor to mL
VOLUME_UNITS = {"ml": 1.0, "cm3": 1.0, "µl": 1e-3, "μl": 1e-3, "ul": 1e-3, "l": 1e3}
_UNIT_IN_BRACKETS = re.compile(r"[\(\[]\s*([^\)\]]+?)\s*[\)\]]")
_VOLUME_WORDS = ("volume", "vol", "v", "titrant", "added", "naoh", "hcl", "base", "acid")


class CurveFileError(ValueError):
    """A curve file that cannot be read as pH against volume: one line saying where and why."""


@dataclass
class CurveTable:
    """The curve as read: volumes in mL (as measured, unsorted), pH, optional temperature (degC) per row."""

    path: Path
    volume_ml: np.ndarray
    ph: np.ndarray
    temperature_c: np.ndarray | None
    volume_column: str
    ph_column: str
    volume_unit: str
    volume_resolution_ml: float
    ph_resolution: float
    notes: list[str] = field(default_factory=list)


def _tokens(header: str) -> list[str]:
    return [t for t in re.split(r"[^a-zµμ0-9]+", header.lower()) if t]


def _unit_of(header: str) -> str | None:
    """The volume unit a header names: '(mL)', '[µL]', 'volume_ml', 'V mL'; None when it names none."""
    bracket = _UNIT_IN_BRACKETS.search(header)
    if bracket:
        word = bracket.group(1).strip().lower()
        return word if word in VOLUME_UNITS else f"?{bracket.group(1).strip()}"
    for token in reversed(_tokens(header)):
        if token in VOLUME_UNITS and token != "l":
            return token
    return None


def _is_ph(header: str) -> bool:
    tokens = _tokens(header)
    return "ph" in tokens and not any(t in ("mv", "dph", "dv", "derivative", "d2ph") for t in tokens)


def _is_volume(header: str) -> bool:
    tokens = _tokens(header)
    if any(t in ("dv", "dph", "ph", "time", "t", "s") for t in tokens):
        return False
    unit = _unit_of(header)
    return bool(tokens) and (tokens[0] in _VOLUME_WORDS or (unit is not None and not unit.startswith("?")))


def _is_temperature(header: str) -> bool:
    tokens = _tokens(header)
    return bool(tokens) and tokens[0] in ("temp", "temperature", "t_c", "tc")


def _pick(headers: list[str], wanted: str | None, test, what: str, flag: str, path: Path) -> int:
    if wanted is not None:
        if wanted.isdigit():
            index = int(wanted) - 1
            if not 0 <= index < len(headers):
                raise CurveFileError(f"{path}: {flag} {wanted}: the file has {len(headers)} column(s)")
            return index
        matches = [i for i, h in enumerate(headers) if h.strip().lower() == wanted.strip().lower()]
        if not matches:
            raise CurveFileError(f"{path}: {flag} {wanted!r}: no such column (columns: {', '.join(headers)})")
        return matches[0]
    found = [i for i, h in enumerate(headers) if test(h)]
    if not found:
        raise CurveFileError(f"{path}: no {what} column found in the header ({', '.join(headers)}); name it with {flag}")
    if len(found) > 1:
        names = ", ".join(repr(headers[i]) for i in found)
        raise CurveFileError(f"{path}: {len(found)} columns could be the {what} ({names}); choose one with {flag}")
    return found[0]


def _resolution(cells: list[str]) -> float:
    """The finest decimal place written in a column (0.1 for '12.5', 1 for '12')."""
    places = 0
    for cell in cells:
        text = cell.strip().lower().split("e")[0]
        if "." in text:
            places = max(places, len(text.split(".")[1]))
    return 10.0 ** -places


def _sniff(lines: list[str]) -> str:
    sample = [line for line in lines[:20] if line.strip() and not line.lstrip().startswith("#")]
    for delimiter in ("\t", ";", ","):
        counts = {line.count(delimiter) for line in sample}
        if sample and min(counts) >= 1 and len(counts) == 1:
            return delimiter
    for delimiter in ("\t", ";", ","):
        if sample and all(line.count(delimiter) >= 1 for line in sample):
            return delimiter
    raise CurveFileError("no column delimiter (comma, tab or semicolon) found in the first lines: a curve file "
                         "has at least a volume and a pH column")


def _number(cell: str, decimal_comma: bool) -> float:
    text = cell.strip()
    if decimal_comma:
        text = text.replace(",", ".")
    return float(text)


def read_curve(path: str | Path, *, volume_column: str | None = None, ph_column: str | None = None,
               volume_unit: str | None = None) -> CurveTable:
    """Read ``path`` (CSV/TSV with a header row); see the module docstring."""
    path = Path(path)
    if not path.is_file():
        raise CurveFileError(f"{path}: no such file")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        text = path.read_text(encoding="latin-1")
    lines = text.splitlines()
    try:
        delimiter = _sniff(lines)
    except CurveFileError as exc:
        raise CurveFileError(f"{path}: {exc}") from None
    body = [(n, line) for n, line in enumerate(lines, start=1) if line.strip() and not line.lstrip().startswith("#")]
    rows = [(n, row) for n, row in ((n, next(csv.reader(io.StringIO(line), delimiter=delimiter))) for n, line in body)]
    if not rows:
        raise CurveFileError(f"{path}: the file holds no data")
    header_line, headers = rows[0]
    headers = [h.strip() for h in headers]
    if all(_looks_numeric(h) for h in headers):
        raise CurveFileError(f"{path}: line {header_line} is data, not a header: the first row must name the columns "
                             "(e.g. 'volume_ml,ph')")
    iv = _pick(headers, volume_column, _is_volume, "volume", "--volume-column", path)
    ip = _pick(headers, ph_column, _is_ph, "pH", "--ph-column", path)
    if iv == ip:
        raise CurveFileError(f"{path}: the volume and pH columns are the same column ({headers[iv]!r})")
    notes: list[str] = []
    unit = (volume_unit or "").strip().lower() or _unit_of(headers[iv])
    if unit is None:
        unit = "ml"
        notes.append(f"the volume column {headers[iv]!r} names no unit: read as mL (--volume-unit to say otherwise)")
    if unit not in VOLUME_UNITS:
        raise CurveFileError(f"{path}: volume unit {unit.lstrip('?')!r} is not one of mL, µL, L (--volume-unit ml|ul|l)")
    factor = VOLUME_UNITS[unit]
    temperatures = [i for i, h in enumerate(headers) if _is_temperature(h) and i not in (iv, ip)]
    it = temperatures[0] if temperatures else None
    decimal_comma = delimiter == ";" and any("," in cell for _, row in rows[1:6] for cell in row)
    volumes, phs, temps, v_cells, p_cells = [], [], [], [], []
    for n, row in rows[1:]:
        cells = [c.strip() for c in row]
        if all(not c for c in cells):
            continue
        if max(iv, ip) >= len(cells):
            raise CurveFileError(f"{path}: line {n} has {len(cells)} cell(s), the volume and pH columns need "
                                 f"{max(iv, ip) + 1}")
        values = []
        for index, name in ((iv, headers[iv]), (ip, headers[ip])):
            try:
                x = _number(cells[index], decimal_comma)
            except ValueError:
                raise CurveFileError(f"{path}: line {n}, column {name!r}: {cells[index]!r} is not a number") from None
            if not math.isfinite(x):
                raise CurveFileError(f"{path}: line {n}, column {name!r}: {cells[index]!r} is not a finite number")
            values.append(x)
        volumes.append(values[0] * factor)
        phs.append(values[1])
        v_cells.append(cells[iv])
        p_cells.append(cells[ip])
        if it is not None:
            try:
                temps.append(_number(cells[it], decimal_comma) if it < len(cells) and cells[it] else math.nan)
            except ValueError:
                temps.append(math.nan)
    if not volumes:
        raise CurveFileError(f"{path}: the header is there but no data row follows")
    v = np.array(volumes, float)
    if np.any(v < 0):
        raise CurveFileError(f"{path}: negative volume {v.min():g} mL: the volume column must be the cumulative "
                             "titrant added")
    return CurveTable(path=path, volume_ml=v, ph=np.array(phs, float),
                      temperature_c=np.array(temps, float) if it is not None else None,
                      volume_column=headers[iv], ph_column=headers[ip], volume_unit=unit,
                      volume_resolution_ml=_resolution(v_cells) * factor, ph_resolution=_resolution(p_cells),
                      notes=notes)


def _looks_numeric(cell: str) -> bool:
    try:
        float(cell.strip().replace(",", "."))
        return True
    except ValueError:
        return False
