"""Export a run to CSV and Parquet and read it back unchanged."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from agentchemist.record import RecordInputError, export_run, open_store, read_export

EXP = "exp-export"


def same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


@pytest.fixture
def store(tmp_path: Path):
    s = open_store(tmp_path / "runs" / EXP / "records.db")
    s.start_experiment(EXP, now=100.0, instruction='titrate, "quoted"\nline 2', metadata={"operator": "ana", "n": 3})
    s.add_transition(EXP, stamp=100.5, from_state="initial", to_state="titrating", symbol="titrate")
    for i in range(30):
        t = 101.0 + 0.1 * i
        s.add_raw(EXP, stamp=t, channel="sensor", sensor="ph_meter", quantity="pH", value=1.06 + 0.1 / 3 * i,
                  unit="", confidence=0.97, fsm_state="titrating", flags=["level_shift"] if i == 5 else [],
                  payload={"noise": 0.01} if i % 2 else None)
        s.add_fused(EXP, stamp=t, quantity="volume", unit="mL", value=0.046875 * i, confidence=0.9,
                    channels=["statistical", "audio"], channel_values=[0.047 * i, 0.046875 * i],
                    channel_confidences=[0.9, 0.9])
    s.add_raw(EXP, stamp=110.0, channel="audio", sensor="mic_left", quantity="volume", value=float("nan"),
              unit="mL", confidence=-0.5, flags=["invalid_input:audio"])
    s.add_fused(EXP, stamp=111.0, quantity="volume", unit="mL", value=float("nan"), confidence=0.0,
                channels=["audio"], channel_values=[float("inf")], channel_confidences=[0.0],
                quality_flags=["all_below_tau"])
    s.add_anomaly(EXP, stamp=112.0, source="audio_supervisor", kind="timeout", severity="halt",
                  description="no drop for 10 s", response="manual", resolved=False)
    s.add_audio_event(EXP, stamp=103.0, event_id="e1", kind="droplet", classification="expected", start=102.9,
                      end=102.95, snr_db=20.0, peak_frequency_hz=1100.0, quantity=0.046875, confidence=0.9)
    s.add_artifact(EXP, stamp=113.0, kind="chart", path="report/titration.png", label="curve")
    s.finish_experiment(EXP, now=120.0, status="failed", reason="timeout")
    yield s
    s.close()


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_round_trip(store, tmp_path: Path, fmt: str) -> None:
    out = tmp_path / "export"
    written = export_run(store, EXP, out, formats=(fmt,))
    assert {p.name for p in written[fmt]} == {f"{stem}.{fmt}" for stem in (
        "experiment", "transitions", "raw_observations", "fused_records", "anomalies", "audio_events", "artifacts")}
    original = store.load_run(EXP)
    loaded = read_export(out, fmt)
    assert original.keys() == loaded.keys()
    for key in original:
        assert same(original[key], loaded[key]), key


def test_files_are_readable_by_other_tools(store, tmp_path: Path) -> None:
    export_run(store, EXP, tmp_path / "x")
    with (tmp_path / "x" / "fused_records.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 31 and rows[1]["channels"] == '["statistical","audio"]'
    table = pq.read_table(tmp_path / "x" / "fused_records.parquet")
    value_type = table.schema.field("channel_values").type
    assert pa.types.is_list(value_type) and pa.types.is_float64(value_type.value_type)
    assert table.column("confidence").to_pylist()[:2] == [0.9, 0.9]


def test_bad_format_and_missing_files(store, tmp_path: Path) -> None:
    with pytest.raises(RecordInputError, match="formats"):
        export_run(store, EXP, tmp_path / "y", formats=("xlsx",))
    with pytest.raises(RecordInputError, match="missing"):
        read_export(tmp_path / "nothing", "csv")
