"""The real robot: robot model, ros2_control with the topic-based Piper hardware, controllers, agent nodes.

    ros2 launch agentchemist_ros robot.launch.py                       # agents + control stack
    ros2 launch agentchemist_ros robot.launch.py hardware:=mock        # no arms: mock hardware (dry run)
    ros2 launch agentchemist_ros robot.launch.py can_left:=can0 can_right:=can1  # arms on other interfaces
    ros2 launch agentchemist_ros robot.launch.py with_piper_driver:=false  # the drivers run elsewhere
    ros2 launch agentchemist_ros robot.launch.py camera_driver:=realsense ph_dialect:=hanna_ras
    agentchemist doctor                                                # before an experiment: all green?

Hardware path (DESIGN.md): Piper arm <- SocketCAN <- piper_driver (one per arm, ~200 Hz) <->
/<side>_piper/joint_states and /<side>_piper/joint_commands <-> ros2_control (one
joint_state_topic_hardware_interface/JointStateTopicSystem per arm, declared in the URDF) <->
JointTrajectoryController (/<side>_arm_controller) and ForwardCommandController (/<side>_gripper_controller).
joint_state_broadcaster publishes /joint_states. Everything runs on the wall clock (use_sim_time false).

Instruments, cameras, microphones and base (agentchemist_robot_drivers.py): the ph_meter and balance
serial drivers (with_instruments, default on), the three RGB-D cameras through their vendor driver
(camera_driver orbbec | realsense | none; /camera/{front,left_wrist,right_wrist}/color/image_raw, aligned
depth, intrinsics in config/cameras/), one audio_capture per gripper (with_audio_capture; the audio
supervisor listens to both here) and the Tracer base driver (with_base). See docs/robot.md.
"""
import os
import sys

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, GroupAction, RegisterEventHandler
from launch.conditions import IfCondition
from launch.event_handlers import OnProcessExit
from launch.substitutions import LaunchConfiguration, PythonExpression
from launch_ros.actions import Node

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agentchemist_launch_common as common  # noqa: E402  (launch files are loaded by path)
import agentchemist_robot_drivers as drivers  # noqa: E402

SIDES = ("left", "right")
MOTION_CONTROLLERS = ("left_arm_controller", "right_arm_controller",
                      "left_gripper_controller", "right_gripper_controller")


def generate_launch_description():
    arguments = [
        DeclareLaunchArgument(
            "hardware", default_value="topic_based", choices=["topic_based", "mock"],
            description="ros2_control hardware: topic_based (the arms, through piper_driver) or mock "
                        "(mock_components/GenericSystem: controllers and agents without arms)"),
        DeclareLaunchArgument(
            "controllers_file", default_value=common.share("config", "ros2_controllers.yaml"),
            description="ros2_control controller configuration (controller_manager at 200 Hz, 5 controllers)"),
        DeclareLaunchArgument(
            "with_agents", default_value="true", choices=["true", "false"],
            description="Start the seven AgentChemist agent nodes (false: only the robot model and control stack)"),
        # On by default with the topic-based hardware, which is nothing without it (never with hardware:=mock).
        # It enables the motors but moves nothing until the controllers' commands match the arm (startup hold).
        # Needs the CAN interfaces up (docs/robot.md).
        DeclareLaunchArgument(
            "with_piper_driver", default_value="true", choices=["true", "false"],
            description="Start one piper_driver per arm with hardware:=topic_based (SocketCAN can_left / can_right "
                        "<-> /<side>_piper/joint_*); false when the drivers run in another process or host"),
        DeclareLaunchArgument(
            "can_left", default_value="can_left",
            description="SocketCAN interface of the left Piper arm (1 Mbit/s), given to its piper_driver"),
        DeclareLaunchArgument(
            "can_right", default_value="can_right",
            description="SocketCAN interface of the right Piper arm (1 Mbit/s), given to its piper_driver"),
        DeclareLaunchArgument(
            "with_audio_capture", default_value="false", choices=["true", "false"],
            description="capture both grippers' contact microphones (left_audio_capture, right_audio_capture: "
                        "PortAudio devices left_microphone / right_microphone, 48 kHz)"),
        *drivers.microphone_arguments(),
        *drivers.arguments(),
        *common.common_arguments(),
        *common.rviz_arguments(),
    ]

    # The real xacro expands the model; hardware selects the ros2_control plugin of both arms.
    robot_state_publisher = common.robot_state_publisher({"hardware": LaunchConfiguration("hardware")},
                                                         use_sim_time=False)
    # Jazzy's controller_manager reads the model from the robot_description topic (robot_state_publisher's).
    control_node = Node(
        package="controller_manager", executable="ros2_control_node", output="screen",
        parameters=[LaunchConfiguration("controllers_file")],
        remappings=[("~/robot_description", "/robot_description")])
    broadcaster_spawner = Node(
        package="controller_manager", executable="spawner", output="screen",
        arguments=["joint_state_broadcaster", "--controller-manager", "/controller_manager"])
    # Arm and gripper controllers once /joint_states flows (the broadcaster's spawner has exited).
    motion_spawner = Node(
        package="controller_manager", executable="spawner", output="screen",
        arguments=[*MOTION_CONTROLLERS, "--controller-manager", "/controller_manager"])
    motion_after_broadcaster = RegisterEventHandler(
        OnProcessExit(target_action=broadcaster_spawner, on_exit=[motion_spawner]))

    # piper_driver, one per arm (docs/robot.md, "Control path and the piper_driver contract"): publishes
    # sensor_msgs/JointState on `joint_states` (measured <side>_joint1..6 in rad and <side>_gripper in m) and
    # follows `joint_commands` (the topic-based hardware's commands), remapped below to the topics the URDF's
    # ros2_control block names. Its other parameters keep their defaults (config/agentchemist_params.yaml).
    piper_drivers = GroupAction(
        condition=IfCondition(PythonExpression(["'", LaunchConfiguration("with_piper_driver"), "' == 'true' and '",
                                                LaunchConfiguration("hardware"), "' == 'topic_based'"])),
        actions=[
            Node(package=common.PACKAGE, executable="piper_driver", name=f"{side}_piper_driver", output="screen",
                 parameters=[{"side": side, "can_interface": common.text(f"can_{side}"),
                              "can_bustype": "socketcan", "rate_hz": 200.0, "use_sim_time": False}],
                 ros_arguments=["--log-level", LaunchConfiguration("log_level")],
                 remappings=[("joint_states", f"/{side}_piper/joint_states"),
                             ("joint_commands", f"/{side}_piper/joint_commands")])
            for side in SIDES
        ])

    # Both contact microphones, off by default (with_audio_capture:=false): AudioChunk on /audio/<side>_gripper/raw.
    audio_capture = drivers.microphone_nodes()

    agents = GroupAction(
        condition=IfCondition(LaunchConfiguration("with_agents")),
        actions=common.agent_nodes(use_sim_time=False,
                                   overrides={"audio_supervisor": {"sides": ["left", "right"]}}))

    return LaunchDescription([
        *arguments,
        *common.rviz_nodes(use_sim_time=False),
        common.config_environment(),
        robot_state_publisher,
        control_node,
        broadcaster_spawner,
        motion_after_broadcaster,
        piper_drivers,
        audio_capture,
        drivers.instrument_nodes(),
        *drivers.camera_nodes(),
        drivers.base_node(),
        agents,
    ])
