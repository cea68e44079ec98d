"""File attacks (issue 38): paths from the wire or the command line stay in the runs folder, `report --store`
creates nothing, the report follows no symbolic link, and a damaged database is refused when opened."""
import os

import pytest

from agentchemist.cli import main
from agentchemist.record import RecordInputError, StoreDamagedError, open_store
from agentchemist.record.store import confined_store

WORKED = "Titrate 25 mL of 0.1 M hydrochloric acid with 0.1 M sodium hydroxide until the pH reaches 7."


def stored_run(run, rows=400):
    run.mkdir(parents=True)
    store = open_store(str(run / "records.db"))
    store.start_experiment(run.name, now=1.0, instruction=WORKED, metadata={"plan": {}})
    for i in range(rows):
        store.add_raw(run.name, stamp=2.0 + i, channel="sensor", sensor="ph_meter", quantity="pH",
                      value=3.0 + 0.001 * i, unit="pH", confidence=0.9, flags=["x" * 40])
    store.finish_experiment(run.name, now=9.0 + rows, status="completed")
    store.flush()
    store.close()
    return run


def files_under(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_report_store_never_creates_a_folder_or_a_database(tmp_path, capsys):
    run = stored_run(tmp_path / "runs" / "exp-a")
    before = files_under(tmp_path)
    for store in (f"sqlite:///{tmp_path}/any/dir/x.db", str(tmp_path / "other" / "y.db"), "sqlite:///rel/z.db"):
        assert main(["report", str(run), "--store", store]) == 2, store
        err = capsys.readouterr().err
        assert "no such database file" in err and len(err.strip().splitlines()) == 1
    assert files_under(tmp_path) == before and not os.path.exists("rel")


def test_report_follows_no_symbolic_link(tmp_path, capsys):
    run = stored_run(tmp_path / "runs" / "exp-b")
    outside = tmp_path / "precious.txt"
    outside.write_text("keep me")
    (run / "report.md").symlink_to(outside)
    assert main(["report", str(run)]) == 2
    assert "symbolic link" in capsys.readouterr().err
    assert outside.read_text() == "keep me"
    (run / "report.md").unlink()
    (tmp_path / "elsewhere").mkdir()
    (run / "tables").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    assert main(["report", str(run)]) == 2
    assert list((tmp_path / "elsewhere").iterdir()) == []
    linked_run = tmp_path / "runs" / "exp-link"
    linked_run.symlink_to(run, target_is_directory=True)
    (run / "tables").unlink()
    assert main(["report", str(linked_run)]) == 2
    assert main(["report", str(run)]) == 0  # the same run, without links, reports


def test_a_store_with_zeroed_pages_is_refused_on_open(tmp_path, capsys):
    run = stored_run(tmp_path / "runs" / "exp-c", rows=2000)
    db = run / "records.db"
    size = db.stat().st_size
    assert size > 8 * 4096
    with open(db, "r+b") as fh:  # zero pages in the middle, the header intact
        fh.seek(4 * 4096)
        fh.write(bytes(3 * 4096))
    with pytest.raises(StoreDamagedError, match="quick_check"):
        open_store(str(db))
    assert db.stat().st_size == size  # nothing was written to it
    assert main(["report", str(run)]) == 2
    err = capsys.readouterr().err
    assert "damaged" in err and len(err.strip().splitlines()) == 1


def test_a_fresh_or_sound_store_opens(tmp_path):
    run = stored_run(tmp_path / "runs" / "exp-d")
    open_store(str(run / "records.db")).close()
    open_store(str(tmp_path / "runs" / "exp-new" / "records.db")).close()


def test_a_record_closed_store_is_read_only_inside_the_runs_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    runs = tmp_path / "runs"
    stored_run(runs / "exp-e")
    assert confined_store("", runs) == ""
    assert confined_store("postgresql://lab/records", runs) == "postgresql://lab/records"
    assert confined_store(str(runs / "exp-e" / "records.db"), runs)
    assert confined_store("runs/exp-e/records.db", "runs")  # relative, as the recorder writes it
    (runs / "exp-f").mkdir()
    (runs / "exp-f" / "records.db").symlink_to(tmp_path / "x.db")
    for hostile in ("/etc/x.db", f"sqlite:///{tmp_path}/x.db", "runs/../x.db", str(runs / "exp-f" / "records.db"),
                    "ftp://host/x.db"):
        with pytest.raises(ValueError):
            confined_store(hostile, runs)
    with pytest.raises(RecordInputError):
        confined_store("../../x.db", runs)
