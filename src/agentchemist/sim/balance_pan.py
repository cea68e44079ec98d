"""The balance and what stands on its pan: labware placed on it, with the working beaker's glass and
liquid and any undissolved solid in it (the dissolved part is in the liquid's mass)."""
from __future__ import annotations

import numpy as np

from agentchemist.sim.instruments import Balance
from agentchemist.sim.labware import Labware
from agentchemist.sim.scenario import Scenario
from agentchemist.sim.solid_handling import SolidHandling
from agentchemist.sim.types import CommandResult, Reading
from agentchemist.sim.vessel import Vessel

__all__ = ["BalancePan"]


class BalancePan:
    def __init__(self, scenario: Scenario, rng: np.random.Generator, labware: Labware, vessel: Vessel,
                 solid: SolidHandling) -> None:
        self._scenario, self._labware, self._vessel, self._solid = scenario, labware, vessel, solid
        self.balance = Balance(scenario.balance, 0.0, rng)
        self.balance.load_g = self.balance.display_g = self.load()  # settled on what the scenario put there

    def load(self) -> float:
        """True mass on the pan (g): items standing on it, with their contents."""
        sc = self._scenario
        bal, w, dissolver = sc.balance.id, sc.weighing, self._solid.dissolver
        load = 0.0
        for item in self._labware.items.values():
            if not item.present or item.on != bal:
                continue
            load += item.mass_g
            if item.id == sc.beaker.id:  # the working beaker: glass + liquid (+ dissolved)
                load += sc.beaker.glass_mass_g + self._vessel.beaker.liquid_mass_g
            if w is not None and dissolver is not None and item.id == w.target:
                load += dissolver.solid_g  # undissolved; the dissolved part is in liquid_mass_g
        return load

    def update(self, t: float) -> None:
        """The display settles up to ``t`` on the old load, then the pan carries what is on it now."""
        self.balance.advance(t)
        self.balance.set_load(self.load())

    def reload(self) -> None:
        """The load changed without time passing (a new sample set up on the bench)."""
        self.balance.set_load(self.load())

    def tare(self) -> CommandResult:
        if not self._labware.present(self._scenario.balance.id):
            return CommandResult(0.0, False, False, "the balance is not on the bench")
        return CommandResult(self.balance.tare())

    def read(self, t: float) -> Reading | None:
        """The balance's reading at ``t``; None with no balance on the bench."""
        sc = self._scenario
        if not self._labware.present(sc.balance.id):
            return None
        value = self.balance.reading()
        return Reading(value, "g", sc.probe.temperature_c, not self.balance.overloaded, sc.balance.noise_sd_g, t)
