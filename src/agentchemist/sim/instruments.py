"""pH probe (with the stirrer's mixing) and balance of the lab twin.

pH probe. The bulk solution's pH changes in steps when a drop lands. The liquid at the electrode
follows with the stirrer's mixing time constant a (first-order lag, in pH), and the electrode follows
that with its own response time constant b (the paper's probe: about 2 s). For a constant bulk pH x the
cascade has the closed form

    m(t) = x + (m0 - x) e^(-t/a)
    y(t) = x + (y0 - x) e^(-t/b) + (m0 - x) a / (a - b) (e^(-t/a) - e^(-t/b))

(a -> b limit: (m0 - x) (t/a) e^(-t/a)), so the probe is exact for any step length and needs no
sub-stepping between drops. The reading scales the pH about 7 by the electrode's slope (per cent of
Nernst) and adds the electrode's offset, a linear drift (pH per hour since t = 0) and Gaussian noise drawn
at read time: what a meter computing pH with an ideal electrode shows, before the calibration corrects it.

Balance. The display follows the load with a first-order settling lag, adds noise, subtracts the tare
and rounds to the readability (0.01 g by default). Above capacity it shows the capacity and fails its
self-check ("overload").
"""

from __future__ import annotations

import math

import numpy as np

from agentchemist.sim.scenario import BalanceSpec, ProbeSpec

__all__ = ["Balance", "PhProbe"]


class PhProbe:
    """Electrode state: pH of the liquid at the junction (``mixed``) and the electrode's (``sensed``)."""

    def __init__(self, spec: ProbeSpec, initial_ph: float, rng: np.random.Generator) -> None:
        self.spec = spec
        self._rng = rng
        self.bulk = initial_ph
        self.mixed = initial_ph
        self.sensed = initial_ph
        self.t = 0.0

    @property
    def moving(self) -> bool:
        """False once the electrode has converged on the bulk pH (advancing is then a no-op)."""
        return self.mixed != self.bulk or self.sensed != self.bulk

    def advance(self, t: float, mixing_tau_s: float) -> None:
        """Follow the present bulk pH from ``self.t`` to ``t`` (closed form)."""
        dt = t - self.t
        if dt <= 0.0:
            return
        self.t = t
        x, a, b = self.bulk, mixing_tau_s, self.spec.tau_s
        w0, u0 = self.mixed - x, self.sensed - x
        if w0 == 0.0 and u0 == 0.0:
            return
        ea, eb = math.exp(-dt / a), math.exp(-dt / b)
        if abs(a - b) < 1e-9 * max(a, b):
            cross = w0 * (dt / a) * ea
        else:
            cross = w0 * a / (a - b) * (ea - eb)
        self.mixed = x + w0 * ea
        self.sensed = x + u0 * eb + cross
        # Snap when converged below any meaningful resolution so later advances are free.
        if abs(self.mixed - x) < 1e-12 and abs(self.sensed - x) < 1e-12:
            self.mixed = self.sensed = x

    def set_bulk(self, ph: float) -> None:
        """The bulk pH after a composition change (call after advancing to the change's time)."""
        self.bulk = ph

    def indicated(self, t: float) -> float:
        """What the meter shows without noise, computed as for an ideal electrode: the electrode's pH with its
        slope (about pH 7), offset and drift (pH)."""
        return self.in_buffer(self.sensed, t)

    def in_buffer(self, ph: float, t: float) -> float:
        """What the meter shows (no noise) with the electrode in a solution of pH `ph` at time `t`."""
        s = self.spec
        return 7.0 + (ph - 7.0) * s.slope_pct / 100.0 + s.offset + s.drift_per_h * t / 3600.0

    def sample_noise(self) -> float:
        return self.spec.noise_sd * float(self._rng.standard_normal()) if self.spec.noise_sd > 0 else 0.0

    def sample_temperature(self, true_c: float) -> float:
        sd = self.spec.temperature_noise_sd
        return true_c + (sd * float(self._rng.standard_normal()) if sd > 0 else 0.0)


class Balance:
    """Load (g) on the pan, the settling display and the tare."""

    def __init__(self, spec: BalanceSpec, initial_load_g: float, rng: np.random.Generator) -> None:
        self.spec = spec
        self._rng = rng
        self.load_g = initial_load_g
        self.display_g = initial_load_g
        self.tare_g = 0.0
        self.t = 0.0

    def advance(self, t: float) -> None:
        dt = t - self.t
        if dt <= 0.0:
            return
        self.t = t
        if self.display_g == self.load_g:
            return
        e = self.display_g - self.load_g
        if e != 0.0:
            e *= math.exp(-dt / self.spec.settle_tau_s)
            self.display_g = self.load_g + (e if abs(e) > 1e-9 else 0.0)

    def set_load(self, load_g: float) -> None:
        self.load_g = load_g

    def tare(self) -> float:
        """Zero the display on the present (settled) load; returns the tare (g)."""
        self.tare_g = self.display_g
        return self.tare_g

    @property
    def overloaded(self) -> bool:
        return self.load_g > self.spec.capacity_g

    def reading(self) -> float:
        """Displayed value (g): settled load + noise - tare, rounded to the readability."""
        s = self.spec
        raw = min(self.display_g, s.capacity_g)
        if s.noise_sd_g > 0:
            raw += s.noise_sd_g * float(self._rng.standard_normal())
        value = round((raw - self.tare_g) / s.resolution_g) * s.resolution_g
        return round(value, max(0, -math.floor(math.log10(s.resolution_g)) + 1))
