"""Which agent may produce which input symbol: the table the machine validator checks plans against.

A symbol is *produced* by an agent when either

1. it is in that agent's row of :data:`AGENT_EVENT_SYMBOLS` below (events the agent's core code
   emits on its own evidence), or
2. a subtask received by that agent names it as its ``expected_transition`` symbol (the agent reports
   completion; the vision supervisor, which alone applies transitions, turns the report into the symbol).

Table (SPEC.md section 3 for the titration; the weighing and complexometric rows follow the same split):

=====================  =======================================================================
agent                  symbols it emits
=====================  =======================================================================
action_policy          grasp_ok (pipette grasped), draw_ok (titrant drawn), act (positioned over
                       the beaker: solution_drawn -> ready), place_ok, transfer_ok, pour_ok, stir_ok
vision_supervisor      titrate (ready -> titrating, after the pre-checks: beaker on stirrer, probe
                       immersed, pipette in beaker), ph_stable, colour_stable, endpoint, verified,
                       tare_ok, dose, mass_stable, target_mass, dissolved
audio_supervisor       drop, tap (a droplet / solid tap heard)
dispenser_controller   drop, tap (a drop / tap counted from the gripper displacement)
recorder               record (a data point stored; a self-loop, it never changes the state)
planner, summarizer    none: the planner plans and escalates, the summarizer runs at the accepting
                       state; neither drives the machine
=====================  =======================================================================

``pause``, ``resume`` and ``abort`` are not input symbols: they are supervisor commands on the machine
(:meth:`ExperimentMachine.pause` ...), recorded in the history under those reserved names, and
``aborted`` is the reserved terminal state. A plan may not use these names.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Iterable, Mapping

from agentchemist.contracts.symbols import Symbol

__all__ = [
    "AGENT_EVENT_SYMBOLS",
    "KNOWN_AGENTS",
    "PASSIVE_SYMBOLS",
    "RESERVED_STATES",
    "RESERVED_SYMBOLS",
    "producers_of",
    "symbol_producers",
]

KNOWN_AGENTS: tuple[str, ...] = (
    "planner",
    "vision_supervisor",
    "audio_supervisor",
    "action_policy",
    "dispenser_controller",
    "recorder",
    "summarizer",
)

AGENT_EVENT_SYMBOLS: Mapping[str, frozenset[str]] = MappingProxyType(
    {
        "planner": frozenset(),
        "vision_supervisor": frozenset(
            {
                Symbol.TITRATE,
                Symbol.PH_STABLE,
                Symbol.COLOUR_STABLE,
                Symbol.ENDPOINT,
                Symbol.VERIFIED,
                Symbol.TARE_OK,
                Symbol.DOSE,
                Symbol.MASS_STABLE,
                Symbol.TARGET_MASS,
                Symbol.DISSOLVED,
            }
        ),
        "audio_supervisor": frozenset({Symbol.DROP, Symbol.TAP}),
        "action_policy": frozenset({Symbol.GRASP_OK, Symbol.DRAW_OK, Symbol.ACT, Symbol.PLACE_OK, Symbol.TRANSFER_OK,
                                    Symbol.POUR_OK, Symbol.STIR_OK}),
        "dispenser_controller": frozenset({Symbol.DROP, Symbol.TAP}),
        "recorder": frozenset({Symbol.RECORD}),
        "summarizer": frozenset(),
    }
)

# Symbols that only log: a transition on them does not count as progress, so it does not restart the
# state's timeout clock (otherwise a recorder that keeps writing could hide a stalled dispenser).
PASSIVE_SYMBOLS: frozenset[str] = frozenset({Symbol.RECORD})

RESERVED_SYMBOLS: frozenset[str] = frozenset({"pause", "resume", "abort", "timeout"})
RESERVED_STATES: frozenset[str] = frozenset({"aborted"})


def symbol_producers(subtask_symbols: Iterable[tuple[str, str]] = ()) -> dict[str, set[str]]:
    """Map symbol -> agents that produce it: the table above plus (receiver, symbol) pairs of subtasks."""
    producers: dict[str, set[str]] = {}
    for agent, symbols in AGENT_EVENT_SYMBOLS.items():
        for symbol in symbols:
            producers.setdefault(symbol, set()).add(agent)
    for agent, symbol in subtask_symbols:
        producers.setdefault(symbol, set()).add(agent)
    return producers


def producers_of(symbol: str, subtask_symbols: Iterable[tuple[str, str]] = ()) -> set[str]:
    """Agents that produce ``symbol`` (empty set: nobody, so a machine waiting on it would stall)."""
    return symbol_producers(subtask_symbols).get(symbol, set())
