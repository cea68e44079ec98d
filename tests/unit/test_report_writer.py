"""write_report: all eleven sections in every format, numbers from the analysis, the anomaly audit,
self-contained HTML, and a report that is still written (and honest) for empty or aborted runs."""

from __future__ import annotations

import csv
import json
import math
import re

import pytest

from agentchemist.report import SCHEMA_VERSION, SECTION_TITLES, ReportInputError, RunData, write_report
from agentchemist.experiments.acid_base.sample_run import synthetic_titration_run

PNG = b"\x89PNG\r\n\x1a\n"


def invented_narrative(summary: dict) -> str:
    veq = summary["sections"]["results"]["equivalence_points"][0]["volume_ml"]
    return (f"The equivalence point was found at {veq:.2f} mL. "
            "The analyte concentration was 0.4242 mol/L, which is excellent.")


@pytest.fixture(scope="module")
def hcl_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("hcl")
    run = synthetic_titration_run("hcl", 0.1, 10.0, "naoh", 0.1, target_ph=12.0, seed=2, snapshot_dir=out,
                                  anomalies=[{"at_drop": 50, "kind": "abnormal_drop", "response": "retry",
                                              "resolved": True}], experiment_id="hcl-test")
    paths = write_report(run, out, narrative_backend=invented_narrative)
    return run, paths, json.loads(paths.json.read_text()), paths.markdown.read_text(), paths.html.read_text()


def test_all_eleven_sections_in_every_format(hcl_report):
    _, _, data, md, html = hcl_report
    assert data["schema_version"] == SCHEMA_VERSION == "1.0"
    assert list(data["sections"]) == list(SECTION_TITLES)
    for number, title in enumerate(SECTION_TITLES.values(), start=1):
        assert f"## {number}. {title}" in md
        assert f"<h2>{number}. {title}</h2>" in html


def test_results_carry_the_analysis_numbers(hcl_report):
    run, _, data, md, _ = hcl_report
    results = data["sections"]["results"]
    (eq,) = results["equivalence_points"]
    assert eq["supported"] and abs(eq["volume_ml"] - 10.0) < 0.0234
    assert f"{eq['volume_ml']:.3f}" in md
    assert results["final_ph"] == pytest.approx(run.fused("ph_settled")[-1]["value"])
    assert results["total_volume_ml"] == pytest.approx(run.fused("titrant_volume")[-1]["value"])
    assert results["concentration"]["analyte_m"] == pytest.approx(0.1, rel=0.003)
    # HCl: the pKa is stated as not determinable, with no number (NaN -> null in JSON).
    (pka,) = results["pka"]
    assert pka["value"] is None and not pka["supported"] and "strong acid" in pka["reason"]
    theory = {d["quantity"]: d for d in results["deviations"] if d["reference_kind"] == "theory"}
    assert theory["equivalence volume 1"]["reference"] == pytest.approx(10.0)
    assert results["smoothing"]["window_points"] >= 5 and "cross-validation" in results["smoothing"]["reason"]


def test_per_drop_table_is_complete(hcl_report):
    run, _, data, md, html = hcl_report
    rows = data["sections"]["quantity_records"]["per_drop"]
    assert len(rows) == len(run.fused("ph_settled"))
    assert rows[0]["volume_ml"] == 0.0 and rows[-1]["drops"] == len(run.fused("titrant_volume"))
    # A long table: the Markdown previews it and links the CSV beside the report, which holds every row.
    table = md.split("**Per-drop table")[1].split("\n## ")[0]
    assert "[tables/per_drop.csv](tables/per_drop.csv)" in table
    assert 0 < len(re.findall(r"^\| \d+ \|", table, flags=re.M)) <= 10
    paths = hcl_report[1]
    assert paths.tables["per_drop"] == paths.markdown.parent / "tables" / "per_drop.csv"
    with paths.tables["per_drop"].open() as fh:
        csv_rows = list(csv.reader(fh))
    # issue 41: the CSV holds the measurements as numbers (a chemist pastes it into a spreadsheet): no text cell
    assert len(csv_rows) == len(rows) + 1 and csv_rows[0][:6] == ["reading", "t_s", "drops", "volume_ml", "d_volume_ml",
                                                                  "ph"]
    for row in csv_rows[1:]:
        assert all(cell == "" or math.isfinite(float(cell)) for cell in row), row
    assert "<div class='scroll'><table><thead><tr><th>#</th><th>t</th><th>Drops</th>" in html


