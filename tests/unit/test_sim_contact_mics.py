"""The twin's contact microphones note a sound scheduled before audio already rendered, and go on."""
from agentchemist.sim.audio import AudioEventTruth
from agentchemist.sim.contact_mics import ContactMics
from agentchemist.sim.event_log import EventLog
from agentchemist.sim.scenario import load_scenario
from tests.conftest import REPO


def test_a_late_sound_is_noted_in_the_truth_not_raised():
    events = EventLog()
    mics = ContactMics(load_scenario(REPO / "config" / "scenarios" / "hcl_naoh.yaml"), events)
    rate = 48000
    mics.render("left", 0.0, rate)  # one second rendered
    mics.schedule("left", AudioEventTruth(time=0.5, kind="droplet", label="drop 1"))
    late = [e for e in events.entries if e["kind"] == "audio_event_late"]
    assert len(late) == 1 and late[0]["sound"] == "droplet" and late[0]["side"] == "left"
    assert late[0]["error"]  # the synthesiser's reason, kept for whoever reads the truth
