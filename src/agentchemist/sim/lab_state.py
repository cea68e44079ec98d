"""The lab twin's parts, built from a scenario, and everything that can be read off them without
advancing time: the layout, joint states, audio, what the cameras draw, and the ground truth.

:class:`~agentchemist.sim.lab.LabTwin` adds time (``step``), the commands and the instrument readings.
The parts, each in its own module:

=================  =====================================================================================
labware            where each item is, what it stands on, where it belongs (:mod:`.labware`)
robot              the two arms and grippers (:mod:`.robot_state`)
vessel             the working beaker's solution, the stirrer, the pH probe and meter (:mod:`.vessel`)
hand               the pipette in its gripper, drawing, squeezing, and where its drops go
                   (:mod:`.pipette_hand`)
solid              the solid bottle, its pouring and the powder dissolving (:mod:`.solid_handling`)
pan                the balance and what stands on it (:mod:`.balance_pan`)
mics               the contact microphones (:mod:`.contact_mics`)
faults             the fault schedule (:mod:`.faults`) and what faults do (:mod:`.fault_effects`)
events             the event log of the truth (:mod:`.event_log`)
=================  =====================================================================================

Determinism: one numpy Generator per subsystem, spawned from the scenario seed in a fixed order (pipette,
probe, balance, pouring, camera); the microphones seed from the scenario seed and their side.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from agentchemist.sim.audio import AudioEventTruth
from agentchemist.sim.balance_pan import BalancePan
from agentchemist.sim.beaker import Beaker
from agentchemist.sim.contact_mics import ContactMics
from agentchemist.sim.event_log import EventLog
from agentchemist.sim.fault_effects import FaultEffects
from agentchemist.sim.faults import FaultBook
from agentchemist.sim.labware import Labware
from agentchemist.sim.pipette import RubberBulbPipette
from agentchemist.sim.pipette_hand import PipetteHand
from agentchemist.sim.robot import check_side
from agentchemist.sim.robot_state import RobotState
from agentchemist.sim.scenario import Scenario
from agentchemist.sim.solid_handling import SolidHandling
from agentchemist.sim.types import LabwareItem
from agentchemist.sim.vessel import Vessel
from agentchemist.sim.weighing import Dissolver, SolidBottle

__all__ = ["LabState"]


class LabState:
    """The bench of one scenario as it stands; see the module docstring."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = sc = scenario
        seeds = np.random.SeedSequence(sc.seed).spawn(6)
        rng_pipette, rng_probe, rng_balance, rng_pour, self._rng_camera, _ = (np.random.default_rng(s) for s in seeds)
        self.t = 0.0
        self._events = EventLog()
        self._faults = FaultBook(list(sc.faults))
        self._labware = Labware(sc)
        self._robot = RobotState(sc.robot)
        self._mics = ContactMics(sc, self._events)
        self._vessel = Vessel(sc, rng_probe, self._labware, self._faults)
        self._solid = SolidHandling(sc, rng_pour, self._labware, self._vessel, self._mics, self._events)
        self._pan = BalancePan(sc, rng_balance, self._labware, self._vessel, self._solid)
        self._hand = PipetteHand(sc, rng_pipette, self._robot, self._labware, self._vessel, self._mics, self._pan,
                                 self._events)
        self._fault_effects = FaultEffects(sc, self._faults, self._labware, self._robot, self._vessel, self._hand,
                                           self._mics, self._pan, self._events)
        # The parts callers read directly; none of them is ever replaced (a new sample replaces the beaker,
        # the pipette, the bottle and the dissolver: those are properties below).
        self.arms, self.grippers = self._robot.arms, self._robot.grippers
        self.probe = self._vessel.probe
        self.balance = self._pan.balance
        self._renderer = None
        self.samples = 1  # samples put on the bench so far (see LabTwin.new_sample)

    # ============================================================================================ parts
    @property
    def beaker(self) -> Beaker:
        return self._vessel.beaker

    @property
    def pipette(self) -> RubberBulbPipette:
        return self._hand.pipette

    @property
    def bottle(self) -> SolidBottle | None:
        return self._solid.bottle

    @property
    def dissolver(self) -> Dissolver | None:
        return self._solid.dissolver

    @property
    def stirrer_on(self) -> bool:
        return self._vessel.stirrer_on

    @property
    def pipette_held(self) -> bool:
        return self._hand.held

    @property
    def bottle_held(self) -> bool:
        return self._solid.held

    @property
    def layout(self) -> list[LabwareItem]:
        return self._labware.copies()

    # ============================================================================================ robot state
    def joint_states(self) -> tuple[list[str], list[float]]:
        """14 joint names and positions (rad; grippers in metres of measured opening)."""
        return self._robot.joint_states()

    def gripper_opening_m(self, side: str) -> float:
        return self.grippers[check_side(side)].position_m

    # ============================================================================================ audio
    def audio(self, side: str, t0: float, n_samples: int) -> np.ndarray:
        """Contact-microphone samples (int16 mono, scenario sample rate) of ``side`` from ``t0``."""
        return self._mics.render(side, t0, n_samples)

    def audio_truth(self, side: str) -> list[AudioEventTruth]:
        return self._mics.truth(side)

    # ============================================================================================ views
    def scene_state(self) -> dict[str, Any]:
        """Everything the cameras draw, as plain data (positions in front-image pixels)."""
        sc, beaker, pipette, bottle, dissolver = self.scenario, self.beaker, self.pipette, self.bottle, self.dissolver
        ph = beaker.ph()
        meter = self._vessel.meter_display(self.t)
        return {
            "t": self.t,
            "items": self._labware.copies(),
            "beaker_id": sc.beaker.id,
            "beaker_volume_ml": beaker.volume_ml,
            "beaker_capacity_ml": beaker.capacity_ml,
            "solution_rgb": beaker.rgb(ph),
            "pipette_id": sc.pipette.id,
            "pipette_held": self._hand.held,
            "pipette_fill": pipette.content_ml / sc.pipette.capacity_ml,
            "pipette_pendant_ml": pipette.pendant_ml,
            "falling": [(d.land_time - self.t) / pipette.fall_time_s for d in self._hand.falling],
            "gripper_opening_m": {s: g.position_m for s, g in self.grippers.items()},
            "held_by": sc.pipette.held_by,
            "meter_text": "----" if meter is None else f"{meter:5.2f}",
            "balance_text": f"{self.balance.display_g - self.balance.tare_g:7.2f} g",
            "stirrer_on": self.stirrer_on,
            "bottle_tilt_deg": bottle.tilt_deg if bottle else 0.0,
            "bottle_flowing": bool(bottle and bottle.flow_g_s() > 0.0),
            "bottle_id": sc.weighing.bottle_id if sc.weighing else None,
            "bottle_side": sc.weighing.held_by if sc.weighing else None,
            "bottle_held": self._solid.held,
            "solid_in_vessel_g": dissolver.solid_g if dissolver else 0.0,
            "probe_id": sc.probe.id,
            "stirrer_id": sc.stirrer.id,
        }

    def truth_summary(self) -> dict[str, Any]:
        """The scalar part of :meth:`truth`, cheap enough to publish every sim second."""
        drops, beaker = self._hand.log, self.beaker
        return {
            "t": self.t,
            "drops_landed": drops.landed,
            "dispensed_ml": drops.landed_ml,
            "expelled_ml": self.pipette.expelled_ml,
            "pipette_held": self._hand.held,
            "beaker_volume_ml": beaker.volume_ml,
            "overflow_ml": beaker.overflow_ml,
            "true_ph": beaker.ph(),
            "probe_ph": self.probe.sensed,
            "faults": [f.as_dict() for f in self._faults.fired],
            "stirrer_on": self.stirrer_on,
            "balance_load_g": self.balance.load_g,
            "bottle_held": self._solid.held,
            "bottle_tilt_deg": self.bottle.tilt_deg if self.bottle is not None else 0.0,
        }

    def truth(self) -> dict[str, Any]:
        """Ground truth for grading (JSON-serialisable)."""
        self._vessel.sync_probe(self.t)
        drops, beaker, pipette = self._hand.log, self.beaker, self.pipette
        out: dict[str, Any] = {
            "t": self.t,
            "drops": drops.as_dicts(),
            "drops_landed": drops.landed,
            "dispensed_ml": drops.landed_ml,
            "expelled_ml": pipette.expelled_ml,
            "pipette": pipette.state(),
            "pipette_held": self._hand.held,
            "beaker_volume_ml": beaker.volume_ml,
            "beaker_moles": dict(beaker.moles),
            "overflow_ml": beaker.overflow_ml,
            "true_ph": beaker.ph(),
            "probe_ph": self.probe.sensed,
            "ph_history": self._vessel.ph_history.pairs(),
            "faults": [f.as_dict() for f in self._faults.fired],
            "samples": self.samples,
            "events": list(self._events.entries),
            "balance_load_g": self.balance.load_g,
            "stirrer_on": self.stirrer_on,
            "audio_events": self._mics.truth_dicts(),
        }
        bottle, dissolver = self.bottle, self.dissolver
        if bottle is not None and dissolver is not None:
            out["weighing"] = {
                "poured_g": bottle.poured_g,
                "bottle_content_g": bottle.content_g,
                "tilt_deg": bottle.tilt_deg,
                "bottle_held": self._solid.held,
                "solid_in_vessel_g": dissolver.solid_g,
                "dissolved_g": dissolver.dissolved_g,
                "dissolved_fraction": dissolver.dissolved_fraction,
                "dissolution_complete_at": dissolver.complete_at,
            }
        return out
