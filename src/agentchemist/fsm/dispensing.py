"""One experiment's dispensing subtask as the executor sees it, free of ROS: what goal to send, and what a
goal's result means for the experiment.

The supervisor sends the dispenser one goal per dispensing subtask, except with a colour endpoint, whose
holds (a candidate colour change, a stale camera) cancel the goal and resume with a new one for the rest
of the volume cap. The dispenser never decides the endpoint (see agentchemist.fsm.supervision): its
goal ends at a hard limit (volume cap, empty pipette, an anomaly, a timeout), or is cancelled.

The goal itself is a validated request (agentchemist.contracts.dispense: `drop_goal`, `pour_request`).
`DispenseBook` keeps the bookkeeping that spans those goals (the subtask, the volume the cancelled goals
dispensed, whether a goal is on its way, held, stopped); `decide_result` is the table from a goal's
result to what the experiment does next.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from typing import Any, Mapping

from agentchemist.contracts.anomalies import AnomalyKind
from agentchemist.contracts.dispense import DropsRequest, PourRequest, RequestError




@dataclass(frozen=True)
class NoGoal:
    """Why no drops request can go out, and the anomaly the experiment ends with: a plan whose dispensing
    parameters the request refuses is an invalid plan (nothing is squeezed), not a missed endpoint."""
    kind: AnomalyKind
    reason: str


@dataclass(frozen=True)
class DispenseOutcome:
    """A goal's result, as the dispenser returned it."""
    success: bool
    stop_reason: str
    message: str = ""
    dispensed_ml: float = 0.0
    drops: int = 0


class Next(str, Enum):
    """What a goal's result means (decide_result)."""
    IGNORE = "ignore"                  #: the subtask or the experiment is over already
    FINISHED = "finished"              #: the subtask is done: dispatch what follows
    CAP_WITHOUT_COLOUR = "cap"         #: the volume cap was dispensed without the colour change: abort
    HELD = "held"                      #: cancelled for a hold: count its volume, resume later
    RESUME = "resume"                  #: cancelled for a hold that is over meanwhile: send the rest now
    FAILED = "failed"                  #: the dispenser failed: abort
    CANCELLED = "cancelled"            #: cancelled by the endpoint or an abort: nothing to do


def _number(params: Mapping[str, Any], key: str) -> float:
    value = params.get(key)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def _setting(params: Mapping[str, Any], key: str) -> float | None:
    """A plan's optional setting: None (the dispenser's configured default) when absent or 0, as the plan
    has always meant it."""
    return _number(params, key) or None


def pour_request(params: Mapping[str, Any]) -> PourRequest:
    """The pour of a pour_solid subtask from its parameters. Raises RequestError."""
    return PourRequest(target_mass_g=_number(params, "target_mass_g"),
                       mass_tolerance_g=_setting(params, "mass_tolerance_g"),
                       tilt_rate_deg_s=_setting(params, "tilt_rate_deg_s"), side=str(params.get("side") or "") or None,
                       change_rate_threshold_g_s=_setting(params, "wait_on_change_threshold"),
                       stable_window_s=_setting(params, "stable_window_s"),
                       settle_each_drop=bool(params.get("settle_each_drop")))


