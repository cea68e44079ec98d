"""What the executor asks the vision supervisor node to do: typed effects (frozen dataclasses), free of ROS.

`agentchemist.fsm.executor.Executor` returns a list of these for every event; the node carries them out
in order (publish, send or cancel a goal, call a service, write a snapshot) and decides nothing itself.
A `Report` (agentchemist.fsm.commands) is an effect too: an anomaly to publish.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from agentchemist.contracts.notes import Dispatch, Note
from agentchemist.contracts.dispense import DropsRequest, PourRequest


@dataclass(frozen=True)
class PublishState:
    """The machine's state (FsmState, latched): `state`, reached from `previous` by `symbol` (reported by
    the agent working on `subtask_id`); `accepting` and `terminal` as the machine says."""
    state: str
    previous: str
    symbol: str
    subtask_id: str = ""
    accepting: bool = False  # the run ended as the plan wants (the summarizer writes the report)
    terminal: bool = False   # nothing more happens in this experiment (accepted or aborted)


@dataclass(frozen=True)
class Tell:
    """An AgentMessage to `receiver`; `stamp` None: the node's clock now."""
    receiver: str
    symbol: str
    subtask_id: str = ""
    payload: Mapping[str, Any] = field(default_factory=dict)
    stamp: float | None = None
    instruction: str = ""      #: a dispatch: the subtask's description
    target_state: str = ""     #: a dispatch: the state its transition leads to


def tell(receiver: str, note: Note, subtask_id: str = "", stamp: float | None = None) -> Tell:
    """An AgentMessage carrying ``note`` (agentchemist.contracts.notes): its symbol and its payload."""
    return Tell(receiver, note.SYMBOL, subtask_id, note.to_payload(), stamp)


def announce(task) -> Tell:
    """The `dispatch` message of a subtask to its agent (what, where to, with which primitive)."""
    note = Dispatch(task.primitive, task.parameters)
    return Tell(task.receiver, note.SYMBOL, task.id, note.to_payload(), instruction=task.description,
                target_state=task.expected_transition.target if task.expected_transition else "")


@dataclass(frozen=True)
class Snapshot:
    """Save the latest front frame under the run folder as `label` and tell the recorder."""
    label: str


@dataclass(frozen=True)
class SendGoal:
    """An action goal for `task`: to the action policy (`payload`: primitive, symbol, parameters) or to the
    dispenser (`goal`: a DropsRequest or a PourRequest)."""
    task: Any
    payload: Mapping[str, Any] = field(default_factory=dict)
    goal: DropsRequest | PourRequest | None = None


@dataclass(frozen=True)
class CallTare:
    task: Any


@dataclass(frozen=True)
class Cancel:
    """Cancel the running goal of `agent` (action_policy | dispenser_controller); a dispense goal still on
    its way is cancelled on arrival by the executor's DispenseBook."""
    agent: str


@dataclass(frozen=True)
class PublishHue:
    """A vision-channel QuantityEstimate of the liquid's hue (deg)."""
    stamp: float
    hue_deg: float
    delta_deg: float
    confidence: float
    fsm_state: str
    subtask_id: str


@dataclass(frozen=True)
class Log:
    text: str
    level: str = "info"   #: info | warn | error
