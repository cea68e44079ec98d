# AgentChemist ROS: the robot image (ROS 2 Jazzy on Ubuntu 24.04): the robot-side nodes (piper_driver,
# instruments, dispenser, recorder), ros2_control with the topic-based hardware interface and the
# controllers, xacro and robot_state_publisher, SocketCAN tools. Torch is the CPU build by default.
# Build from the repository root (BuildKit reads Dockerfile.robot.dockerignore beside this file):
#   docker build -f docker/Dockerfile.robot -t agentchemist:robot .
#   docker build -f docker/Dockerfile.robot --build-arg TORCH_INDEX=https://download.pytorch.org/whl/cu128 ...
# Run on the robot (host network for DDS and CAN; see docker/README.md and docker/compose.yaml):
#   docker run --rm -it --network host agentchemist:robot ros2 launch agentchemist_ros robot.launch.py
FROM ros:jazzy

SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ENV DEBIAN_FRONTEND=noninteractive
# The PyTorch wheel index torch comes from: .../whl/cpu (default) or a CUDA one (.../whl/cu128, ...)
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu

# ROS packages from the ROS apt repository (the base image has it configured). The topic-based system
# (joint_state_topic_hardware_interface/JointStateTopicSystem) is packaged as
# ros-jazzy-joint-state-topic-hardware-interface (ros-controls/topic_based_hardware_interfaces).
# numpy and OpenCV come from apt, as the ROS packages built against them expect (cv_bridge, rosbag2_py).
RUN apt-get update && apt-get install -y --no-install-recommends \
        build-essential cmake python3-dev python3-venv python3-pip \
        python3-numpy python3-opencv \
        can-utils iproute2 libportaudio2 libsndfile1 \
        ros-jazzy-ros2-control \
        ros-jazzy-ros2-controllers \
        ros-jazzy-joint-state-topic-hardware-interface \
        ros-jazzy-xacro \
        ros-jazzy-robot-state-publisher \
        ros-jazzy-rosbag2 \
        ros-jazzy-diagnostic-msgs \
        ros-jazzy-rmw-fastrtps-cpp \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /opt/agentchemist

# Python dependencies of the core in a venv that also sees the distro's packages (rclpy, messages, numpy,
# OpenCV from apt). docker/venv_requirements.sh derives the image's lists from requirements/: numpy and
# opencv-python-headless are left out and numpy is pinned to apt's, so the venv never holds a second
# numpy in front of the one the ROS packages were built against; torch comes from TORCH_INDEX.
COPY requirements/ requirements/
COPY docker/venv_requirements.sh docker/venv_requirements.sh
RUN bash docker/venv_requirements.sh requirements /tmp/venv-reqs \
    && python3 -m venv --system-site-packages .venv \
    && .venv/bin/pip install --no-cache-dir --index-url "${TORCH_INDEX}" "$(cat /tmp/venv-reqs/torch.txt)" \
    && .venv/bin/pip install --no-cache-dir -c /tmp/venv-reqs/constraints.txt -r /tmp/venv-reqs/core.txt \
    && ln -s "$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" /opt/agentchemist/pysite
ENV PYTHONPATH=/opt/agentchemist/pysite

COPY pyproject.toml README.md ./
COPY src/ src/
RUN .venv/bin/pip install --no-cache-dir --no-deps .

# The ROS packages; launch/, config/, urdf/ and worlds/ are installed into share/agentchemist_ros by
# setup.py (gazebo.launch.py opens worlds/lab.sdf).
COPY config/ config/
COPY launch/ launch/
COPY urdf/ urdf/
COPY worlds/ worlds/
COPY ros2_ws/src/ ros2_ws/src/
WORKDIR /opt/agentchemist/ros2_ws
RUN . /opt/ros/jazzy/setup.bash \
    && colcon build --merge-install --event-handlers console_direct+ \
         --cmake-args -DBUILD_TESTING=OFF -DPython3_EXECUTABLE=/usr/bin/python3
WORKDIR /opt/agentchemist

# Fail the build if anything in the venv shadows apt's numpy or OpenCV for the nodes' python3.
COPY docker/check_python_env.py docker/check_python_env.py
RUN . /opt/ros/jazzy/setup.bash && . ros2_ws/install/setup.bash && python3 docker/check_python_env.py

COPY docker/entrypoint.sh /opt/agentchemist/entrypoint.sh
ENV AGENTCHEMIST_CONFIG_DIR=/opt/agentchemist/config
ENTRYPOINT ["/opt/agentchemist/entrypoint.sh"]
CMD ["bash"]
