"""What the executor does when the recorder or a peer agent is lost, back, or gone too long, free of ROS.

The watches themselves decide when (agentchemist.fsm.record_watch, agentchemist.fsm.node_watch); here their
verdicts become the executor's effects: a loss holds dispensing (nothing is squeezed that would go
unrecorded, uncounted or unjudged), the return releases it, and a recorder or peer gone past its limit, or
a restarted goal holder, ends the run. While a watch holds, the state's timeout stops
(:meth:`ExperimentMachine.discount`): the watch's own limit ends the run, not the state's.

Functions of the executor (``ex``), which keeps the watches and calls these from its events and its tick.
"""
from __future__ import annotations

from typing import Any

from agentchemist.fsm.commands import Report

__all__ = ["GOAL_HOLDERS", "HOLD_FOR", "check_peers", "check_recorder", "on_peers", "on_recorder_status"]

#: peers whose loss holds dispensing: what they count, judge, command or measure would be missed
HOLD_FOR = frozenset({"dispenser_controller", "action_policy", "audio_supervisor", "ph_meter", "balance", "lab_sim"})
#: peers that hold a running goal: restarted, the goal is gone with the old process
GOAL_HOLDERS = frozenset({"dispenser_controller", "action_policy"})


def on_recorder_status(ex, experiment_id: str, recording: bool, stored_through: float, now: float,
                       frame) -> list:
    """The recorder's status: the acknowledgement starts a waiting run; its return ends a gap."""
    if not ex.running:
        return []
    verdict = ex.record_watch.on_status(experiment_id, recording, stored_through, now)
    if verdict == "acked" and ex.pending_start is not None:
        require_scene, ex.pending_start = ex.pending_start, None
        return ex.start(now, frame, require_scene)
    if verdict == "back":
        gap = ex.record_watch.gaps[-1]
        return watch_hold(ex, now, ex.sup.unpause("recorder")) + ex.stamped([
            Report("recorder_lost", "info", f"the recorder is back; dispensing goes on (gap {gap})",
                   resolved=True),
            Report("record_gap", "warn", f"the record has a gap from {gap.start:.1f} s to {gap.end:.1f} s "
                   "(dispensing was held from when it was noticed): the run cannot be reported as a "
                   "success")])
    return []


def check_recorder(ex, now: float) -> list:
    watch = ex.record_watch
    verdict = watch.check(now) if ex.running else ""
    if verdict == "abort_unacked":
        return ex.abort(f"the recorder did not acknowledge the plan within {watch.config.ack_wait_s:.0f} s; "
                        "nothing was moved", "recorder_unavailable", now)
    if verdict == "abort_lost":
        return ex.abort(f"the recorder has been gone since {watch.lost_since:.1f} s", "recorder_lost", now)
    if verdict == "lost":
        return watch_hold(ex, now, ex.sup.pause("recorder")) + ex.stamped([Report(
            "recorder_lost", "warn", f"{watch.why_lost(now)}: dispensing is held until it is back",
            response="pause")])
    return []


def check_peers(ex, now: float) -> list:
    return on_peers(ex, ex.peers.check(now), now) if ex.running else []


def on_peers(ex, events, now: float) -> list:
    """A peer lost holds dispensing (if the run needs it), back releases it; a restarted goal holder or
    a peer gone too long ends the run."""
    out: list[Any] = []
    for e in events:
        held = e.node in HOLD_FOR
        if e.what == "lost":
            out += watch_hold(ex, now, ex.sup.pause(f"peer {e.node}")) if held else []
            out += ex.stamped([Report("node_lost", "warn", e.text + (": dispensing is held until it is back"
                                      if held else ""), response="pause" if held else "")])
        elif e.what == "back":
            out += watch_hold(ex, now, ex.sup.unpause(f"peer {e.node}"))
            out += ex.stamped([Report("node_lost", "info", e.text, resolved=True)])
        elif e.what == "abort" or (e.what == "restarted" and e.node in GOAL_HOLDERS):
            why = e.text if e.what == "abort" else e.text + ", including this run's goal"
            return out + ex.abort(why, "node_lost", now)
    return out


def watch_hold(ex, now: float, commands) -> list:
    """Carry out a watch's pause or unpause; the state's timeout stops while any watch holds."""
    # the operator's pause (fsm/operator.py) stops the state's clock too: a chemist's pause is no timeout
    held = any(r in ("recorder", "operator") or r.startswith("peer ") for r in ex.sup.pauses)
    if held and ex.watch_hold_since is None:
        ex.watch_hold_since = now
    elif not held and ex.watch_hold_since is not None:
        ex.machine.discount(now - ex.watch_hold_since)
        ex.watch_hold_since = None
    return ex.carry_out(commands, now)
