"""The executable experiment machine: the vision supervisor applies symbols to it, and nothing else.

Time is an argument (``now``, seconds on the ROS clock), never read here. Stamps must not run
backwards. Example::

    machine = ExperimentMachine.from_plan(plan, now=0.0)
    machine.apply("grasp_ok", 3.2, source="action_policy", subtask_id="grasp_pipette")
    machine.check_timeout(400.0)   # -> "state 'pipette_grasped' exceeded its 120 s limit ..." or None

Timeout clock: a state's clock starts when the state is entered and restarts on every applied symbol
except the passive ones (``record``), so a self-loop ``drop`` in ``waiting_ph`` counts as progress but a
recorder that keeps writing does not. Time spent paused does not count.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping

from agentchemist.fsm.agents import PASSIVE_SYMBOLS
from agentchemist.fsm.errors import FsmTimeError, InvalidMachineError, RejectedSymbolError
from agentchemist.fsm.validation import validate_machine

if TYPE_CHECKING:
    from agentchemist.plan.schema import Plan

__all__ = ["ABORTED", "ExperimentMachine", "Transition"]

ABORTED = "aborted"


@dataclass(frozen=True)
class Transition:
    """One history entry. ``symbol`` is an input symbol, or ``pause``/``resume``/``abort``/``timeout``
    for supervisor commands (then ``reason`` says why). ``stamp`` in seconds."""

    stamp: float
    from_state: str
    to_state: str
    symbol: str
    source: str = ""
    subtask_id: str = ""
    reason: str = ""


class ExperimentMachine:
    """A deterministic FSM <Q, Sigma, delta, q0, F> with pause/resume/abort and per-state timeouts."""

    def __init__(
        self,
        states: list[str],
        symbols: list[str],
        delta: Mapping[tuple[str, str], str],
        initial_state: str,
        accepting_states: list[str],
        timeouts_s: Mapping[str, float] | None = None,
        *,
        now: float | None = None,
    ) -> None:
        self._states = tuple(states)
        self._symbols = frozenset(symbols)
        self._delta = dict(delta)
        self._initial = initial_state
        self._accepting = frozenset(accepting_states)
        self._timeouts = dict(timeouts_s or {})
        for state, limit in self._timeouts.items():
            if state not in self._states:
                raise InvalidMachineError([f"timeout given for unknown state {state!r}"])
            if not (math.isfinite(limit) and limit > 0):
                raise InvalidMachineError([f"timeout for state {state!r} must be a positive number, got {limit}"])
        self._state = initial_state
        self._previous = ""
        self._history: list[Transition] = []
        self._paused_since: float | None = None
        self._pause_reason = ""
        self._last_stamp: float | None = None
        self._entered_at: float | None = None
        if now is not None:
            self._stamp(now)
            self._entered_at = now

    @classmethod
    def from_plan(
        cls, plan: "Plan", *, now: float | None = None, timeouts_s: Mapping[str, float] | None = None
    ) -> "ExperimentMachine":
        """Build the machine from a validated plan; InvalidMachineError lists every problem.

        ``timeouts_s`` overrides the plan's ``state_machine.state_timeouts_s`` per state. ``now`` starts
        the initial state's clock (else the first ``apply``/``check_timeout`` call starts it).
        """
        reasons = validate_machine(plan)
        if reasons:
            raise InvalidMachineError(reasons)
        spec = plan.state_machine
        timeouts = dict(spec.state_timeouts_s)
        timeouts.update(timeouts_s or {})
        return cls(
            list(spec.states),
            list(spec.input_symbols),
            {(t.source, t.symbol): t.target for t in spec.transitions},
            spec.initial_state,
            list(spec.accepting_states),
            timeouts,
            now=now,
        )

    # -- read-only view -------------------------------------------------------------------------
    @property
    def state(self) -> str:
        return self._state

    @property
    def previous_state(self) -> str:
        return self._previous

    @property
    def initial_state(self) -> str:
        return self._initial

    @property
    def states(self) -> tuple[str, ...]:
        return self._states

    @property
    def accepting(self) -> bool:
        """True in an accepting state (the experiment succeeded)."""
        return self._state in self._accepting

    @property
    def aborted(self) -> bool:
        return self._state == ABORTED

    @property
    def terminal(self) -> bool:
        """Accepting or aborted: no further symbol is taken."""
        return self.accepting or self.aborted

    @property
    def paused(self) -> bool:
        return self._paused_since is not None

    @property
    def pause_reason(self) -> str:
        return self._pause_reason

    @property
    def history(self) -> list[Transition]:
        """Every applied symbol and supervisor command, oldest first (a copy)."""
        return list(self._history)

    @property
    def expected_symbols(self) -> list[str]:
        """Symbols with a transition out of the current state (empty when terminal), sorted."""
        if self.terminal:
            return []
        return sorted(sym for (src, sym) in self._delta if src == self._state)

    def timeout_for(self, state: str) -> float | None:
        """The time limit of ``state`` in seconds, or None when it has none."""
        return self._timeouts.get(state)

    # -- transitions ----------------------------------------------------------------------------
    def _stamp(self, now: float) -> float:
        if not isinstance(now, (int, float)) or isinstance(now, bool) or not math.isfinite(now):
            raise FsmTimeError(f"time stamp must be a finite number of seconds, got {now!r}")
        if self._last_stamp is not None and now < self._last_stamp:
            raise FsmTimeError(f"time stamp {now} s is earlier than the last event at {self._last_stamp} s")
        self._last_stamp = float(now)
        if self._entered_at is None:
            self._entered_at = float(now)
        return float(now)

    def _why_not(self, symbol: str) -> str | None:
        if self.aborted:
            return "the experiment was aborted"
        if self.accepting:
            return "the machine is in an accepting state; the experiment is finished"
        if self.paused:
            return f"the machine is paused ({self._pause_reason})"
        if symbol not in self._symbols:
            return f"{symbol!r} is not an input symbol of this machine"
        if (self._state, symbol) not in self._delta:
            expected = ", ".join(self.expected_symbols) or "none"
            return f"no transition from {self._state!r} on {symbol!r} (expected one of: {expected})"
        return None

    def can_apply(self, symbol: str) -> bool:
        """True when ``apply(symbol, ...)`` would succeed now."""
        return isinstance(symbol, str) and self._why_not(symbol) is None

    def apply(self, symbol: str, now: float, *, source: str = "", subtask_id: str = "") -> Transition:
        """Take ``symbol`` at time ``now``; RejectedSymbolError (state unchanged) when it cannot."""
        if not isinstance(symbol, str) or not symbol:
            raise RejectedSymbolError(repr(symbol), self._state, "a symbol must be a non-empty string")
        why = self._why_not(symbol)
        if why is not None:
            raise RejectedSymbolError(symbol, self._state, why)
        stamp = self._stamp(now)
        target = self._delta[(self._state, symbol)]
        record = Transition(stamp, self._state, target, symbol, source, subtask_id)
        self._history.append(record)
        if target != self._state or symbol not in PASSIVE_SYMBOLS:
            self._entered_at = stamp
        if target != self._state:
            self._previous = self._state
            self._state = target
        return record

    # -- supervisor commands ----------------------------------------------------------------------
    def pause(self, reason: str, now: float) -> Transition:
        """Stop taking symbols until :meth:`resume`; the timeout clock stops too."""
        if self.terminal:
            raise RejectedSymbolError("pause", self._state, "cannot pause a finished or aborted experiment")
        if self.paused:
            raise RejectedSymbolError("pause", self._state, f"already paused ({self._pause_reason})")
        if not reason.strip():
            raise ValueError("pause needs a reason")
        stamp = self._stamp(now)
        self._paused_since = stamp
        self._pause_reason = reason
        record = Transition(stamp, self._state, self._state, "pause", reason=reason)
        self._history.append(record)
        return record

    def resume(self, now: float, reason: str = "") -> Transition:
        """Take symbols again; the time spent paused is not counted against the state's timeout."""
        if not self.paused:
            raise RejectedSymbolError("resume", self._state, "the machine is not paused")
        stamp = self._stamp(now)
        assert self._paused_since is not None and self._entered_at is not None
        self._entered_at += stamp - self._paused_since
        self._paused_since = None
        self._pause_reason = ""
        record = Transition(stamp, self._state, self._state, "resume", reason=reason)
        self._history.append(record)
        return record

    def discount(self, seconds: float) -> None:
        """Leave `seconds` out of the current state's timeout (a wait that has its own limit, such as a
        lost peer's, while symbols are still taken)."""
        if self._entered_at is not None and math.isfinite(seconds) and seconds > 0.0:
            self._entered_at += seconds

    def abort(self, reason: str, now: float) -> Transition:
        """Go to the terminal state ``aborted`` from any non-terminal state (paused or not)."""
        if self.terminal:
            raise RejectedSymbolError("abort", self._state, "the experiment is already finished or aborted")
        if not reason.strip():
            raise ValueError("abort needs a reason")
        stamp = self._stamp(now)
        record = Transition(stamp, self._state, ABORTED, "abort", reason=reason)
        self._history.append(record)
        self._previous = self._state
        self._state = ABORTED
        self._paused_since = None
        self._pause_reason = ""
        return record

    def time_in_state(self, now: float) -> float:
        """Seconds counted against the current state's timeout at ``now`` (paused time excluded)."""
        if not math.isfinite(now):
            raise FsmTimeError(f"time stamp must be finite, got {now!r}")
        if self._entered_at is None:
            return 0.0
        end = self._paused_since if self._paused_since is not None else now
        return max(0.0, end - self._entered_at)

    def check_timeout(self, now: float) -> str | None:
        """The reason when the current state has outlived its limit at ``now``; None otherwise.

        Does not change the state: the supervisor decides between retry, pause and abort.
        """
        if isinstance(now, bool) or not isinstance(now, (int, float)) or not math.isfinite(now):
            raise FsmTimeError(f"time stamp must be a finite number of seconds, got {now!r}")
        if self._last_stamp is not None and now < self._last_stamp:
            raise FsmTimeError(f"time stamp {now} s is earlier than the last event at {self._last_stamp} s")
        if self._entered_at is None:
            self._entered_at = float(now)
            self._last_stamp = float(now)
        if self.terminal or self.paused:
            return None
        limit = self._timeouts.get(self._state)
        if limit is None:
            return None
        spent = self.time_in_state(now)
        if spent > limit:
            return (
                f"state {self._state!r} exceeded its {limit:g} s limit ({spent:.1f} s without progress; "
                f"expected one of: {', '.join(self.expected_symbols)})"
            )
        return None
