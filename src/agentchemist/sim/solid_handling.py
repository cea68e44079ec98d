"""The solid bottle in the weighing gripper, the powder it pours and the powder dissolving in the beaker.

``grasp`` / ``release`` say whether the weighing gripper holds the bottle (the ROS node decides from the
arm's poses: sim/workcell_effects.py); ``tilt`` turns it toward a tilt at up to 90 deg/s and stops
exactly there (the twin steps to the arrival as an event), and refuses while it is not held, so powder
pours only from a held bottle. ``set_rate`` sets a tilt rate directly (tests, scripted use) and does not
ask about the grasp. A tilted bottle is not released. Powder lands in the working beaker when it is on
the bench, else it is spilled."""
from __future__ import annotations

import math

import numpy as np

from agentchemist.chemistry.reagents import default_library
from agentchemist.sim.contact_mics import ContactMics
from agentchemist.sim.event_log import EventLog
from agentchemist.sim.labware import Labware
from agentchemist.sim.scenario import Scenario
from agentchemist.sim.types import CommandResult
from agentchemist.sim.vessel import Vessel
from agentchemist.sim.weighing import MAX_TILT_RATE_DEG_S, Dissolver, SolidBottle

__all__ = ["BOTTLE_UPRIGHT_DEG", "SolidHandling"]

#: Below this tilt (deg) the bottle is upright: it may be let go.
BOTTLE_UPRIGHT_DEG = 0.5


