"""Core goals as action goal messages and back: the dispense request (agentchemist.contracts.dispense) to and
from the Dispense action's Goal (the only place that does), the executor's policy payload, and the two
payloads the dispenser exchanges with the supervisor (a hold's reason, a pour's tap)."""
import dataclasses
import json

from agentchemist.contracts.dispense import DispenseRequest, RequestError, from_goal_fields, goal_fields
from agentchemist_interfaces.action import Dispense, ExecuteSubtask

__all__ = ["RequestError", "dispense_goal", "dispense_request", "hold_reason", "subtask_goal", "tap_payload"]


def dispense_goal(experiment_id: str, subtask_id: str, request: DispenseRequest) -> Dispense.Goal:
    """The goal message for `request`, sent for the subtask `subtask_id` of `experiment_id`."""
    request = dataclasses.replace(request, experiment_id=experiment_id, subtask_id=subtask_id)
    return Dispense.Goal(**goal_fields(request))


def dispense_request(goal: Dispense.Goal) -> DispenseRequest:
    """The request a goal message carries. Raises RequestError (naming the goal's ids) for one it cannot be."""
    return from_goal_fields(goal)


def subtask_goal(experiment_id: str, task, payload) -> ExecuteSubtask.Goal:
    return ExecuteSubtask.Goal(experiment_id=experiment_id, subtask_id=task.id, instruction=task.description,
                               target_state=task.expected_transition.target if task.expected_transition else "",
                               payload_json=json.dumps(dict(payload)))


# ---------------------------------------------------------------------- the dispenser's notes
def hold_reason(payload_json: str) -> str:
    """The reason a hold or release gives ("supervisor" when it gives none or cannot be read)."""
    try:
        return str(json.loads(payload_json or "{}").get("reason", "")) or "supervisor"
    except (json.JSONDecodeError, AttributeError):
        return "supervisor"


def tap_payload(payload: dict) -> str:
    """A pour pulse's tap (agentchemist.control.session_types.Tap) as the AgentMessage's payload."""
    return json.dumps(payload)
