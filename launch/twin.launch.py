"""The whole AgentChemist graph in the lab digital twin, one process per node.

    ros2 launch agentchemist_ros twin.launch.py
    ros2 launch agentchemist_ros twin.launch.py scenario:=/path/to/acetic_naoh.yaml real_time_factor:=20.0
    ros2 launch agentchemist_ros twin.launch.py rviz:=true      # watch it: robot, bench markers, front camera

lab_sim (the twin) publishes /clock and drives sim time, faster than real time; every agent runs on that
clock (use_sim_time true). lab_sim itself paces /clock from the wall clock, so it keeps use_sim_time false.
This is the "sim" back end; the real robot is robot.launch.py, Gazebo is gazebo.launch.py. Start an
experiment with the RunExperiment action (/agentchemist/run_experiment), e.g. `python -m agentchemist_ros.tools.demo`
does it in one process; here any action client does.

robot_state_publisher turns the URDF and lab_sim's /joint_states into TF, so the arms move in rviz; the
bench is lab_sim's MarkerArray on /lab/bench_markers (the twin's 2-D front-camera layout mapped onto a bench
top in front of the robot, in base_link; src/agentchemist/sim/bench_view.py).
"""
import os
import sys

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.parameter_descriptions import ParameterValue

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agentchemist_launch_common as common  # noqa: E402  (launch files are loaded by path)


def generate_launch_description():
    arguments = [
        DeclareLaunchArgument(
            "scenario", default_value=common.share("config", "scenarios", "hcl_naoh.yaml"),
            description="Scenario YAML of the twin (config/scenarios/*.yaml): reagents, pipette, noise, faults"),
        DeclareLaunchArgument(
            "real_time_factor", default_value="0.0",
            description="Sim seconds per wall second; 0.0 = the scenario's value (capped by "
                        "max_real_time_factor in params_file)"),
        *common.rviz_arguments(),
        *common.common_arguments(),
    ]
    # ParameterValue(value_type=float): the parameter is declared as a double; a bare "20" would arrive as
    # an integer and be refused.
    twin = common.agentchemist_node("lab_sim", use_sim_time=False, overrides={
        "scenario": LaunchConfiguration("scenario"),
        "real_time_factor": ParameterValue(LaunchConfiguration("real_time_factor"), value_type=float),
    })
    # The robot model for TF and rviz. No ros2_control runs beside the twin (lab_sim moves the arms and
    # publishes /joint_states), so the model's hardware plugin is never loaded: mock says so. Sim time: the
    # joint states are stamped on the twin's clock.
    robot_state_publisher = common.robot_state_publisher({"hardware": "mock"}, use_sim_time=True)
    return LaunchDescription([
        *arguments,
        common.config_environment(),
        twin,
        robot_state_publisher,
        *common.agent_nodes(use_sim_time=True),
        *common.rviz_nodes(use_sim_time=True),
    ])
