"""ament_python package of the AgentChemist nodes.

launch/, config/ and urdf/ live at the repository root (one copy for the robot, Gazebo and the twin)
and are installed into share/agentchemist_ros so that `ros2 launch agentchemist_ros <file>` works.
"""
import os

from setuptools import find_packages, setup

PACKAGE = "agentchemist_ros"
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", "..", ".."))


def tree(top):
    """data_files entries that mirror REPO/top into share/PACKAGE/top."""
    entries = []
    for dirpath, _dirs, files in os.walk(os.path.join(REPO, top)):
        rel = os.path.relpath(dirpath, REPO)
        paths = [os.path.relpath(os.path.join(dirpath, f), HERE) for f in sorted(files)
                 if not f.endswith(".pyc")]
        if paths:
            entries.append((os.path.join("share", PACKAGE, rel), paths))
    return entries


NODES = {
    "planner": "planner_node",
    "vision_supervisor": "vision_supervisor_node",
    "audio_supervisor": "audio_supervisor_node",
    "action_policy": "action_policy_node",
    "dispenser_controller": "dispenser_controller_node",
    "recorder": "recorder_node",
    "summarizer": "summarizer_node",
    "lab_sim": "lab_sim_node",
    "wav_source": "wav_source_node",
    "audio_capture": "audio_capture_node",
    "piper_driver": "piper_driver_node",
    "status_overlay": "status_overlay_node",
}

setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(exclude=["test"]),
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + PACKAGE]),
        ("share/" + PACKAGE, ["package.xml"]),
    ] + tree("launch") + tree("config") + tree("urdf") + tree("worlds"),
    install_requires=["setuptools"],
    zip_safe=True,
    maintainer="AgentChemist maintainers",
    maintainer_email="maintainers@agentchemist.dev",
    description="rclpy nodes of the AgentChemist graph",
    license="Apache-2.0",
    entry_points={
        "console_scripts": [f"{name} = {PACKAGE}.{module}:main" for name, module in NODES.items()]
        + ["demo = agentchemist_ros.tools.demo:main"],
    },
)
