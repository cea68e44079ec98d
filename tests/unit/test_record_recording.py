"""One experiment's record (agentchemist.record.recording): what each input stores and which records it
returns for the recorder node to publish. SQLite stores in tmp_path; times are the inputs' stamps."""
import math

import pytest

from agentchemist.contracts.outcome import OutcomeKind, RunOutcome
from agentchemist.params import ParameterError, build_config
from agentchemist.record.recording import (AgentNote, AnomalyNote, AudioEventNote, Closed, DispenserNote, Estimate,
                                           FsmUpdate, Reading, RecorderConfig, Recording)

DROP = 0.046875


def _open(tmp_path, experiment_id="exp-1", previous=None, **config):
    cfg = RecorderConfig(runs_dir=str(tmp_path), **config)
    return Recording.open(cfg, experiment_id, now=1.0, instruction="titrate", plan_json='{"a": 1}',
                          previous=previous)


def _fsm(state, stamp, *, previous="", symbol="", terminal=False, accepting=False, experiment_id="exp-1"):
    return FsmUpdate(experiment_id, stamp, state, previous, symbol, "s1", accepting, terminal)


def _estimate(channel, value, stamp, *, delta=DROP, confidence=0.9, quantity="titrant_volume", fsm_state=""):
    return Estimate(stamp, channel, quantity, value, "mL", confidence, delta, f"e{stamp}", fsm_state, "s1")


def _reading(quantity, value, stamp, *, sensor="ph_meter", unit="pH", ok=True):
    return Reading(stamp, sensor, quantity, value, unit, ok, 0.01)


def _note(symbol, payload, stamp=5.0, experiment_id="exp-1"):
    return AgentNote(experiment_id, stamp, "vision_supervisor", symbol, "s1", payload)


def _anomaly(kind, stamp, *, resolved=False, severity="warn"):
    return AnomalyNote(stamp, "audio_supervisor", kind, severity, "d", "", "s1", "", resolved)


def _run(recording):
    return recording.store.load_run(recording.experiment_id)


def test_open_starts_the_experiment_in_its_run_folder_with_the_plan(tmp_path):
    rec = _open(tmp_path)
    assert rec.url == str(tmp_path / "exp-1" / "records.db")
    run = _run(rec)
    assert run["experiment"]["instruction"] == "titrate" and run["experiment"]["plan"] == {"a": 1}
    rec.close()
    bad = Recording.open(RecorderConfig(runs_dir=str(tmp_path)), "exp-2", now=1.0, plan_json="{not json")
    assert _run(bad)["experiment"]["plan"] == {"unparsed": "{not json"}
    bad.close()


def test_terminal_state_finishes_once_and_other_experiments_are_ignored(tmp_path):
    rec = _open(tmp_path)
    assert rec.on_fsm(_fsm("titrating", 2.0, previous="ready", symbol="go")) is None
    assert rec.on_fsm(_fsm("done", 3.0, experiment_id="exp-other", terminal=True)) is None
    assert (rec.fsm_state, rec.subtask_id) == ("titrating", "s1")
    closed = rec.on_fsm(_fsm("aborted", 4.0, previous="titrating", symbol="halt", terminal=True))
    assert closed == Closed("exp-1", 4.0, "aborted", rec.url,
                            RunOutcome(OutcomeKind.ABORTED, "ended in aborted"))
    assert rec.on_fsm(_fsm("aborted", 4.5, terminal=True)) is None   # a repeat does not finish it again
    run = _run(rec)
    assert run["experiment"]["status"] == "aborted" and run["experiment"]["reason"] == "ended in aborted"
    assert [t["to_state"] for t in run["transitions"]] == ["titrating", "aborted"]


def test_completed_when_accepting(tmp_path):
    rec = _open(tmp_path)
    assert rec.on_fsm(_fsm("done", 4.0, terminal=True, accepting=True)).status == "completed"


