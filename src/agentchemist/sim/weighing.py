"""Pouring a granular solid from a tilted bottle, and its dissolution with or without stirring.

Pouring. The gripper tilts the bottle at a commanded rate (deg/s); the tilt is clamped to
0..``max_tilt_deg``. Powder reaches the mouth once the tilt passes a threshold that rises as the bottle
empties (``threshold_deg + empty_extra_deg * (1 - fill)``: a fuller bottle pours sooner). Above it the
mass flow grows with the excess tilt as a power 1.5 (the free surface exposes more of the neck, the
way Beverloo-type discharge grows with the effective opening):

    q = flow_g_s * min(excess / 30 deg, 2) ** 1.5 * n_k      (g/s),

where n_k is a log-normal fluctuation (coefficient of variation ``flow_cv``) redrawn every 50 ms slot:
granular flow comes in bursts. Slots are drawn in time order, so the result does not depend on how
the caller chunks time.

Dissolution. Undissolved solid shrinks like a population of equal spheres (surface ~ m^(2/3)) with a
driving force that falls as the solution approaches saturation:

    dm/dt = -(3 m_ref / t_d) (m / m_ref)^(2/3) (1 - c / c_s),

where m_ref is the total solid added and t_d the time to dissolve it completely in an unsaturated
solution (``dissolution_time_stirred_s`` when the vessel is on a running stirrer, else the unstirred
time).
"""

from __future__ import annotations

import math

import numpy as np

from agentchemist.sim.scenario import WeighingSpec

__all__ = ["Dissolver", "SolidBottle"]

SLOT_S = 0.05
TICK_S = 0.01
MAX_TILT_RATE_DEG_S = 90.0


def _tick(t: float) -> int:
    return int(math.floor(t / TICK_S + 1e-9))


def _slot(t: float) -> int:
    """Index of the flow slot holding t (tolerant of round-off: 0.15 s is in slot 3, not 2)."""
    return int(math.floor(t / SLOT_S + 1e-9))


class SolidBottle:
    """A bottle of granular solid held and tilted by a gripper."""

    def __init__(self, spec: WeighingSpec, rng: np.random.Generator) -> None:
        self.spec = spec
        self._rng = rng
        self.content_g = spec.bottle_content_g
        self.tilt_deg = 0.0
        self.tilt_rate_deg_s = 0.0
        self.poured_g = 0.0
        self._slot = -1
        self._slot_factor = 1.0
        self._tick_index = -1
        self._tick_flow = 0.0
        sigma2 = math.log(1.0 + spec.flow_cv**2)
        self._ln_sigma = math.sqrt(sigma2)
        self._ln_mu = -0.5 * sigma2  # mean of the factor is 1

    def set_tilt_rate(self, rate_deg_s: float) -> tuple[float, bool]:
        """Clamp to +-90 deg/s; returns (applied, clamped?)."""
        applied = min(max(rate_deg_s, -MAX_TILT_RATE_DEG_S), MAX_TILT_RATE_DEG_S)
        self.tilt_rate_deg_s = applied
        return applied, applied != rate_deg_s

    @property
    def threshold_deg(self) -> float:
        fill = self.content_g / self.spec.bottle_content_g
        return self.spec.threshold_deg + self.spec.empty_extra_deg * (1.0 - fill)

    @property
    def active(self) -> bool:
        """True while the tilt is changing or the bottle is tilted past its threshold."""
        return self.tilt_rate_deg_s != 0.0 or (self.tilt_deg > self.threshold_deg and self.content_g > 0)

    def flow_g_s(self) -> float:
        """Mean flow at the present tilt (without the burst factor)."""
        excess = self.tilt_deg - self.threshold_deg
        if excess <= 0.0 or self.content_g <= 0.0:
            return 0.0
        return self.spec.flow_g_s * min(excess / 30.0, 2.0) ** 1.5

    def _factor(self, t: float) -> float:
        slot = _slot(t)
        while self._slot < slot:  # draw every slot in order, even skipped ones: chunking-independent
            self._slot += 1
            self._slot_factor = float(np.exp(self._ln_mu + self._ln_sigma * self._rng.standard_normal()))
        return self._slot_factor

    def advance(self, t0: float, t1: float) -> float:
        """Tilt and pour over [t0, t1]; returns grams poured.

        The flow is held constant over fixed 10 ms intervals of absolute time (evaluated when an
        interval is entered), so the result does not depend on how the caller chunks time.
        """
        poured = 0.0
        t = t0
        while t < t1:
            k = _tick(t)
            end = min(t1, (k + 1) * TICK_S)
            dt = end - t
            if dt <= 0.0:
                dt = min(t1 - t, TICK_S)
            if self._tick_index != k:
                self._tick_index = k
                q = self.flow_g_s()
                self._tick_flow = q * self._factor(t) if q > 0.0 else 0.0
            self.tilt_deg = min(max(self.tilt_deg + self.tilt_rate_deg_s * dt, 0.0), self.spec.max_tilt_deg)
            if self._tick_flow > 0.0:
                amount = min(self._tick_flow * dt, self.content_g)
                self.content_g -= amount
                poured += amount
            t += dt
        self.poured_g += poured
        return poured


class Dissolver:
    """Undissolved solid in a vessel and its dissolution."""

    def __init__(self, spec: WeighingSpec, molar_mass_g_mol: float) -> None:
        self.spec = spec
        self.molar_mass = molar_mass_g_mol
        self.solid_g = 0.0
        self.added_g = 0.0
        self.dissolved_g = 0.0
        self.complete_at: float | None = None

    def add_solid(self, grams: float) -> None:
        self.solid_g += grams
        self.added_g += grams
        self.complete_at = None

    @property
    def dissolved_fraction(self) -> float:
        return self.dissolved_g / self.added_g if self.added_g > 0 else 0.0

    def advance(self, t0: float, t1: float, stirred: bool, volume_ml: float) -> float:
        """Dissolve over [t0, t1]; returns grams dissolved. Sub-steps of 50 ms (explicit, stable here)."""
        if self.solid_g <= 0.0 or volume_ml <= 0.0:
            return 0.0
        t_d = self.spec.dissolution_time_stirred_s if stirred else self.spec.dissolution_time_unstirred_s
        cap_g = self.spec.solubility_g_l * volume_ml / 1000.0
        done = 0.0
        t = t0
        while t < t1 and self.solid_g > 0.0:
            dt = min(SLOT_S, t1 - t)
            drive = max(0.0, 1.0 - self.dissolved_g / cap_g)
            m_ref = self.added_g
            # exact for the m^(2/3) law at constant drive: m^(1/3) falls linearly in time
            rate = m_ref ** (1.0 / 3.0) * drive / t_d  # d(m^(1/3))/dt, g^(1/3)/s
            cube = self.solid_g ** (1.0 / 3.0) - rate * dt
            new_solid = cube**3 if cube > 0.0 else 0.0
            if new_solid < 1e-12:
                # the last crystal vanishes inside this sub-step: stamp when
                new_solid = 0.0
                self.complete_at = t + min(self.solid_g ** (1.0 / 3.0) / rate, dt) if rate > 0 else t + dt
            amount = self.solid_g - new_solid
            self.solid_g = new_solid
            self.dissolved_g += amount
            done += amount
            t += dt
        return done
