"""Gazebo Harmonic: the robot model under gz_ros2_control, its controllers, the twin's chemistry, the agents.

    ros2 launch agentchemist_ros gazebo.launch.py                  # the lab world (worlds/lab.sdf)
    ros2 launch agentchemist_ros gazebo.launch.py world:=empty.sdf gui:=false rviz:=true
    ros2 launch agentchemist_ros gazebo.launch.py gz_extra_args:="--physics-engine gz-physics-bullet-featherstone-plugin"

The same URDF as the robot (xacro hardware:=gazebo) swaps the topic-based Piper hardware for
gz_ros2_control/GazeboSimSystem; the gz_ros2_control plugin inside Gazebo runs the controller manager with
config/ros2_controllers.yaml, so the controllers, their topics and /joint_states are the robot's. Gazebo
owns /clock (bridged by ros_gz_bridge) and every ROS node runs on it (use_sim_time true).

The world (world:=lab, the default) is worlds/lab.sdf, written by `make worlds` from the bench description
and a scenario's layout (the same scene source as the twin's MuJoCo backend), its labware tagged with the
bench's ArUco tags. The robot (xacro hardware:=gazebo) carries RGB-D cameras and a differential drive on
/cmd_vel; config/gz_bridge.yaml bridges /clock, /cmd_vel, /odom and each camera's image, depth and
camera_info onto the twin's topics. The robot is spawned with base_footprint on the floor (the world's
origin is base_link, 0.05 m up). Not run here: this machine has no Gazebo.

Gazebo simulates the arms; the chemistry (pH, balance, contact audio, camera images of the solution) comes
from lab_sim, the lab twin, started with publish_clock:=false and publish_joint_states:=false: it then
follows Gazebo's /clock (use_sim_time) instead of pacing itself, and leaves /joint_states to
joint_state_broadcaster. The gripper's centring finger is a mimic joint; Gazebo's default DART engine does not
enforce mimic constraints, Bullet Featherstone does (see gz_extra_args above).
"""
import os
import sys

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription, RegisterEventHandler
from launch.conditions import IfCondition, UnlessCondition
from launch.event_handlers import OnProcessExit
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution, PythonExpression
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agentchemist_launch_common as common  # noqa: E402  (launch files are loaded by path)

MOTION_CONTROLLERS = ("left_arm_controller", "right_arm_controller",
                      "left_gripper_controller", "right_gripper_controller")


def generate_launch_description():
    arguments = [
        DeclareLaunchArgument(
            "world", default_value="lab",
            description="Gazebo world: lab (worlds/lab.sdf, the bench and labware) or an SDF file name Gazebo "
                        "can find, or a path"),
        DeclareLaunchArgument(
            "gui", default_value="true", choices=["true", "false"],
            description="Open the Gazebo GUI (false: server only, e.g. over SSH)"),
        DeclareLaunchArgument(
            "gz_extra_args", default_value="",
            description="Extra gz sim arguments, e.g. --physics-engine gz-physics-bullet-featherstone-plugin"),
        DeclareLaunchArgument(
            "scenario", default_value=common.share("config", "scenarios", "hcl_naoh.yaml"),
            description="Scenario YAML of the twin that supplies the chemistry (readings, audio, images)"),
        *common.common_arguments(),
        *common.rviz_arguments(),
    ]
    lab_world = common.share("worlds", "lab.sdf")
    world = PythonExpression(["'", lab_world, "' if '", LaunchConfiguration("world"), "' == 'lab' else '",
                              LaunchConfiguration("world"), "'"])

    controllers_file = common.share("config", "ros2_controllers.yaml")
    robot_state_publisher = common.robot_state_publisher({"hardware": "gazebo", "controllers_file": controllers_file},
                                                         use_sim_time=True)

    gz_sim_launch = PathJoinSubstitution([FindPackageShare("ros_gz_sim"), "launch", "gz_sim.launch.py"])
    # -r: start running instead of paused; -s: server only.
    gazebo_gui = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(gz_sim_launch),
        launch_arguments={"gz_args": [world, " -r ",
                                      LaunchConfiguration("gz_extra_args")]}.items(),
        condition=IfCondition(LaunchConfiguration("gui")))
    gazebo_server = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(gz_sim_launch),
        launch_arguments={"gz_args": [world, " -r -s ",
                                      LaunchConfiguration("gz_extra_args")]}.items(),
        condition=UnlessCondition(LaunchConfiguration("gui")))
    spawn_robot = Node(
        package="ros_gz_sim", executable="create", output="screen",
        arguments=["-topic", "robot_description", "-name", "agentchemist_aloha", "-z", "-0.05"])
    bridge = Node(
        package="ros_gz_bridge", executable="parameter_bridge", output="screen",
        parameters=[{"config_file": common.share("config", "gz_bridge.yaml"), "use_sim_time": True}])

    # The gz_ros2_control plugin starts the controller manager when the robot is spawned.
    broadcaster_spawner = Node(
        package="controller_manager", executable="spawner", output="screen",
        parameters=[{"use_sim_time": True}],
        arguments=["joint_state_broadcaster", "--controller-manager", "/controller_manager"])
    motion_spawner = Node(
        package="controller_manager", executable="spawner", output="screen",
        parameters=[{"use_sim_time": True}],
        arguments=[*MOTION_CONTROLLERS, "--controller-manager", "/controller_manager"])
    spawn_chain = [
        RegisterEventHandler(OnProcessExit(target_action=spawn_robot, on_exit=[broadcaster_spawner])),
        RegisterEventHandler(OnProcessExit(target_action=broadcaster_spawner, on_exit=[motion_spawner])),
    ]

    # Gazebo owns /clock and /joint_states; the twin follows the clock and supplies only the chemistry.
    chemistry = common.agentchemist_node(
        "lab_sim", use_sim_time=True,
        overrides={"scenario": common.text("scenario"), "publish_clock": False,
                   "publish_joint_states": False})

    return LaunchDescription([
        *arguments,
        common.config_environment(),
        gazebo_gui,
        gazebo_server,
        bridge,
        robot_state_publisher,
        spawn_robot,
        *spawn_chain,
        chemistry,
        *common.agent_nodes(use_sim_time=True, skip=("vision_supervisor",)),
        common.twin_vision_supervisor(use_sim_time=True),  # on the inventory the scenario's lab believes
        *common.rviz_nodes(use_sim_time=True),
    ])
