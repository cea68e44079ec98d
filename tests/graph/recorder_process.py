"""The recorder node alone in its own OS process (crash and watch tests):
python -m tests.graph.recorder_process RUNS_DIR [--sim-time]

--sim-time: on the twin's /clock, as in a graph (it then acknowledges the clock and its statuses follow sim
time); without it, every reading makes a record (the crash test's burst)."""
import sys

from rclpy.parameter import Parameter

from agentchemist_ros.common.runner import spin_node
from agentchemist_ros.recorder_node import RecorderNode

if __name__ == "__main__":
    runs = sys.argv[1]
    params = [Parameter("runs_dir", value=runs)]
    if "--sim-time" in sys.argv[2:]:
        params.append(Parameter("use_sim_time", value=True))
    else:
        params.append(Parameter("ph_record_period", value=0.0))
    spin_node(lambda: RecorderNode(parameter_overrides=params))
