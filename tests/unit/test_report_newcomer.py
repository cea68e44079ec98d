"""A report a newcomer reads in a minute: summary first, long tables as CSV, interrupted runs said so,
and `agentchemist report` that never creates a run folder or database (issues 22 and 25)."""
from __future__ import annotations

import functools
import json
import math
import sqlite3
import subprocess
import sys

import numpy as np
import pytest

from agentchemist.chemistry.analysis import analyze_titration as _analyze_titration
from agentchemist.chemistry.equilibrium import titration_curve
from agentchemist.cli import main as cli_main
from agentchemist.report.document import fmt_t
from agentchemist.report.model import RunData
from agentchemist.experiments.acid_base.sample_run import synthetic_titration_run
from agentchemist.report.writer import write_report

# These synthetic curves are concentration-based (titration_curve's default, no activity coefficients): they are
# analysed with activity=False; the analysis's own default is activity on (issue 41, one default).
analyze_titration = functools.partial(_analyze_titration, activity=False)


@pytest.fixture(scope="module")
def long_run(tmp_path_factory):
    """About 1200 drops, the size of the twin's HCl/NaOH demo (25 mL of 0.1 M HCl to pH 12.5)."""
    out = tmp_path_factory.mktemp("long")
    run = synthetic_titration_run("hcl", 0.1, 25.0, "naoh", 0.1, target_ph=12.5, seed=4, experiment_id="long-1")
    paths = write_report(run, out)
    return run, paths


def test_an_1171_drop_report_is_under_500_lines_with_the_answer_first(long_run):
    run, paths = long_run
    md = paths.markdown.read_text()
    assert len(run.fused("titrant_volume")) > 1100
    assert len(md.splitlines()) < 500
    summary = md.split("\n## 1. ")[0]
    # The answer with its uncertainty and theory, the four charts, then what could not be concluded.
    assert "| Equivalence point 1 | 25.0" in summary and "(theory 25.000 mL), pH 7.0" in summary
    for chart in ("titration_curve.png", "first_derivative.png", "second_derivative.png", "jump_zoom.png"):
        assert f"({chart})" in summary
    assert summary.index("Result (") < summary.index("titration_curve.png") < summary.index("could not be concluded")
    # Long tables in full as CSV, linked; folded in the HTML.
    for name in ("per_drop", "transitions"):
        assert f"(tables/{name}.csv)" in md
        rows = paths.tables[name].read_text().splitlines()
        assert len(rows) > 1000
    html = paths.html.read_text()
    assert html.count("<details>") >= 2 and "click to open" in html


def test_equivalence_ph_from_the_model_is_within_a_tenth_of_theory(long_run):
    _, paths = long_run
    results = json.loads(paths.json.read_text())["sections"]["results"]
    (eq,) = results["equivalence_points"]
    assert eq["method"] == "model_fit_across_jump" and abs(eq["ph"] - 7.0) < 0.1
    theory = {d["quantity"]: d for d in results["deviations"] if d["method"] == eq["method"]}
    assert theory["equivalence pH 1"]["reference"] == pytest.approx(7.0, abs=0.02)


def test_counts_are_reconciled_and_times_use_one_base(long_run):
    _, paths = long_run
    md = paths.markdown.read_text()
    assert "Counts, reconciled:" in md and " drops: one fused titrant-volume record per drop" in md
    assert fmt_t(2175.31) == "2175.3 s" and fmt_t(-0.01) == "0.0 s"
    assert "| Duration | " in md and " min " in md.split("| Duration | ")[1].split("\n")[0]