def test_heard_drops_make_durable_volume_records_and_bad_estimates_stay_raw(tmp_path):
    rec = _open(tmp_path)
    rec.on_fsm(_fsm("titrating", 1.5, previous="ready"))
    assert rec.on_estimate(_estimate("statistical", DROP, 2.0)) == []        # no gate: the audio paces records
    records = rec.on_estimate(_estimate("audio", DROP, 2.1))
    assert len(records) == 1
    r = records[0]
    assert (r.quantity, r.unit, r.fsm_state, r.subtask_id, r.experiment_id) == ("titrant_volume", "mL", "titrating",
                                                                                "s1", "exp-1")
    assert r.value == pytest.approx(DROP, rel=0.1) and set(r.channels) == {"audio", "statistical"}
    assert rec.on_estimate(_estimate("audio", math.nan, 2.2)) == []             # invalid input
    assert rec.on_estimate(_estimate("sonar", DROP, 2.3)) == []                 # unknown channel
    assert rec.on_estimate(_estimate("audio", 2 * DROP, 1.0)) == []             # late: before the last stamp
    flags = {x["stamp"]: x["flags"] for x in _run(rec)["raw_observations"]}   # stored in stamp order
    assert (flags[2.2], flags[2.3], flags[2.0], flags[2.1]) == (["invalid_input"], ["unknown_channel:sonar"], [], [])
    assert len(flags[1.0]) == 1 and flags[1.0][0] == "out_of_order"
    fused = _run(rec)["fused_records"]
    assert [f["quantity"] for f in fused] == ["titrant_volume"] and fused[0]["value"] == r.value


def test_audio_noise_gate_lets_the_statistical_channel_carry_the_drops(tmp_path):
    rec = _open(tmp_path)
    rec.on_fsm(_fsm("titrating", 1.5, previous="ready"))
    assert len(rec.on_estimate(_estimate("audio", DROP, 2.0))) == 1
    assert rec.on_anomaly(_anomaly("audio_noise", 2.5)) == []
    carried = rec.on_estimate(_estimate("statistical", 2 * DROP + 0.001, 3.0))
    assert carried and all(c.quantity == "titrant_volume" and "statistical" in c.channels for c in carried)
    assert len(_run(rec)["fused_records"]) == 1 + len(carried)
    assert rec.on_anomaly(_anomaly("audio_noise", 4.0, resolved=True)) == []
    assert [a["kind"] for a in _run(rec)["anomalies"]] == ["audio_noise", "audio_noise"]


def test_readings_make_a_record_per_period_and_the_balance_is_the_mass(tmp_path):
    rec = _open(tmp_path, ph_record_period=1.0)
    made = [r for i in range(11) for r in rec.on_reading(_reading("pH", 3.0, 2.0 + 0.2 * i))]
    assert [(r.quantity, r.stamp) for r in made] == [("ph", 2.0), ("ph", 3.0), ("ph", 4.0)]
    assert made[0].value == pytest.approx(3.0, abs=0.05)
    temps = rec.on_reading(_reading("temperature", 25.0, 2.0, unit="degC"))
    assert [r.quantity for r in temps] == ["temperature"]
    mass = rec.on_reading(_reading("mass", 1.25, 2.0, sensor="balance", unit="g"))
    assert [(r.quantity, r.value, r.unit, r.channels) for r in mass] == [("mass", 1.25, "g", ("sensor",))]
    assert rec.on_reading(_reading("mass", 1.30, 2.5, sensor="balance", unit="g")) == []   # within the period
    assert rec.on_reading(_reading("mass", 1.30, 3.0, sensor="balance", unit="g", ok=False)) == []  # self-check
    assert rec.on_reading(_reading("pH", 3.0, 1.0)) == []                    # late: raw only
    raw = _run(rec)["raw_observations"]
    assert raw[0]["quantity"] == "pH" and raw[0]["flags"][0] == "out_of_order"
    assert len(raw) == 11 + 1 + 3 + 1


