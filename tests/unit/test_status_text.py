"""The rviz overlay text: FSM state, pH and titrant volume; garbage readings are not displayed."""
import math

from agentchemist.viz.status_text import StatusText


def test_status_text_shows_the_latest_values():
    s = StatusText()
    assert s.text() == "FSM: -\npH: -\ntitrant: -"
    s.on_state("DISPENSING")
    s.on_reading("pH", 7.123)
    s.on_reading("temperature", 25.04)
    s.on_quantity("titrant_volume", "statistical", 12.345)
    s.on_quantity("titrant_volume", "audio", 12.3)
    s.on_quantity("mass", "balance", 3.0)
    assert s.text() == "FSM: DISPENSING\npH: 7.12 (25.0 degC)\ntitrant: 12.30 mL audio, 12.35 mL statistical"
    s.on_reading("pH", math.nan)
    s.on_quantity("titrant_volume", "audio", math.inf)
    assert "pH: 7.12" in s.text() and "12.30 mL audio" in s.text()
