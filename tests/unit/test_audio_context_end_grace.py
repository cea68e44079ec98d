"""A drop the last squeeze left at the tip falls after dispensing ended: expected for end_grace_s, while a
pause between drops keeps the short late grace (a leak then is an unexpected drop)."""
import pytest

from agentchemist.perception.audio.context import ContextConfig, DropContext


def _context():
    ctx = DropContext(ContextConfig(late_grace_s=0.5, end_grace_s=1.5))
    ctx.set_expectation(active=True, subtask_id="titrate", fsm_state="titrating", expected_interval_s=1.0, now=0.0)
    return ctx


@pytest.mark.parametrize("ended, late_s, expected", [
    (True, 0.9, True),     # the goal ended: the hanging drop still falls
    (True, 2.0, False),    # too late even for that
    (False, 0.9, False),   # a WAIT between drops: 0.9 s later is not the last squeeze's drop
    (False, 0.3, True),
])
def test_late_drop_after_the_end_and_after_a_pause(ended, late_s, expected):
    ctx = _context()
    ctx.set_expectation(active=False, subtask_id="titrate", fsm_state="titrating", expected_interval_s=None,
                        now=10.0, ended=ended)
    exp, grace = ctx._expectation_at(10.0 + late_s)
    assert (exp.active and grace) is expected


def test_end_grace_is_validated():
    with pytest.raises(ValueError):
        ContextConfig(end_grace_s=-1.0)


def test_a_stop_in_steps_is_timed_from_its_first_step():
    """MOTION -> the dispenser's WAIT -> the end of its goal: the hanging drop 0.9 s after the WAIT is the
    last squeeze's (the end allows 1.5 s); without the end, the WAIT's 0.5 s applies."""
    ctx = _context()
    ctx.set_expectation(active=False, subtask_id="titrate", fsm_state="titrating", expected_interval_s=None,
                        now=10.0)
    exp, grace = ctx._expectation_at(10.9)
    assert not (exp.active and grace)
    ctx.set_expectation(active=False, subtask_id="titrate", fsm_state="titrating", expected_interval_s=None,
                        now=10.2, ended=True)
    exp, grace = ctx._expectation_at(10.9)
    assert exp.active and grace
    exp, grace = ctx._expectation_at(11.6)  # 1.6 s after the first step: too late
    assert not (exp.active and grace)
