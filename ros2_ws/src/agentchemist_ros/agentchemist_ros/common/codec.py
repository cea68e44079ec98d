"""The JSON text fields of the interfaces, read and written here only: AgentMessage.payload_json (through
the notes of agentchemist.contracts), the ExecuteSubtask goal's payload_json, DescribeScene's checks_json,
InjectFault's params_json, RunExperiment's scene_json, and the JSON carried in std_msgs/String on the pH
meter's calibration topic and the twin's ground-truth topic.

Everything a node gets from here is a dict or a typed note. A field that is not JSON, or not the JSON
object it should hold, is a :class:`DecodeError`; a payload that is not its symbol's note is the notes'
ValueError (DecodeError is one too, so ``except ValueError`` takes both). A payload is
written with json's default separators and in the order its sender built it: recorded bags and the replay
tests compare the text.
"""
from __future__ import annotations

import json
from typing import Any, Mapping

from agentchemist.contracts.notes import NOTES, Hold, Note, Release, note_from
from agentchemist.contracts.symbols import Symbol, symbol as symbol_named

__all__ = ["DecodeError", "decode_checks", "decode_fault_params", "decode_note", "decode_object", "decode_payload",
           "decode_scene", "decode_subtask", "encode_calibration", "encode_checks", "encode_note",
           "encode_payload", "encode_policy_report", "encode_subtask", "encode_tap", "encode_truth", "hold_reason"]


class DecodeError(ValueError):
    """A JSON field that cannot be read: not JSON, or not a JSON object."""


def decode_object(text: str, field: str) -> dict[str, Any]:
    """A JSON object field ('' reads as {}); DecodeError when the text is not JSON or not an object."""
    try:
        value = json.loads(text or "{}")
    except json.JSONDecodeError as exc:
        raise DecodeError(f"{field} is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise DecodeError(f"{field} must be a JSON object")
    return value


# ------------------------------------------------------------------------------ AgentMessage.payload_json
def encode_payload(symbol: Symbol | str, payload: Mapping[str, Any]) -> str:
    """The payload_json of a message with ``symbol``: checked against its note when the symbol carries one
    (ValueError on garbage or an unknown symbol), written as given."""
    sym = symbol_named(str(symbol))
    if sym in NOTES:
        note_from(sym, payload)
    return json.dumps(dict(payload))


def encode_note(note: Note) -> str:
    return json.dumps(note.to_payload())


def decode_payload(msg) -> dict[str, Any]:
    """An AgentMessage's payload as a dict (the recorder hands it to the core, which reads it as a note)."""
    return decode_object(msg.payload_json, "payload_json")


def decode_note(msg) -> Note:
    """An AgentMessage as its note; ValueError for a symbol without one or a payload that is not its note."""
    return note_from(msg.symbol, decode_payload(msg))


def hold_reason(msg) -> str:
    """The reason of a hold or release message to the dispenser; 'supervisor' when it names none or its
    payload cannot be read (the hold is kept all the same: squeezing on is the unsafe side)."""
    try:
        note = decode_note(msg)
    except ValueError:
        return "supervisor"
    return (note.reason if isinstance(note, (Hold, Release)) else "") or "supervisor"


def encode_tap(payload: Mapping[str, Any]) -> str:
    """The payload_json of the dispenser's ``tap`` (a pour pulse), checked against the Tap note."""
    return encode_payload(Symbol.TAP, payload)


# ------------------------------------------------------------------------------ goals and services
def encode_subtask(payload: Mapping[str, Any]) -> str:
    """An ExecuteSubtask goal's payload_json, as the executor built it (primitive, symbol, parameters)."""
    return json.dumps(dict(payload))


def decode_subtask(text: str) -> dict[str, Any]:
    """An ExecuteSubtask goal's payload_json (primitive, symbol, parameters)."""
    return decode_object(text, "payload_json")


def encode_checks(checks: Mapping[str, Any]) -> str:
    """DescribeScene's checks_json."""
    return json.dumps(dict(checks))


def decode_checks(text: str) -> dict[str, Any]:
    return decode_object(text, "checks_json")


def decode_fault_params(text: str) -> dict[str, Any]:
    """InjectFault's params_json: the fault's keyword arguments."""
    return decode_object(text, "params_json")


def decode_scene(text: str) -> dict[str, Any]:
    """RunExperiment's scene_json: a scene given with the instruction instead of the camera's."""
    return decode_object(text, "scene_json")


# ------------------------------------------------------------------------------ String topics and text
def encode_calibration(status: Mapping[str, Any]) -> str:
    """The pH meter's latched electrode-calibration state (/lab/ph_meter/calibration)."""
    return json.dumps(status)


def encode_truth(summary: Mapping[str, Any]) -> str:
    """The twin's ground-truth summary; numpy numbers are written as floats."""
    return json.dumps(summary, default=float)


def encode_policy_report(report: Mapping[str, Any]) -> str:
    """A VLA episode's report, as the text the action policy puts in its result message."""
    return json.dumps(report)
