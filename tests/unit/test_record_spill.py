"""The spill file: fsync'd JSON lines, torn-line handling, lazy chunked replay, merge with the database."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from agentchemist.record import SpillCorruptError
from agentchemist.record.spill import SpillFile, merge_experiments, merge_records


def op(i: int, **row) -> dict:
    return {"op": "insert", "table": "fused_records", "experiment_id": "e", "uid": f"u-{i}", "seq": i,
            "row": {"stamp": float(i), "quantity": "volume", "value": row.get("value", 0.1 * i)}}


def test_append_read_keeps_order_and_non_finite_values(tmp_path: Path) -> None:
    spill = SpillFile(tmp_path / "deep" / "spill.jsonl")
    assert spill.read() == [] and not spill.exists()
    spill.append([op(1), op(2, value=float("nan"))])
    spill.append([op(3, value=float("inf"))])
    ops = spill.read()
    assert [o["uid"] for o in ops] == ["u-1", "u-2", "u-3"]
    assert math.isnan(ops[1]["row"]["value"]) and ops[2]["row"]["value"] == math.inf
    assert [len(c) for c in spill.chunks(2)] == [2, 1]
    spill.clear()
    assert not spill.exists()


def test_torn_tail_is_ignored_then_cut_before_the_next_append(tmp_path: Path) -> None:
    spill = SpillFile(tmp_path / "spill.jsonl")
    spill.append([op(1)])
    with spill.path.open("ab") as handle:
        handle.write(b'{"op": "insert", "tab')  # killed inside append
    assert [o["uid"] for o in spill.read()] == ["u-1"]
    assert spill.repair() is True
    assert spill.repair() is False
    spill.append([op(2)])
    assert [o["uid"] for o in spill.read()] == ["u-1", "u-2"]


def test_torn_only_line_repairs_to_empty(tmp_path: Path) -> None:
    spill = SpillFile(tmp_path / "spill.jsonl")
    spill.path.write_bytes(b'{"op"')
    assert spill.read() == [] and spill.repair() and spill.path.stat().st_size == 0


def test_corrupt_middle_line_raises(tmp_path: Path) -> None:
    spill = SpillFile(tmp_path / "spill.jsonl")
    spill.path.write_text('{"op": "insert"}\nnot json\n{"op": "insert"}\n')
    with pytest.raises(SpillCorruptError, match="line 2"):
        spill.read()


def test_merge_records_dedupes_by_uid_and_filters() -> None:
    db_rows = [{"uid": "u-1", "stamp": 1.0, "quantity": "volume", "value": 0.1, "seq": 1}]
    merged = merge_records(db_rows, [op(1), op(3), op(2)], "fused_records", "e", since=1.0, until=2.5)
    assert [r["uid"] for r in merged] == ["u-1", "u-2"]
    assert merge_records(db_rows, [op(2)], "fused_records", "e", quantity="pH") == db_rows


def test_merge_experiments_applies_start_and_finish_in_order() -> None:
    rows = {"a": {"experiment_id": "a", "instruction": "x", "started": 0.0, "finished": None,
                  "status": "running", "reason": "", "metadata": {"k": 1}}}
    ops = [{"op": "start", "experiment_id": "a", "now": 5.0, "instruction": "", "metadata": {"j": 2}},
           {"op": "start", "experiment_id": "b", "now": 1.0, "instruction": "y", "metadata": {}},
           {"op": "finish", "experiment_id": "a", "now": 9.0, "status": "aborted", "reason": "estop"}]
    a, b = merge_experiments(rows, ops, None)
    assert (a["experiment_id"], a["started"], a["metadata"], a["status"], a["finished"]) == (
        "a", 0.0, {"k": 1, "j": 2}, "aborted", 9.0)
    assert (b["experiment_id"], b["status"], b["finished"]) == ("b", "running", None)
