"""The console's core (agentchemist.console): the token check, the command log, the run as a chemist sees
it, and the past runs (issue 40)."""
import json
import math
import os

import pytest

from agentchemist.console.auth import TokenAuth, new_token
from agentchemist.console.command_log import CommandLog
from agentchemist.console.runs import past_runs, user_runs_dir
from agentchemist.console.state import RunView


def test_the_token_is_required_exactly():
    token = new_token()
    assert len(token) >= 32 and new_token() != token
    auth = TokenAuth(token)
    assert auth.allows(f"Bearer {token}") and auth.allows(None, token)
    for header, query in ((None, None), ("", ""), (f"Bearer {token[:-1]}", None), (token, None),
                          (f"Basic {token}", None), (None, token + "x"), ("Bearer ", token[:-1])):
        assert not auth.allows(header, query), (header, query)
    with pytest.raises(ValueError):
        TokenAuth("short")


def test_every_command_is_logged_with_who_sent_it(tmp_path):
    log = CommandLog(tmp_path / "sub" / "console_commands.jsonl")
    log.record(now=1_800_000_000.0, command="pause", operator="ann", address="127.0.0.1", accepted=True,
               message="paused in state titrating")
    log.record(now=1_800_000_001.5, command="refused", operator="", address="10.0.0.9", accepted=False,
               message="no valid token", detail="/api/emergency_stop")
    with log.path.open("a") as f:
        f.write('{"cut by a cr')  # a crash mid-line: the entries before it stand
    entries = log.entries()
    assert [(e["command"], e["operator"], e["address"], e["accepted"]) for e in entries] == \
        [("pause", "ann", "127.0.0.1", True), ("refused", "(unnamed)", "10.0.0.9", False)]
    assert entries[0]["time"].startswith("2027-01-15T08:00:00.000")
    with pytest.raises(ValueError, match="unknown console command"):
        log.record(now=0.0, command="launch", operator="x", address="", accepted=False, message="")


def test_the_run_view_follows_its_own_experiment():
    view = RunView()
    view.reset("Titrate ...")
    plan = {"state_machine": {"states": ["initial", "titrating", "waiting_ph", "done"]}}
    view.on_plan("exp-1", json.dumps(plan))
    view.on_plan("exp-0", json.dumps({"state_machine": {"states": ["other"]}}))  # another run's latched plan
    assert view.steps == ["initial", "titrating", "waiting_ph", "done"]
    view.on_record("exp-1", "ph", 1.0)  # before any volume: at 0 mL
    view.on_record("exp-1", "titrant_volume", 0.5)
    view.on_record("exp-1", "ph", 1.1)
    view.on_record("exp-0", "ph", 9.0)           # not this run
    view.on_record("exp-1", "ph", math.nan)      # no point for a NaN
    view.on_fsm("exp-1", "titrating", False)
    view.on_fsm("exp-1", "titrating", False)
    view.on_drop()
    view.on_anomaly(kind="operator_pause", severity="warn", source="vision_supervisor", description="paused by ann",
                    resolved=False, stamp=12.0)
    snap = view.snapshot()
    assert snap["curve"] == [(0.0, 1.0), (0.5, 1.1)] and snap["points"] == 2
    assert snap["visited"] == ["titrating"] and snap["drops"] == 1 and snap["paused"]
    assert view.snapshot(since=1)["curve"] == [(0.5, 1.1)]  # the page asks only for what it lacks
    view.on_anomaly(kind="operator_pause", severity="info", source="vision_supervisor", description="resumed",
                    resolved=True, stamp=20.0)
    assert not view.snapshot()["paused"]
    json.dumps(view.snapshot())  # JSON-ready, NaN-free


def test_the_view_says_when_the_arms_moved_and_whether_they_held_after_the_stop():
    view = RunView()
    for k in range(11):  # a gripper squeezing at 0.2 mm/s, joint states at 10 Hz: 2e-5 m a message
        view.on_joints([0.5, 0.03 - 2e-5 * k], 1.0 + 0.1 * k)
    assert view.snapshot()["last_arm_motion"] == 2.0  # slow, but a second of it is motion
    view.on_fsm("", "aborted", True)
    for k in range(1, 21):  # after the stop: still, within encoder noise
        view.on_joints([0.5 + 1e-6 * (k % 2), 0.0298], 2.0 + 0.1 * k)
    snap = view.snapshot()
    assert snap["moved_since_stop"] < 5e-5 and snap["last_arm_motion"] <= 3.0 and snap["clock"] == 4.0
    view.on_joints([0.52, 0.0298], 4.1)  # an arm that did not hold is seen
    assert view.snapshot()["moved_since_stop"] == pytest.approx(0.02, abs=1e-5)


def test_past_runs_newest_first_with_their_outcome(tmp_path):
    old, new, bare = tmp_path / "exp-old", tmp_path / "exp-new", tmp_path / "exp-bare"
    for folder in (old, new, bare):
        folder.mkdir()
    (old / "report.json").write_text(json.dumps({"outcome": {"kind": "completed", "message": "ok", "missing": []}}))
    (new / "report.json").write_text(json.dumps({"outcome": {"kind": "aborted", "message": "emergency stop"}}))
    (new / "report.html").write_text("<html></html>")
    (tmp_path / ".twin-inventory.yaml").write_text("")
    os.utime(old / "report.json", (1, 1))
    os.utime(bare, (0, 0))
    runs = past_runs(tmp_path)
    assert [(r.experiment_id, r.outcome, r.report_html) for r in runs] == [
        ("exp-new", "aborted", "exp-new/report.html"), ("exp-old", "completed", ""), ("exp-bare", "no report", "")]
    assert past_runs(tmp_path / "missing") == []


def test_runs_go_outside_the_checkout_by_default(monkeypatch, tmp_path):
    monkeypatch.delenv("AGENTCHEMIST_RUNS", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert user_runs_dir() == tmp_path / "agentchemist" / "runs"
    monkeypatch.setenv("AGENTCHEMIST_RUNS", "/data/runs")
    assert str(user_runs_dir()) == "/data/runs"
