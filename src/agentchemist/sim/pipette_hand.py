"""The dropping pipette in its gripper: grasping it, squeezing it, drawing titrant, and where its drops go.

Grasping. Until a physics backend gives the arms real kinematics, closing the pipette's gripper
(``pipette.held_by``) to within ``grasp_tolerance_mm`` of the bulb's contact opening counts as grasping
the pipette, and opening it past that releases it. While held, the gripper's closing squeezes the bulb.

Where the drops go is decided by where the pipette is: its layout item's ``on``. Drops land in the
beaker when the pipette hangs over it (``on`` names the beaker and the beaker is within half a beaker
width in the front image), go back into a reagent bottle when it is over one (emptying before a
refill), and otherwise spill on the bench. A drop falling into the beaker stays an object until it
lands; every drop is kept in the compact drop log for the truth."""
from __future__ import annotations

import numpy as np

from agentchemist.sim.audio import AudioEventTruth
from agentchemist.sim.balance_pan import BalancePan
from agentchemist.sim.contact_mics import ContactMics
from agentchemist.sim.event_log import EventLog
from agentchemist.sim.labware import Labware
from agentchemist.sim.pipette import Drop, RubberBulbPipette
from agentchemist.sim.robot_state import RobotState
from agentchemist.sim.scenario import Scenario
from agentchemist.sim.truth_log import DropLog
from agentchemist.sim.types import CommandResult
from agentchemist.sim.vessel import Vessel

__all__ = ["BEAKER_HALF_WIDTH_FRACTION", "PipetteHand"]

BEAKER_HALF_WIDTH_FRACTION = 0.09  # of the image width: the drop misses a beaker displaced further


