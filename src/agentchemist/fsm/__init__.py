"""Experiment finite state machine: validation, the executable machine, and subtask scheduling."""

from agentchemist.fsm.agents import AGENT_EVENT_SYMBOLS, KNOWN_AGENTS, PASSIVE_SYMBOLS, producers_of
from agentchemist.fsm.errors import FsmTimeError, InvalidMachineError, RejectedSymbolError
from agentchemist.fsm.machine import ABORTED, ExperimentMachine, Transition
from agentchemist.fsm.scheduler import SubtaskScheduler, UnknownSubtaskError
from agentchemist.fsm.validation import reachable_states, topological_order, validate_machine

__all__ = [
    "ABORTED",
    "AGENT_EVENT_SYMBOLS",
    "ExperimentMachine",
    "FsmTimeError",
    "InvalidMachineError",
    "KNOWN_AGENTS",
    "PASSIVE_SYMBOLS",
    "RejectedSymbolError",
    "SubtaskScheduler",
    "Transition",
    "UnknownSubtaskError",
    "producers_of",
    "reachable_states",
    "topological_order",
    "validate_machine",
]
