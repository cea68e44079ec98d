"""The notes between agents: one registry, payloads as the agents send them, garbage refused."""
import json

import pytest

from agentchemist.contracts import NOTE_SYMBOLS, Symbol
from agentchemist.contracts.notes import (NOTES, Drop, Hold, MassSettled, RecordClosed, ReportWritten, Tap,
                                          note_from)


def test_registry_is_keyed_by_the_notes_own_symbol():
    assert all(cls.SYMBOL is sym for sym, cls in NOTES.items())
    assert len(set(NOTES.values())) == len(NOTES)
    # every note told beside the machine has its class (ph_settled is the recorder's record name only)
    assert NOTE_SYMBOLS - set(NOTES) == {Symbol.PH_SETTLED}


@pytest.mark.parametrize("symbol, text", [
    # the exact payload texts the agents have always sent (recorded bags and the replay tests compare them)
    ("hold", '{"reason": "endpoint"}'),
    ("resume", '{}'),
    ("drop", '{"event_id": "left-17", "total_ml": 0.35}'),
    ("tap", '{"index": 2, "kind": "pulse", "duration_s": 0.25, "planned_g": null, "tilt_deg": 101.5}'),
    ("ph_stable", '{"ph": 7.01}'),
    ("mass_settled", '{"mass_g": 0.51, "final": true}'),
    ("dissolved", '{"dissolution_time_s": 42.0}'),
    ("verified", '{"ph": null, "temperature_c": 24.0}'),
    ("artifact", '{"kind": "snapshot", "path": "runs/e/a.png", "label": "endpoint"}'),
    ("dispatch", '{"primitive": "grasp", "parameters": {"side": "left"}}'),
    ("record_closed", '{"store": "runs/e/records.db", "status": "aborted", "outcome": "aborted", '
                      '"message": "ended in aborted"}'),
    ("report_written", '{"report": "/r/report.md", "html": "/r/report.html", "json": "/r/report.json", '
                       '"status": "completed", "outcome": "completed_without_result", '
                       '"message": "completed without titration curve"}'),
])
def test_payload_round_trip_is_byte_identical(symbol, text):
    assert json.dumps(note_from(symbol, json.loads(text)).to_payload()) == text


def test_defaults_for_what_a_sender_may_leave_out():
    assert note_from("ph_stable", {}).ph is None
    assert note_from(Symbol.MASS_SETTLED, {"mass_g": 0.5}) == MassSettled(0.5, False)
    assert note_from("record_closed", {"status": "completed"}) == RecordClosed("", "completed")
    assert note_from("hold", {}) == Hold("")
    assert ReportWritten().report == ""


@pytest.mark.parametrize("symbol, payload, words", [
    ("ph_stable", {"ph": "7"}, "ph='7': must be a number"),
    ("ph_stable", {"ph": float("nan")}, "must be a finite number"),
    ("mass_settled", {"mass_g": 0.5, "final": 1}, "must be true or false"),
    ("ph_stable", {"pH": 7.0}, "unknown key(s) 'pH'"),
    ("drop", {"event_id": "e"}, "missing key(s) 'total_ml'"),
    ("drop", {"event_id": "e", "total_ml": True}, "must be a number"),
    ("tap", {"index": 1.0, "kind": "p", "duration_s": 1, "planned_g": None, "tilt_deg": 1}, "must be an integer"),
    ("hold", {"reason": None}, "must not be null"),
    ("dispatch", {"primitive": "grasp", "parameters": [1]}, "must be an object"),
    ("hold", ["reason"], "payload must be an object"),
    ("grasp_ok", {}, "carries no note"),
    ("hodl", {}, "unknown symbol 'hodl'"),
])
def test_garbage_is_refused_with_a_clear_error(symbol, payload, words):
    with pytest.raises(ValueError) as err:
        note_from(symbol, payload)
    assert words in str(err.value)


def test_a_note_built_in_code_is_checked_too():
    with pytest.raises(ValueError, match="drop note: total_ml=inf"):
        Drop("e", float("inf"))
    assert Tap(1, "pulse", 0.2, None, 90.0).to_payload()["planned_g"] is None
