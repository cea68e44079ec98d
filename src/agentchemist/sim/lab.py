"""LabTwin: the lab digital twin the ROS node ``lab_sim`` drives (chemistry, instruments, robot, faults).

Time. Every method takes ``now`` (s of sim time); the twin never reads a clock. ``step(now)`` advances
all physics to ``now``; commands and readings step to their ``now`` first. A ``now`` earlier than the
twin's time is applied at the twin's time (late commands are not replayed into the past).

Stepping is event driven: between events (a drop pinching off or landing, a fault starting or ending,
the solid bottle reaching its tilt) every model has a closed form (probe cascade, balance settling, arm
and gripper follow), so an idle twin jumps straight to ``now``. While the pipette's gripper moves, or a
bottle pours, or solid dissolves, the twin sub-steps at <= 10 ms (pipette) / 50 ms (pouring, dissolution).

The bench's parts and the read-outs that do not advance time are :class:`~agentchemist.sim.lab_state.LabState`'s
(see its module for which part lives where: grasping and where drops go in sim/pipette_hand.py, the solid
bottle in sim/solid_handling.py, faults in sim/fault_effects.py); this class is the clock that steps them
together and the commands and readings, each stepping to its ``now`` and handing over to its part.

Determinism: one numpy Generator per subsystem, spawned from the scenario seed in a fixed order; the
same seed and the same call sequence give bit-identical readings, audio and images.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from agentchemist.chemistry.reagents import UnknownReagentError, default_library
from agentchemist.sim.contact_mics import WHINE_MIN_SPEED_M_S
from agentchemist.sim.errors import SimCommandError, finite_number
from agentchemist.sim.lab_state import LabState
from agentchemist.sim.pipette_hand import BEAKER_HALF_WIDTH_FRACTION
from agentchemist.sim.robot import check_side
from agentchemist.sim.solid_handling import BOTTLE_UPRIGHT_DEG
from agentchemist.sim.types import CommandResult, Reading
from agentchemist.sim.weighing import MAX_TILT_RATE_DEG_S

# The drop, whine and upright limits are defined with the part they belong to; callers import them from here.
__all__ = ["BEAKER_HALF_WIDTH_FRACTION", "BOTTLE_UPRIGHT_DEG", "LabTwin", "PIPETTE_SUBSTEP_S", "SLOW_SUBSTEP_S",
           "WHINE_MIN_SPEED_M_S"]

PIPETTE_SUBSTEP_S = 0.01
SLOW_SUBSTEP_S = 0.05


def _next_grid(t: float, dt: float) -> float:
    """The first multiple of ``dt`` strictly after ``t`` (tolerant of float round-off at grid points)."""
    k = math.floor(t / dt + 1e-9) + 1
    return k * dt


class LabTwin(LabState):
    """The bench of one scenario; see the module docstring."""

    # ============================================================================================ time
    def step(self, now: float) -> None:
        """Advance every model to ``now`` (s of sim time); earlier times are ignored."""
        now = finite_number(now, "now")
        if now <= self.t:
            return
        stalls = 0
        holder = self.grippers[self.scenario.pipette.held_by]
        hand, faults, solid = self._hand, self._faults, self._solid
        while self.t < now:
            t0 = self.t
            t1 = now
            ft = faults.next_time()
            if ft < t1:
                t1 = ft
            if solid.tilt_arrival < t1:
                t1 = max(solid.tilt_arrival, t0)
            if hand.next_landing() < t1:
                t1 = hand.next_landing()
            nd = hand.pipette.next_detach_time()
            if nd is not None and nd < t1:
                t1 = nd
            if t1 < t0:
                t1 = t0
            # Sub-steps sit on a fixed grid of absolute times, so the result does not depend on how
            # the caller chunks time (only the bulb's in-step interpolation could notice).
            if holder.position_m != holder.command_m and not holder.stalled:
                t1 = min(t1, _next_grid(t0, PIPETTE_SUBSTEP_S))  # squeezing, grasping or releasing
            pouring, dissolving = solid.pouring, solid.dissolving
            if pouring or dissolving:
                t1 = min(t1, _next_grid(t0, SLOW_SUBSTEP_S))
            self._advance_segment(t0, t1, pouring, dissolving)
            self.t = t1
            if t1 >= solid.tilt_arrival:
                solid.tilt_reached()
            self._handle_events(t1)
            stalls = stalls + 1 if t1 == t0 else 0
            if stalls > 1000:  # every event at t0 is consumed when handled; this cannot happen
                raise RuntimeError(f"LabTwin.step made no progress at t={t0}")
        self._settle(now)

    def _advance_segment(self, t0: float, t1: float, pouring: bool, dissolving: bool) -> None:
        """The continuous models from ``t0`` to ``t1``, with no event in between."""
        if t1 - t0 <= 0.0:
            return
        x0 = self._hand.opening_mm()
        self._robot.advance_grippers(t1 - t0)
        self._hand.follow_gripper(t0, t1, x0)
        if pouring:
            self._solid.pour_between(t0, t1)
        if dissolving:
            self._solid.dissolve_between(t0, t1)
        if pouring:
            self._pan.update(t1)

    def _handle_events(self, t: float) -> None:
        """Drops that detach or land by ``t``, then faults that start or end by then, in that order."""
        if not self._hand.due(t) and self._faults.next_time() > t:
            return  # fast path: nothing happens at t
        self._hand.release_until(t)
        self._fault_effects.apply_due(t)
        self._hand.note_failed()

    def _settle(self, now: float) -> None:
        """Bring the closed-form models to ``now`` (and recompute the pH if the composition changed)."""
        self._vessel.refresh_ph(now)
        # The probe is advanced lazily (closed form): when read, drawn, or before its inputs change.
        self.balance.advance(now)
        self._robot.settle_arms(now)

    # ============================================================================================ faults
    def inject_fault(self, kind: str, now: float, duration_s: float = 0.0, **params: Any) -> None:
        """Start a fault at ``now`` (validated like a scenario fault; see :mod:`agentchemist.sim.faults`)."""
        self.step(now)
        self._fault_effects.schedule(kind, self.t, duration_s, params)
        self._handle_events(self.t)

    # ============================================================================================ commands
    def command_gripper(self, side: str, opening_m: float, now: float) -> CommandResult:
        """Command a gripper opening (m, 0..0.070); out-of-range values are clamped and reported."""
        check_side(side)
        self.step(now)
        applied, clamped, reason = self._robot.command_gripper(side, opening_m)
        self._mics.whine(side, self.grippers[side], self.t)
        return CommandResult(applied, clamped, True, reason)

    def command_arm(self, side: str, positions_rad: Sequence[float], now: float) -> CommandResult:
        """Command six joint positions (rad); each is clamped to the Piper limits and reported."""
        check_side(side)
        self.step(now)
        applied, clamped, reason = self._robot.command_arm(side, positions_rad)
        return CommandResult(list(applied), clamped, True, reason)

    def draw(self, reagent: str, volume_ml: float, now: float) -> CommandResult:
        """Fill the held pipette with ``volume_ml`` of a titrant reagent (clamped to the free capacity)."""
        vol = finite_number(volume_ml, "volume_ml")
        if vol < 0:
            raise SimCommandError(f"volume_ml must be >= 0, got {volume_ml}")
        try:
            name = default_library().get(reagent).name
        except UnknownReagentError as exc:
            raise SimCommandError(str(exc)) from None
        self.step(now)
        return self._hand.draw(name, vol, self.t)

    def new_sample(self, now: float) -> CommandResult:
        """Set the bench up again for the next experiment, as a technician would between runs: the
        finished beaker is replaced by a fresh one of the scenario's sample (the probe moves into it and
        follows with its own time constant), the used pipette by a clean one where the scenario puts it
        (taken out of the gripper, which is opened), and moved labware goes back to its place. Time, the
        clock and the whole truth log carry on, so long runs are experiments back to back on one bench.

        (A clean pipette, not the used one: the twin's arm poses do not carry the pipette to the bottle,
        so squeezing out a used pipette's leftover titrant "over the bottle" would land in the beaker.)"""
        self.step(now)
        if self._hand.falling:
            return CommandResult(0.0, False, False, "drops are still falling into the beaker")
        self._labware.restore_all()
        self._hand.replace_pipette()
        ph = self._vessel.renew(now, self.t)
        if self.scenario.weighing is not None:  # a fresh bottle (back on the bench) and nothing left to dissolve
            self._solid.renew()
            self._pan.reload()
        self.samples += 1
        self._events.add(self.t, "new_sample", sample=self.samples, ph=ph, volume_ml=self.beaker.volume_ml)
        return CommandResult(self.beaker.volume_ml, False, True, "")

    def pour(self, side: str, tilt_rate_deg_s: float, now: float) -> CommandResult:
        """Tilt the solid bottle held by ``side`` at a rate (deg/s, + tilts, - returns; +-90 max)."""
        check_side(side)
        rate = finite_number(tilt_rate_deg_s, "tilt_rate_deg_s")
        self.step(now)
        return self._solid.set_rate(side, rate)

    def grasp_bottle(self, side: str, now: float) -> CommandResult:
        """The ``side`` gripper has closed on the solid bottle (accepted_value: held afterwards)."""
        check_side(side)
        self.step(now)
        return self._solid.grasp(side, self.t)

    def release_bottle(self, side: str, now: float) -> CommandResult:
        """The ``side`` gripper lets the bottle go; refused while it is tilted (it would fall and spill).
        accepted_value: whether the bottle is still held afterwards."""
        check_side(side)
        self.step(now)
        return self._solid.release(side, self.t)

    def tilt_bottle(self, side: str, tilt_deg: float, now: float,
                    max_rate_deg_s: float = MAX_TILT_RATE_DEG_S) -> CommandResult:
        """Turn the held bottle toward ``tilt_deg`` (0 = upright) at up to ``max_rate_deg_s`` and stop
        there: the wrist's tilt, which the bottle follows as fast as the gripper can turn it. The target
        is clamped to 0..max_tilt_deg. Refused (nothing changes) while the bottle is not held, unless
        the target is upright."""
        check_side(side)
        target = finite_number(tilt_deg, "tilt_deg")
        rate = abs(finite_number(max_rate_deg_s, "max_rate_deg_s"))
        self.step(now)
        return self._solid.tilt(side, target, rate, self.t)

    def set_stirrer(self, on: bool, now: float) -> CommandResult:
        self.step(now)
        self._vessel.set_stirrer(on, self.t)
        self._events.add(self.t, "stirrer_on" if on else "stirrer_off")
        return CommandResult(bool(on))

    def tare_balance(self, now: float) -> CommandResult:
        self.step(now)
        return self._pan.tare()

    def move_labware(self, item_id: str, now: float, position: tuple[float, float] | None = None,
                     on: str | None = None) -> CommandResult:
        """Pick-and-place of an item (kinematic): new image position and/or what it stands on."""
        items = self._labware.items
        if item_id not in items:
            raise SimCommandError(f"no labware item {item_id!r} (known: {sorted(items)})")
        if on is not None and on not in items:
            raise SimCommandError(f"cannot place {item_id} on unknown item {on!r}")
        self.step(now)
        self._vessel.sync_probe(self.t)  # where the beaker stands sets the probe's mixing
        item = items[item_id]
        if not item.present:
            return CommandResult(None, False, False, f"{item_id} is not on the bench")
        self._labware.move(item, position, on)
        self._events.add(self.t, "moved", id=item_id, on=item.on, position=list(item.position))
        self._pan.update(self.t)
        return CommandResult(list(item.position))

    # ============================================================================================ readings
    def read_ph(self, now: float) -> Reading | None:
        """The pH meter's reading at ``now``; None during a dropout or with no probe/meter."""
        self.step(now)
        return self._vessel.read_ph(self.t)

    def read_temperature(self, now: float) -> Reading | None:
        self.step(now)
        return self._vessel.read_temperature(self.t)

    def read_balance(self, now: float) -> Reading | None:
        self.step(now)
        return self._pan.read(self.t)

    def render_camera(self, name: str, now: float) -> np.ndarray:
        """RGB uint8 image (H x W x 3) of camera ``name`` ("front", "left_wrist", "right_wrist")."""
        from agentchemist.sim.camera import CAMERA_NAMES, BenchRenderer

        if name not in CAMERA_NAMES:
            raise SimCommandError(f"unknown camera {name!r}; expected one of {CAMERA_NAMES}")
        self.step(now)
        if self._renderer is None:
            self._renderer = BenchRenderer(self.scenario.cameras, self._rng_camera)
        return self._renderer.render(name, self.scene_state())
