# AgentChemist ROS: the robot image (ROS 2 Jazzy on Ubuntu 24.04): the agent nodes, ros2_control with the
# topic-based hardware interface and the controllers, xacro and robot_state_publisher, SocketCAN tools.
# Build from the repository root (BuildKit reads Dockerfile.robot.dockerignore beside this file):
#   docker build -f docker/Dockerfile.robot -t agentchemist:robot .
# Run on the robot (host network for DDS and CAN; see docker/README.md):
#   docker run --rm -it --network host agentchemist:robot ros2 launch agentchemist_ros robot.launch.py
FROM ros:jazzy

SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ENV DEBIAN_FRONTEND=noninteractive

# ROS packages from the ROS apt repository (the base image has it configured). The topic-based system
# (joint_state_topic_hardware_interface/JointStateTopicSystem) is packaged as
# ros-jazzy-joint-state-topic-hardware-interface (ros-controls/topic_based_hardware_interfaces).
RUN apt-get update && apt-get install -y --no-install-recommends \
        build-essential cmake python3-dev python3-venv python3-pip \
        can-utils iproute2 libportaudio2 libsndfile1 \
        ros-jazzy-ros2-control \
        ros-jazzy-ros2-controllers \
        ros-jazzy-joint-state-topic-hardware-interface \
        ros-jazzy-xacro \
        ros-jazzy-robot-state-publisher \
        ros-jazzy-rosbag2 \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /opt/agentchemist

# Python dependencies of the core, pinned by requirements/constraints.txt, in a venv that also sees the
# distro's packages (rclpy and the message packages come from apt). The nodes run on the system python3
# (colcon writes their shebang), which finds the venv's packages through PYTHONPATH.
COPY requirements/ requirements/
RUN python3 -m venv --system-site-packages .venv \
    && .venv/bin/pip install --no-cache-dir -c requirements/constraints.txt -r requirements/core.txt \
    && ln -s "$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" /opt/agentchemist/pysite
ENV PYTHONPATH=/opt/agentchemist/pysite

COPY pyproject.toml README.md ./
COPY src/ src/
RUN .venv/bin/pip install --no-cache-dir --no-deps .

# The ROS packages; launch/, config/ and urdf/ are installed into share/agentchemist_ros by setup.py.
COPY config/ config/
COPY launch/ launch/
COPY urdf/ urdf/
COPY ros2_ws/src/ ros2_ws/src/
RUN source /opt/ros/jazzy/setup.bash \
    && cd ros2_ws \
    && colcon build --merge-install --event-handlers console_direct+ \
         --cmake-args -DBUILD_TESTING=OFF -DPython3_EXECUTABLE=/usr/bin/python3

COPY docker/entrypoint.sh /opt/agentchemist/entrypoint.sh
ENV AGENTCHEMIST_CONFIG_DIR=/opt/agentchemist/config
ENTRYPOINT ["/opt/agentchemist/entrypoint.sh"]
CMD ["bash"]
