"""Drop-by-drop titration records from the lab twin's chemistry and probe, without the node graph.

What the recorder of a graph run gives the analysis is one row per drop: the dispenser's volume estimate
(drops counted x the calibrated drop volume) and the supervisor's settled pH (the reading at which the
stability test first passes). A full graph run takes one to three minutes;
this produces the same kind of rows in about a second from the twin's own parts:

- :class:`~agentchemist.sim.beaker.Beaker`: the twin's chemistry (same equilibrium solver, Davies
  activities as the twin's probe reads them, same temperature);
- :class:`~agentchemist.sim.instruments.PhProbe`: the twin's electrode (mixing and response lags, noise,
  offset, drift), read at the graph's 5 Hz and rounded to 0.001 pH like ``LabTwin.read_ph``;
- drop volumes drawn as the twin's pipette draws them (normal about the mean, truncated at +-30 %);
- :class:`~agentchemist.perception.ph_stability.PhStabilityDetector` with its default window, the test
  the supervisor applies before it records ``ph_settled`` (the executor releases the next drop then).

Not modelled here (the graph does them): audio drop detection, gripper motion, the dispenser's timing.
A :class:`Perturbation` sets the bench's hidden truth away from the labels (titrant concentration, the
drop volume the dispenser believes, the electrode's calibration), as an uncertainty budget assumes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from agentchemist.perception.ph_stability import PhStabilityDetector, StabilityConfig
from agentchemist.sim.beaker import Beaker
from agentchemist.sim.instruments import PhProbe
from agentchemist.sim.scenario import Scenario

__all__ = ["Perturbation", "SettledTitration", "settled_titration"]

READ_PERIOD_S = 0.2   # lab_sim publishes pH at 5 Hz
MAX_WAIT_S = 30.0     # a drop whose reading never settles is recorded at this age (flagged "unsettled")


@dataclass(frozen=True)
class Perturbation:
    """The bench's truth relative to what the run is told (relative values are fractions).

    ``titrant_rel``: true titrant concentration = label x (1 + titrant_rel); ``drop_volume_rel``: the drop
    volume the dispenser counts with = true mean drop x (1 + drop_volume_rel); ``ph_offset``/``ph_slope_rel``:
    the meter reads 7 + (1 + ph_slope_rel) (pH - 7) + ph_offset after its calibration.
    """

    titrant_rel: float = 0.0
    drop_volume_rel: float = 0.0
    ph_offset: float = 0.0
    ph_slope_rel: float = 0.0


@dataclass
class SettledTitration:
    """Rows as the recorder gives them (``volume_ml`` estimated, ``ph`` settled) plus the truth behind them."""

    volume_ml: np.ndarray
    ph: np.ndarray
    true_volume_ml: np.ndarray     #: titrant actually in the beaker at each row (mL)
    true_ph: np.ndarray            #: the beaker's true bulk pH at each row (the probe lags behind it)
    true_titrant_m: float
    unsettled: int                 #: rows recorded at MAX_WAIT_S without a stable reading
    perturbation: Perturbation = field(default_factory=Perturbation)


def settled_titration(scenario: Scenario, *, seed: int, target_ph: float, max_volume_ml: float,
                      perturbation: Perturbation = Perturbation(),
                      stability: StabilityConfig = StabilityConfig()) -> SettledTitration:
    """Titrate ``scenario``'s beaker with its titrant one drop at a time until the settled pH reaches
    ``target_ph`` (rising) or ``max_volume_ml`` has been added; deterministic for a given ``seed``."""
    if len(scenario.titrant) != 1:
        raise ValueError(f"scenario {scenario.name!r} must name exactly one titrant")
    rng = np.random.default_rng(seed)
    name, label_m = next(iter(scenario.titrant.items()))
    true_m = label_m * (1.0 + perturbation.titrant_rel)
    sp, probe_spec = scenario.pipette, scenario.probe
    counted_drop_ml = sp.drop_volume_ml * (1.0 + perturbation.drop_volume_rel)
    beaker = Beaker(scenario.beaker, probe_spec.temperature_c, activity=probe_spec.activity)
    probe = PhProbe(probe_spec, beaker.ph(), rng)
    mixing_tau = scenario.stirrer.mixing_tau_s if scenario.stirrer.on else scenario.stirrer.unstirred_mixing_tau_s
    detector = PhStabilityDetector(stability)
    slope = 1.0 + perturbation.ph_slope_rel
    t, drops, landed = 0.0, 0, 0.0
    volumes, phs, truths, bulk = [], [], [], []
    unsettled = 0
    while True:
        detector.reset()
        start = t
        while True:
            t = round(t + READ_PERIOD_S, 9)
            probe.advance(t, mixing_tau)
            raw = probe.indicated(t) + probe.sample_noise()
            reading = round(7.0 + slope * (raw - 7.0) + perturbation.ph_offset, 3)
            detector.add(t, reading)
            if detector.is_stable():
                break
            if t - start >= MAX_WAIT_S:
                unsettled += 1
                break
        settled = reading  # the supervisor records the reading that passed the test (fsm/supervision.py)
        volumes.append(drops * counted_drop_ml)
        phs.append(settled)
        truths.append(landed)
        bulk.append(probe.bulk)
        if settled >= target_ph or landed >= max_volume_ml:
            break
        volume = sp.drop_volume_ml + sp.drop_volume_sd * float(rng.standard_normal())
        volume = min(max(volume, 0.7 * sp.drop_volume_ml), 1.3 * sp.drop_volume_ml)
        beaker.add_liquid(volume, {name: true_m})
        probe.set_bulk(beaker.ph())
        drops += 1
        landed += volume
    return SettledTitration(np.array(volumes), np.array(phs), np.array(truths), np.array(bulk), true_m, unsettled,
                            perturbation)

