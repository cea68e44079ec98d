"""LabTwin: the lab digital twin the ROS node ``lab_sim`` drives (chemistry, instruments, robot, faults).

Time. Every method takes ``now`` (s of sim time); the twin never reads a clock. ``step(now)`` advances
all physics to ``now``; commands and readings step to their ``now`` first. A ``now`` earlier than the
twin's time is applied at the twin's time (late commands are not replayed into the past).

Stepping is event driven: between events (a drop pinching off or landing, a fault starting or ending)
every model has a closed form (probe cascade, balance settling, arm and gripper follow), so an idle
twin jumps straight to ``now``. While the pipette's gripper moves, or a bottle pours, or solid
dissolves, the twin sub-steps at <= 10 ms (pipette) / 50 ms (pouring, dissolution).

Grasping. Until a physics backend gives the arms real kinematics, closing the pipette's gripper
(``pipette.held_by``) to within ``grasp_tolerance_mm`` of the bulb's contact opening counts as grasping
the pipette, and opening it past that releases it. Where the pipette is, is its layout item's ``on``:
drops land in the beaker when the pipette hangs over it (``on`` names the beaker and the beaker is
within half a beaker width in the front image), go back into a reagent bottle when it is over one
(``move_labware("pipette", now, on="titrant_bottle")`` before squeezing it out to refill), and
otherwise spill on the bench.

The solid bottle. ``grasp_bottle`` / ``release_bottle`` say whether the weighing gripper holds it (the
ROS node decides from the arm's poses: sim/workcell_effects.py); ``tilt_bottle`` turns it toward a tilt
at up to 90 deg/s and stops exactly there (an event in ``step``), and refuses while it is not held, so
powder pours only from a held bottle. ``pour`` sets a tilt rate directly (tests, scripted use) and does
not ask about the grasp. A tilted bottle is not released.

Determinism: one numpy Generator per subsystem, spawned from the scenario seed in a fixed order; the
same seed and the same call sequence give bit-identical readings, audio and images.
"""

from __future__ import annotations

import math
from dataclasses import asdict, replace
from typing import Any, Sequence

import numpy as np
from pydantic import ValidationError

from agentchemist.workcell.tags import default_marker_id
from agentchemist.chemistry.reagents import UnknownReagentError, default_library
from agentchemist.sim.audio import AudioEventTruth, AudioSynthError, ContactAudioConfig, ContactAudioSynth
from agentchemist.sim.beaker import Beaker
from agentchemist.sim.errors import SimCommandError, finite_number
from agentchemist.sim.faults import ActiveFault, FaultBook
from agentchemist.sim.instruments import Balance, PhProbe
from agentchemist.sim.pipette import Drop, RubberBulbPipette
from agentchemist.sim.robot import JOINT_NAMES, SIDES, Arm, Gripper, check_side
from agentchemist.sim.scenario import FaultSpec, Scenario, ScenarioError, _format_errors
from agentchemist.sim.truth_log import DropLog, TimeSeries
from agentchemist.sim.types import CommandResult, LabwareItem, Reading
from agentchemist.sim.weighing import MAX_TILT_RATE_DEG_S, Dissolver, SolidBottle

__all__ = ["LabTwin", "PIPETTE_SUBSTEP_S", "SLOW_SUBSTEP_S", "WHINE_MIN_SPEED_M_S"]

PIPETTE_SUBSTEP_S = 0.01
SLOW_SUBSTEP_S = 0.05
#: Gripper moves slower than this (m/s) are too quiet to hear (the dispenser's creep while squeezing).
WHINE_MIN_SPEED_M_S = 0.005
POUR_AUDIO_SEGMENT_S = 0.25
BEAKER_HALF_WIDTH_FRACTION = 0.09  # of the image width: the drop misses a beaker displaced further
#: Below this tilt (deg) the bottle is upright: it may be let go.
BOTTLE_UPRIGHT_DEG = 0.5


def _next_grid(t: float, dt: float) -> float:
    """The first multiple of ``dt`` strictly after ``t`` (tolerant of float round-off at grid points)."""
    k = math.floor(t / dt + 1e-9) + 1
    return k * dt


