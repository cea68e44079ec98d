"""Report input: RunData validation and the per-drop pairing of settled pH with cumulative volume."""

from __future__ import annotations

import math

import numpy as np
import pytest

from agentchemist.report import ReportInputError, RunData, titration_points, titration_table
from agentchemist.report.model import flagged_volume_ranges


def rec(stamp, quantity, value, *, flags=(), channels=(), values=(), confs=(), conf=0.9):
    return {"stamp": stamp, "quantity": quantity, "value": value, "unit": "", "confidence": conf,
            "channels": list(channels), "channel_values": list(values), "channel_confidences": list(confs),
            "fsm_state": "titrating", "subtask_id": "titrate", "quality_flags": list(flags)}


def test_settled_ph_pairs_with_latest_volume_at_or_before_it():
    fused = [
        rec(1.0, "ph_settled", 3.00, flags=["initial"]),          # before any drop: 0 mL
        rec(2.0, "titrant_volume", 0.05, channels=["statistical", "audio"], values=[0.05, 0.049], confs=[0.95, 0.8]),
        rec(3.0, "ph", 3.05),                                     # unsettled reading: not a point
        rec(4.0, "ph_settled", 3.10),
        rec(5.0, "titrant_volume", 0.10),
        rec(5.0, "ph_settled", 3.20),                             # same stamp as its drop: paired with it
        rec(6.0, "titrant_volume", 0.15),
        rec(6.5, "titrant_volume", 0.20),                         # two drops before the next settled pH
        rec(7.0, "ph_settled", 3.40),
    ]
    stamps, volume, ph = titration_points(RunData(fused_records=fused))
    assert stamps.tolist() == [1.0, 4.0, 5.0, 7.0]
    assert volume.tolist() == [0.0, 0.05, 0.10, 0.20]
    assert ph.tolist() == [3.00, 3.10, 3.20, 3.40]
    rows = titration_table(RunData(fused_records=fused))
    assert [r.drops for r in rows] == [0, 1, 2, 4]
    assert rows[1].volume_channels == {"statistical": (0.05, 0.95), "audio": (0.049, 0.8)}
    assert rows[3].d_volume_ml == pytest.approx(0.10) and rows[3].d_ph == pytest.approx(0.20)
    assert math.isnan(rows[0].d_ph)
    assert rows[0].flags == ("initial",) and rows[0].quality_flags == ()


def test_records_are_put_in_time_order():
    fused = [rec(4.0, "ph_settled", 3.1), rec(2.0, "titrant_volume", 0.05), rec(1.0, "ph_settled", 3.0)]
    _, volume, ph = titration_points(RunData(fused_records=fused))
    assert volume.tolist() == [0.0, 0.05] and ph.tolist() == [3.0, 3.1]


def test_flagged_rows_are_kept_and_give_volume_ranges():
    fused = [rec(1.0, "ph_settled", 3.0), rec(2.0, "titrant_volume", 0.05), rec(3.0, "ph_settled", 3.1),
             rec(4.0, "titrant_volume", 0.10, flags=["failure_gated:audio"]), rec(5.0, "ph_settled", 3.2),
             rec(6.0, "titrant_volume", 0.15), rec(7.0, "ph_settled", 3.3, flags=["divergence"])]
    run = RunData(fused_records=fused)
    rows = titration_table(run)
    assert len(titration_points(run)[1]) == 4  # flagged rows are still points
    assert rows[2].flags == ("volume:failure_gated:audio",) and rows[3].flags == ("divergence",)
    assert flagged_volume_ranges(rows) == [(0.05, 0.10), (0.10, 0.15)]


def test_non_finite_ph_stays_in_the_table_but_not_in_the_points():
    fused = [rec(1.0, "titrant_volume", 0.05), rec(2.0, "ph_settled", float("nan"), flags=["no_ph_after_settle"]),
             rec(3.0, "ph_settled", 3.2)]
    run = RunData(fused_records=fused)
    rows = titration_table(run)
    assert [r.usable for r in rows] == [False, True]
    assert titration_points(run)[2].tolist() == [3.2]


def test_empty_run_gives_empty_arrays():
    stamps, volume, ph = titration_points(RunData())
    assert stamps.size == volume.size == ph.size == 0 and isinstance(ph, np.ndarray)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"experiment": ["not", "a", "dict"]}, "experiment must be a mapping"),
     ({"experiment": {"status": 3}}, "status must be a string"),
     ({"fused_records": [{"quantity": "ph", "value": 3.0}]}, r"fused_records\[0\] has no finite 'stamp'"),
     ({"anomalies": [{"stamp": float("nan")}]}, r"anomalies\[0\] has no finite 'stamp'"),
     ({"transitions": "initial->done"}, "transitions must be a list of dicts"),
     ({"artifacts": [3]}, r"artifacts\[0\] must be a dict")],
)
def test_rundata_refuses_malformed_input(kwargs, message):
    with pytest.raises(ReportInputError, match=message):
        RunData(**kwargs)


def test_from_mapping_merges_store_metadata():
    run = RunData.from_mapping({
        "experiment": {"experiment_id": "e1", "instruction": "titrate", "started": 1.0, "finished": None,
                       "status": "running", "reason": "", "metadata": {"operator": "ada", "reason": "from meta"}},
        "fused_records": [rec(2.0, "ph", 7.0)],
    }, run_dir="/tmp/somewhere")
    assert run.experiment["operator"] == "ada" and run.experiment["experiment_id"] == "e1"
    assert run.experiment["reason"] == "from meta"  # empty store column does not hide the metadata value
    assert run.started == 1.0 and len(run.fused_records) == 1 and str(run.run_dir) == "/tmp/somewhere"
