"""Before an executor runs a plan, and when none runs, free of ROS: a plan rejected, a plan too old to be
this executor's, the scene's preconditions, an abort with no experiment."""
from __future__ import annotations

from agentchemist.fsm.commands import Report
from agentchemist.fsm.effects import Log, PublishState
from agentchemist.perception.scene import describe_scene

__all__ = ["busy_refusal", "idle_abort", "plan_age_problem", "rejected", "unmet_preconditions"]


def unmet_preconditions(frame, required) -> dict[str, str]:
    """The plan's preconditions the front camera does not see met (name -> why). Only the plan's are
    required (a weighing needs no probe in the beaker); one the camera cannot judge is not taken as met."""
    desc = describe_scene(frame)
    return {k: desc.reasons.get(k, "") if k in desc.checks else "the front camera check does not know it"
            for k in required if not desc.checks.get(k, False)}


def rejected(exc: Exception) -> list:
    """A plan that cannot run (InvalidMachineError or ValueError): nothing moves, the run is over."""
    why = "; ".join(exc.reasons) if hasattr(exc, "reasons") else str(exc)
    return [Report("invalid_plan", "halt", f"plan rejected: {why}", response="abort", fsm_state=""),
            PublishState("aborted", "", "reject", terminal=True)]


def busy_refusal(offered: str, running: str) -> list:
    """A plan for another experiment while `running` runs: refused before it is read, so nothing of it acts
    (the running executor, its goals, its record and its state are untouched). One experiment at a time: the
    planner sends a plan only when it holds no other run, so this is a forged or stray plan; its sender gets
    an anomaly (warn: the running experiment goes on) and nothing else."""
    return [Log(f"plan {offered!r} refused: experiment {running} is running", "warn"),
            Report("plan_refused", "warn", f"plan {offered[:80]!r} refused: experiment {running} is running "
                   "(one experiment at a time; send it when this one has ended)", response="none")]


def plan_age_problem(published: float, now: float, max_age_s: float) -> str | None:
    """Why a plan must not be run by this executor, or None. The plan topic is latched, so an executor that
    starts (or restarts) after a plan went out receives it too: that plan belongs to a run its predecessor
    held, which the planner ended when it lost it; running it again would move the robot for a goal nobody
    holds. The planner asks this executor (DescribeScene) before it publishes, so a live executor's clock
    runs when a plan comes: a clock that has not started yet (0 on sim time) means it has just started.
    An unstamped plan (0: hand-made, not the planner's) cannot be aged and is not judged."""
    if published <= 0.0:
        return None
    if now <= 0.0:
        return ("the plan was published before this executor's clock started (it has just started): an executor "
                "does not run a plan it did not see sent; send the goal again")
    if now - published > max_age_s:
        return (f"the plan was published {now - published:.1f} s before this executor received it (more than "
                f"{max_age_s:g} s: an executor restarted mid-run does not run its predecessor's plan); "
                "send the goal again")
    return None


def idle_abort(reason: str, kind: str) -> list:
    """An abort with no experiment: the anomaly and a terminal state, nothing to cancel."""
    return [Log(f"abort: {reason}", "error"), Report(kind, "halt", reason, response="abort", fsm_state=""),
            PublishState("aborted", "", "abort", terminal=True)]