def test_acetic_equivalence_ph_near_8_72_and_gap_keeps_the_derivative_estimate():
    rng = np.random.default_rng(3)
    v = np.cumsum(rng.normal(0.0487, 0.0015, 1050))
    ph = titration_curve({"acetic_acid": 0.1}, 25.0, {"naoh": 0.1}, v) + rng.normal(0, 0.01, v.size)
    (eq,) = analyze_titration(v, ph, titrant_m=0.1, analyte_volume_ml=25.0, analyte="acetic_acid").equivalence_points
    assert eq.method == "model_fit_across_jump" and abs(eq.ph - 8.72) < 0.1 and abs(eq.volume_ml - 25.0) < 0.025
    # The model would bridge a gap in the data unseen: an unsupported point keeps the derivative estimate.
    keep = (v < 24.0) | (v > 26.0)
    (gap,) = analyze_titration(v[keep], ph[keep], titrant_m=0.1, analyte_volume_ml=25.0,
                               analyte="acetic_acid").equivalence_points
    assert not gap.supported and gap.method != "model_fit_across_jump"


def test_interrupted_run_says_so_and_states_no_endpoint(tmp_path):
    run = synthetic_titration_run("hcl", 0.1, 25.0, "naoh", 0.1, target_ph=10.0, stop_after_drops=120, seed=1,
                                  experiment_id="killed-1")
    run.experiment["status"] = "running"  # killed: the store never saw a finish
    run.experiment["finished"] = None
    paths = write_report(run, tmp_path)
    data = json.loads(paths.json.read_text())
    assert data["interrupted"]["last_state"] and data["interrupted"]["last_record_stamp"] is not None
    assert not any("final pH" in c for c in data["concluded"])
    assert data["sections"]["results"]["final_ph_deviation"] is None
    md = paths.markdown.read_text()
    summary = md.split("\n## 1. ")[0]
    assert "**interrupted** (status running)" in summary and "No endpoint finding is stated." in summary
    assert "no endpoint: the run was interrupted" in summary


def _report(argv, capsys):
    rc = cli_main(["report", *argv])
    return rc, capsys.readouterr()


def test_report_on_a_mistyped_path_creates_nothing(tmp_path, capsys):
    missing = tmp_path / "runs" / "exp-typo"
    rc, out = _report([str(missing)], capsys)
    assert rc == 2 and "no such run folder" in out.err and "Traceback" not in out.err + out.out
    assert not missing.exists() and not (tmp_path / "runs").exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    rc, out = _report([str(empty)], capsys)
    assert rc == 2 and "no records.db" in out.err and list(empty.iterdir()) == []


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_report_on_a_damaged_database_is_a_clear_error(tmp_path, capsys, damage):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    db = run_dir / "records.db"
    if damage == "garbage":
        db.write_bytes(b"not a database at all" * 100)
    else:
        con = sqlite3.connect(db)
        con.execute("CREATE TABLE experiments (experiment_id TEXT, x BLOB)")
        con.executemany("INSERT INTO experiments VALUES (?, ?)", [(f"e{i}", b"x" * 4000) for i in range(50)])
        con.commit()
        con.close()
        data = db.read_bytes()
        db.write_bytes(data[: len(data) // 3])
    rc, out = _report([str(run_dir)], capsys)
    assert rc == 2 and "error:" in out.err and str(db.name) in out.err
    assert "Traceback" not in out.err + out.out


def test_report_cli_prints_no_traceback_as_a_process(tmp_path):
    """The same through a real process, as a user types it (stderr is what they see)."""
    proc = subprocess.run([sys.executable, "-m", "agentchemist.cli", "report", str(tmp_path / "nope")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "no such run folder" in proc.stderr
    assert not (tmp_path / "nope").exists()


def test_empty_experiment_report_has_no_answer_rows(tmp_path):
    paths = write_report(RunData(experiment={"experiment_id": "x", "status": "completed"}), tmp_path)
    summary = paths.markdown.read_text().split("\n## 1. ")[0]
    assert "Result (" not in summary and math.isfinite(len(summary))


def test_export_on_a_mistyped_path_creates_nothing(tmp_path, capsys):
    missing = tmp_path / "runs" / "exp-typo"
    rc = cli_main(["export", str(missing)])
    err = capsys.readouterr().err
    assert rc == 2 and "no records.db here" in err and not (tmp_path / "runs").exists()