class SolidHandling:
    def __init__(self, scenario: Scenario, rng: np.random.Generator, labware: Labware, vessel: Vessel,
                 mics: ContactMics, events: EventLog) -> None:
        self._scenario, self._rng = scenario, rng
        self._labware, self._vessel, self._mics, self._events = labware, vessel, mics, events
        w = scenario.weighing
        self.bottle = SolidBottle(w, rng) if w else None
        self.held = False
        self.tilt_target = 0.0
        self.tilt_arrival = math.inf  # when the tilt reaches tilt_target (inf: not turning toward one)
        self.dissolver = self._fresh_dissolver() if w is not None else None

    def _fresh_dissolver(self) -> Dissolver:
        w = self._scenario.weighing
        assert w is not None
        return Dissolver(w, default_library().get(w.reagent).molar_mass_g_mol)

    def renew(self) -> None:
        """A fresh bottle, back on the bench and let go, and nothing left to dissolve (a new sample)."""
        w = self._scenario.weighing
        assert w is not None
        self.bottle = SolidBottle(w, self._rng)
        self.held, self.tilt_target, self.tilt_arrival = False, 0.0, math.inf
        self.dissolver = self._fresh_dissolver()

    # ---------------------------------------------------------------------------------------- physics
    @property
    def pouring(self) -> bool:
        return self.bottle is not None and self.bottle.active

    @property
    def dissolving(self) -> bool:
        return self.dissolver is not None and self.dissolver.solid_g > 0.0

    def pour_between(self, t0: float, t1: float) -> None:
        """The bottle turns and pours from ``t0`` to ``t1``; what falls goes into the beaker (or spills)."""
        if self.bottle is None:
            return
        grams = self.bottle.advance(t0, t1)
        if grams > 0.0:
            self._receive(grams, t0)
            self._mics.pouring(self._scenario.weighing.held_by, t0)  # type: ignore[union-attr]

    def _receive(self, grams: float, t: float) -> None:
        w = self._scenario.weighing
        if w is None or self.dissolver is None:
            return
        if self._labware.present(w.target):
            self.dissolver.add_solid(grams)
        else:
            self._events.add(t, "solid_spilled", grams=grams)

    def dissolve_between(self, t0: float, t1: float) -> None:
        """Solid in the beaker dissolves from ``t0`` to ``t1`` (faster on a running stirrer)."""
        d, w = self.dissolver, self._scenario.weighing
        if d is None or w is None:
            return
        grams = d.advance(t0, t1, self._vessel.stirred(), self._vessel.beaker.volume_ml)
        if grams > 0.0:
            self._vessel.dissolve(w.reagent, grams / d.molar_mass, grams)
        if d.complete_at is not None and d.solid_g == 0.0:
            self._events.add(d.complete_at, "dissolved", grams=d.added_g)

    def tilt_reached(self) -> None:
        """The bottle has turned to its tilt target: stop there (exactly, not a round-off past it)."""
        self.tilt_arrival = math.inf
        if self.bottle is not None:
            self.bottle.set_tilt_rate(0.0)
            self.bottle.tilt_deg = self.tilt_target

    # ---------------------------------------------------------------------------------------- commands
    def _refusal(self, side: str) -> str:
        """Why ``side`` cannot handle the solid bottle ("" when it can)."""
        w = self._scenario.weighing
        if w is None or self.bottle is None:
            return "this scenario has no solid bottle"
        if side != w.held_by:
            return f"the bottle is handled by the {w.held_by} gripper"
        if not self._labware.present(w.bottle_id):
            return f"{w.bottle_id} is not on the bench"
        return ""

    def set_rate(self, side: str, rate_deg_s: float) -> CommandResult:
        """Tilt the bottle held by ``side`` at a rate (deg/s, + tilts, - returns; +-90 max)."""
        w = self._scenario.weighing
        if w is None or self.bottle is None:
            return CommandResult(0.0, False, False, "this scenario has no solid bottle")
        if side != w.held_by:
            return CommandResult(0.0, False, False, f"the bottle is held by the {w.held_by} gripper")
        if not self._labware.present(w.bottle_id):
            return CommandResult(0.0, False, False, f"{w.bottle_id} is not on the bench")
        self.tilt_arrival = math.inf  # a rate command replaces any tilt target
        applied, clamped = self.bottle.set_tilt_rate(rate_deg_s)
        return CommandResult(applied, clamped, True, "tilt rate clamped to +-90 deg/s" if clamped else "")

    def grasp(self, side: str, t: float) -> CommandResult:
        """The ``side`` gripper has closed on the bottle (accepted_value: held afterwards)."""
        why = self._refusal(side)
        if why:
            return CommandResult(False, False, False, why)
        if not self.held:
            self.held = True
            self._events.add(t, "bottle_grasped", side=side)
        return CommandResult(True)

    def release(self, side: str, t: float) -> CommandResult:
        """The ``side`` gripper lets the bottle go; refused while it is tilted (it would fall and spill).
        accepted_value: whether the bottle is still held afterwards."""
        why = self._refusal(side)
        if why:
            return CommandResult(False, False, False, why)
        assert self.bottle is not None
        if not self.held:
            return CommandResult(False, False, True, "the bottle was not held")
        if self.bottle.tilt_deg > BOTTLE_UPRIGHT_DEG:
            return CommandResult(True, False, False,
                                 f"the bottle is tilted by {self.bottle.tilt_deg:.1f} deg: return it upright first")
        self.held = False
        self.tilt_target, self.tilt_arrival = 0.0, math.inf
        self.bottle.set_tilt_rate(0.0)
        self.bottle.tilt_deg = 0.0
        self._events.add(t, "bottle_released", side=side)
        return CommandResult(False)

    def tilt(self, side: str, target: float, rate: float, t: float) -> CommandResult:
        """Turn the held bottle toward ``target`` deg (clamped to 0..max_tilt_deg) at up to ``rate``
        deg/s from ``t`` and stop there. Refused while the bottle is not held, unless the target is upright."""
        why = self._refusal(side)
        if why:
            return CommandResult(0.0, False, False, why)
        w, bottle = self._scenario.weighing, self.bottle
        assert w is not None and bottle is not None
        clamped_target = min(max(target, 0.0), w.max_tilt_deg)
        if not self.held and clamped_target > 0.0:
            return CommandResult(bottle.tilt_deg, False, False, "the bottle is not held: it cannot be tilted")
        rate = min(rate, MAX_TILT_RATE_DEG_S)
        self.tilt_target = clamped_target
        distance = clamped_target - bottle.tilt_deg
        if abs(distance) <= 1e-9 or rate == 0.0:
            bottle.set_tilt_rate(0.0)
            self.tilt_arrival = math.inf
            if abs(distance) <= 1e-9:
                bottle.tilt_deg = clamped_target
        else:
            bottle.set_tilt_rate(math.copysign(rate, distance))
            self.tilt_arrival = t + abs(distance) / rate
        return CommandResult(clamped_target, clamped_target != target, True,
                             f"tilt clamped to 0..{w.max_tilt_deg:g} deg" if clamped_target != target else "")
