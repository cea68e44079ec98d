"""Core goals (agentchemist.fsm.dispensing, the executor's policy payload) as action goal messages."""
import json

from agentchemist.fsm.dispensing import DropGoal, PourGoal
from agentchemist_interfaces.action import Dispense, ExecuteSubtask


def dispense_goal(experiment_id: str, subtask_id: str, g: DropGoal | PourGoal) -> Dispense.Goal:
    if isinstance(g, PourGoal):
        return Dispense.Goal(experiment_id=experiment_id, subtask_id=subtask_id, mode="solid_pour",
                             target_mass_g=g.target_mass_g, mass_tolerance_g=g.mass_tolerance_g,
                             tilt_rate_deg_s=g.tilt_rate_deg_s, side=g.side, settle_each_drop=g.settle_each_drop,
                             wait_on_change_threshold=g.wait_on_change_threshold, stable_window_s=g.stable_window_s)
    return Dispense.Goal(experiment_id=experiment_id, subtask_id=subtask_id, target_volume_ml=g.target_volume_ml,
                         use_target_ph=g.target_ph is not None, target_ph=g.target_ph or 0.0,
                         ph_direction=g.ph_direction, rate_mm_s=g.rate_mm_s,
                         wait_on_change_threshold=g.wait_on_change_threshold, stable_window_s=g.stable_window_s,
                         settle_each_drop=g.settle_each_drop, resume_on_command=g.resume_on_command)


def subtask_goal(experiment_id: str, task, payload) -> ExecuteSubtask.Goal:
    return ExecuteSubtask.Goal(experiment_id=experiment_id, subtask_id=task.id, instruction=task.description,
                               target_state=task.expected_transition.target if task.expected_transition else "",
                               payload_json=json.dumps(dict(payload)))
