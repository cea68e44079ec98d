"""What the report is written from: one run's records, and the per-drop titration table built from them.

:class:`RunData` mirrors the recorder's store (one list of dicts per record kind, see
``agentchemist.record.schema``); the lead fills it from the database or from an export. Stamps are
seconds on the run's clock (ROS time: wall-clock epoch seconds on a robot, simulated seconds in the twin).

The titration curve is read from the fused records: one point per ``ph_settled`` record (the pH taken
once it settled after a drop), paired with the latest ``titrant_volume`` record (cumulative mL) at or
before its stamp; before the first drop the volume is 0 mL. Records with quality flags are kept and
reported; the analysis receives their volume ranges so it does not state a claim that rests on them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = [
    "INFORMATIONAL_FLAGS",
    "DropRow",
    "ReportInputError",
    "RunData",
    "flagged_volume_ranges",
    "series",
    "titration_points",
    "titration_table",
]

# Flags that describe a row rather than cast doubt on it (the drop joiner's pre-titration reading).
INFORMATIONAL_FLAGS = frozenset({"initial"})
STATUSES = ("completed", "aborted", "failed", "running")
_LISTS = ("transitions", "raw_observations", "fused_records", "anomalies", "audio_events", "artifacts")


class ReportInputError(ValueError):
    """Run data the report writer cannot use (wrong types, records without stamps); names the field."""


def _finite(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


@dataclass
class RunData:
    """One experiment run as stored by the recorder.

    ``experiment``: experiment_id, instruction, operator, started / finished (s), status
    (completed | aborted | failed | running; another word is reported as not completed), reason,
    plan (the planner's five-field dict), reagents (list of dicts: name, concentration_m, volume_ml,
    batch, optionally role), conditions (initial_ph, target_ph, temperature_start_c,
    temperature_end_c ...), software_version, config_hash, parameters.
    The record lists hold the columns of the store's tables (see the module docstring).
    ``run_dir`` resolves relative artifact paths (snapshots); None: relative to the report folder.
    """

    experiment: dict = field(default_factory=dict)
    transitions: list[dict] = field(default_factory=list)
    raw_observations: list[dict] = field(default_factory=list)
    fused_records: list[dict] = field(default_factory=list)
    anomalies: list[dict] = field(default_factory=list)
    audio_events: list[dict] = field(default_factory=list)
    artifacts: list[dict] = field(default_factory=list)
    run_dir: Path | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.experiment, Mapping):
            raise ReportInputError(f"RunData.experiment must be a mapping, got {type(self.experiment).__name__}")
        self.experiment = dict(self.experiment)
        status = self.experiment.get("status")
        # The store accepts any status word; the known ones are STATUSES, and the report treats any other
        # as a run that did not complete (it says so) rather than refusing to write.
        if status is not None and not isinstance(status, str):
            raise ReportInputError(f"RunData.experiment.status must be a string such as {STATUSES}, got {status!r}")
        for name in _LISTS:
            records = getattr(self, name)
            if records is None:
                records = []
            if isinstance(records, (str, bytes)) or not isinstance(records, Sequence):
                raise ReportInputError(f"RunData.{name} must be a list of dicts, got {type(records).__name__}")
            checked = []
            for i, record in enumerate(records):
                if not isinstance(record, Mapping):
                    raise ReportInputError(f"RunData.{name}[{i}] must be a dict, got {type(record).__name__}")
                if not _finite(record.get("stamp")):
                    raise ReportInputError(f"RunData.{name}[{i}] has no finite 'stamp' (got {record.get('stamp')!r})")
                checked.append(dict(record))
            # Time order (stable, so records with equal stamps keep the store's order / sequence).
            checked.sort(key=lambda r: (float(r["stamp"]), r.get("seq", 0) if _finite(r.get("seq")) else 0))
            setattr(self, name, checked)
        if self.run_dir is not None:
            self.run_dir = Path(self.run_dir)

    @classmethod
    def from_mapping(cls, data: Mapping, run_dir: str | Path | None = None) -> "RunData":
        """From a ``load_run``-shaped mapping: ``experiment`` (its ``metadata`` dict merged in) + lists."""
        experiment = dict(data.get("experiment") or {})
        metadata = experiment.pop("metadata", None)
        if isinstance(metadata, Mapping):
            experiment = {**metadata, **{k: v for k, v in experiment.items() if v not in (None, "")}}
        return cls(experiment=experiment, run_dir=Path(run_dir) if run_dir else None,
                   **{name: list(data.get(name) or []) for name in _LISTS})

    @property
    def started(self) -> float | None:
        """Start stamp (s): the experiment's, else the earliest record's, else None."""
        start = self.experiment.get("started")
        if _finite(start):
            return float(start)
        stamps = [r[0]["stamp"] for r in (getattr(self, n) for n in _LISTS) if r]
        return float(min(stamps)) if stamps else None

    def fused(self, quantity: str) -> list[dict]:
        """Fused records of one quantity, in time order."""
        return [r for r in self.fused_records if r.get("quantity") == quantity]


def _problem_flags(flags: object) -> tuple[str, ...]:
    if not flags:
        return ()
    if isinstance(flags, str):
        flags = [flags]
    return tuple(str(f) for f in flags if str(f).split(":")[0] not in INFORMATIONAL_FLAGS)


@dataclass(frozen=True)
class DropRow:
    """One row of the per-drop table: a settled pH with the cumulative titrant volume at that time.

    ``reading`` 1-based; ``drops``: titrant_volume records (drops) up to this reading; ``volume_ml``
    cumulative mL; ``d_volume_ml``/``d_ph`` change since the previous reading; confidences in [0, 1];
    ``volume_channels`` maps channel -> (value mL, confidence); ``flags`` the quality flags of the pH
    and of the volume record; ``usable`` False when pH or volume is not a finite number.
    """

    reading: int
    stamp: float
    drops: int
    volume_ml: float
    d_volume_ml: float
    ph: float
    d_ph: float
    ph_confidence: float
    volume_confidence: float
    volume_channels: dict[str, tuple[float, float]]
    temperature_c: float
    flags: tuple[str, ...]
    fsm_state: str
    usable: bool

    @property
    def quality_flags(self) -> tuple[str, ...]:
        """The flags that cast doubt on the row (informational ones such as 'initial' removed)."""
        return _problem_flags(self.flags)


def _channels(record: Mapping | None) -> dict[str, tuple[float, float]]:
    if not record:
        return {}
    names = record.get("channels") or []
    values = record.get("channel_values") or []
    confidences = record.get("channel_confidences") or []
    out = {}
    for i, name in enumerate(names):
        value = float(values[i]) if i < len(values) and _finite(values[i]) else math.nan
        conf = float(confidences[i]) if i < len(confidences) and _finite(confidences[i]) else math.nan
        out[str(name)] = (value, conf)
    return out


def _value(record: Mapping | None, key: str = "value", default: float = math.nan) -> float:
    if record is None:
        return default
    x = record.get(key)
    return float(x) if _finite(x) else math.nan


def titration_table(run: RunData) -> list[DropRow]:
    """The per-drop table (see :class:`DropRow`), one row per ``ph_settled`` fused record."""
    rows: list[DropRow] = []
    volume_rec: dict | None = None
    temperature_rec: dict | None = None
    drops = 0
    prev_v, prev_ph = math.nan, math.nan
    for record in run.fused_records:
        quantity = record.get("quantity")
        if quantity == "titrant_volume":
            volume_rec = record
            drops += 1
        elif quantity == "temperature":
            temperature_rec = record
        elif quantity == "ph_settled":
            ph = _value(record)
            volume = _value(volume_rec) if volume_rec is not None else 0.0
            flags = tuple(str(f) for f in (record.get("quality_flags") or ()))
            if volume_rec is not None:
                flags += tuple(f"volume:{f}" for f in (volume_rec.get("quality_flags") or ()))
            rows.append(
                DropRow(
                    reading=len(rows) + 1,
                    stamp=float(record["stamp"]),
                    drops=drops,
                    volume_ml=volume,
                    d_volume_ml=volume - prev_v if rows else math.nan,
                    ph=ph,
                    d_ph=ph - prev_ph if rows else math.nan,
                    ph_confidence=_value(record, "confidence"),
                    volume_confidence=_value(volume_rec, "confidence") if volume_rec is not None else math.nan,
                    volume_channels=_channels(volume_rec),
                    temperature_c=_value(temperature_rec),
                    flags=flags,
                    fsm_state=str(record.get("fsm_state") or ""),
                    usable=math.isfinite(ph) and math.isfinite(volume),
                )
            )
            prev_v, prev_ph = volume, ph
    return rows


def titration_points(run: RunData) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(stamps s, cumulative titrant volume mL, pH): the usable rows of :func:`titration_table`.

    Rows whose pH or volume is not a finite number are left out here (they stay in the table, flagged).
    """
    rows = [r for r in titration_table(run) if r.usable]
    return (
        np.array([r.stamp for r in rows], dtype=float),
        np.array([r.volume_ml for r in rows], dtype=float),
        np.array([r.ph for r in rows], dtype=float),
    )


def flagged_volume_ranges(rows: Sequence[DropRow]) -> list[tuple[float, float]]:
    """Volume ranges (mL) whose data are in doubt: from the previous reading's volume to a flagged one's."""
    ranges = []
    previous = None
    for row in rows:
        if row.usable and row.quality_flags:
            start = previous if previous is not None else row.volume_ml
            ranges.append((min(start, row.volume_ml), max(start, row.volume_ml)))
        if row.usable:
            previous = row.volume_ml
    return ranges


def series(run: RunData, quantity: str) -> tuple[np.ndarray, np.ndarray]:
    """(stamps s, values) of the finite fused records of one quantity."""
    recs = [r for r in run.fused(quantity) if _finite(r.get("value"))]
    return (np.array([float(r["stamp"]) for r in recs]), np.array([float(r["value"]) for r in recs]))
