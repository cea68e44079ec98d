"""The lab digital twin: chemistry, instruments, pipette and drops, audio, cameras, faults.

Entry points: :func:`load_scenario` (YAML -> :class:`Scenario`) and :class:`LabTwin` (the bench you
step, command and read). ``lab_sim`` (the ROS node) is a thin adapter over :class:`LabTwin`.
"""

from agentchemist.sim.errors import ScenarioError, SimCommandError, SimError
from agentchemist.sim.scenario import Scenario, load_scenario, scenario_from_dict
from agentchemist.sim.types import CommandResult, LabwareItem, Reading

__all__ = [
    "CommandResult",
    "LabTwin",
    "LabwareItem",
    "Reading",
    "Scenario",
    "ScenarioError",
    "SimCommandError",
    "SimError",
    "load_scenario",
    "scenario_from_dict",
]


def __getattr__(name: str):
    # LabTwin pulls in OpenCV and the audio synth; import it only when asked for.
    if name == "LabTwin":
        from agentchemist.sim.lab import LabTwin

        return LabTwin
    raise AttributeError(name)
