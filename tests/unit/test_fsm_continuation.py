"""StopConfirmation: a dispenser target stop the endpoint hold does not confirm makes dispensing go on,
a bounded number of times."""
import pytest

from agentchemist.fsm.continuation import StopConfirmation


def test_nothing_pending_waits():
    assert StopConfirmation().check(100.0, "titrating", 5.0).action == "wait"


def test_waits_for_the_hold_and_margin_then_goes_on():
    c = StopConfirmation(margin_s=5.0, max_continuations=3)
    c.dispenser_stopped(10.0)
    assert c.check(19.9, "waiting_ph", 5.0).action == "wait"  # 9.9 s < hold 5 + margin 5
    d = c.check(20.0, "waiting_ph", 5.0)
    assert (d.action, d.count) == ("continue", 1) and "1/3" in d.message
    assert c.check(40.0, "waiting_ph", 5.0).action == "wait"  # one decision per stop


def test_a_confirmed_endpoint_clears_the_pending_stop():
    c = StopConfirmation()
    c.dispenser_stopped(10.0)
    assert c.check(12.0, "done", 5.0).action == "wait"  # the FSM moved on: confirmed
    assert c.stopped_at is None
    assert c.check(60.0, "titrating", 5.0).action == "wait"
    assert c.continuations == 0


def test_gives_up_after_the_maximum():
    c = StopConfirmation(margin_s=0.0, max_continuations=2)
    actions = []
    for k in range(3):
        c.dispenser_stopped(10.0 * k)
        actions.append(c.check(10.0 * k + 5.0, "titrating", 5.0))
    assert [d.action for d in actions] == ["continue", "continue", "give_up"]
    assert "2 times" in actions[-1].message


@pytest.mark.parametrize("margin,maximum", [(-1.0, 3), (float("nan"), 3), (1.0, -1)])
def test_bad_settings_are_refused(margin, maximum):
    with pytest.raises(ValueError):
        StopConfirmation(margin, maximum)
