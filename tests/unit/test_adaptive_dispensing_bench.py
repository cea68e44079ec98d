"""bench/adaptive_dispensing.py grades what it claims: the equivalence targets come from the twin chemistry, and
its accuracy criterion (titrant landed after the drop that crossed the target) tells a stop in time from a stop
one drop late. The speed-up figure itself comes from the bench (5 seeds x 3 chemistries), not from this test."""
from __future__ import annotations

import pytest

from bench import adaptive_dispensing as bench
from bench.dispenser import CONSTANT


def test_equivalence_targets_are_on_the_jump_of_each_chemistry():
    targets = {kind: bench.equivalence_ph(name) for kind, name in bench.CHEMISTRIES.items()}
    assert targets["strong/strong"] == pytest.approx(7.0, abs=0.02)
    assert 8.3 < targets["weak acid"] < 9.0      # acetate is a weak base: above 7
    assert 8.8 < targets["diprotic"] < 9.5       # maleate's second equivalence


@pytest.mark.slow  # two closed-loop titrations of 25 mL: about 5-30 s on the shared 2-core machine
def test_the_criterion_tells_a_late_stop_from_one_in_time():
    target = bench.equivalence_ph("hcl_naoh")
    adaptive = bench.titrate("hcl_naoh", target, 1, {"rate_mm_s": 0.25}, {})
    fast_constant = bench.titrate("hcl_naoh", target, 1, {"rate_mm_s": 0.25}, CONSTANT)
    assert adaptive["endpoint"] and fast_constant["endpoint"]
    assert adaptive["excess_drops"] <= 0.5 and adaptive["drops_after_crossing"] == 0
    # The same far rate without fine mode lets a drop fall after the crossing one: a whole drop of excess.
    assert fast_constant["excess_drops"] > 0.5 and fast_constant["drops_after_crossing"] >= 1
    # The overshoot from the crossing volume includes the crossing drop's own remainder (0..1 drop).
    assert 0.0 <= adaptive["overshoot_from_crossing_drops"] < 1.0
    assert adaptive["sim_s"] < fast_constant["sim_s"] * 1.5


def test_phases_split_the_run_by_what_the_controller_did():
    """A run squeezing 2 s at the top rate, holding 3 s on a fast change, 1 s at a slower rate, then held by the
    judge until it cancels: each second lands in its phase, and the kinds of hold are counted."""
    from agentchemist.control.dispenser import State
    from agentchemist.fsm.endpoint import EndpointJudge
    from agentchemist.sim.closed_loop import LoopRun

    run = LoopRun(started=0.0)
    run.judge = EndpointJudge(7.0, 1, 5.0)
    run.judge.reached_at = 11.0
    run.drops_passed = [0.5]
    opening, t = 60.0, 0.0
    while t < 11.0 - 1e-9:
        rate = 0.25 if t < 2.0 else 0.05 if 5.0 <= t < 6.0 else 0.0
        run.commands.append((round(t, 2), round(opening, 4)))
        opening -= rate * 0.05
        t += 0.05
    run.commands.append((11.0, round(opening, 4)))
    run.transitions = [(2.0, State.MOTION, "change_rate_high", State.WAIT), (5.0, State.WAIT, "settled", State.MOTION),
                       (6.0, State.MOTION, "hold_command", State.WAIT)]
    p = bench.phases(run, 0.25)
    assert p["top_rate"] == pytest.approx(2.0, abs=0.06)
    assert p["wait_change_rate"] == pytest.approx(3.0, abs=0.06)
    assert p["slower_rate"] == pytest.approx(1.0, abs=0.06)
    assert p["endpoint_confirm"] == pytest.approx(5.0, abs=0.06)
    assert p["priming_s"] == pytest.approx(0.5, abs=0.06)
    assert p["holds"] == {"wait_change_rate": 1, "endpoint_confirm": 1}
