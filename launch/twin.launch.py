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
top in front of the robot, in base_link; src/agentchemist/sim/workcell_view.py).
"""
import os
import sys

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, GroupAction
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution, PythonExpression
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
        DeclareLaunchArgument(
            "instruments", default_value="topics", choices=["topics", "serial"],
            description="topics: lab_sim publishes pH and mass; serial: the twin's pH meter and balance speak their "
                        "dialects on pseudo-terminals and the ph_meter / balance drivers publish (real serial I/O; "
                        "keep real_time_factor low: the instruments run on the wall clock)"),
        DeclareLaunchArgument(
            "instrument_dir", default_value="/tmp/agentchemist_instruments",
            description="Folder of the simulated instruments' pty links (ph_meter, balance) with instruments:=serial"),
        *common.common_arguments(),
    ]
    serial = IfCondition(PythonExpression(["'", LaunchConfiguration("instruments"), "' == 'serial'"]))
    drivers = GroupAction(condition=serial, actions=[
        common.agentchemist_node("ph_meter", use_sim_time=True, overrides={
            "port": PathJoinSubstitution([LaunchConfiguration("instrument_dir"), "ph_meter"]),
            "require_calibration": False}),  # the twin's probe is the uncalibrated meter of topics mode
        common.agentchemist_node("balance", use_sim_time=True, overrides={
            "port": PathJoinSubstitution([LaunchConfiguration("instrument_dir"), "balance"])}),
    ])
    # ParameterValue(value_type=float): the parameter is declared as a double; a bare "20" would arrive as
    # an integer and be refused.
    twin = common.agentchemist_node("lab_sim", use_sim_time=False, overrides={
        "scenario": common.text("scenario"),
        "real_time_factor": ParameterValue(LaunchConfiguration("real_time_factor"), value_type=float),
        "instruments": common.text("instruments"), "instrument_dir": common.text("instrument_dir"),
    })
    # The robot model for TF and rviz. No ros2_control runs beside the twin (lab_sim moves the arms and
    # publishes /joint_states), so the model's hardware plugin is never loaded: mock says so. Sim time: the
    # joint states are stamped on the twin's clock.
    robot_state_publisher = common.robot_state_publisher({"hardware": "mock"}, use_sim_time=True)
    return LaunchDescription([
        *arguments,
        common.config_environment(),
        twin,
        drivers,
        robot_state_publisher,
        *common.agent_nodes(use_sim_time=True, skip=("vision_supervisor",)),
        common.twin_vision_supervisor(use_sim_time=True),  # on the inventory the scenario's lab believes
        *common.rviz_nodes(use_sim_time=True),
    ])
