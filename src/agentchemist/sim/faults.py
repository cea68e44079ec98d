"""Fault schedule of the lab twin: which faults are pending, which are active, when each one ends.

Kinds and meaning (``duration_s`` = 0 means one-shot for event faults and "until the end of the run"
for window faults):

=================  ==========  ============================================================================
kind               type        effect
=================  ==========  ============================================================================
ph_dropout         window      ``read_ph`` / ``read_temperature`` return None (meter timeout)
ph_stuck           window      the pH reading freezes at its value when the fault fired (or params.value)
drop_fails         event       the next drop (params.count drops) clings to the tip and falls later merged
extra_drop         event       a drop falls from the pipette unbidden (params.volume_ml, default one drop)
noise_burst        window      a broadband noise burst on the contact microphones (params.side: one side)
gripper_stall      window      the gripper (params.side, default the pipette's) stops following commands
labware_missing    window      item params.id disappears from the bench (cameras, grasping, readings)
labware_moved      window      item params.id moves to params.position [u, v] or by params.offset [du, dv]
=================  ==========  ============================================================================
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from agentchemist.sim.scenario import FaultSpec

__all__ = ["ActiveFault", "FaultBook", "WINDOW_KINDS"]

WINDOW_KINDS = frozenset({"ph_dropout", "ph_stuck", "noise_burst", "gripper_stall", "labware_missing", "labware_moved"})


@dataclass
class ActiveFault:
    spec: FaultSpec
    fired_at: float
    state: dict[str, Any] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        return self.spec.kind

    @property
    def end(self) -> float:
        d = self.spec.duration_s
        return self.fired_at + d if d > 0 else math.inf

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.spec.kind,
            "at_s": self.spec.at_s,
            "fired_at": self.fired_at,
            "duration_s": self.spec.duration_s,
            "params": dict(self.spec.params),
        }


class FaultBook:
    """Pending faults (sorted by time), active window faults, and the history of fired ones."""

    def __init__(self, specs: list[FaultSpec]) -> None:
        self._pending: list[FaultSpec] = sorted(specs, key=lambda f: f.at_s)
        self.active: list[ActiveFault] = []
        self.fired: list[ActiveFault] = []
        self._next = math.inf
        self._update_next()

    def add(self, spec: FaultSpec) -> None:
        self._pending.append(spec)
        self._pending.sort(key=lambda f: f.at_s)
        self._update_next()

    def next_time(self) -> float:
        """Earliest pending start or active end (s); inf when nothing is scheduled."""
        return self._next

    def _update_next(self) -> None:
        t = self._pending[0].at_s if self._pending else math.inf
        for a in self.active:
            t = min(t, a.end)
        self._next = t

    def pop_due(self, t: float) -> list[FaultSpec]:
        """Pending faults whose start is at or before ``t``, in time order."""
        due = []
        while self._pending and self._pending[0].at_s <= t:
            due.append(self._pending.pop(0))
        self._update_next()
        return due

    def fire(self, spec: FaultSpec, t: float) -> ActiveFault:
        entry = ActiveFault(spec, t)
        self.fired.append(entry)
        if spec.kind in WINDOW_KINDS:
            self.active.append(entry)
        self._update_next()
        return entry

    def pop_expired(self, t: float) -> list[ActiveFault]:
        """Active window faults that end at or before ``t``."""
        gone = [a for a in self.active if a.end <= t]
        if gone:
            self.active = [a for a in self.active if a.end > t]
            self._update_next()
        return gone

    def find(self, kind: str, **match: Any) -> ActiveFault | None:
        """The most recent active fault of ``kind`` whose params (or resolved state) match ``match``."""
        for a in reversed(self.active):
            if a.kind != kind:
                continue
            merged = {**a.spec.params, **a.state}
            if all(merged.get(k) == v for k, v in match.items()):
                return a
        return None
