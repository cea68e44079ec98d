"""Which subtasks may start now: dependency order plus the machine state each subtask runs in.

The vision supervisor asks ``ready(machine.state)`` after every transition, dispatches what it gets
(``mark_dispatched``) and reports outcomes (``mark_done`` / ``mark_failed``). Pure bookkeeping: no
clock, no I/O.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from agentchemist.fsm.agents import KNOWN_AGENTS
from agentchemist.fsm.errors import InvalidMachineError
from agentchemist.fsm.validation import dependency_cycles, topological_order

if TYPE_CHECKING:
    from agentchemist.plan.schema import Plan, Subtask

__all__ = ["SubtaskScheduler", "UnknownSubtaskError"]


class UnknownSubtaskError(KeyError, ValueError):
    """A subtask id that is not in the plan."""


class SubtaskScheduler:
    """Tracks pending / dispatched / done / failed subtasks of one plan."""

    def __init__(self, plan: "Plan") -> None:
        tasks = list(plan.task_decomposition)
        reasons: list[str] = []
        ids = {t.id for t in tasks}
        if len(ids) != len(tasks):
            reasons.append("subtask ids are not unique")
        for task in tasks:
            if task.receiver not in KNOWN_AGENTS:
                reasons.append(f"subtask {task.id!r} is owned by unknown agent {task.receiver!r}")
            for dep in task.dependencies:
                if dep not in ids:
                    reasons.append(f"subtask {task.id!r} depends on unknown subtask {dep!r}")
        for cycle in dependency_cycles(tasks):
            reasons.append("dependency cycle: " + " -> ".join(cycle))
        if reasons:
            raise InvalidMachineError(reasons)
        order = topological_order(tasks)
        by_id = {t.id: t for t in tasks}
        self._tasks: list["Subtask"] = [by_id[i] for i in order]
        self._by_id = by_id
        self._done: set[str] = set()
        self._dispatched: set[str] = set()
        self._failed: dict[str, str] = {}

    @property
    def order(self) -> list[str]:
        """All subtask ids in dependency order."""
        return [t.id for t in self._tasks]

    @property
    def done(self) -> set[str]:
        return set(self._done)

    @property
    def failed(self) -> dict[str, str]:
        """Failed subtask id -> reason."""
        return dict(self._failed)

    @property
    def dispatched(self) -> set[str]:
        """Dispatched and neither done nor failed."""
        return set(self._dispatched)

    @property
    def all_done(self) -> bool:
        return len(self._done) == len(self._tasks)

    def _get(self, subtask_id: str) -> "Subtask":
        try:
            return self._by_id[subtask_id]
        except KeyError:
            raise UnknownSubtaskError(f"no subtask {subtask_id!r} in the plan (known: {self.order})") from None

    def ready(self, state: str, done: Iterable[str] | None = None) -> list["Subtask"]:
        """Subtasks to dispatch in ``state``: every dependency done, this one neither dispatched, done
        nor failed, and ``state`` is its ``fsm_state``; in dependency order.

        ``done`` adds completions known elsewhere (e.g. replayed from a log) to the ones marked here.
        """
        finished = self._done | set(done or ())
        for tid in done or ():
            self._get(tid)
        return [
            t
            for t in self._tasks
            if t.fsm_state == state
            and t.id not in finished
            and t.id not in self._dispatched
            and t.id not in self._failed
            and all(d in finished for d in t.dependencies)
        ]

    def blocked(self) -> dict[str, str]:
        """Pending subtasks that can never run because a dependency failed -> the failed dependency."""
        out: dict[str, str] = {}
        changed = True
        bad = dict(self._failed)
        while changed:
            changed = False
            for t in self._tasks:
                if t.id in bad or t.id in self._done:
                    continue
                for dep in t.dependencies:
                    if dep in bad:
                        out[t.id] = dep
                        bad[t.id] = f"blocked by {dep}"
                        changed = True
                        break
        return out

    def mark_dispatched(self, subtask_id: str) -> None:
        self._get(subtask_id)
        if subtask_id in self._done or subtask_id in self._failed:
            raise ValueError(f"subtask {subtask_id!r} already finished; it cannot be dispatched again")
        self._dispatched.add(subtask_id)

    def mark_done(self, subtask_id: str) -> None:
        task = self._get(subtask_id)
        missing = [d for d in task.dependencies if d not in self._done]
        if missing:
            raise ValueError(f"subtask {subtask_id!r} cannot be done before its dependencies {missing}")
        self._dispatched.discard(subtask_id)
        self._failed.pop(subtask_id, None)
        self._done.add(subtask_id)

    def mark_failed(self, subtask_id: str, reason: str) -> None:
        self._get(subtask_id)
        if not reason.strip():
            raise ValueError("mark_failed needs a reason")
        if subtask_id in self._done:
            raise ValueError(f"subtask {subtask_id!r} is already done")
        self._dispatched.discard(subtask_id)
        self._failed[subtask_id] = reason

    def retry(self, subtask_id: str) -> None:
        """Make a failed subtask pending again (the supervisor's retry response)."""
        self._get(subtask_id)
        self._failed.pop(subtask_id, None)
        self._dispatched.discard(subtask_id)
