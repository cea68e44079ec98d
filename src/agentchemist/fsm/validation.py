"""Static checks on a plan's state machine and task decomposition, before anything runs.

``validate_machine(plan)`` returns every problem it finds as a sentence (empty list: the machine can
run). ``ExperimentMachine.from_plan`` raises :class:`InvalidMachineError` with the same list.
"""

from __future__ import annotations

import difflib
from collections import deque
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from agentchemist.contracts.symbols import INPUT_SYMBOLS
from agentchemist.fsm.agents import KNOWN_AGENTS, RESERVED_STATES, RESERVED_SYMBOLS, symbol_producers

if TYPE_CHECKING:
    from agentchemist.plan.schema import Plan, StateMachineSpec, Subtask

__all__ = ["dependency_cycles", "reachable_states", "topological_order", "unknown_symbols", "validate_machine"]


def _duplicates(items: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    dup: list[str] = []
    for item in items:
        if item in seen and item not in dup:
            dup.append(item)
        seen.add(item)
    return dup


def unknown_symbols(state_machine: Mapping[str, Any], subtasks: Iterable[Mapping[str, Any]] = ()) -> list[str]:
    """Each place a machine template (a protocol's ``state_machine`` and ``subtasks``, as read from YAML)
    names a symbol that is not an input symbol of the vocabulary (agentchemist.contracts.INPUT_SYMBOLS),
    as a sentence with the closest known symbol. A vetted protocol uses only symbols some agent says: a
    misspelt one would leave its machine waiting for a word nobody sends. (A plan from a language model
    may still name its own completion symbols: :func:`validate_machine` only asks that someone produces
    them.)"""
    known = sorted(s.value for s in INPUT_SYMBOLS)

    def problem(name: Any, where: str) -> list[str]:
        if not isinstance(name, str) or name in INPUT_SYMBOLS:
            return []
        close = difflib.get_close_matches(name, known, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else f"; known: {', '.join(known)}"
        return [f"{where} names {name!r}, which is not an input symbol{hint}"]

    reasons: list[str] = []
    for name in state_machine.get("input_symbols") or ():
        reasons += problem(name, "input_symbols")
    for t in state_machine.get("transitions") or ():
        if isinstance(t, Mapping):
            reasons += problem(t.get("symbol"), f"transition {t.get('source')} -> {t.get('target')}")
    for task in subtasks:
        expected = task.get("expected_transition") if isinstance(task, Mapping) else None
        if isinstance(expected, Mapping):
            reasons += problem(expected.get("symbol"), f"subtask {task.get('id')!r}")
    return reasons


def reachable_states(spec: "StateMachineSpec", start: str) -> set[str]:
    """States reachable from ``start`` (inclusive) through the transitions of ``spec``."""
    edges: dict[str, set[str]] = {}
    for t in spec.transitions:
        edges.setdefault(t.source, set()).add(t.target)
    seen = {start}
    queue = deque([start])
    while queue:
        for nxt in edges.get(queue.popleft(), ()):
            if nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return seen


def dependency_cycles(subtasks: Iterable["Subtask"]) -> list[list[str]]:
    """Each dependency cycle once, as the list of subtask ids along it (unknown ids are ignored)."""
    deps = {t.id: [d for d in t.dependencies] for t in subtasks}
    colour: dict[str, int] = {}  # 0 unvisited, 1 on the stack, 2 finished
    cycles: list[list[str]] = []
    seen_cycles: set[frozenset[str]] = set()

    def visit(node: str, stack: list[str]) -> None:
        colour[node] = 1
        stack.append(node)
        for dep in deps.get(node, ()):
            if dep not in deps:
                continue
            if colour.get(dep, 0) == 1:
                cycle = stack[stack.index(dep) :] + [dep]
                key = frozenset(cycle)
                if key not in seen_cycles:
                    seen_cycles.add(key)
                    cycles.append(cycle)
            elif colour.get(dep, 0) == 0:
                visit(dep, stack)
        stack.pop()
        colour[node] = 2

    for node in deps:
        if colour.get(node, 0) == 0:
            visit(node, [])
    return cycles


def topological_order(subtasks: list["Subtask"]) -> list[str]:
    """Subtask ids with every dependency before its dependents; ties keep the plan's order.

    Raises ValueError on a cycle or an unknown dependency (validate first for the full list).
    """
    ids = [t.id for t in subtasks]
    remaining = {t.id: set(t.dependencies) for t in subtasks}
    for tid, deps in remaining.items():
        unknown = deps - set(ids)
        if unknown:
            raise ValueError(f"subtask {tid!r} depends on unknown subtask(s) {sorted(unknown)}")
    order: list[str] = []
    while remaining:
        progress = [tid for tid in ids if tid in remaining and not remaining[tid]]
        if not progress:
            raise ValueError(f"dependency cycle among subtasks {sorted(remaining)}")
        tid = progress[0]
        order.append(tid)
        del remaining[tid]
        for deps in remaining.values():
            deps.discard(tid)
    return order


def _check_spec(spec: "StateMachineSpec") -> list[str]:
    reasons: list[str] = []
    states = set(spec.states)
    symbols = set(spec.input_symbols)
    for dup in _duplicates(spec.states):
        reasons.append(f"state {dup!r} is listed more than once")
    for dup in _duplicates(spec.input_symbols):
        reasons.append(f"symbol {dup!r} is listed more than once")
    for name in sorted(states & RESERVED_STATES):
        reasons.append(f"state name {name!r} is reserved for the runtime")
    for name in sorted(symbols & RESERVED_SYMBOLS):
        reasons.append(f"symbol name {name!r} is reserved for supervisor commands")
    if spec.initial_state not in states:
        reasons.append(f"initial state {spec.initial_state!r} is not in the state set")
    for acc in spec.accepting_states:
        if acc not in states:
            reasons.append(f"accepting state {acc!r} is not in the state set")
    for state in spec.state_timeouts_s:
        if state not in states:
            reasons.append(f"timeout given for unknown state {state!r}")

    targets: dict[tuple[str, str], set[str]] = {}
    for t in spec.transitions:
        if t.source not in states:
            reasons.append(f"transition {t.source} -{t.symbol}-> {t.target}: unknown source state {t.source!r}")
        if t.target not in states:
            reasons.append(f"transition {t.source} -{t.symbol}-> {t.target}: unknown target state {t.target!r}")
        if t.symbol not in symbols:
            reasons.append(
                f"transition {t.source} -{t.symbol}-> {t.target}: symbol {t.symbol!r} is not an input symbol"
            )
        targets.setdefault((t.source, t.symbol), set()).add(t.target)
    for (source, symbol), outs in targets.items():
        if len(outs) > 1:
            reasons.append(f"ambiguous transition: state {source!r} on symbol {symbol!r} goes to {sorted(outs)}")

    if spec.initial_state in states:
        reach = reachable_states(spec, spec.initial_state)
        for state in spec.states:
            if state not in reach:
                reasons.append(f"state {state!r} is unreachable from the initial state {spec.initial_state!r}")
        if not reach & set(spec.accepting_states):
            reasons.append(f"no accepting state is reachable from the initial state {spec.initial_state!r}")
        accepting = set(spec.accepting_states)
        with_exit = {t.source for t in spec.transitions}
        for state in spec.states:
            if state in reach and state not in accepting and state not in with_exit:
                reasons.append(f"state {state!r} is a dead end: not accepting and no transition leaves it")
    used = {t.symbol for t in spec.transitions}
    for symbol in spec.input_symbols:
        if symbol not in used:
            reasons.append(f"symbol {symbol!r} is declared but no transition uses it")
    return reasons


def _check_subtasks(spec: "StateMachineSpec", subtasks: list["Subtask"]) -> list[str]:
    reasons: list[str] = []
    states = set(spec.states)
    ids = [t.id for t in subtasks]
    by_id = {t.id: t for t in subtasks}
    for dup in _duplicates(ids):
        reasons.append(f"subtask id {dup!r} is used more than once")
    for task in subtasks:
        if task.receiver not in KNOWN_AGENTS:
            reasons.append(
                f"subtask {task.id!r} is owned by unknown agent {task.receiver!r} (known: {', '.join(KNOWN_AGENTS)})"
            )
        if task.fsm_state not in states:
            reasons.append(f"subtask {task.id!r} runs in unknown state {task.fsm_state!r}")
        for dep in task.dependencies:
            if dep == task.id:
                reasons.append(f"subtask {task.id!r} depends on itself")
            elif dep not in by_id:
                reasons.append(f"subtask {task.id!r} depends on unknown subtask {dep!r}")
        exp = task.expected_transition
        if exp is not None:
            if exp.symbol not in spec.input_symbols:
                reasons.append(f"subtask {task.id!r} expects symbol {exp.symbol!r}, which is not an input symbol")
            if exp.target not in states:
                reasons.append(f"subtask {task.id!r} expects unknown target state {exp.target!r}")
            elif task.fsm_state in states and exp.symbol in spec.input_symbols:
                reach = reachable_states(spec, task.fsm_state)
                if not any(
                    t.symbol == exp.symbol and t.target == exp.target and t.source in reach for t in spec.transitions
                ):
                    reasons.append(
                        f"subtask {task.id!r}: no transition on {exp.symbol!r} into {exp.target!r} "
                        f"is reachable from its state {task.fsm_state!r}"
                    )
    for cycle in dependency_cycles(subtasks):
        reasons.append("dependency cycle: " + " -> ".join(cycle))
    # A dependency that can only finish in a state the dependent can never come back to is a deadlock.
    for task in subtasks:
        for dep in task.dependencies:
            other = by_id.get(dep)
            if other is None or other.fsm_state not in states or task.fsm_state not in states:
                continue
            if task.fsm_state not in reachable_states(spec, other.fsm_state):
                reasons.append(
                    f"subtask {task.id!r} (state {task.fsm_state!r}) depends on {dep!r} (state "
                    f"{other.fsm_state!r}), but {task.fsm_state!r} cannot follow {other.fsm_state!r}"
                )
    return reasons


def _check_producers(spec: "StateMachineSpec", subtasks: list["Subtask"]) -> list[str]:
    pairs = [
        (t.receiver, t.expected_transition.symbol)
        for t in subtasks
        if t.expected_transition is not None and t.receiver in KNOWN_AGENTS
    ]
    producers = symbol_producers(pairs)
    return [
        f"symbol {symbol!r} is produced by no agent (no agent emits it and no subtask expects it)"
        for symbol in spec.input_symbols
        if not producers.get(symbol)
    ]


def validate_machine(plan: "Plan") -> list[str]:
    """Every reason the plan's machine cannot run (empty: it can). See the module docstring."""
    spec = plan.state_machine
    subtasks = list(plan.task_decomposition)
    return _check_spec(spec) + _check_subtasks(spec, subtasks) + _check_producers(spec, subtasks)
