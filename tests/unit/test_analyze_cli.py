"""Issue 41: `agentchemist analyze FILE` reads a measured curve and writes the robot run's report, labelled as
imported data, with no robot-specific corrections; user mistakes end with one line and exit code 2."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from agentchemist.chemistry.equilibrium import titration_curve
from agentchemist.cli import main
from agentchemist.report.curve_file import CurveFileError, read_curve

ARGS = ["--analyte", "acetic acid", "--analyte-volume", "25", "--titrant", "naoh", "--titrant-molarity", "0.1"]


def _synthetic(tmp_path: Path, text_header: str = "volume_ml,ph", sep: str = ",", scale: float = 1.0,
               decimal: str = ".") -> Path:
    v = np.round(np.arange(0.0, 40.0, 0.25), 2)
    ph = titration_curve({"acetic_acid": 0.1}, 25.0, {"naoh": 0.1}, v, activity=True)
    rows = [text_header] + [sep.join(f"{x:.4f}".replace(".", decimal) for x in (a * scale, b)) for a, b in zip(v, ph)]
    path = tmp_path / "curve.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def test_analyze_writes_the_report_labelled_imported(tmp_path, capsys):
    path = _synthetic(tmp_path)
    out, js = tmp_path / "rep", tmp_path / "r.json"
    assert main(["analyze", str(path), *ARGS, "--out", str(out), "--json", str(js)]) == 0
    first = (out / "report.md").read_text().splitlines()[0]
    assert first.startswith("# IMPORTED DATA")
    assert "IMPORTED DATA" in (out / "report.html").read_text()[:600]
    summary = json.loads(js.read_text())
    assert summary["data_origin"] == "imported" and summary["banner"].startswith("IMPORTED")
    items = {r["quantity"]: r for r in summary["results"]}
    veq = items["V_eq1"]
    assert set(veq) >= {"quantity", "value", "unit", "u", "interval"}
    lo, hi = veq["interval"]
    assert lo <= 25.0 <= hi and veq["unit"] == "mL"
    conc = items["analyte concentration"]
    assert conc["interval"][0] <= 0.1 <= conc["interval"][1]
    # no settling-lag correction on readings the robot never settle-gated
    for p in summary["sections"]["results"]["pka"]:
        assert not (p.get("budget") or {}).get("correction")
        assert "settling lag" not in json.dumps(p.get("budget"))
    # the titrant came in additions, not drops
    md = (out / "report.md").read_text()
    assert "drops)" not in md.split("## 1.")[0]
    assert "V_eq1" in capsys.readouterr().out


@pytest.mark.parametrize("header,sep,scale,decimal", [
    ("Volume (mL)\tpH", "\t", 1.0, "."),
    ("V [µL];pH", ";", 1000.0, ","),
    ("titrant_ul,pH", ",", 1000.0, "."),
])
def test_reader_finds_columns_units_and_delimiters(tmp_path, header, sep, scale, decimal):
    curve = read_curve(_synthetic(tmp_path, header, sep, scale, decimal))
    assert curve.volume_ml.max() == pytest.approx(39.75, abs=1e-6)
    assert curve.ph.size == 160


def test_reader_names_the_problem_in_one_line(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("volume_ml,ph\n0,3.1\n0.5,abc\n")
    with pytest.raises(CurveFileError, match=r"line 3, column 'ph': 'abc' is not a number"):
        read_curve(bad)
    two = tmp_path / "two.csv"
    two.write_text("volume_ml,ph,ph_raw\n0,3,3\n")
    with pytest.raises(CurveFileError, match="--ph-column"):
        read_curve(two)
    assert read_curve(two, ph_column="ph_raw").ph_column == "ph_raw"
    nohead = tmp_path / "nohead.csv"
    nohead.write_text("0,3.1\n1,3.2\n")
    with pytest.raises(CurveFileError, match="not a header"):
        read_curve(nohead)


@pytest.mark.parametrize("argv,message", [
    (["analyze", "/no/such/file.csv", *ARGS], "no such file"),
    (["analyze", "{csv}", "--analyte", "unobtainium", *ARGS[2:]], "unknown reagent"),
    (["analyze", "{csv}", *ARGS[:-1], "-0.1"], "--titrant-molarity"),
    (["analyze", "{csv}", *ARGS[:5], "acetic acid", *ARGS[6:]], "not a strong acid or base"),
])
def test_user_errors_exit_2_with_one_line(tmp_path, capsys, argv, message):
    path = _synthetic(tmp_path)
    argv = [a.replace("{csv}", str(path)) for a in argv] + ["--out", str(tmp_path / "o")]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "Traceback" not in err and len(err.splitlines()) == 1


def test_a_twin_report_says_simulated_on_its_first_line(tmp_path):
    """A run of the twin (a run clock, not epoch seconds; or the twin's ground_truth.json beside it) is never a
    measurement: Markdown, HTML and JSON say so first. A robot run (epoch clock) carries no banner."""
    from agentchemist.experiments.acid_base.sample_run import synthetic_titration_run
    from agentchemist.report import RunData, write_report

    run = synthetic_titration_run()
    paths = write_report(run, tmp_path / "twin")
    assert paths.markdown.read_text().splitlines()[0].startswith("# SIMULATED (digital twin)")
    assert "<h1>SIMULATED (digital twin)" in paths.html.read_text()
    summary = json.loads(paths.json.read_text())
    assert next(iter(summary)) == "banner" and summary["banner"] == "SIMULATED (digital twin)"
    assert summary["data_origin"] == "twin"
    shifted = RunData(experiment={**run.experiment, "started": run.started + 1.7e9},
                      fused_records=[{**r, "stamp": r["stamp"] + 1.7e9} for r in run.fused_records])
    robot = json.loads(write_report(shifted, tmp_path / "robot").json.read_text())
    assert robot["data_origin"] == "robot" and robot["banner"] is None


def test_the_result_sheet_a_lab_files(tmp_path):
    path = _synthetic(tmp_path)
    js = tmp_path / "r.json"
    assert main(["analyze", str(path), *ARGS, "--out", str(tmp_path / "rep"), "--json", str(js), "--operator", "A. Chemist",
                 "--sample-id", "S-17", "--titer-date", "2026-11-27", "--calibrated"]) == 0
    sheet = json.loads(js.read_text())["result_sheet"]
    assert sheet["sample"] == {"id": "S-17", "analyte": "acetic_acid", "size": "25 mL"}
    assert sheet["titrant"]["titer_m"] == 0.1 and sheet["titrant"]["titer_date"] == "2026-11-27"
    assert sheet["operator"] == "A. Chemist" and sheet["sign_off"]["reviewed_by"] == ""
    assert {r["quantity"] for r in sheet["results"]} >= {"V_eq1", "analyte concentration", "pKa1"}
    md = (tmp_path / "rep" / "report.md").read_text()
    sheet_md = md.split("## Result sheet")[1].split("\n## 1.")[0]
    assert "| Reviewed by |" in sheet_md and "2026-11-27" in sheet_md and "S-17" in sheet_md


def test_replicates_mean_sd_rsd(tmp_path):
    from agentchemist.report.replicates import ReplicateError, write_replicates

    folders = []
    for k, scale in enumerate((1.0, 1.004, 0.997)):
        v = np.round(np.arange(0.0, 40.0, 0.25), 2)
        ph = titration_curve({"acetic_acid": 0.1 * scale}, 25.0, {"naoh": 0.1}, v, activity=True)
        path = tmp_path / f"c{k}.csv"
        path.write_text("volume_ml,ph\n" + "\n".join(f"{a:.2f},{b:.4f}" for a, b in zip(v, ph)) + "\n")
        assert main(["analyze", str(path), *ARGS, "--out", str(tmp_path / f"r{k}"), "--calibrated"]) == 0
        folders.append(tmp_path / f"r{k}")
    md, js = write_replicates(folders, tmp_path / "rep")
    got = {q["quantity"]: q for q in json.loads(js.read_text())["quantities"]}
    veq = got["V_eq1"]
    assert veq["n"] == 3 and veq["mean"] == pytest.approx(np.mean(veq["values"]))
    assert veq["sd"] == pytest.approx(np.std(veq["values"], ddof=1)) and veq["rsd"] == pytest.approx(veq["sd"] / veq["mean"])
    assert "| V_eq1 mL |" in md.read_text() and "r0/report.md" in md.read_text()
    with pytest.raises(ReplicateError, match="at least two"):
        write_replicates(folders[:1], tmp_path / "one")
