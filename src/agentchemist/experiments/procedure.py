"""What the executor watches for an experiment family while its plan runs: the family's procedure.

The executor (:mod:`agentchemist.fsm.executor`) and the supervision (:mod:`agentchemist.fsm.supervision`)
are generic hosts: they run the plan's machine, dispatch subtasks, watch the bench, the recorder and the
peers, and never ask which family runs. At a few hook points they ask the family's procedure instead,
found by :func:`procedure_for` as ``agentchemist.experiments.<folder>.procedure.PROCEDURE``:

- the readings (pH, the liquid's colour, the balance, the beaker's contents): which symbols they justify,
  which holds and pauses of the dispenser, which anomalies;
- a machine transition (a detector to restart, a verification hold to start);
- a subtask dispatched: the action policy's motion (does it move labware?), the supervisor's own subtask
  (a tare), the dispensing goal (drops to an endpoint, or a pour); the dispense goal's result;
- a symbol applied: what the recorder and the dispenser are told beside the transition, a snapshot;
- a front frame: what the family reads in it besides the bench.

:class:`Procedure` is the protocol and the generic behaviour a family without a procedure module gets:
drop-wise dispensing (the plan's drop goal, ``titrate`` when it goes out), an arm whose motions pass the
bench without moving labware, the endpoint and verification told to the recorder, and no reading of its
own. A family overrides what it watches. One object per experiment; it keeps the supervision it serves
(``sup``), and the executor passes itself to the hooks it calls.
"""
from __future__ import annotations

from typing import Any

from agentchemist.contracts import Symbol
from agentchemist.contracts.notes import Endpoint, Verified
from agentchemist.experiments import family
from agentchemist.fsm.commands import Abort
from agentchemist.fsm.dispensing import NoGoal
from agentchemist.fsm.effects import SendGoal, Snapshot, tell

__all__ = ["Procedure", "procedure_for"]

SUPERVISOR = "vision_supervisor"


class Procedure:
    """The generic procedure (see the module docstring); the family procedures subclass it."""

    colour_endpoint = False   #: the endpoint is the camera's: a drop goal asks for the volume cap (fsm/dispensing.py)
    ph_direction = 0          #: +1 / -1 once a family decided the pH's direction (the drop goal carries it)
    mass = None               #: the balance's watch, where the family weighs (agentchemist.experiments.weighing)
    #: states in which the dispenser is at work (it reports a frozen pH meter there itself): drops go out in
    #: the state ``titrate`` leads to
    dispensing_states: tuple[str, ...] = ("titrating",)

    def __init__(self, sup):
        self.sup = sup

    # ------------------------------------------------------------------ the supervision's hooks
    def on_transition(self, symbol: str, transition, now: float) -> None:
        """A symbol was applied (``transition``): restart what watched the state left."""

    def start_dispensing(self, now: float, current_ph: float | None) -> list:
        """A dispensing subtask starts (not on a resume after a hold): commands."""
        return []

    def on_ph(self, stamp: float, ph: float) -> list:
        """A valid pH reading of a meter not suspected frozen: commands."""
        return []

    def on_frozen_ph(self) -> list:
        """A pH reading of a frozen meter: what the family undoes (commands); nothing is judged on it."""
        return []

    def on_colour(self, stamp: float, hue_deg: float, confidence: float) -> list:
        """A valid hue of the liquid (deg): commands. Here it is only kept, as the last one seen."""
        self.sup.last_hue, self.sup.last_colour_stamp = hue_deg, stamp
        return []

    def check_camera(self, now: float) -> list:
        """The timer: a front camera the family depends on gone stale (commands)."""
        return []

    def on_mass(self, stamp: float, grams: float) -> list:
        """A balance reading (g), the machine running: commands. A family that weighs nothing ignores it."""
        return []

    def on_dissolution(self, stamp: float, solid_visible: bool, dissolved: bool) -> list:
        """One frame's view of the beaker's contents, the machine running and not paused: commands."""
        return []

    def watching(self, state: str) -> bool:
        """Whether the family's endpoint is watched in ``state``: a hold of the dispenser may end there."""
        return False

    # ------------------------------------------------------------------ the executor's hooks
    def refusal(self, ex) -> Abort | None:
        """Why this experiment may not start, or start dispensing, now (the abort); None when it may."""
        return None

    def policy_goal(self, ex, task, now: float) -> list:
        """The action policy's subtask goes out: its motion passes the bench, frames meanwhile not compared."""
        ex.own_moves.passing(now)
        return []

    def policy_done(self, ex, task, now: float) -> None:
        """That motion is over: frames after it are compared with the scene check's bench again."""
        ex.own_moves.passed(now)

    def own_task(self, ex, task) -> list:
        """A subtask of the supervisor's own, dispatched: effects (verification runs on the readings)."""
        return []

    def send_dispense_goal(self, ex, task, now: float, resume: bool = False) -> list:
        """The dispensing subtask's goal: drops (a resumed one for the rest of the cap), ``titrate`` applied."""
        refused = None if resume else self.refusal(ex)  # a meter's state may have come after the start
        if refused is not None:
            return ex.abort(refused.reason, refused.kind, now)
        out = [] if resume else ex.carry_out(self.start_dispensing(now, self.sup.last_ph), now)
        goal = ex.book.drop_goal(task, colour_endpoint=self.colour_endpoint, ph_direction=self.ph_direction,
                                 resume=resume)
        if isinstance(goal, NoGoal):
            return out + ex.abort(goal.reason, goal.kind, now)
        if not resume:
            out += ex.apply(Symbol.TITRATE, now, SUPERVISOR, task.id)
        ex.book.sending()
        return out + [SendGoal(task, goal=goal)]

    def dispense_returned(self, ex, step, now: float) -> None:
        """The dispense goal's result was judged (``step``, agentchemist.fsm.dispensing.Next)."""

    def on_applied(self, ex, symbol: str, detail: dict[str, Any], subtask_id: str, now: float) -> list:
        """A symbol was applied: what the family tells beside the transition (effects, an abort included)."""
        out: list = []
        if symbol == Symbol.ENDPOINT:
            out.append(Snapshot("endpoint"))
            task = ex.book.task
            # a held (cancelled) dispenser has no result left to report: its subtask ends here
            if ex.book.endpoint() and task.id not in self.sup.scheduler.done:
                self.sup.subtask_finished(task.id, True)
        if symbol in (Symbol.ENDPOINT, Symbol.VERIFIED):
            note = Endpoint if symbol == Symbol.ENDPOINT else Verified
            out.append(tell("recorder", note(ph=detail.get("ph"), temperature_c=self.sup.last_temperature),
                            subtask_id, now))
        return out

    def on_frame(self, ex, stamp: float, frame, camera, depth_m) -> list:
        """A front frame, before the bench is compared with it: what the family reads in the beaker."""
        return []

    def on_frame_after_bench(self, ex, stamp: float, frame) -> list:
        """The same frame after the bench (its effects follow the bench's, as the runs recorded them)."""
        return []

    def on_tared(self, now: float) -> None:
        """The balance accepted a tare command."""


def procedure_for(sup) -> Procedure:
    """The procedure of the family of ``sup.plan`` (the generic one when the family has none)."""
    part = family(sup.plan.parsed_instruction.family).part("procedure")
    return Procedure(sup) if part is None else part.PROCEDURE(sup)
