#!/bin/bash
# Entry point of the AgentChemist images: the ROS 2 Jazzy environment, the Python dependencies and the
# built workspace, then the given command (default: bash).
set -e
# shellcheck source=/dev/null
source /opt/ros/jazzy/setup.bash
# shellcheck source=/dev/null
source /opt/agentchemist/ros2_ws/install/setup.bash
export AGENTCHEMIST_CONFIG_DIR="${AGENTCHEMIST_CONFIG_DIR:-/opt/agentchemist/config}"
exec "$@"
