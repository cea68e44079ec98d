"""The vision supervisor's decisions, free of ROS: run the plan's machine, say what to dispatch, turn
pH readings into `ph_stable` / `endpoint` symbols, and results into symbols.

The node feeds events in and carries out the returned `Command`s (send a goal, publish a message);
the supervisor alone applies transitions, as in the paper.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from agentchemist.fsm.errors import RejectedSymbolError
from agentchemist.fsm.machine import ExperimentMachine, Transition
from agentchemist.fsm.scheduler import SubtaskScheduler
from agentchemist.perception.ph_stability import (EndpointConfig, EndpointDetector, PhStabilityDetector,
                                                  ReadingError, StabilityConfig)


@dataclass(frozen=True)
class Command:
    kind: str            #: dispatch | apply | stop_dispensing | snapshot | note
    subtask: object = None
    symbol: str = ""
    detail: dict = field(default_factory=dict)


class Supervision:
    """One experiment's supervision: machine + scheduler + chemical perception."""

    def __init__(self, plan, now: float):
        self.plan = plan
        self.machine = ExperimentMachine.from_plan(plan, now=now)
        self.scheduler = SubtaskScheduler(plan)
        disp = plan.module_instantiation.dispenser
        params = {}
        for task in plan.task_decomposition:
            if task.receiver == "dispenser_controller":
                params = dict(task.parameters)
        self.dispense_params = params
        settle_s = float(params.get("stable_window_s") or getattr(disp, "settle_window_s", 1.0) or 1.0)
        self.settle = PhStabilityDetector(StabilityConfig(window_s=settle_s, max_slope=0.01, max_spread=0.03))
        target = params.get("target_ph")
        self.target_ph = float(target) if isinstance(target, (int, float)) else None
        hold = float(params.get("endpoint_stable_s") or 5.0)
        self.endpoint: EndpointDetector | None = None
        self.endpoint_hold_s = hold
        self.verify_since: float | None = None
        self.last_ph: float | None = None
        self.last_temperature: float | None = None
        self.start_temperature: float | None = None
        self.rejected: list[str] = []
        self._last_stamp = now

    # ------------------------------------------------------------------ dispatch
    def dispatchable(self) -> list:
        """Subtasks whose dependencies are done and whose FSM state is current; marked dispatched."""
        if self.machine.terminal or self.machine.paused:
            return []
        ready = self.scheduler.ready(self.machine.state)
        for task in ready:
            self.scheduler.mark_dispatched(task.id)
        return ready

    def apply(self, symbol: str, now: float, source: str = "", subtask_id: str = "") -> Transition | None:
        """Apply a symbol; a symbol the current state does not accept is kept in `rejected` (not raised):
        agents run concurrently and a late report must not crash the supervisor."""
        # Reports arrive stamped with when their event happened (a drop's onset), which can be a little
        # earlier than the last transition; the machine's history must stay monotone.
        now = max(now, self._last_stamp)
        try:
            transition = self.machine.apply(symbol, now, source=source, subtask_id=subtask_id)
        except RejectedSymbolError as exc:
            self.rejected.append(f"{symbol} from {source or '?'} in {self.machine.state}: {exc}")
            return None
        self._last_stamp = now
        if transition.to_state == "waiting_ph":
            self.settle.reset()
        if transition.to_state == "done":
            self.verify_since = now
        return transition

    def abort(self, reason: str, now: float) -> Transition:
        now = max(now, self._last_stamp)
        self._last_stamp = now
        return self.machine.abort(reason, now)

    def subtask_finished(self, subtask_id: str, success: bool, reason: str = "") -> None:
        if success:
            self.scheduler.mark_done(subtask_id)
        else:
            self.scheduler.mark_failed(subtask_id, reason)

    def start_dispensing(self, now: float, current_ph: float | None) -> None:
        if self.target_ph is not None:
            direction = 1 if current_ph is None or self.target_ph >= current_ph else -1
            self.endpoint = EndpointDetector(EndpointConfig(target_ph=self.target_ph, direction=direction,
                                                            hold_s=self.endpoint_hold_s))

    # ------------------------------------------------------------------ perception
    def on_ph(self, stamp: float, ph: float) -> list[Command]:
        """A pH reading -> the symbols it justifies. Bad readings raise ReadingError (never advance)."""
        if not math.isfinite(ph):
            raise ReadingError(f"pH reading {ph!r} is not a number")
        self.settle.add(stamp, ph)
        self.last_ph = ph
        out: list[Command] = []
        state = self.machine.state
        if self.endpoint is not None and state in ("titrating", "waiting_ph"):
            if self.endpoint.update(stamp, ph):
                out.append(Command("stop_dispensing", detail={"ph": ph}))
                out.append(Command("apply", symbol="endpoint", detail={"ph": ph}))
                return out
        if state == "waiting_ph" and self.settle.is_stable():
            out.append(Command("apply", symbol="ph_stable", detail={"ph": ph}))
        if state == "done" and self.verify_since is not None and self.target_ph is not None:
            reached = self.endpoint is None or self.endpoint.reached(ph)
            if stamp - self.verify_since >= self.endpoint_hold_s and self.settle.is_stable() and reached:
                out.append(Command("apply", symbol="verified", detail={"ph": ph}))
        return out

    def on_temperature(self, value: float) -> None:
        if math.isfinite(value):
            self.last_temperature = value
            if self.start_temperature is None:
                self.start_temperature = value

    def check_timeout(self, now: float) -> str | None:
        return None if self.machine.terminal else self.machine.check_timeout(now)