def test_charts_are_written_and_named(hcl_report):
    _, paths, data, md, _ = hcl_report
    assert set(paths.charts) == {"titration_curve", "first_derivative", "second_derivative", "jump_zoom",
                                 "ph_time", "volume_time", "temperature_time"}
    for name, path in paths.charts.items():
        assert path.name == f"{name}.png" and path.read_bytes()[:8] == PNG and path.stat().st_size > 5000
        assert f"]({name}.png)" in md


def test_anomaly_appears_in_the_audit(hcl_report):
    _, _, data, md, html = hcl_report
    (anomaly,) = data["sections"]["anomalies"]["records"]
    assert anomaly["kind"] == "abnormal_drop" and anomaly["response"] == "retry" and anomaly["resolved"] is True
    audit = md.split("## 8. Anomaly records")[1].split("## 9.")[0]
    assert "| abnormal_drop | warn | audio_supervisor | waiting_ph |" in audit and "| retry | yes |" in audit
    assert "abnormal_drop" in html.split("id='anomalies'")[1].split("</section>")[0]
    # The flagged drop reaches the analysis as a flagged volume range, and a snapshot was taken.
    assert data["sections"]["results"]["quality_flag_ranges_ml"]
    labels = [s["label"] for s in data["sections"]["visual_documentation"]["snapshots"]]
    assert labels == ["start", "anomaly:abnormal_drop", "endpoint"]


def test_html_is_self_contained_with_charts_and_snapshots(hcl_report):
    _, _, _, _, html = hcl_report
    assert html.count("src='data:image/png;base64,") == 4 + 3 + 3  # 4 titration + 3 time charts, 3 snapshots
    # Nothing outside the page is needed to read it; the only links are to the CSV copies of folded tables.
    assert not re.search(r"(src|href)=['\"](?!data:|#|tables/[a-z_]+\.csv['\"])", html)
    assert "<details><summary class='caption'>Per-drop table" in html


def test_narrative_cannot_introduce_numbers(hcl_report):
    _, _, data, md, _ = hcl_report
    narrative = data["narrative"]
    assert narrative["text"].startswith("The equivalence point was found at")
    assert "0.4242" not in narrative["text"] and "0.4242" in narrative["notes"][0]
    assert "narrative sentence(s) removed" in md


def test_reproducibility_guide(hcl_report):
    run, _, data, md, _ = hcl_report
    repro = data["sections"]["reproducibility"]
    assert repro["software_version"] == run.experiment["software_version"]
    assert repro["config_hash"] == run.experiment["config_hash"]
    assert "agentchemist report <run_dir>" in md
    assert repro["smoothing"]["window_points"] == data["sections"]["results"]["smoothing"]["window_points"]


def test_empty_run_still_writes_a_report_that_concludes_nothing(tmp_path):
    def broken(_summary):
        raise RuntimeError("model offline")

    paths = write_report(RunData(experiment={"experiment_id": "nothing", "status": "failed",
                                             "reason": "pH meter missing"}), tmp_path, narrative_backend=broken)
    data = json.loads(paths.json.read_text())
    md = paths.markdown.read_text()
    assert paths.charts == {} and paths.html.exists()
    assert data["concluded"] == []
    assert "none: nothing could be concluded from this run" in md
    assert any("no pH was recorded" in w for w in data["not_concluded"])
    assert any("did not complete (status failed: pH meter missing)" in w for w in data["not_concluded"])
    assert "narrative backend failed (RuntimeError: model offline)" in md
    for number in range(1, 12):
        assert f"## {number}. " in md


