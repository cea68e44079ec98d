"""Core goals as action goal messages and back: the dispense request (agentchemist.contracts.dispense) to and
from the Dispense action's Goal (the only place that does), and the executor's policy payload (its JSON
written by common/codec.py)."""
import dataclasses

from agentchemist.contracts.dispense import DispenseRequest, RequestError, from_goal_fields, goal_fields
from agentchemist_interfaces.action import Dispense, ExecuteSubtask
from agentchemist_ros.common.codec import encode_subtask

__all__ = ["RequestError", "dispense_goal", "dispense_request", "subtask_goal"]


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
                               payload_json=encode_subtask(payload))

