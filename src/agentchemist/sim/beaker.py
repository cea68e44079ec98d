"""The working beaker: moles of each reagent, liquid volume, overflow, pH and colour.

Volumes add (no volume change on mixing: at 0.1 mol/L the error is well below 0.1 %). The pH comes from
:func:`agentchemist.chemistry.equilibrium.ph_of_mixture` on the moles in the beaker, with Davies
activity coefficients by default because a glass electrode responds to the activity of H+
(0.1 mol/L HCl: pH 1.00 from concentration, 1.11 from activity; the paper reports 1.06).
Results are cached by composition: the twin asks for the pH far more often than the composition changes.

Overflow: liquid that does not fit leaves over the rim with the mixed composition; the beaker stays full
and the spilled volume is reported (the twin records it as a fault event, it does not stop).

Colour: Ca/EDTA with calconcarboxylic acid uses the complexometric model
(:func:`agentchemist.chemistry.complexometric.ca_edta_state`); another indicator uses the Beer-Lambert
model in :mod:`agentchemist.sim.indicators`; no indicator gives the tint of clear water.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Mapping

from agentchemist.chemistry.equilibrium import ph_of_mixture
from agentchemist.chemistry.reagents import default_library
from agentchemist.sim.indicators import WATER_RGB, indicator_for, solution_rgb
from agentchemist.sim.scenario import BeakerSpec

__all__ = ["Beaker"]

_CALCIUM = ("calcium_chloride",)
_EDTA = ("edta", "disodium_edta")
_COMPLEXOMETRIC_INDICATOR = "calconcarboxylic_acid"


class Beaker:
    """Liquid in the beaker; amounts in mol, volumes in mL, masses in g."""

    def __init__(self, spec: BeakerSpec, temperature_c: float, activity: bool = True) -> None:
        self.spec = spec
        self.capacity_ml = spec.capacity_ml
        self.volume_ml = spec.volume_ml
        self.temperature_c = temperature_c
        self.activity = activity
        litres = spec.volume_ml / 1000.0
        self.moles: dict[str, float] = {name: conc * litres for name, conc in spec.solution.items()}
        self.indicator = indicator_for(spec.indicator.name) if spec.indicator else None
        if spec.indicator is not None:
            self.moles[spec.indicator.name] = self.moles.get(spec.indicator.name, 0.0) + spec.indicator.conc_M * litres
        self.liquid_mass_g = spec.volume_ml * spec.density_g_ml
        self.overflow_ml = 0.0
        self._cache: OrderedDict[tuple, float] = OrderedDict()
        self._library = default_library()
        self.complexometric = (
            self.indicator is not None
            and self.indicator.name == _COMPLEXOMETRIC_INDICATOR
        )

    # ------------------------------------------------------------------------------------------ liquid
    def add_liquid(self, volume_ml: float, composition: Mapping[str, float], density_g_ml: float = 1.0) -> float:
        """Add liquid of ``composition`` (mol/L); returns the volume that overflowed (mL)."""
        litres = volume_ml / 1000.0
        for name, conc in composition.items():
            self.moles[name] = self.moles.get(name, 0.0) + conc * litres
        self.volume_ml += volume_ml
        self.liquid_mass_g += volume_ml * density_g_ml
        spill = self.volume_ml - self.capacity_ml
        if spill > 0.0:
            keep = self.capacity_ml / self.volume_ml
            for name in self.moles:
                self.moles[name] *= keep
            self.liquid_mass_g *= keep
            self.volume_ml = self.capacity_ml
            self.overflow_ml += spill
            return spill
        return 0.0

    def add_dissolved(self, reagent: str, mol: float, mass_g: float) -> None:
        """Solid that dissolved into the liquid (volume change neglected)."""
        self.moles[reagent] = self.moles.get(reagent, 0.0) + mol
        self.liquid_mass_g += mass_g

    def composition_key(self) -> tuple:
        return (tuple(sorted(self.moles.items())), self.volume_ml, self.temperature_c)

    # ------------------------------------------------------------------------------------------ pH
    def ph(self) -> float:
        """True bulk pH of the beaker (cached by composition)."""
        if self.volume_ml <= 0.0:
            return 7.0  # an empty beaker has no pH; the probe reports itself not immersed
        key = self.composition_key()
        hit = self._cache.get(key)
        if hit is not None:
            self._cache.move_to_end(key)
            return hit
        # Indicators outside the reagent library (phenolphthalein ...) are at 1e-5 M: no pH effect modelled.
        amounts = {k: v for k, v in self.moles.items() if v > 0.0 and k in self._library}
        value = ph_of_mixture(amounts, self.volume_ml / 1000.0, self.temperature_c, activity=self.activity)
        self._cache[key] = value
        if len(self._cache) > 256:
            self._cache.popitem(last=False)
        return value

    # ------------------------------------------------------------------------------------------ colour
    def rgb(self, ph: float) -> tuple[int, int, int]:
        """Colour of the solution at bulk pH ``ph`` (RGB 0-255)."""
        if self.volume_ml <= 0.0:
            return WATER_RGB
        litres = self.volume_ml / 1000.0
        if self.complexometric:
            from agentchemist.chemistry.complexometric import ca_edta_state

            ca = sum(self.moles.get(n, 0.0) for n in _CALCIUM)
            edta = sum(self.moles.get(n, 0.0) for n in _EDTA)
            ind = self.moles.get(_COMPLEXOMETRIC_INDICATOR, 0.0)
            state = ca_edta_state(ca, edta, ind, litres, ph=ph)
            return tuple(int(c) for c in state.rgb)  # type: ignore[return-value]
        if self.indicator is None:
            return WATER_RGB
        conc = self.moles.get(self.indicator.name, 0.0) / litres
        return solution_rgb(self.indicator, conc, ph)

    def hue_deg(self, ph: float) -> float | None:
        """Hue of the complexometric colour (deg), None outside the Ca/EDTA model."""
        if not self.complexometric or self.volume_ml <= 0.0:
            return None
        from agentchemist.chemistry.complexometric import ca_edta_state

        litres = self.volume_ml / 1000.0
        ca = sum(self.moles.get(n, 0.0) for n in _CALCIUM)
        edta = sum(self.moles.get(n, 0.0) for n in _EDTA)
        ind = self.moles.get(_COMPLEXOMETRIC_INDICATOR, 0.0)
        return float(ca_edta_state(ca, edta, ind, litres, ph=ph).hue_deg)
