"""The capture's xrun / dropped-block counters and the diagnostic level they give."""
from agentchemist.hardware.audio_capture import ERROR, OK, WARN, CaptureHealth


def test_overflows_and_drops_warn_once_then_ok():
    h = CaptureHealth("PUI AOM-5024L (#3)", 48000)
    assert h.status()[0] == ERROR                      # nothing captured yet
    h.on_block(False, True)
    assert h.status()[0] == OK
    h.on_block(True, True)
    h.on_block(False, False)
    level, message, values = h.status()
    assert level == WARN and "1 overflow(s), 1 dropped" in message
    assert values["overflows"] == "1" and values["dropped_blocks"] == "1" and values["blocks"] == "3"
    h.on_block(False, True)
    assert h.status()[0] == OK and h.overflows == 1    # totals stay, the warning does not