def test_agent_notes(tmp_path):
    rec = _open(tmp_path)
    [settled] = rec.on_note(_note("ph_stable", {"ph": 7.01}))
    assert (settled.quantity, settled.value, settled.unit) == ("ph_settled", 7.01, "pH")
    assert [r.quantity for r in rec.on_note(_note("mass_settled", {"mass_g": 0.5}))] == ["mass_settled"]
    assert [r.quantity for r in rec.on_note(_note("mass_settled", {"mass_g": 0.6, "final": True}))] == ["mass_weighed"]
    assert rec.on_note(_note("ph_stable", {})) == []
    assert rec.on_note(_note("ph_stable", {"ph": 5.0}, experiment_id="exp-other")) == []
    assert rec.on_note(_note("dissolved", {"dissolution_time_s": 42.0})) == []
    assert rec.on_note(_note("endpoint", {"ph": 8.2, "temperature_c": 24.0})) == []
    assert rec.on_note(_note("artifact", {"kind": "image", "path": "a.png", "label": "end"})) == []
    run = _run(rec)
    assert {(x["quantity"], x["value"]) for x in run["raw_observations"]} == {
        ("dissolution_time_s", 42.0), ("ph_at_endpoint", 8.2), ("temperature_c_at_endpoint", 24.0)}
    assert [(a["kind"], a["path"], a["label"]) for a in run["artifacts"]] == [("image", "a.png", "end")]
    assert [f["quantity"] for f in run["fused_records"]] == ["ph_settled", "mass_settled", "mass_weighed"]


def test_audio_events_are_stored(tmp_path):
    rec = _open(tmp_path)
    rec.on_audio_event(AudioEventNote(2.0, "ev1", "droplet", "expected", 1.9, 2.0, 20.0, 3000.0, DROP, 0.9))
    [event] = _run(rec)["audio_events"]
    assert (event["event_id"], event["kind"], event["start"]) == ("ev1", "droplet", 1.9)


def test_the_dispensers_own_states_are_kept_and_a_calibration_is_not_ours(tmp_path):
    rec = _open(tmp_path)
    rec.on_fsm(_fsm("titrating", 1.5, previous="ready"))
    for stamp, state, previous, ml in ((2.0, "MOTION", "IDLE", 0.0), (9.0, "WAIT", "MOTION", 0.2),
                                       (11.0, "MOTION", "WAIT", 0.2), (30.0, "IDLE", "MOTION", 1.1)):
        rec.on_dispenser(DispenserNote("exp-1", stamp, "s1", "drops", state, previous, "goal", state != "IDLE",
                                       0.24 if state == "MOTION" else 0.0, False, ml, int(ml / DROP)))
    rec.on_dispenser(DispenserNote("", 31.0, "calibration", "calibration", "MOTION", "IDLE", "calibrate", True,
                                   1.0, False, 0.0, 0))
    rows = [r for r in _run(rec)["raw_observations"] if r["quantity"] == "dispenser_state"]
    assert [(r["payload"]["state"], r["value"], r["fsm_state"]) for r in rows] == [
        ("MOTION", 0.0, "titrating"), ("WAIT", 0.2, "titrating"), ("MOTION", 0.2, "titrating"), ("IDLE", 1.1, "titrating")]
    assert rows[0]["payload"]["drop_interval_s"] == 0.24 and rows[-1]["payload"]["active"] is False


def test_the_next_experiment_keeps_the_bench_state_and_starts_fusion_afresh(tmp_path):
    first = _open(tmp_path)
    first.on_fsm(_fsm("titrating", 1.5, previous="ready"))
    first.on_reading(_reading("pH", 3.0, 2.0))
    first.on_estimate(_estimate("audio", DROP, 2.1))
    first.close()
    second = _open(tmp_path, "exp-2", previous=first)
    assert (second.fsm_state, second.filters, second.last_record) == ("titrating", first.filters, first.last_record)
    assert second.fuser is not first.fuser and not second.closed
    assert second.on_reading(_reading("pH", 3.0, 2.5)) == []                 # the record period runs on
    [volume] = second.on_estimate(_estimate("audio", DROP, 2.6))
    assert volume.experiment_id == "exp-2" and volume.seq >= 1


def test_config_parameters_are_checked():
    assert build_config(RecorderConfig, {"ph_record_period": 0.5}).ph_record_period == 0.5
    with pytest.raises(ParameterError, match="'ph_record_period'.*outside 0 .. 60 s"):
        build_config(RecorderConfig, {"ph_record_period": 61.0})
    assert RecorderConfig(store_url="sqlite:///x.db").store_url_for("e") == "sqlite:///x.db"
