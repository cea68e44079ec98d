"""What each twin fault does to the bench when it starts and when it ends.

The schedule (pending, active, fired) is :class:`~agentchemist.sim.faults.FaultBook`'s, and the kinds are
listed there; this module applies them to the twin's parts. A fault touches whichever part it is about:
the meter, the pipette, the microphones, a gripper, the labware and what the balance carries."""
from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from agentchemist.sim.audio import AudioEventTruth
from agentchemist.sim.balance_pan import BalancePan
from agentchemist.sim.contact_mics import ContactMics
from agentchemist.sim.errors import SimCommandError
from agentchemist.sim.event_log import EventLog
from agentchemist.sim.faults import ActiveFault, FaultBook
from agentchemist.sim.labware import Labware
from agentchemist.sim.pipette_hand import PipetteHand
from agentchemist.sim.robot import SIDES
from agentchemist.sim.robot_state import RobotState
from agentchemist.sim.scenario import FaultSpec, Scenario, ScenarioError, _format_errors
from agentchemist.sim.vessel import Vessel

__all__ = ["FaultEffects"]


class FaultEffects:
    def __init__(self, scenario: Scenario, book: FaultBook, labware: Labware, robot: RobotState, vessel: Vessel,
                 hand: PipetteHand, mics: ContactMics, pan: BalancePan, events: EventLog) -> None:
        self._scenario, self._book, self._labware, self._robot = scenario, book, labware, robot
        self._vessel, self._hand, self._mics, self._pan, self._events = vessel, hand, mics, pan, events

    def schedule(self, kind: str, t: float, duration_s: float, params: dict[str, Any]) -> None:
        """A fault starting at ``t``, validated like a scenario's fault (ScenarioError, SimCommandError)."""
        try:
            spec = FaultSpec(kind=kind, at_s=max(t, 0.0), duration_s=duration_s, params=params)
        except ValidationError as exc:
            raise ScenarioError("inject_fault", _format_errors(exc)) from None
        items = self._labware.items
        if "id" in spec.params and spec.params["id"] not in items:
            raise SimCommandError(
                f"inject_fault {kind}: no labware item {spec.params['id']!r} (known: {sorted(items)})")
        self._book.add(spec)

    def apply_due(self, t: float) -> None:
        """Start the faults due at ``t``, then end those whose window closes by ``t``."""
        for spec in self._book.pop_due(t):
            self._fire(spec, t)
        for gone in self._book.pop_expired(t):
            self._expire(gone, t)

    def _fire(self, spec: FaultSpec, t: float) -> None:
        self._vessel.sync_probe(t)
        entry = self._book.fire(spec, t)
        p = spec.params
        self._events.add(t, f"fault:{spec.kind}", **p)
        if spec.kind == "ph_stuck":
            entry.state["value"] = float(p["value"]) if "value" in p else round(self._vessel.probe.indicated(t), 3)
        elif spec.kind == "drop_fails":
            self._hand.pipette.fail_next_drops(int(p.get("count", 1)))
        elif spec.kind == "extra_drop":
            self._hand.leak(t, p.get("volume_ml"))
        elif spec.kind == "noise_burst":
            for side in ([p["side"]] if "side" in p else SIDES):
                burst = AudioEventTruth(t, "noise_burst", min(spec.duration_s, 60.0), "fault noise burst")
                self._mics.schedule(side, burst)
        elif spec.kind == "gripper_stall":
            side = p.get("side", self._scenario.pipette.held_by)
            entry.state["side"] = side
            self._robot.grippers[side].stalled = True
        elif spec.kind == "labware_missing":
            self._labware.items[p["id"]].present = False
            if p["id"] == self._scenario.pipette.id:
                self._hand.vanish(t)
            self._pan.update(t)
        elif spec.kind == "labware_moved":
            item = self._labware.items[p["id"]]
            if "position" in p:
                item.position = (float(p["position"][0]), float(p["position"][1]))
            else:
                item.position = (item.position[0] + float(p["offset"][0]), item.position[1] + float(p["offset"][1]))
            for side in SIDES:
                self._mics.schedule(side, AudioEventTruth(t, "clink", 0.0, f"{p['id']} moved"))

    def _expire(self, entry: ActiveFault, t: float) -> None:
        self._vessel.sync_probe(t)
        p = entry.spec.params
        self._events.add(t, f"fault_end:{entry.kind}", **p)
        if entry.kind == "gripper_stall":
            side = entry.state["side"]
            if self._book.find("gripper_stall", side=side) is None:
                self._robot.grippers[side].stalled = False
        elif entry.kind in ("labware_missing", "labware_moved"):
            self._labware.restore(p["id"])
            self._pan.update(t)
