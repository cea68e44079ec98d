"""Pieces shared by the AgentChemist launch files: the common arguments and the agent nodes.

Launch files are loaded by path, not imported from a package, so each one puts this folder on sys.path
first. Every node runs in its own process (one `Node` action per node); parameters come from one YAML file
with a `ros__parameters` block per node (config/agentchemist_params.yaml), then per-launch overrides.
"""
import os
import tempfile

from ament_index_python.packages import get_package_share_directory
from launch.actions import DeclareLaunchArgument, OpaqueFunction, SetEnvironmentVariable
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration
from launch.utilities import perform_substitutions
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

PACKAGE = "agentchemist_ros"

# The agent nodes (console scripts of agentchemist_ros); lab_sim, the twin, is started by twin/gazebo only.
AGENTS = ("planner", "vision_supervisor", "audio_supervisor", "action_policy", "dispenser_controller",
          "recorder", "summarizer")
# Nodes that declare runs_dir (where runs/<experiment_id>/ folders go).
RUNS_DIR_NODES = ("vision_supervisor", "recorder", "summarizer")


def share(*parts: str) -> str:
    """A path inside share/agentchemist_ros (launch/, config/, urdf/ are installed there)."""
    return os.path.join(get_package_share_directory(PACKAGE), *parts)


def common_arguments() -> list:
    """Arguments every AgentChemist launch file takes."""
    return [
        DeclareLaunchArgument(
            "params_file", default_value=share("config", "agentchemist_params.yaml"),
            description="Node parameters YAML (one ros__parameters block per node)"),
        DeclareLaunchArgument(
            "runs_dir", default_value=os.path.abspath("runs"),
            description="Folder of the experiment run folders (runs/<experiment_id>/: database, report, bag)"),
        DeclareLaunchArgument(
            "config_dir", default_value=share("config"),
            description="AgentChemist config folder (reagents, protocols, poses, hardware registry); "
                        "exported to the nodes as AGENTCHEMIST_CONFIG_DIR"),
        DeclareLaunchArgument(
            "log_level", default_value="info", choices=["debug", "info", "warn", "error", "fatal"],
            description="Log level of the AgentChemist nodes"),
    ]


def text(argument: str) -> ParameterValue:
    """A launch argument given to a node as a string parameter whatever it looks like: launch_ros reads a
    substituted parameter value as YAML, so a digit-only RealSense serial (213622078112) arrived as an
    integer, and so would a probe id '1'."""
    return ParameterValue(LaunchConfiguration(argument), value_type=str)


def config_environment() -> SetEnvironmentVariable:
    """The core library finds config/ through AGENTCHEMIST_CONFIG_DIR (an installed package has no repo)."""
    return SetEnvironmentVariable("AGENTCHEMIST_CONFIG_DIR", LaunchConfiguration("config_dir"))


def agentchemist_node(name: str, use_sim_time: bool, overrides: dict | None = None, node_name: str | None = None,
                      **kwargs) -> Node:
    """One AgentChemist node in its own process: the params file, then use_sim_time and overrides."""
    params = {"use_sim_time": use_sim_time}
    if name in RUNS_DIR_NODES:
        params["runs_dir"] = text("runs_dir")
    params.update(overrides or {})
    # node_name: one of several instances (left_/right_audio_capture); the YAML block of `name` then does not
    # apply, so the launch file sets what differs.
    return Node(
        package=PACKAGE, executable=name, name=node_name or name, output="screen",
        parameters=[LaunchConfiguration("params_file"), params],
        ros_arguments=["--log-level", LaunchConfiguration("log_level")],
        **kwargs)


def agent_nodes(use_sim_time: bool, overrides: dict | None = None, skip: tuple[str, ...] = ()) -> list:
    """The seven agent nodes (everything but the twin); `overrides` maps a node name to parameter values;
    `skip` names agents the launch file starts itself (twin_vision_supervisor)."""
    return [agentchemist_node(name, use_sim_time, (overrides or {}).get(name)) for name in AGENTS
            if name not in skip]


def twin_vision_supervisor(use_sim_time: bool) -> OpaqueFunction:
    """The vision supervisor beside the twin, reading the inventory the twin's lab believes (the default
    inventory, the scenario's bottle labels, its `inventory:` block: agentchemist.sim.lab_inventory), written
    at launch time from the `scenario` argument, as the one-process graph does (tools/graph.py)."""

    def expand(context):
        from agentchemist.sim.lab_inventory import write_twin_inventory
        from agentchemist.sim.scenario import load_scenario

        scenario = perform_substitutions(context, [LaunchConfiguration("scenario")])
        stem = os.path.splitext(os.path.basename(scenario))[0]
        file = os.path.join(tempfile.gettempdir(), f"agentchemist-inventory-{stem}-{os.getpid()}.yaml")
        write_twin_inventory(load_scenario(scenario), file)
        return [agentchemist_node("vision_supervisor", use_sim_time, {"inventory_file": str(file)})]

    return OpaqueFunction(function=expand)


def robot_state_publisher(mappings: dict, use_sim_time: bool) -> OpaqueFunction:
    """robot_state_publisher on the robot model expanded by xacro's Python API at launch time; ``mappings``:
    xacro arguments (name -> text or LaunchConfiguration) that pick the hardware (topic_based / mock /
    gazebo) and its files. An OpaqueFunction: the arguments' values are known only once the launch runs."""
    xacro_file = share("urdf", "agentchemist_aloha.urdf.xacro")

    def expand(context):
        import xacro  # the ROS tool (apt ros-jazzy-xacro, or the xacro wheel from PyPI)

        values = {k: v if isinstance(v, str) else perform_substitutions(context, [v]) for k, v in mappings.items()}
        description = xacro.process_file(xacro_file, mappings=values).toxml()
        return [Node(package="robot_state_publisher", executable="robot_state_publisher", output="screen",
                     parameters=[{"robot_description": description, "use_sim_time": use_sim_time}])]

    return OpaqueFunction(function=expand)


def rviz_arguments() -> list:
    """rviz:=true|false (off by default: a robot or CI has no display) and rviz_config."""
    return [
        DeclareLaunchArgument(
            "rviz", default_value="false", choices=["true", "false"],
            description="Open rviz2: robot model, TF, bench markers with the FSM/pH/volume text, the three "
                        "cameras, depth as a point cloud"),
        DeclareLaunchArgument(
            "rviz_config", default_value=share("config", "agentchemist.rviz"),
            description="rviz2 configuration file opened when rviz:=true"),
    ]


def rviz_nodes(use_sim_time: bool) -> list:
    """rviz2 on rviz_config and the status_overlay text (FSM / pH / volume), started only with rviz:=true."""
    shown = IfCondition(LaunchConfiguration("rviz"))
    return [Node(package="rviz2", executable="rviz2", name="rviz2", output="screen",
                 arguments=["-d", LaunchConfiguration("rviz_config")],
                 parameters=[{"use_sim_time": use_sim_time}], condition=shown),
            agentchemist_node("status_overlay", use_sim_time, condition=shown)]
