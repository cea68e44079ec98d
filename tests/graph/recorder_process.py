"""The recorder node alone in its own OS process (for the crash test): python -m tests.graph.recorder_process RUNS_DIR"""
import sys

from rclpy.parameter import Parameter

from agentchemist_ros.common.runner import spin_node
from agentchemist_ros.recorder_node import RecorderNode

if __name__ == "__main__":
    runs = sys.argv[1]
    spin_node(lambda: RecorderNode(parameter_overrides=[Parameter("runs_dir", value=runs),
                                                        Parameter("ph_record_period", value=0.0)]))
