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