class LabTwin:
    """The bench of one scenario; see the module docstring."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = sc = scenario
        seeds = np.random.SeedSequence(sc.seed).spawn(6)
        self._rng_pipette, self._rng_probe, self._rng_balance, self._rng_pour, self._rng_camera, _ = (
            np.random.default_rng(s) for s in seeds
        )
        self.t = 0.0
        self._arm_t = 0.0
        # labware
        self._items: dict[str, LabwareItem] = {}
        for spec in sc.all_items():
            self._items[spec.id] = LabwareItem(
                id=spec.id, kind=spec.kind, present=spec.present, position=tuple(spec.position), on=spec.on,
                marker_id=spec.marker_id if spec.marker_id is not None else default_marker_id(spec.id),
                label=spec.label, capacity_ml=spec.capacity_ml, mass_g=spec.mass_g,
            )
        self._home = {k: (v.present, v.position, v.on) for k, v in self._items.items()}
        # robot
        rb = sc.robot
        self.grippers = {s: Gripper(rb.initial_gripper_opening_m, rb.initial_gripper_opening_m,
                                    rb.gripper_tau_s, rb.gripper_max_speed_m_s) for s in SIDES}
        self._gripper_list = list(self.grippers.values())
        self._holder = self.grippers[sc.pipette.held_by]
        self.arms = {s: Arm(list(rb.initial_arm_rad), list(rb.initial_arm_rad), rb.arm_tau_s) for s in SIDES}
        # chemistry and instruments
        self.stirrer_on = sc.stirrer.on
        self.beaker = Beaker(sc.beaker, sc.probe.temperature_c, activity=sc.probe.activity)
        self.pipette = RubberBulbPipette(sc.pipette, self._rng_pipette)
        if sc.pipette.drawn_ml > 0 and sc.pipette.drawn_reagent is not None:
            self.pipette.composition = self._titrant_composition(sc.pipette.drawn_reagent)
        self._held = False
        if sc.pipette.grasped and self._present(sc.pipette.id):
            holder = self.grippers[sc.pipette.held_by]
            holder.command_m = holder.position_m = sc.pipette.contact_opening_mm / 1000.0
            self._held = True
        self.probe = PhProbe(sc.probe, self.beaker.ph(), self._rng_probe)
        self.balance = Balance(sc.balance, 0.0, self._rng_balance)
        self.bottle = SolidBottle(sc.weighing, self._rng_pour) if sc.weighing else None
        self._bottle_held = False
        self._tilt_target = 0.0
        self._tilt_arrival = math.inf  # when the tilt reaches _tilt_target (inf: not turning toward one)
        self.dissolver = None
        if sc.weighing is not None:
            self.dissolver = Dissolver(sc.weighing, default_library().get(sc.weighing.reagent).molar_mass_g_mol)
        self.balance.load_g = self.balance.display_g = self._balance_load()
        # audio: one contact microphone per gripper
        self._synth = {}
        for i, side in enumerate(SIDES):
            seed = int(np.random.SeedSequence([sc.seed, 0xA0D10, i]).generate_state(1)[0])
            cfg = ContactAudioConfig(sample_rate=sc.audio.sample_rate, snr_db=sc.audio.snr_db,
                                     stirrer_on=sc.stirrer.on, seed=seed, **sc.audio.synth)
            self._synth[side] = ContactAudioSynth(cfg)
        self._whine_end = {s: -math.inf for s in SIDES}
        self._pour_audio_end = -math.inf
        # truth
        self._falling: list[Drop] = []
        # Every drop and true-pH change of the whole run (all samples), compact: long runs keep them all.
        self._drops = DropLog()
        self._events: list[dict[str, Any]] = []
        self._ph_history = TimeSeries()
        self._ph_history.append(0.0, self.probe.bulk)
        self._dirty = False
        self._faults = FaultBook(list(sc.faults))
        self._renderer = None
        self.samples = 1  # samples put on the bench so far (see new_sample)

    # ============================================================================================ time
    def step(self, now: float) -> None:
        """Advance every model to ``now`` (s of sim time); earlier times are ignored."""
        now = finite_number(now, "now")
        if now <= self.t:
            return
        stalls = 0
        holder = self._holder
        pipette, faults, bottle, dissolver = self.pipette, self._faults, self.bottle, self.dissolver
        while self.t < now:
            t0 = self.t
            t1 = now
            ft = faults.next_time()
            if ft < t1:
                t1 = ft
            if self._tilt_arrival < t1:
                t1 = max(self._tilt_arrival, t0)
            if self._falling and self._falling[0].land_time < t1:
                t1 = self._falling[0].land_time
            nd = pipette.next_detach_time()
            if nd is not None and nd < t1:
                t1 = nd
            if t1 < t0:
                t1 = t0
            # Sub-steps sit on a fixed grid of absolute times, so the result does not depend on how
            # the caller chunks time (only the bulb's in-step interpolation could notice).
            if holder.position_m != holder.command_m and not holder.stalled:
                t1 = min(t1, _next_grid(t0, PIPETTE_SUBSTEP_S))  # squeezing, grasping or releasing
            pouring = bottle is not None and bottle.active
            dissolving = dissolver is not None and dissolver.solid_g > 0.0
            if pouring or dissolving:
                t1 = min(t1, _next_grid(t0, SLOW_SUBSTEP_S))
            self._advance_segment(t0, t1, pouring, dissolving)
            self.t = t1
            if t1 >= self._tilt_arrival:
                self._tilt_reached()
            self._handle_events(t1)
            stalls = stalls + 1 if t1 == t0 else 0
            if stalls > 1000:  # every event at t0 is consumed when handled; this cannot happen
                raise RuntimeError(f"LabTwin.step made no progress at t={t0}")
        self._settle(now)

    def _next_landing(self) -> float:
        return self._falling[0].land_time if self._falling else math.inf

    def _advance_segment(self, t0: float, t1: float, pouring: bool, dissolving: bool) -> None:
        dt = t1 - t0
        if dt <= 0.0:
            return
        sp = self.scenario.pipette
        holder = self.grippers[sp.held_by]
        x0 = holder.position_m * 1000.0
        for g in self._gripper_list:
            if g.position_m != g.command_m and not g.stalled:
                g.advance(dt)
        x1 = holder.position_m * 1000.0
        grip_limit = sp.contact_opening_mm + sp.grasp_tolerance_mm
        if self._held:
            if x1 != x0:
                self.pipette.squeeze(t0, sp.contact_opening_mm - x0, t1, sp.contact_opening_mm - x1)
            if x1 > grip_limit:
                self._held = False
                self._event(t1, "pipette_released", side=sp.held_by)
        elif x0 > grip_limit >= x1 and self._present(sp.id):
            # the jaws reach the bulb inside this segment: grasp there and squeeze from that moment
            t_c = t0 + dt * (x0 - grip_limit) / (x0 - x1)
            self._held = True
            self._event(t_c, "pipette_grasped", side=sp.held_by)
            self.pipette.squeeze(t_c, sp.contact_opening_mm - grip_limit, t1, sp.contact_opening_mm - x1)
        if pouring and self.bottle is not None:
            grams = self.bottle.advance(t0, t1)
            if grams > 0.0:
                self._receive_solid(grams)
                if t0 >= self._pour_audio_end - 1e-9:
                    self._schedule(self.scenario.weighing.held_by,  # type: ignore[union-attr]
                                   AudioEventTruth(t0, "pour", POUR_AUDIO_SEGMENT_S, "pour"))
                    self._pour_audio_end = t0 + POUR_AUDIO_SEGMENT_S
        if dissolving and self.dissolver is not None:
            vessel = self._items[self.scenario.beaker.id]  # the weighing target is the working beaker
            stirred = self.stirrer_on and vessel.on == self.scenario.stirrer.id and self._present(self.scenario.stirrer.id)
            grams = self.dissolver.advance(t0, t1, stirred, self.beaker.volume_ml)
            if grams > 0.0:
                self.beaker.add_dissolved(self.scenario.weighing.reagent, grams / self.dissolver.molar_mass, grams)  # type: ignore[union-attr]
                self._dirty = True  # (mass on the balance is unchanged: solid became solute)
            if self.dissolver.complete_at is not None and self.dissolver.solid_g == 0.0:
                self._event(self.dissolver.complete_at, "dissolved", grams=self.dissolver.added_g)
        if pouring:
            self.balance.advance(t1)
            self.balance.set_load(self._balance_load())

    def _handle_events(self, t: float) -> None:
        nd = self.pipette.next_detach_time()
        if ((nd is None or nd > t) and self._next_landing() > t and self._faults.next_time() > t
                and not self.pipette.failed_events):
            return  # fast path: nothing happens at t
        for drop in self.pipette.detach_until(t):
            self._on_detach(drop)
        while self._falling and self._falling[0].land_time <= t:
            self._on_land(self._falling.pop(0))
        for spec in self._faults.pop_due(t):
            self._fire(spec, t)
        for gone in self._faults.pop_expired(t):
            self._expire(gone, t)
        for when in self.pipette.failed_events:
            self._event(when, "drop_failed", note="drop clung to the tip")
        self.pipette.failed_events.clear()

    def _settle(self, now: float) -> None:
        """Bring the closed-form models to ``now`` (and recompute the pH if the composition changed)."""
        self._refresh_ph(now)
        # The probe is advanced lazily (closed form): when read, drawn, or before its inputs change.
        self.balance.advance(now)
        dt = now - self._arm_t
        if dt > 0.0:
            for arm in self.arms.values():
                if arm.position != arm.command:
                    arm.advance(dt)
            self._arm_t = now

    def _refresh_ph(self, t: float) -> None:
        if self._dirty:
            self.probe.advance(t, self._mixing_tau())
            ph = self.beaker.ph()
            self.probe.set_bulk(ph)
            self._ph_history.append(t, ph)
            self._dirty = False

    def _sync_probe(self, t: float | None = None) -> None:
        """Bring the electrode to ``t`` (default: the twin's time); call it before reading the probe
        and before anything that changes its mixing time constant."""
        t = self.t if t is None else t
        if self.probe.moving:
            self.probe.advance(t, self._mixing_tau())
        elif t > self.probe.t:
            self.probe.t = t

    def _mixing_tau(self) -> float:
        st = self.scenario.stirrer
        stirred = self.stirrer_on and self._present(st.id) and self._items[self.scenario.beaker.id].on == st.id
        return st.mixing_tau_s if stirred else st.unstirred_mixing_tau_s

    # ============================================================================================ drops
    def _drop_target_ok(self) -> bool:
        sp, bid = self.scenario.pipette, self.scenario.beaker.id
        pip, beaker = self._items.get(sp.id), self._items[bid]
        if pip is None or not (pip.present and beaker.present and pip.on == bid):
            return False
        return abs(pip.position[0] - beaker.position[0]) <= BEAKER_HALF_WIDTH_FRACTION * self.scenario.cameras.width

    def _on_detach(self, drop: Drop) -> None:
        pip = self._items.get(self.scenario.pipette.id)
        over = self._items.get(pip.on) if pip is not None and pip.on else None
        if over is not None and over.present and over.kind == "reagent_bottle":
            drop.fate = "returned"  # squeezed out over the reservoir (emptying before a refill)
            self._drops.add(drop)
            return
        drop.fate = "falling" if self._drop_target_ok() else "spilled"
        # Only a falling drop stays an object (until it lands: its composition goes into the beaker).
        drop.log_row = self._drops.add(drop)
        if drop.fate == "falling":
            self._falling.append(drop)
            self._falling.sort(key=lambda d: d.land_time)
            self._schedule(self.scenario.pipette.held_by,
                           AudioEventTruth(drop.land_time, "droplet", 0.0, f"drop {drop.index}"))
        else:
            self._event(drop.detach_time, "spill", drop=drop.index, volume_ml=drop.volume_ml)

    def _on_land(self, drop: Drop) -> None:
        self._refresh_ph(drop.land_time)
        self.probe.advance(drop.land_time, self._mixing_tau())
        spill = self.beaker.add_liquid(drop.volume_ml, drop.composition)
        drop.fate = "beaker"
        if spill > 0.0:
            drop.fate = "overflow"
            self._event(drop.land_time, "overflow", drop=drop.index, spilled_ml=spill,
                        total_overflow_ml=self.beaker.overflow_ml)
        self._drops.set_fate(drop.log_row, drop.fate)
        self._dirty = True
        self._update_balance(drop.land_time)
        self._refresh_ph(drop.land_time)

    # ============================================================================================ faults
    def inject_fault(self, kind: str, now: float, duration_s: float = 0.0, **params: Any) -> None:
        """Start a fault at ``now`` (validated like a scenario fault; see :mod:`agentchemist.sim.faults`)."""
        self.step(now)
        try:
            spec = FaultSpec(kind=kind, at_s=max(self.t, 0.0), duration_s=duration_s, params=params)
        except ValidationError as exc:
            raise ScenarioError("inject_fault", _format_errors(exc)) from None
        if "id" in spec.params and spec.params["id"] not in self._items:
            raise SimCommandError(f"inject_fault {kind}: no labware item {spec.params['id']!r} (known: {sorted(self._items)})")
        self._faults.add(spec)
        self._handle_events(self.t)

    def _fire(self, spec: FaultSpec, t: float) -> None:
        self._sync_probe(t)
        entry = self._faults.fire(spec, t)
        p = spec.params
        self._event(t, f"fault:{spec.kind}", **p)
        if spec.kind == "ph_stuck":
            entry.state["value"] = float(p["value"]) if "value" in p else round(self.probe.indicated(t), 3)
        elif spec.kind == "drop_fails":
            self.pipette.fail_next_drops(int(p.get("count", 1)))
        elif spec.kind == "extra_drop":
            drop = self.pipette.leak_drop(t, p.get("volume_ml")) if self._held else None
            if drop is None:
                self._event(t, "extra_drop_no_liquid", note="pipette not held or empty")
            else:
                self._on_detach(drop)
        elif spec.kind == "noise_burst":
            for side in ([p["side"]] if "side" in p else SIDES):
                self._schedule(side, AudioEventTruth(t, "noise_burst", min(spec.duration_s, 60.0), "fault noise burst"))
        elif spec.kind == "gripper_stall":
            side = p.get("side", self.scenario.pipette.held_by)
            entry.state["side"] = side
            self.grippers[side].stalled = True
        elif spec.kind == "labware_missing":
            self._items[p["id"]].present = False
            if p["id"] == self.scenario.pipette.id and self._held:
                self._held = False  # it is gone from the gripper too
                self._event(t, "pipette_released", side=self.scenario.pipette.held_by, note="pipette vanished")
            self._update_balance(self.t)
        elif spec.kind == "labware_moved":
            item = self._items[p["id"]]
            if "position" in p:
                item.position = (float(p["position"][0]), float(p["position"][1]))
            else:
                item.position = (item.position[0] + float(p["offset"][0]), item.position[1] + float(p["offset"][1]))
            for side in SIDES:
                self._schedule(side, AudioEventTruth(t, "clink", 0.0, f"{p['id']} moved"))

    def _expire(self, entry: ActiveFault, t: float) -> None:
        self._sync_probe(t)
        p = entry.spec.params
        self._event(t, f"fault_end:{entry.kind}", **p)
        if entry.kind == "gripper_stall":
            side = entry.state["side"]
            if self._faults.find("gripper_stall", side=side) is None:
                self.grippers[side].stalled = False
        elif entry.kind in ("labware_missing", "labware_moved"):
            present, position, on = self._home[p["id"]]
            item = self._items[p["id"]]
            item.present, item.position, item.on = present, position, on
            self._update_balance(self.t)

    # ============================================================================================ commands
    def command_gripper(self, side: str, opening_m: float, now: float) -> CommandResult:
        """Command a gripper opening (m, 0..0.070); out-of-range values are clamped and reported."""
        check_side(side)
        self.step(now)
        g = self.grippers[side]
        applied, clamped = g.set_command(opening_m)
        reason = f"opening {opening_m} m clamped to the Piper range 0..0.07 m" if clamped else ""
        if g.peak_speed() >= WHINE_MIN_SPEED_M_S and not g.stalled:
            end = self.t + min(max(g.time_to_settle(), 0.05), 5.0)
            start = max(self.t, self._whine_end[side])
            if end > start + 0.05:
                self._schedule(side, AudioEventTruth(start, "motor_whine", end - start, f"{side} gripper"))
                self._whine_end[side] = end
        return CommandResult(applied, clamped, True, reason)

    def command_arm(self, side: str, positions_rad: Sequence[float], now: float) -> CommandResult:
        """Command six joint positions (rad); each is clamped to the Piper limits and reported."""
        check_side(side)
        self.step(now)
        applied, clamped, reason = self.arms[side].set_command(positions_rad)
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
        sp = self.scenario.pipette
        if not self._present(sp.id):
            return CommandResult(0.0, False, False, "the pipette is not on the bench")
        if not self._held:
            return CommandResult(0.0, False, False, f"the pipette is not grasped by the {sp.held_by} gripper")
        if name not in self.scenario.titrant:
            return CommandResult(0.0, False, False, f"no {name} reservoir on the bench (titrant: {sorted(self.scenario.titrant)})")
        if "titrant_bottle" in self._items and not self._present("titrant_bottle"):
            return CommandResult(0.0, False, False, "the titrant bottle is missing")
        if self.pipette.content_ml > 1e-9 and self.pipette.reagent not in (None, name):
            return CommandResult(0.0, False, False, f"the pipette still holds {self.pipette.reagent}; empty it first")
        depth = self.pipette.depth_mm(self.grippers[sp.held_by].position_m)
        got = self.pipette.fill(name, self._titrant_composition(name), vol, depth)
        clamped = got < vol - 1e-12
        self._event(self.t, "draw", reagent=name, volume_ml=got)
        reason = f"limited to the free capacity ({got:.3f} mL)" if clamped else ""
        return CommandResult(got, clamped, True, reason)

    def new_sample(self, now: float) -> CommandResult:
        """Set the bench up again for the next experiment, as a technician would between runs: the
        finished beaker is replaced by a fresh one of the scenario's sample (the probe moves into it and
        follows with its own time constant), the used pipette by a clean one where the scenario puts it
        (taken out of the gripper, which is opened), and moved labware goes back to its place. Time, the
        clock and the whole truth log carry on, so long runs are experiments back to back on one bench.

        (A clean pipette, not the used one: the twin's arm poses do not carry the pipette to the bottle,
        so squeezing out a used pipette's leftover titrant "over the bottle" would land in the beaker.)"""
        self.step(now)
        if self._falling:
            return CommandResult(0.0, False, False, "drops are still falling into the beaker")
        sc = self.scenario
        for item_id, (present, position, on) in self._home.items():
            item = self._items[item_id]
            item.present, item.position, item.on = present, position, on
        self.pipette = RubberBulbPipette(sc.pipette, self._rng_pipette)
        if sc.pipette.drawn_ml > 0 and sc.pipette.drawn_reagent is not None:
            self.pipette.composition = self._titrant_composition(sc.pipette.drawn_reagent)
        self._held = False
        holder = self.grippers[sc.pipette.held_by]
        holder.command_m = holder.position_m = sc.robot.initial_gripper_opening_m
        self._sync_probe(now)
        self.beaker = Beaker(sc.beaker, sc.probe.temperature_c, activity=sc.probe.activity)
        ph = self.beaker.ph()
        self.probe.set_bulk(ph)
        self._ph_history.append(self.t, ph)
        self._dirty = False
        if sc.weighing is not None:  # a fresh bottle (back on the bench) and nothing left to dissolve
            self.bottle = SolidBottle(sc.weighing, self._rng_pour)
            self._bottle_held, self._tilt_target, self._tilt_arrival = False, 0.0, math.inf
            self.dissolver = Dissolver(sc.weighing, default_library().get(sc.weighing.reagent).molar_mass_g_mol)
            self.balance.set_load(self._balance_load())
        self.samples += 1
        self._event(self.t, "new_sample", sample=self.samples, ph=ph, volume_ml=self.beaker.volume_ml)
        return CommandResult(self.beaker.volume_ml, False, True, "")

    def pour(self, side: str, tilt_rate_deg_s: float, now: float) -> CommandResult:
        """Tilt the solid bottle held by ``side`` at a rate (deg/s, + tilts, - returns; +-90 max)."""
        check_side(side)
        rate = finite_number(tilt_rate_deg_s, "tilt_rate_deg_s")
        self.step(now)
        w = self.scenario.weighing
        if w is None or self.bottle is None:
            return CommandResult(0.0, False, False, "this scenario has no solid bottle")
        if side != w.held_by:
            return CommandResult(0.0, False, False, f"the bottle is held by the {w.held_by} gripper")
        if not self._present(w.bottle_id):
            return CommandResult(0.0, False, False, f"{w.bottle_id} is not on the bench")
        self._tilt_arrival = math.inf  # a rate command replaces any tilt target
        applied, clamped = self.bottle.set_tilt_rate(rate)
        return CommandResult(applied, clamped, True, "tilt rate clamped to +-90 deg/s" if clamped else "")

    def _bottle_check(self, side: str) -> str:
        """Why ``side`` cannot handle the solid bottle ("" when it can)."""
        w = self.scenario.weighing
        if w is None or self.bottle is None:
            return "this scenario has no solid bottle"
        if side != w.held_by:
            return f"the bottle is handled by the {w.held_by} gripper"
        if not self._present(w.bottle_id):
            return f"{w.bottle_id} is not on the bench"
        return ""

    def grasp_bottle(self, side: str, now: float) -> CommandResult:
        """The ``side`` gripper has closed on the solid bottle (accepted_value: held afterwards)."""
        check_side(side)
        self.step(now)
        why = self._bottle_check(side)
        if why:
            return CommandResult(False, False, False, why)
        if not self._bottle_held:
            self._bottle_held = True
            self._event(self.t, "bottle_grasped", side=side)
        return CommandResult(True)

    def release_bottle(self, side: str, now: float) -> CommandResult:
        """The ``side`` gripper lets the bottle go; refused while it is tilted (it would fall and spill).
        accepted_value: whether the bottle is still held afterwards."""
        check_side(side)
        self.step(now)
        why = self._bottle_check(side)
        if why:
            return CommandResult(False, False, False, why)
        assert self.bottle is not None
        if not self._bottle_held:
            return CommandResult(False, False, True, "the bottle was not held")
        if self.bottle.tilt_deg > BOTTLE_UPRIGHT_DEG:
            return CommandResult(True, False, False,
                                 f"the bottle is tilted by {self.bottle.tilt_deg:.1f} deg: return it upright first")
        self._bottle_held = False
        self._tilt_target, self._tilt_arrival = 0.0, math.inf
        self.bottle.set_tilt_rate(0.0)
        self.bottle.tilt_deg = 0.0
        self._event(self.t, "bottle_released", side=side)
        return CommandResult(False)

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
        why = self._bottle_check(side)
        if why:
            return CommandResult(0.0, False, False, why)
        w, bottle = self.scenario.weighing, self.bottle
        assert w is not None and bottle is not None
        clamped_target = min(max(target, 0.0), w.max_tilt_deg)
        if not self._bottle_held and clamped_target > 0.0:
            return CommandResult(bottle.tilt_deg, False, False, "the bottle is not held: it cannot be tilted")
        rate = min(rate, MAX_TILT_RATE_DEG_S)
        self._tilt_target = clamped_target
        distance = clamped_target - bottle.tilt_deg
        if abs(distance) <= 1e-9 or rate == 0.0:
            bottle.set_tilt_rate(0.0)
            self._tilt_arrival = math.inf
            if abs(distance) <= 1e-9:
                bottle.tilt_deg = clamped_target
        else:
            bottle.set_tilt_rate(math.copysign(rate, distance))
            self._tilt_arrival = self.t + abs(distance) / rate
        return CommandResult(clamped_target, clamped_target != target, True,
                             f"tilt clamped to 0..{w.max_tilt_deg:g} deg" if clamped_target != target else "")

    def _tilt_reached(self) -> None:
        """The bottle has turned to its tilt target: stop there (exactly, not a round-off past it)."""
        self._tilt_arrival = math.inf
        if self.bottle is not None:
            self.bottle.set_tilt_rate(0.0)
            self.bottle.tilt_deg = self._tilt_target

    @property
    def bottle_held(self) -> bool:
        return self._bottle_held

    def set_stirrer(self, on: bool, now: float) -> CommandResult:
        self.step(now)
        self._sync_probe()
        self.stirrer_on = bool(on)
        self._event(self.t, "stirrer_on" if on else "stirrer_off")
        return CommandResult(bool(on))

    def tare_balance(self, now: float) -> CommandResult:
        self.step(now)
        if not self._present(self.scenario.balance.id):
            return CommandResult(0.0, False, False, "the balance is not on the bench")
        return CommandResult(self.balance.tare())

    def move_labware(self, item_id: str, now: float, position: tuple[float, float] | None = None,
                     on: str | None = None) -> CommandResult:
        """Pick-and-place of an item (kinematic): new image position and/or what it stands on."""
        if item_id not in self._items:
            raise SimCommandError(f"no labware item {item_id!r} (known: {sorted(self._items)})")
        if on is not None and on not in self._items:
            raise SimCommandError(f"cannot place {item_id} on unknown item {on!r}")
        self.step(now)
        self._sync_probe()
        item = self._items[item_id]
        if not item.present:
            return CommandResult(None, False, False, f"{item_id} is not on the bench")
        if position is not None:
            item.position = (finite_number(position[0], "u"), finite_number(position[1], "v"))
        if on is not None:
            item.on = on
            if position is None:
                base = self._items[on].position
                item.position = (base[0], item.position[1])
        self._event(self.t, "moved", id=item_id, on=item.on, position=list(item.position))
        self._update_balance(self.t)
        return CommandResult(list(item.position))

    # ============================================================================================ readings
    def read_ph(self, now: float) -> Reading | None:
        """The pH meter's reading at ``now``; None during a dropout or with no probe/meter."""
        self.step(now)
        sp = self.scenario.probe
        if self._faults.find("ph_dropout") or not self._present(sp.id) or not self._present_kind("ph_meter"):
            return None
        stuck = self._faults.find("ph_stuck")
        self._sync_probe()
        if stuck is not None:
            value = stuck.state["value"]
        else:
            value = round(self.probe.indicated(self.t) + self.probe.sample_noise(), 3)
        temp = round(self.probe.sample_temperature(sp.temperature_c), 2)
        return Reading(value, "pH", temp, self._probe_immersed(), sp.noise_sd, self.t)

    def read_temperature(self, now: float) -> Reading | None:
        self.step(now)
        sp = self.scenario.probe
        if self._faults.find("ph_dropout") or not self._present(sp.id) or not self._present_kind("ph_meter"):
            return None
        temp = round(self.probe.sample_temperature(sp.temperature_c), 2)
        return Reading(temp, "degC", temp, self._probe_immersed(), sp.temperature_noise_sd, self.t)

    def read_balance(self, now: float) -> Reading | None:
        self.step(now)
        if not self._present(self.scenario.balance.id):
            return None
        value = self.balance.reading()
        return Reading(value, "g", self.scenario.probe.temperature_c, not self.balance.overloaded,
                       self.scenario.balance.noise_sd_g, self.t)

    # ============================================================================================ robot state
    def joint_states(self) -> tuple[list[str], list[float]]:
        """14 joint names and positions (rad; grippers in metres of measured opening)."""
        values: list[float] = []
        for side in SIDES:
            values.extend(self.arms[side].position)
            values.append(self.grippers[side].position_m)
        return list(JOINT_NAMES), values

    def gripper_opening_m(self, side: str) -> float:
        return self.grippers[check_side(side)].position_m

    @property
    def pipette_held(self) -> bool:
        return self._held

    # ============================================================================================ audio / camera
    def audio(self, side: str, t0: float, n_samples: int) -> np.ndarray:
        """Contact-microphone samples (int16 mono, scenario sample rate) of ``side`` from ``t0``."""
        check_side(side)
        return self._synth[side].render(finite_number(t0, "t0"), n_samples)

    def audio_truth(self, side: str) -> list[AudioEventTruth]:
        return self._synth[check_side(side)].truth()

    def render_camera(self, name: str, now: float) -> np.ndarray:
        """RGB uint8 image (H x W x 3) of camera ``name`` ("front", "left_wrist", "right_wrist")."""
        from agentchemist.sim.camera import CAMERA_NAMES, BenchRenderer

        if name not in CAMERA_NAMES:
            raise SimCommandError(f"unknown camera {name!r}; expected one of {CAMERA_NAMES}")
        self.step(now)
        if self._renderer is None:
            self._renderer = BenchRenderer(self.scenario.cameras, self._rng_camera)
        return self._renderer.render(name, self.scene_state())

    def scene_state(self) -> dict[str, Any]:
        """Everything the cameras draw, as plain data (positions in front-image pixels)."""
        ph = self.beaker.ph()
        self._sync_probe()
        dropout = self._faults.find("ph_dropout") is not None or not self._present(self.scenario.probe.id)
        stuck = self._faults.find("ph_stuck")
        meter = None if dropout else (stuck.state["value"] if stuck else self.probe.indicated(self.t))
        return {
            "t": self.t,
            "items": [replace(i) for i in self._items.values()],
            "beaker_id": self.scenario.beaker.id,
            "beaker_volume_ml": self.beaker.volume_ml,
            "beaker_capacity_ml": self.beaker.capacity_ml,
            "solution_rgb": self.beaker.rgb(ph),
            "pipette_id": self.scenario.pipette.id,
            "pipette_held": self._held,
            "pipette_fill": self.pipette.content_ml / self.scenario.pipette.capacity_ml,
            "pipette_pendant_ml": self.pipette.pendant_ml,
            "falling": [(d.land_time - self.t) / self.pipette.fall_time_s for d in self._falling],
            "gripper_opening_m": {s: g.position_m for s, g in self.grippers.items()},
            "held_by": self.scenario.pipette.held_by,
            "meter_text": "----" if meter is None else f"{meter:5.2f}",
            "balance_text": f"{self.balance.display_g - self.balance.tare_g:7.2f} g",
            "stirrer_on": self.stirrer_on,
            "bottle_tilt_deg": self.bottle.tilt_deg if self.bottle else 0.0,
            "bottle_flowing": bool(self.bottle and self.bottle.flow_g_s() > 0.0),
            "bottle_id": self.scenario.weighing.bottle_id if self.scenario.weighing else None,
            "bottle_side": self.scenario.weighing.held_by if self.scenario.weighing else None,
            "bottle_held": self._bottle_held,
            "solid_in_vessel_g": self.dissolver.solid_g if self.dissolver else 0.0,
            "probe_id": self.scenario.probe.id,
            "stirrer_id": self.scenario.stirrer.id,
        }

    # ============================================================================================ truth
    @property
    def layout(self) -> list[LabwareItem]:
        return [replace(i) for i in self._items.values()]

    def truth_summary(self) -> dict[str, Any]:
        """The scalar part of :meth:`truth`, cheap enough to publish every sim second."""
        return {
            "t": self.t,
            "drops_landed": self._drops.landed,
            "dispensed_ml": self._drops.landed_ml,
            "expelled_ml": self.pipette.expelled_ml,
            "pipette_held": self._held,
            "beaker_volume_ml": self.beaker.volume_ml,
            "overflow_ml": self.beaker.overflow_ml,
            "true_ph": self.beaker.ph(),
            "probe_ph": self.probe.sensed,
            "faults": [f.as_dict() for f in self._faults.fired],
            "stirrer_on": self.stirrer_on,
            "balance_load_g": self.balance.load_g,
            "bottle_held": self._bottle_held,
            "bottle_tilt_deg": self.bottle.tilt_deg if self.bottle is not None else 0.0,
        }

    def truth(self) -> dict[str, Any]:
        """Ground truth for grading (JSON-serialisable)."""
        self._sync_probe()
        out: dict[str, Any] = {
            "t": self.t,
            "drops": self._drops.as_dicts(),
            "drops_landed": self._drops.landed,
            "dispensed_ml": self._drops.landed_ml,
            "expelled_ml": self.pipette.expelled_ml,
            "pipette": self.pipette.state(),
            "pipette_held": self._held,
            "beaker_volume_ml": self.beaker.volume_ml,
            "beaker_moles": dict(self.beaker.moles),
            "overflow_ml": self.beaker.overflow_ml,
            "true_ph": self.beaker.ph(),
            "probe_ph": self.probe.sensed,
            "ph_history": self._ph_history.pairs(),
            "faults": [f.as_dict() for f in self._faults.fired],
            "samples": self.samples,
            "events": list(self._events),
            "balance_load_g": self.balance.load_g,
            "stirrer_on": self.stirrer_on,
            "audio_events": {s: [asdict(e) for e in self._synth[s].truth()] for s in SIDES},
        }
        if self.bottle is not None and self.dissolver is not None:
            out["weighing"] = {
                "poured_g": self.bottle.poured_g,
                "bottle_content_g": self.bottle.content_g,
                "tilt_deg": self.bottle.tilt_deg,
                "bottle_held": self._bottle_held,
                "solid_in_vessel_g": self.dissolver.solid_g,
                "dissolved_g": self.dissolver.dissolved_g,
                "dissolved_fraction": self.dissolver.dissolved_fraction,
                "dissolution_complete_at": self.dissolver.complete_at,
            }
        return out

    # ============================================================================================ helpers
    def _present(self, item_id: str) -> bool:
        item = self._items.get(item_id)
        return item is not None and item.present

    def _present_kind(self, kind: str) -> bool:
        """True if no item of ``kind`` is in the layout (not modelled) or at least one is present."""
        of_kind = [i for i in self._items.values() if i.kind == kind]
        return not of_kind or any(i.present for i in of_kind)

    def _probe_immersed(self) -> bool:
        return (self._present(self.scenario.beaker.id)
                and self.beaker.volume_ml >= self.scenario.probe.min_immersion_ml)

    def _titrant_composition(self, reagent: str) -> dict[str, float]:
        return dict(self.scenario.titrant) if reagent in self.scenario.titrant else {}

    def _receive_solid(self, grams: float) -> None:
        w = self.scenario.weighing
        if w is None or self.dissolver is None:
            return
        if self._present(w.target):
            self.dissolver.add_solid(grams)
        else:
            self._event(self.t, "solid_spilled", grams=grams)

    def _balance_load(self) -> float:
        """True mass on the balance pan (g): items standing on it, with their contents."""
        bal = self.scenario.balance.id
        w = self.scenario.weighing
        load = 0.0
        for item in self._items.values():
            if not item.present or item.on != bal:
                continue
            load += item.mass_g
            if item.id == self.scenario.beaker.id:  # the working beaker: glass + liquid (+ dissolved)
                load += self.scenario.beaker.glass_mass_g + self.beaker.liquid_mass_g
            if w is not None and self.dissolver is not None and item.id == w.target:
                load += self.dissolver.solid_g  # undissolved; the dissolved part is in liquid_mass_g
        return load

    def _update_balance(self, t: float) -> None:
        self.balance.advance(t)
        self.balance.set_load(self._balance_load())

    def _schedule(self, side: str, event: AudioEventTruth) -> None:
        try:
            self._synth[side].schedule(event)
        except AudioSynthError as exc:
            # The node rendered audio past this onset already: keep the twin running, note it in truth.
            self._event(event.time, "audio_event_late", side=side, kind=event.kind, error=str(exc))

    def _event(self, t: float, kind: str, **detail: Any) -> None:
        self._events.append({"time": t, "kind": kind, **detail})
