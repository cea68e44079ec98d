"""The ROS boundary's codec (agentchemist_ros.common.codec): the JSON fields read and written one way,
with the text the agents have always put on the wire."""
import json

import pytest

from agentchemist.contracts import Symbol
from agentchemist.contracts.notes import Drop, RecordClosed, ReportWritten
from agentchemist_interfaces.msg import AgentMessage
from agentchemist_ros.common import codec


def _msg(symbol, payload_json):
    return AgentMessage(symbol=symbol, payload_json=payload_json)


def test_notes_keep_the_old_wire_text():
    # the audio supervisor's drop was an f-string: the note writes the same bytes
    event_id, total_ml = "left-0003", 0.15000000000000002
    assert codec.encode_note(Drop(event_id, total_ml)) == f'{{"event_id": "{event_id}", "total_ml": {total_ml}}}'
    # the recorder's and the summarizer's were json.dumps of a dict in this order (the recorder's now
    # with the outcome it judged after them)
    assert codec.encode_note(RecordClosed("runs/e/records.db", "completed", "completed", "experiment completed")) == \
        json.dumps({"store": "runs/e/records.db", "status": "completed", "outcome": "completed",
                    "message": "experiment completed"})
    assert codec.encode_note(ReportWritten("/r.md", "/r.html", "/r.json", "completed", "completed_without_result",
                                           "completed without equivalence point")) == \
        json.dumps({"report": "/r.md", "html": "/r.html", "json": "/r.json", "status": "completed",
                    "outcome": "completed_without_result", "message": "completed without equivalence point"})


def test_an_effect_payload_is_checked_and_written_as_given():
    assert codec.encode_payload("mass_settled", {"mass_g": 0.5, "final": False}) == '{"mass_g": 0.5, "final": false}'
    assert codec.encode_payload(Symbol.RESUME, {}) == "{}"
    # a symbol without a note (an input symbol) is written unchecked
    assert codec.encode_payload("grasp_ok", {"k": 1}) == '{"k": 1}'
    with pytest.raises(ValueError, match="ph_stable note: ph='7'"):
        codec.encode_payload("ph_stable", {"ph": "7"})
    with pytest.raises(ValueError, match="unknown symbol 'ph_stabel'"):
        codec.encode_payload("ph_stabel", {"ph": 7.0})


def test_decoding_a_message():
    assert codec.decode_note(_msg("record_closed", '{"status": "completed"}')) == RecordClosed("", "completed")
    assert codec.decode_payload(_msg("artifact", "")) == {}
    with pytest.raises(codec.DecodeError, match="payload_json is not JSON"):
        codec.decode_payload(_msg("artifact", "{nope"))
    with pytest.raises(codec.DecodeError, match="payload_json must be a JSON object"):
        codec.decode_note(_msg("record_closed", "[1]"))
    with pytest.raises(ValueError, match="unknown key"):
        codec.decode_note(_msg("record_closed", '{"stroe": "x"}'))


def test_hold_reason_for_the_dispenser():
    assert codec.hold_reason(_msg("hold", '{"reason": "endpoint"}')) == "endpoint"
    assert codec.hold_reason(_msg("release", '{"reason": "peer recorder"}')) == "peer recorder"
    # none given, or unreadable: the hold holds all the same, for the supervisor
    assert codec.hold_reason(_msg("hold", "")) == "supervisor"
    assert codec.hold_reason(_msg("hold", "{broken")) == "supervisor"
    assert codec.hold_reason(_msg("hold", '{"reason": 3}')) == "supervisor"


def test_tap_payload_for_the_dispenser():
    payload = {"index": 1, "kind": "pulse", "duration_s": 0.4, "planned_g": None, "tilt_deg": 97.25}
    assert codec.encode_tap(payload) == json.dumps(payload)
    with pytest.raises(ValueError, match="tap note: missing key"):
        codec.encode_tap({"index": 1})


def test_object_fields():
    assert codec.decode_fault_params("") == {}
    assert codec.decode_fault_params('{"side": "left"}') == {"side": "left"}
    with pytest.raises(codec.DecodeError, match="params_json must be a JSON object"):
        codec.decode_fault_params("[]")
    assert codec.decode_checks(codec.encode_checks({"checks": {"beaker": True}})) == {"checks": {"beaker": True}}
    assert codec.decode_subtask(codec.encode_subtask({"primitive": "grasp"})) == {"primitive": "grasp"}
    with pytest.raises(codec.DecodeError, match="scene_json"):
        codec.decode_scene('"a string"')
    import numpy as np
    assert codec.encode_truth({"ph": np.float32(7.5)}) == '{"ph": 7.5}'
