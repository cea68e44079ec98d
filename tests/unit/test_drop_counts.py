"""Who counts which drops (docs/architecture.md, "Who decides what"): the audio supervisor's DropContext counts
the experiment's heard drops once (expected ones and the unbidden ones that fell into the vessel); the
dispenser's goal tallies the expected ones it is told of, the executor the drop notes. Fed one stream of
sounds, the three agree on what each is documented to count."""
import pytest

from agentchemist.contracts import Symbol
from agentchemist.contracts.dispense import DropsRequest
from agentchemist.control.dispense_session import DispenseSession
from agentchemist.control.dispenser import DispenserConfig
from agentchemist.control.solid_pour import SolidPourConfig
from agentchemist.fsm.executor import Executor
from agentchemist.perception.audio.context import DropContext
from agentchemist.perception.audio.events import DetectedEvent


def droplet(n: int, onset: float, kind: str = "droplet") -> DetectedEvent:
    return DetectedEvent(event_id=f"aud-{n:06d}", start=onset, end=onset + 0.05, onset=onset, kind=kind,
                         margin=0.8, snr_db=20.0, peak_frequency_hz=2000.0, decay_s=0.02, confidence=0.9)


def test_each_count_is_of_its_own_evidence(ph_plan):
    ctx = DropContext()
    session = DispenseSession(DispenserConfig(), SolidPourConfig(), pour_side="left")
    session.on_joints(["right_gripper"], [0.060])
    job = session.start(DropsRequest("e1", "s1", target_volume_ml=2.0), now=0.0)
    ex = Executor(ph_plan, 0.0)

    def hear(n: int, onset: float, kind: str = "droplet", over_vessel: bool = True) -> None:
        """What the audio supervisor does with one sound: judge it, count an unbidden drop that fell in,
        tell the dispenser (AudioEvent) and, for an expected drop, the executor (the drop note)."""
        judged = ctx.classify(droplet(n, onset, kind))
        if judged.classification == "anomalous" and kind == "droplet" and over_vessel:
            judged = ctx.count_unbidden(judged)
        if kind == "droplet":
            session.on_droplet(onset, judged.classification)
        if judged.symbol == Symbol.DROP:
            ex.on_agent_symbol(judged.symbol, onset, "audio_supervisor", "s1")

    ctx.set_expectation(active=True, subtask_id="s1", fsm_state="titrating", expected_interval_s=1.0, now=0.0)
    for n, t in enumerate((1.0, 2.0, 3.0)):
        hear(n, t)                                   # three drops squeezed out: expected
    hear(3, 3.2, kind="contact")                     # a knock: counted by nobody
    ctx.set_expectation(active=False, subtask_id="s1", fsm_state="waiting_ph", expected_interval_s=None, now=3.5)
    hear(4, 5.0)                                     # a drop nobody squeezed, into the vessel: unbidden
    ctx.set_expectation(active=True, subtask_id="s1", fsm_state="titrating", expected_interval_s=1.0, now=6.0)
    hear(5, 7.0)                                     # expected again

    assert ctx.drops == 5 and ctx.total_ml == pytest.approx(5 * ctx.drop_volume_ml)   # the experiment's heard drops
    assert job.controller.drops == 4 and job.end_state("done").drops == 4             # the goal's expected ones
    assert ex.drops_heard == 4                                                         # the drop notes
