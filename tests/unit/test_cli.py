"""The `agentchemist` command line as a newcomer uses it: plan, report, export."""
import json

import pytest

from agentchemist.cli import main
from agentchemist.record import open_store

WORKED = ("Titrate 25 mL of 0.1 M hydrochloric acid with 0.1 M sodium hydroxide until the pH reaches 7, "
          "using the pipette, the beaker on the magnetic stirrer and the pH meter.")


def test_plan_prints_a_plan_and_exits_0(capsys):
    assert main(["plan", WORKED, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["kind"] == "plan" and out["plan"]["state_machine"]["initial_state"] == "initial"


def test_plan_asks_about_an_unknown_reagent_with_exit_1(capsys):
    assert main(["plan", "Titrate 25 mL of 0.1 M unobtainium with 0.1 M NaOH to pH 7"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("question") and "unobtainium" in out


@pytest.fixture
def run_dir(tmp_path):
    run = tmp_path / "exp-cli"
    run.mkdir()
    store = open_store(str(run / "records.db"))
    store.start_experiment("exp-cli", now=1.0, instruction=WORKED, metadata={"plan": {}})
    for i in range(5):
        store.add_fused("exp-cli", stamp=2.0 + i, quantity="ph", unit="pH", value=1.1 + 0.01 * i, confidence=0.9,
                        channels=["sensor"], channel_values=[1.1 + 0.01 * i], channel_confidences=[0.9])
    store.finish_experiment("exp-cli", now=9.0, status="aborted", reason="stopped by the user")
    store.flush()
    store.close()
    return run


def test_report_regenerates_from_the_database(run_dir, capsys):
    assert main(["report", str(run_dir)]) == 0
    text = (run_dir / "report.md").read_text()
    assert "aborted" in text and WORKED[:40] in text


def test_export_writes_csv_and_parquet(run_dir):
    assert main(["export", str(run_dir)]) == 0
    names = {p.name for p in (run_dir / "export").iterdir()}
    assert {"fused_records.csv", "fused_records.parquet", "experiment.csv"} <= names


def test_missing_run_is_a_clear_error(tmp_path, capsys):
    assert main(["report", str(tmp_path / "nowhere")]) == 2
    assert "error" in capsys.readouterr().err