class DispenseBook:
    """The dispensing subtask of one experiment (make a new one per experiment)."""

    def __init__(self):
        self.task = None                 #: the dispensing subtask (kept to resume it after a hold)
        self.held = False                #: cancelled for a hold (colour endpoint), to be resumed
        self.pending = False             #: a goal is on its way (sent or waiting for the dispenser)
        self.stopped = False             #: the endpoint came while a goal was on its way: cancel it on arrival
        self.running = False             #: a goal was accepted and has not returned its result
        self.resume_pending = False      #: resume once the cancelled goal has returned its result
        self.dispensed_before_ml = 0.0   #: by goals cancelled for a hold (the cap counts them)

    def drop_goal(self, task, *, colour_endpoint: bool, ph_direction: int, resume: bool) -> DropsRequest | NoGoal:
        """The request for `task` (a resumed one asks for what is left of the cap), or why there is none (a
        volume cap already dispensed, or parameters the request refuses)."""
        p = task.parameters
        target_ph = p.get("target_ph")
        has_ph = isinstance(target_ph, (int, float)) and not isinstance(target_ph, bool) and math.isfinite(target_ph)
        volume = _number(p, "target_volume_ml")
        if colour_endpoint and not volume:
            # The colour endpoint is seen by the supervisor, not by the dispenser: its goal is the plan's hard cap.
            volume = _number(p, "max_volume_ml")
        if resume:
            volume -= self.dispensed_before_ml
            if volume <= 0.0:
                return NoGoal(AnomalyKind.ENDPOINT_NOT_REACHED, "the volume cap was dispensed before the colour "
                              f"change ({self.dispensed_before_ml:.3f} mL)")
        self.task = task
        try:
            return DropsRequest(target_volume_ml=volume or None, target_ph=float(target_ph) if has_ph else None,
                                ph_direction=ph_direction if has_ph else 0, rate_mm_s=_setting(p, "rate_mm_s"),
                                change_rate_threshold_ph_s=_setting(p, "wait_on_change_threshold"),
                                stable_window_s=_setting(p, "stable_window_s"),
                                settle_each_drop=bool(p.get("settle_each_drop")),
                                # The supervisor's ph_stable (which records each drop's settled pH) paces the
                                # dispenser when the instruction asks to act only on a settled pH.
                                resume_on_command=bool(p.get("settle_each_drop")))
        except RequestError as exc:
            return NoGoal(AnomalyKind.INVALID_PLAN, f"dispense request refused: {exc}")

    # ------------------------------------------------------------------ a goal's way
    def sending(self) -> None:
        self.pending, self.stopped = True, False

    def settled(self) -> None:
        """The goal got an answer (accepted, refused, or none)."""
        self.pending = False

    def accepted(self) -> bool:
        """A goal was accepted: True when it must be cancelled at once (held or stopped on its way)."""
        self.running = True
        return self.held or self.stopped

    def stop(self) -> bool:
        """The endpoint: True when a running goal must be cancelled (one on its way is, on arrival)."""
        self.stopped = True
        return self.running

    def hold(self) -> bool:
        """A hold (colour endpoint): True when a running goal must be cancelled; False when already held."""
        if self.held:
            return False
        self.held = True
        return self.running

    def resume(self, colour_watch: bool) -> bool:
        """The hold is over: True when a new goal must be sent now (none running nor on its way)."""
        if not self.held or self.task is None or not colour_watch:
            return False
        self.held = False
        if self.running:          # the cancelled goal has not finished yet: resume after its result
            self.resume_pending = True
            return False
        return not self.pending   # a goal on its way, not cancelled, runs as sent once it arrives

    def endpoint(self) -> bool:
        """The endpoint was applied: True when the subtask ends here (a held goal has no result left)."""
        ends = self.task is not None and not self.running
        self.held = self.resume_pending = False
        return ends

    def decide_result(self, outcome: DispenseOutcome, *, state: str, colour_endpoint: bool, terminal: bool,
                      subtask_done: bool) -> Next:
        """The table from a goal's result to the experiment's next step."""
        self.running = False
        if subtask_done or (terminal and state != "accepted"):
            return Next.IGNORE
        if state in ("done", "accepted") or (outcome.success and not colour_endpoint):
            return Next.FINISHED
        if colour_endpoint and outcome.success:
            return Next.CAP_WITHOUT_COLOUR
        if outcome.stop_reason == "canceled" and (self.held or self.resume_pending):
            self.dispensed_before_ml += outcome.dispensed_ml
            if self.resume_pending and not self.held:
                self.resume_pending = False
                return Next.RESUME
            return Next.HELD
        if outcome.stop_reason == "canceled":
            return Next.CANCELLED
        return Next.FAILED
