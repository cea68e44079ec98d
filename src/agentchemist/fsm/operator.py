"""A person's pause and resume of a running experiment (the console's buttons), free of ROS.

A pause is a hold like the watches' (fsm/watch_holds.py): the dispenser keeps its goal, its volume and
its position and squeezes nothing until the resume, and the state's timeout stops meanwhile, so a chemist
who pauses for ten minutes does not time the run out. An arm motion already under way finishes (the
hold is the dispenser's); in a titration nothing else moves while no drop falls, so the run stands still. Cancel and emergency stop are not
here: they are the operator's halt (kind operator_stop, contracts/admission.py), which aborts the run
through the supervisor's one halt path.
"""
from __future__ import annotations

from agentchemist.fsm import watch_holds
from agentchemist.fsm.commands import Report

__all__ = ["REASON", "set_paused"]

#: the pause reason the operator's hold carries (Supervision.pauses)
REASON = "operator"


def set_paused(ex, paused: bool, now: float, who: str = "operator") -> tuple[bool, str, list]:
    """Pause (True) or resume (False) the run of executor ``ex``: (accepted, what happened, effects)."""
    if not ex.running:
        return False, "no experiment is running", []
    held = REASON in ex.sup.pauses
    if paused == held:
        return False, "already paused" if held else "not paused", []
    commands = ex.sup.pause(REASON) if paused else ex.sup.unpause(REASON)
    verb = "paused" if paused else "resumed"
    report = Report("operator_pause", "warn" if paused else "info",
                    f"{verb} by {who}" + (": dispensing is held until resumed" if paused else ""),
                    response="hold" if paused else "resume", resolved=not paused)
    return True, f"{verb} in state {ex.machine.state}", watch_holds.watch_hold(ex, now, commands) + ex.stamped([report])
