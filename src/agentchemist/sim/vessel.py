"""The working beaker's solution, the stirrer under it and the pH probe in it, as the twin keeps them.

The true pH is recomputed lazily: a drop landing or solid dissolving marks the composition changed, and
the pH (and the probe's bulk value, and the truth's pH history) follow at the next refresh. The probe
itself is advanced in closed form: when read, and before anything that changes its mixing time
constant (the stirrer, where the beaker stands)."""
from __future__ import annotations

from typing import Mapping

import numpy as np

from agentchemist.sim.beaker import Beaker
from agentchemist.sim.faults import FaultBook
from agentchemist.sim.instruments import PhProbe
from agentchemist.sim.labware import Labware
from agentchemist.sim.scenario import Scenario
from agentchemist.sim.truth_log import TimeSeries
from agentchemist.sim.types import Reading

__all__ = ["Vessel"]


class Vessel:
    def __init__(self, scenario: Scenario, rng: np.random.Generator, labware: Labware, faults: FaultBook) -> None:
        sc = scenario
        self._scenario, self._labware, self._faults = sc, labware, faults
        self.stirrer_on = sc.stirrer.on
        self.beaker = self._fresh_beaker()
        self.probe = PhProbe(sc.probe, self.beaker.ph(), rng)
        # Every true-pH change of the whole run (all samples), compact: long runs keep them all.
        self.ph_history = TimeSeries()
        self.ph_history.append(0.0, self.probe.bulk)
        self._changed = False  # the composition changed since the pH was last computed

    def _fresh_beaker(self) -> Beaker:
        sc = self._scenario
        return Beaker(sc.beaker, sc.probe.temperature_c, activity=sc.probe.activity)

    def renew(self, probe_t: float, t: float) -> float:
        """A fresh beaker of the scenario's sample at ``t``; the probe (brought to ``probe_t`` first)
        moves into it and follows with its own time constant. Returns the new pH."""
        self.sync_probe(probe_t)
        self.beaker = self._fresh_beaker()
        ph = self.beaker.ph()
        self.probe.set_bulk(ph)
        self.ph_history.append(t, ph)
        self._changed = False
        return ph

    # ---------------------------------------------------------------------------------------- chemistry
    def composition_changed(self) -> None:
        """The beaker's contents changed (a drop, dissolved solid): recompute the pH at the next refresh."""
        self._changed = True

    def add_drop(self, volume_ml: float, composition: Mapping[str, float], t: float) -> float:
        """A drop lands at ``t``: the probe has seen the old solution until then. Returns what spilled
        over the rim (mL)."""
        self.refresh_ph(t)
        self.probe.advance(t, self.mixing_tau())
        spill = self.beaker.add_liquid(volume_ml, composition)
        self._changed = True
        return spill

    def dissolve(self, reagent: str, mol: float, grams: float) -> None:
        """Solid went into solution (the mass on the balance is unchanged: solid became solute)."""
        self.beaker.add_dissolved(reagent, mol, grams)
        self._changed = True

    def refresh_ph(self, t: float) -> None:
        if self._changed:
            self.probe.advance(t, self.mixing_tau())
            ph = self.beaker.ph()
            self.probe.set_bulk(ph)
            self.ph_history.append(t, ph)
            self._changed = False

    # ---------------------------------------------------------------------------------------- stirring
    def stirred(self) -> bool:
        """The stirrer is on, on the bench, and the beaker stands on it."""
        st = self._scenario.stirrer
        return (self.stirrer_on and self._labware.present(st.id)
                and self._labware.items[self._scenario.beaker.id].on == st.id)

    def mixing_tau(self) -> float:
        st = self._scenario.stirrer
        return st.mixing_tau_s if self.stirred() else st.unstirred_mixing_tau_s

    def set_stirrer(self, on: bool, t: float) -> None:
        self.sync_probe(t)  # the mixing time constant changes now
        self.stirrer_on = bool(on)

    # ---------------------------------------------------------------------------------------- the meter
    def sync_probe(self, t: float) -> None:
        """Bring the electrode to ``t``; call it before reading the probe and before anything that
        changes its mixing time constant."""
        if self.probe.moving:
            self.probe.advance(t, self.mixing_tau())
        elif t > self.probe.t:
            self.probe.t = t

    def immersed(self) -> bool:
        return (self._labware.present(self._scenario.beaker.id)
                and self.beaker.volume_ml >= self._scenario.probe.min_immersion_ml)

    def _meter_silent(self) -> bool:
        """The meter gives no reading: a dropout, or no probe or no meter on the bench."""
        sp = self._scenario.probe
        return bool(self._faults.find("ph_dropout") or not self._labware.present(sp.id)
                    or not self._labware.present_kind("ph_meter"))

    def read_ph(self, t: float) -> Reading | None:
        """The pH meter's reading at ``t``; None during a dropout or with no probe/meter."""
        sp = self._scenario.probe
        if self._meter_silent():
            return None
        stuck = self._faults.find("ph_stuck")
        self.sync_probe(t)
        if stuck is not None:
            value = stuck.state["value"]
        else:
            value = round(self.probe.indicated(t) + self.probe.sample_noise(), 3)
        temp = round(self.probe.sample_temperature(sp.temperature_c), 2)
        return Reading(value, "pH", temp, self.immersed(), sp.noise_sd, t)

    def read_temperature(self, t: float) -> Reading | None:
        sp = self._scenario.probe
        if self._meter_silent():
            return None
        temp = round(self.probe.sample_temperature(sp.temperature_c), 2)
        return Reading(temp, "degC", temp, self.immersed(), sp.temperature_noise_sd, t)

    def meter_display(self, t: float) -> float | None:
        """What the meter's display shows at ``t`` (no noise; None when it shows nothing), for the cameras."""
        self.sync_probe(t)
        dropout = self._faults.find("ph_dropout") is not None or not self._labware.present(self._scenario.probe.id)
        stuck = self._faults.find("ph_stuck")
        return None if dropout else (stuck.state["value"] if stuck else self.probe.indicated(t))