def test_aborted_run_reports_what_it_could_not_conclude(tmp_path):
    run = synthetic_titration_run("acetic_acid", 0.1, 10.0, "naoh", 0.1, seed=4, stop_after_drops=120)
    paths = write_report(run, tmp_path)
    data = json.loads(paths.json.read_text())
    assert data["status"] == "aborted"
    assert data["sections"]["results"]["equivalence_points"] == []
    assert any(w.startswith("the run did not complete (status aborted") for w in data["not_concluded"])
    assert any("no equivalence point" in w for w in data["not_concluded"])
    assert data["sections"]["fsm_evolution"]["accepted"] is False
    assert "jump_zoom" in paths.charts  # still drawn: the end of the curve, with the reason


def test_too_few_points_are_reported_not_analysed(tmp_path):
    run = synthetic_titration_run("hcl", 0.1, 10.0, "naoh", 0.1, seed=5, stop_after_drops=4)
    paths = write_report(run, tmp_path)
    data = json.loads(paths.json.read_text())
    assert "titration_curve" not in paths.charts and "ph_time" in paths.charts
    assert any("only 5 distinct volume" in w for w in data["not_concluded"])
    assert any("four titration charts were not drawn" in w for w in data["not_concluded"])


def test_unfamiliar_status_word_is_reported_not_refused(tmp_path):
    paths = write_report(RunData(experiment={"experiment_id": "x", "status": "timeout", "reason": "no drop for 60 s"}),
                         tmp_path)
    assert "did not complete (status timeout: no drop for 60 s)" in paths.markdown.read_text()


def test_unknown_analysis_option_is_refused(tmp_path):
    with pytest.raises(ReportInputError, match="unknown analysis option"):
        write_report(RunData(), tmp_path, analysis_options={"smoothness": 3})


def test_the_supervisors_own_transitions_complete_their_subtasks(tmp_path):
    """The vision supervisor's own decisions (the pH endpoint, verified) reach the store without a subtask
    id; the procedure table attributes them by the plan's expected transition, so a finished titration
    does not show its titrate and verify steps as unfinished."""
    run = synthetic_titration_run("hcl", 0.1, 10.0, "naoh", 0.1, target_ph=12.0, seed=2, experiment_id="own")
    for t in run.transitions:
        if t["symbol"] in ("endpoint", "verified", "ph_stable"):
            t["subtask_id"] = ""
    data = json.loads(write_report(run, tmp_path).json.read_text())
    status = {s["id"]: s for s in data["sections"]["procedure"]["subtasks"]}
    assert status["titrate"]["status"] == "completed" and status["titrate"]["completed_t_s"] is not None
    assert status["verify_endpoint"]["status"] == "completed"
    assert status["verify_endpoint"]["first_t_s"] == status["verify_endpoint"]["completed_t_s"]
    assert status["report"]["status"] == "this report"


def test_a_later_resolution_resolves_the_anomaly_of_its_kind_and_source(tmp_path):
    run = synthetic_titration_run("hcl", 0.1, 10.0, "naoh", 0.1, target_ph=12.0, seed=2, experiment_id="res")
    t = float(run.transitions[10]["stamp"])
    base = {"fsm_state": "titrating", "subtask_id": "titrate", "response": "retry"}
    run.anomalies = [
        {**base, "stamp": t, "kind": "ph_stuck", "severity": "warn", "source": "dispenser_controller",
         "description": "frozen", "resolved": False},
        {**base, "stamp": t + 1, "kind": "audio_noise", "severity": "warn", "source": "audio_supervisor",
         "description": "noise", "resolved": False},
        {**base, "stamp": t + 5, "kind": "ph_stuck", "severity": "info", "source": "dispenser_controller",
         "description": "moves again", "resolved": True},
    ]
    data = json.loads(write_report(run, tmp_path).json.read_text())
    section = data["sections"]["anomalies"]
    stuck, noise, resolution = section["records"]
    assert stuck["resolved"] and stuck["resolved_t_s"] == resolution["t_s"] and not stuck["resolution"]
    assert not noise["resolved"]  # no resolution of its own kind
    assert resolution["resolution"] and section["unresolved"] == 1 and section["resolutions"] == 1
    text = (tmp_path / "report.md").read_text()
    assert "2 anomaly record(s) and 1 resolution(s), 1 unresolved." in text and "(resolution)" in text
