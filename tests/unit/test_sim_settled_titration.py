"""sim/settled_titration.py: drop-by-drop settled rows from the twin's beaker and electrode."""

from __future__ import annotations

import numpy as np
import pytest

from agentchemist.paths import config_dir
from agentchemist.sim.scenario import load_scenario
from agentchemist.sim.settled_titration import Perturbation, settled_titration

SCENARIO = load_scenario(config_dir() / "scenarios" / "acetic_naoh.yaml")


def test_rows_are_deterministic_counted_and_lag_below_a_rising_bulk_ph():
    a = settled_titration(SCENARIO, seed=5, target_ph=14.0, max_volume_ml=2.0)
    b = settled_titration(SCENARIO, seed=5, target_ph=14.0, max_volume_ml=2.0)
    assert np.array_equal(a.ph, b.ph) and np.array_equal(a.volume_ml, b.volume_ml)
    drop = SCENARIO.pipette.drop_volume_ml
    assert np.allclose(np.diff(a.volume_ml), drop)            # counted: drops x the calibrated drop volume
    assert a.true_volume_ml[-1] >= 2.0 and a.unsettled == 0   # stopped at the volume limit, every row settled
    assert abs(a.true_volume_ml[-1] - a.volume_ml[-1]) < 0.05  # drop scatter: a random walk of 3 % drops
    lag = a.ph[1:] - a.true_ph[1:]
    assert np.median(lag) < 0                                  # the electrode still approaches from below
    assert np.all(np.abs(lag) < 0.1)


def test_perturbation_sets_the_hidden_truth():
    pert = Perturbation(titrant_rel=0.02, drop_volume_rel=-0.01, ph_offset=0.05)
    r = settled_titration(SCENARIO, seed=1, target_ph=3.5, max_volume_ml=10.0, perturbation=pert)
    assert r.true_titrant_m == pytest.approx(0.102)
    assert np.allclose(np.diff(r.volume_ml), SCENARIO.pipette.drop_volume_ml * 0.99)
    assert r.ph[0] == pytest.approx(r.true_ph[0] + 0.05, abs=0.02)  # the first reading: offset and noise only
    assert r.ph[-1] >= 3.5 > r.ph[-2]                                 # stopped at the target


def test_a_scenario_with_two_titrants_is_refused():
    two = SCENARIO.model_copy(update={"titrant": {"naoh": 0.1, "koh": 0.1}})
    with pytest.raises(ValueError, match="exactly one titrant"):
        settled_titration(two, seed=0, target_ph=7.0, max_volume_ml=1.0)
