"""The drops controller's machine is driven by its table: every transition it takes is a row, and a
transition the table lacks is refused (TransitionError), never carried out."""
import pytest

import agentchemist.control.dispenser as dispenser
from agentchemist.control.dispenser import (TRANSITIONS, DispenseGoal, DispenserConfig, DispenserController, State,
                                            TransitionError, next_state)

CFG = DispenserConfig()


def steps(c, t0, t1, *, hold_at=None, release_at=None, drop_every=0.1):
    """An ideal gripper and a drop every `drop_every` s; the supervisor holds and releases when told."""
    seen, t, measured = [], t0, c.command
    while t < t1 - 1e-9:
        t = round(t + 0.02, 9)
        if int(t / drop_every) != int((t - 0.02) / drop_every):
            c.on_drop(t)
        if hold_at is not None and abs(t - hold_at) < 1e-9:
            c.hold("labware missing")
        if release_at is not None and abs(t - release_at) < 1e-9:
            c.release("labware missing")
        out = c.update(t, measured)
        measured = out.command_opening_mm
        seen += out.transitions
        if out.done:
            break
    return seen


def test_the_table_gives_each_next_state_and_refuses_the_rest():
    for state, condition, target, _action in TRANSITIONS:
        assert next_state(state, condition) == target
    with pytest.raises(TransitionError, match="no transition from RESET on 'settled'"):
        next_state(State.RESET, "settled")
    with pytest.raises(TransitionError):
        next_state(State.DONE, "goal_reached")   # DONE has no way out


def test_every_transition_a_goal_takes_is_a_row_of_the_table():
    c = DispenserController(CFG, DispenseGoal(target_volume_ml=1.0), start_opening_mm=60.0, now=0.0)
    seen = steps(c, 0.0, 60.0, hold_at=1.0, release_at=2.0)
    rows = {(state, condition, target) for state, condition, target, _ in TRANSITIONS}
    assert (State.MOTION, "hold_command", State.WAIT) in seen and (State.WAIT, "released", State.MOTION) in seen
    assert seen[-1] == (State.MOTION, "goal_reached", State.DONE)
    assert set(seen) <= rows


def test_a_transition_missing_from_the_table_is_refused(monkeypatch):
    # Without the hold row, a supervisor's hold in MOTION has nowhere to go: update refuses rather than
    # inventing the move.
    table = {key: target for key, target in dispenser._NEXT.items() if key != (State.MOTION, "hold_command")}
    monkeypatch.setattr(dispenser, "_NEXT", table)
    c = DispenserController(CFG, DispenseGoal(target_volume_ml=1.0), start_opening_mm=60.0, now=0.0)
    c.hold("labware missing")
    with pytest.raises(TransitionError, match="no transition from MOTION on 'hold_command'"):
        c.update(0.02, 60.0)
    assert c.state == State.MOTION