class PipetteHand:
    def __init__(self, scenario: Scenario, rng: np.random.Generator, robot: RobotState, labware: Labware,
                 vessel: Vessel, mics: ContactMics, pan: BalancePan, events: EventLog) -> None:
        sp = scenario.pipette
        self._scenario, self._rng = scenario, rng
        self._labware, self._vessel, self._mics, self._pan, self._events = labware, vessel, mics, pan, events
        self._holder = robot.grippers[sp.held_by]
        self.pipette = self._fresh_pipette()
        self.held = False
        if sp.grasped and labware.present(sp.id):
            self._holder.command_m = self._holder.position_m = sp.contact_opening_mm / 1000.0
            self.held = True
        self.falling: list[Drop] = []  # in landing order
        # Every drop of the whole run (all samples), compact: long runs keep them all.
        self.log = DropLog()

    def _fresh_pipette(self) -> RubberBulbPipette:
        sp = self._scenario.pipette
        pipette = RubberBulbPipette(sp, self._rng)
        if sp.drawn_ml > 0 and sp.drawn_reagent is not None:
            pipette.composition = self.titrant_composition(sp.drawn_reagent)
        return pipette

    def replace_pipette(self) -> None:
        """A clean pipette where the scenario puts it, out of the gripper, which is opened (a new sample)."""
        self.pipette = self._fresh_pipette()
        self.held = False
        self._holder.command_m = self._holder.position_m = self._scenario.robot.initial_gripper_opening_m

    def titrant_composition(self, reagent: str) -> dict[str, float]:
        titrant = self._scenario.titrant
        return dict(titrant) if reagent in titrant else {}

    # ---------------------------------------------------------------------------------------- the bulb
    def opening_mm(self) -> float:
        """The holding gripper's opening (mm)."""
        return self._holder.position_m * 1000.0

    def follow_gripper(self, t0: float, t1: float, x0: float) -> None:
        """The holding gripper went from ``x0`` mm at ``t0`` to where it is now at ``t1``: squeeze the bulb
        while it is held, grasp it when the jaws reach it in between, release it when they open past it."""
        sp = self._scenario.pipette
        x1 = self.opening_mm()
        grip_limit = sp.contact_opening_mm + sp.grasp_tolerance_mm
        if self.held:
            if x1 != x0:
                self.pipette.squeeze(t0, sp.contact_opening_mm - x0, t1, sp.contact_opening_mm - x1)
            if x1 > grip_limit:
                self.held = False
                self._events.add(t1, "pipette_released", side=sp.held_by)
        elif x0 > grip_limit >= x1 and self._labware.present(sp.id):
            # the jaws reach the bulb inside this segment: grasp there and squeeze from that moment
            t_c = t0 + (t1 - t0) * (x0 - grip_limit) / (x0 - x1)
            self.held = True
            self._events.add(t_c, "pipette_grasped", side=sp.held_by)
            self.pipette.squeeze(t_c, sp.contact_opening_mm - grip_limit, t1, sp.contact_opening_mm - x1)

    def draw(self, name: str, volume_ml: float, t: float) -> CommandResult:
        """Fill the held pipette with ``volume_ml`` of titrant ``name`` at ``t`` (clamped to the free capacity)."""
        sp = self._scenario.pipette
        if not self._labware.present(sp.id):
            return CommandResult(0.0, False, False, "the pipette is not on the bench")
        if not self.held:
            return CommandResult(0.0, False, False, f"the pipette is not grasped by the {sp.held_by} gripper")
        if name not in self._scenario.titrant:
            return CommandResult(0.0, False, False,
                                 f"no {name} reservoir on the bench (titrant: {sorted(self._scenario.titrant)})")
        if "titrant_bottle" in self._labware.items and not self._labware.present("titrant_bottle"):
            return CommandResult(0.0, False, False, "the titrant bottle is missing")
        if self.pipette.content_ml > 1e-9 and self.pipette.reagent not in (None, name):
            return CommandResult(0.0, False, False, f"the pipette still holds {self.pipette.reagent}; empty it first")
        depth = self.pipette.depth_mm(self._holder.position_m)
        got = self.pipette.fill(name, self.titrant_composition(name), volume_ml, depth)
        clamped = got < volume_ml - 1e-12
        self._events.add(t, "draw", reagent=name, volume_ml=got)
        reason = f"limited to the free capacity ({got:.3f} mL)" if clamped else ""
        return CommandResult(got, clamped, True, reason)

    # ---------------------------------------------------------------------------------------- drops
    def next_landing(self) -> float:
        return self.falling[0].land_time if self.falling else float("inf")

    def due(self, t: float) -> bool:
        """Something happens to a drop at or before ``t`` (one detaches, lands, or failed to fall)."""
        nd = self.pipette.next_detach_time()
        return not ((nd is None or nd > t) and self.next_landing() > t and not self.pipette.failed_events)

    def release_until(self, t: float) -> None:
        """Drops that detach by ``t`` leave the tip; drops that land by ``t`` land, in time order."""
        for drop in self.pipette.detach_until(t):
            self.detach(drop)
        while self.falling and self.falling[0].land_time <= t:
            self._land(self.falling.pop(0))

    def note_failed(self) -> None:
        """Log the drops that clung to the tip (a drop_fails fault)."""
        for when in self.pipette.failed_events:
            self._events.add(when, "drop_failed", note="drop clung to the tip")
        self.pipette.failed_events.clear()

    def leak(self, t: float, volume_ml: float | None) -> None:
        """A drop falls unbidden at ``t`` (an extra_drop fault), if the pipette is held and has liquid."""
        drop = self.pipette.leak_drop(t, volume_ml) if self.held else None
        if drop is None:
            self._events.add(t, "extra_drop_no_liquid", note="pipette not held or empty")
        else:
            self.detach(drop)

    def vanish(self, t: float) -> None:
        """The pipette is gone from the bench (a labware_missing fault): gone from the gripper too."""
        if self.held:
            self.held = False
            self._events.add(t, "pipette_released", side=self._scenario.pipette.held_by, note="pipette vanished")

    def _over_beaker(self) -> bool:
        sc = self._scenario
        items = self._labware.items
        pip, beaker = items.get(sc.pipette.id), items[sc.beaker.id]
        if pip is None or not (pip.present and beaker.present and pip.on == sc.beaker.id):
            return False
        return abs(pip.position[0] - beaker.position[0]) <= BEAKER_HALF_WIDTH_FRACTION * sc.cameras.width

    def detach(self, drop: Drop) -> None:
        items = self._labware.items
        pip = items.get(self._scenario.pipette.id)
        over = items.get(pip.on) if pip is not None and pip.on else None
        if over is not None and over.present and over.kind == "reagent_bottle":
            drop.fate = "returned"  # squeezed out over the reservoir (emptying before a refill)
            self.log.add(drop)
            return
        drop.fate = "falling" if self._over_beaker() else "spilled"
        # Only a falling drop stays an object (until it lands: its composition goes into the beaker).
        drop.log_row = self.log.add(drop)
        if drop.fate == "falling":
            self.falling.append(drop)
            self.falling.sort(key=lambda d: d.land_time)
            self._mics.schedule(self._scenario.pipette.held_by,
                                AudioEventTruth(drop.land_time, "droplet", 0.0, f"drop {drop.index}"))
        else:
            self._events.add(drop.detach_time, "spill", drop=drop.index, volume_ml=drop.volume_ml)

    def _land(self, drop: Drop) -> None:
        spill = self._vessel.add_drop(drop.volume_ml, drop.composition, drop.land_time)
        drop.fate = "beaker"
        if spill > 0.0:
            drop.fate = "overflow"
            self._events.add(drop.land_time, "overflow", drop=drop.index, spilled_ml=spill,
                             total_overflow_ml=self._vessel.beaker.overflow_ml)
        self.log.set_fate(drop.log_row, drop.fate)
        self._pan.update(drop.land_time)
        self._vessel.refresh_ph(drop.land_time)
