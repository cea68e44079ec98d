"""The agent nodes only (no twin, no robot) on sim time, for replaying a recorded bag.

    ros2 launch agentchemist_ros replay.launch.py bag:=runs/<experiment_id>/bag
    ros2 launch agentchemist_ros replay.launch.py            # then, elsewhere: ros2 bag play <bag> --clock

The bag supplies /clock (rosbag2 `--clock`) and the sensor streams the agents consume; the agents then
run as they did on the robot or in the twin, on the bag's time (use_sim_time true). With `bag` set, this
file plays only the recorded inputs (readings, images, audio, joint states), so the agents' own outputs
are produced afresh instead of being replayed on top of them.
"""
import os
import sys

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, ExecuteProcess
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration, PythonExpression

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agentchemist_launch_common as common  # noqa: E402  (launch files are loaded by path)

# What the agents subscribe to from the world (DESIGN.md topic map); the rest of a bag is their output.
INPUT_TOPICS = (
    "/lab/ph_meter/reading", "/lab/balance/reading", "/joint_states",
    "/camera/front/color/image_raw", "/camera/left_wrist/color/image_raw", "/camera/right_wrist/color/image_raw",
    "/audio/left_gripper/raw", "/audio/right_gripper/raw",
)


def generate_launch_description():
    arguments = [
        DeclareLaunchArgument(
            "bag", default_value="",
            description="rosbag2 folder to play with --clock ('' = play it yourself with ros2 bag play --clock)"),
        DeclareLaunchArgument(
            "rate", default_value="1.0",
            description="Playback rate of the bag (sim seconds per wall second)"),
        *common.common_arguments(),
        *common.rviz_arguments(),
    ]
    play = ExecuteProcess(
        cmd=["ros2", "bag", "play", LaunchConfiguration("bag"), "--clock", "--rate", LaunchConfiguration("rate"),
             "--topics", *INPUT_TOPICS],
        output="screen",
        condition=IfCondition(PythonExpression(["'", LaunchConfiguration("bag"), "' != ''"])))
    return LaunchDescription([
        *arguments,
        *common.rviz_nodes(use_sim_time=True),
        common.config_environment(),
        *common.agent_nodes(use_sim_time=True),
        play,
    ])
