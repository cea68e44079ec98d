"""Read a measured titration curve (pH against titrant volume) from a CSV or TSV file.

A chemist's export has a header row naming the columns, often with the unit: ``volume_ml,ph``,
``Volume (mL);pH``, ``V [µL]<TAB>pH``. The volume and pH columns are found from the header (or named by
the caller, by header text or 1-based position), the volume unit from the header (mL, µL or L; none:
mL, and the reader says so), the delimiter from the first lines (comma, tab or semicolon; a semicolon
file may use the decimal comma, as European instruments write). A temperature column (``temp``,
``temperature``, in degC) is read when there is one. Lines starting with ``#`` are comments.

A data logger's export is read too: Vernier Logger Pro writes several runs side by side (``Run 1: pH``,
``Run 1: Volume of NaOH Added (cm³)`` ...), a reading a second, with the volume typed only at each addition.
The run is chosen with ``run`` (default 1); the volume is carried forward from each typed addition, and a
step's pH is the median of its last :data:`LOGGER_STEP_READINGS` readings (the equilibrated end of the step:
the electrode still moves right after an addition), its temperature the median of the step.

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
VOLUME_UNITS = {"ml": 1.0, "cm3": 1.0, "cm³": 1.0, "µl": 1e-3, "μl": 1e-3, "ul": 1e-3, "l": 1e3}
#: readings at the end of a logged step whose median is the step's pH
LOGGER_STEP_READINGS = 5
_RUN_PREFIX = re.compile(r"^Run (\d+):\s*(.*)$")
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


def _logger_columns(headers: list[str], run: int | None, path: Path) -> tuple[list[int], list[str], str] | None:
    """(column indices, names without the prefix, a note) of one run of a logger export; None for a plain file."""
    runs = {}
    for i, h in enumerate(headers):
        m = _RUN_PREFIX.match(h)
        if m:
            runs.setdefault(int(m.group(1)), []).append((i, m.group(2).strip()))
    if not runs:
        if run is not None:
            raise CurveFileError(f"{path}: --run {run}: the file is not a logger export with several runs")
        return None
    chosen = run if run is not None else min(runs)
    if chosen not in runs:
        raise CurveFileError(f"{path}: --run {chosen}: the file holds run(s) {', '.join(map(str, sorted(runs)))}")
    note = (f"Logger Pro export: run {chosen} of {len(runs)} (--run to choose); the volume carried forward from each "
            f"typed addition, a step's pH the median of its last {LOGGER_STEP_READINGS} readings")
    return [i for i, _ in runs[chosen]], [name for _, name in runs[chosen]], note


def _logger_steps(volumes: list[float | None], phs: list[float], temps: list[float]) -> tuple[list, list, list, int]:
    """Readings -> one (volume, pH, temperature) per typed addition (see the module docstring)."""
    steps: list[tuple[float, list[float], list[float]]] = []
    for v, ph, t in zip(volumes, phs, temps):
        if v is not None:
            steps.append((v, [], []))
        if steps:
            steps[-1][1].append(ph)
            steps[-1][2].append(t)
    steps = [s for s in steps if s[1]]
    out_t = [float(np.nanmedian(t)) if np.isfinite(t).any() else math.nan for _, _, t in steps]
    return ([s[0] for s in steps], [float(np.median(s[1][-LOGGER_STEP_READINGS:])) for s in steps], out_t,
            sum(len(s[1]) for s in steps))


def read_curve(path: str | Path, *, volume_column: str | None = None, ph_column: str | None = None,
               volume_unit: str | None = None, run: int | None = None) -> CurveTable:
    """Read ``path`` (CSV/TSV with a header row, or a Logger Pro export); see the module docstring."""
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
    logger = _logger_columns(headers, run, path)
    if logger is not None:  # one run's columns, as a plain file's
        keep, names, logger_note = logger
        headers = names
        rows = [rows[0]] + [(n, [row[i] if i < len(row) else "" for i in keep]) for n, row in rows[1:]]
    iv = _pick(headers, volume_column, _is_volume, "volume", "--volume-column", path)
    ip = _pick(headers, ph_column, _is_ph, "pH", "--ph-column", path)
    if iv == ip:
        raise CurveFileError(f"{path}: the volume and pH columns are the same column ({headers[iv]!r})")
    notes: list[str] = [logger_note] if logger is not None else []
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
        if logger is not None and not cells[ip]:
            continue  # this run ended before the others: its cells are empty
        values = []
        for index, name in ((iv, headers[iv]), (ip, headers[ip])):
            if logger is not None and index == iv and not cells[iv]:
                values.append(None)  # no addition typed at this reading: the volume carries forward
                continue
            try:
                x = _number(cells[index], decimal_comma)
            except ValueError:
                raise CurveFileError(f"{path}: line {n}, column {name!r}: {cells[index]!r} is not a number") from None
            if not math.isfinite(x):
                raise CurveFileError(f"{path}: line {n}, column {name!r}: {cells[index]!r} is not a finite number")
            values.append(x)
        volumes.append(values[0] * factor if values[0] is not None else None)
        phs.append(values[1])
        v_cells.append(cells[iv])
        p_cells.append(cells[ip])
        if it is not None:
            try:
                temps.append(_number(cells[it], decimal_comma) if it < len(cells) and cells[it] else math.nan)
            except ValueError:
                temps.append(math.nan)
    if logger is not None:
        if it is None:
            temps = [math.nan] * len(phs)
        if volumes and volumes[0] is None:
            volumes[0] = 0.0  # readings before the first typed addition: nothing added yet
        volumes, phs, temps, n_readings = _logger_steps(volumes, phs, temps)
        notes[0] += f" ({len(volumes)} steps from {n_readings} readings)"
        v_cells = [c for c in v_cells if c]
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
