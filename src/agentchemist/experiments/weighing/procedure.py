"""The weighing-and-dissolution procedure: a mass the balance settles on, then a solid the camera sees go.

* the robot itself moves labware here (the beaker between balance and stirrer, the bottle into the
  gripper, the bottle tilted over the beaker): the bench watch is suspended while such a motion or the pour
  runs and restarts from the first front frame after it, without what the robot holds
  (:mod:`agentchemist.fsm.own_moves`);
* the tare subtask calls the balance's tare service; ``tare_ok``, ``mass_stable`` and ``target_mass``
  follow from the balance's readings (:mod:`.mass`), ``dose`` when the pour goal goes out;
* the recorder is told each settled mass (the last one is the weighed mass), the dissolution time;
  snapshots when weighed and dissolved;
* ``dissolved`` and ``verified`` from the front camera (:mod:`agentchemist.perception.dissolution`): no solid
  seen, and still none over the verify hold with the weighed mass within tolerance.
"""
from __future__ import annotations

from typing import Any

from agentchemist.contracts import Symbol
from agentchemist.contracts.notes import Dissolved, MassSettled, Resume
from agentchemist.experiments.procedure import SUPERVISOR, Procedure
from agentchemist.experiments.weighing.mass import MassConfig, MassSupervision
from agentchemist.fsm.commands import Abort, Apply
from agentchemist.fsm.dispensing import Next, pour_request
from agentchemist.fsm.effects import CallTare, SendGoal, Snapshot, tell
from agentchemist.perception.dissolution import DissolutionError, DissolutionWatch

__all__ = ["PROCEDURE", "MassAndDissolution"]

#: the states in which the front camera watches the solid dissolve (the protocol's names)
DISSOLUTION_STATES = ("dissolving", "solution_ready")


class MassAndDissolution(Procedure):
    """One weighing's mass, its pour and the dissolution after it."""

    def __init__(self, sup):
        super().__init__(sup)
        self.mass = MassSupervision(MassConfig.from_plan(sup.plan))
        self.dissolution = DissolutionWatch()
        self.stir_started: float | None = None
        self.dissolved_at: float | None = None
        self.clear_since: float | None = None

    def on_transition(self, symbol: str, transition, now: float) -> None:
        if symbol == Symbol.STIR_OK:
            self.stir_started = now

    # ------------------------------------------------------------------ readings
    def on_mass(self, stamp: float, grams: float) -> list:
        """A balance reading (g) -> tare_ok / mass_stable / target_mass, or an abort. ReadingError on bad
        readings (never advance)."""
        out: list = []
        for symbol, detail in self.mass.on_mass(stamp, grams, self.sup.machine.state):
            if symbol == "abort":
                out.append(Abort(detail.get("kind", "abort"), detail.get("reason", "supervisor abort")))
            else:
                out.append(Apply(symbol, detail))
        return out

    def on_dissolution(self, stamp: float, solid_visible: bool, dissolved: bool) -> list:
        """One front frame's view of the beaker -> dissolved / verified, or an abort when crystals are seen
        again during verification."""
        sup = self.sup
        state = sup.machine.state
        if state == "dissolving" and dissolved:
            self.dissolved_at = stamp
            self.clear_since = stamp
            took = None if self.stir_started is None else stamp - self.stir_started
            return [Apply(Symbol.DISSOLVED, {"dissolution_time_s": took})]
        if state != "solution_ready":
            return []
        if solid_visible:
            return [Abort("endpoint_not_verified", "undissolved solid is seen again in the beaker during verification")]
        if self.clear_since is None:
            self.clear_since = stamp
        if stamp - self.clear_since < sup.verify_hold_s:
            return []
        problem = self.mass.verify()
        if problem:
            return [Abort("mass_out_of_tolerance", f"solution not verified: {problem}")]
        return [Apply(Symbol.VERIFIED, {"mass_g": self.mass.weighed_g})]

    def on_tared(self, now: float) -> None:
        self.mass.tare_sent(now)  # tare_ok follows from the readings after it, not from the balance's word

    # ------------------------------------------------------------------ the robot's own moves
    def policy_goal(self, ex, task, now: float) -> list:
        return ex.suspend_watch(now)

    def policy_done(self, ex, task, now: float) -> None:
        held = str(task.parameters.get("object", "")) if task.primitive == "grasp" else None
        ex.own_moves.moved(now, held)  # the first frame after the motion is the bench to keep

    def own_task(self, ex, task) -> list:
        return [CallTare(task)] if task.primitive == "tare" else []

    def send_dispense_goal(self, ex, task, now: float, resume: bool = False) -> list:
        # The tilted bottle hangs over the beaker and hides its tag from the front camera: the robot's own
        # pour is not a missing beaker. The bench is watched again from the first frame after the pour.
        ex.book.task = task
        out = ex.suspend_watch(now)
        out += ex.apply(Symbol.DOSE, now, SUPERVISOR, task.id)
        ex.book.sending()
        return out + [SendGoal(task, goal=pour_request(task.parameters))]

    def dispense_returned(self, ex, step, now: float) -> None:
        ex.own_moves.moved(now)
        if step is Next.FINISHED:
            self.mass.dispenser_finished()  # target_mass waits for the balance to agree

    # ------------------------------------------------------------------ told and seen
    def on_applied(self, ex, symbol: str, detail: dict[str, Any], subtask_id: str, now: float) -> list:
        out: list = []
        if symbol in (Symbol.MASS_STABLE, Symbol.TARGET_MASS) and detail:
            note = MassSettled(mass_g=detail.get("mass_g"), final=symbol == Symbol.TARGET_MASS)
            out.append(tell("recorder", note, subtask_id, now))
        if symbol == Symbol.DISSOLVED:
            out += [tell("recorder", Dissolved(**detail), subtask_id, now), Snapshot("dissolved")]
        if symbol == Symbol.TARGET_MASS:
            out.append(Snapshot("weighed"))
        if symbol == Symbol.MASS_STABLE:
            # The balance settled after the pulse: the dispenser may pour the next one.
            out.append(tell("dispenser_controller", Resume(), subtask_id, now))
        return out + super().on_applied(ex, symbol, detail, subtask_id, now)

    def on_frame(self, ex, stamp: float, frame, camera, depth_m) -> list:
        """The beaker's contents while the solid dissolves and the solution is verified; ``camera`` and
        ``depth_m`` (where the camera has them) find the beaker's floor in 3-D (perception/beaker_floor.py)."""
        if self.sup.machine.state not in DISSOLUTION_STATES:
            return []
        try:
            seen = self.dissolution.update(stamp, frame, camera, depth_m)
        except DissolutionError as exc:
            return ex.stamped(ex.frames.issue("bad_image", "dissolution",
                                              f"front camera: cannot see the beaker's contents: {exc}"))
        out = ex.stamped(ex.frames.passed("dissolution", "front camera shows the beaker's contents again"))
        return out + ex.carry_out(self.sup.on_dissolution(stamp, seen.solid_visible, seen.dissolved), stamp)


PROCEDURE = MassAndDissolution
