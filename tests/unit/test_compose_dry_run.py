"""A dry run of docker/compose.yaml (issue 39, defect 3): every service's command, with the environment's
defaults, evaluated against the launch files, and what it would start checked against its image.

Each `ros2 launch agentchemist_ros FILE a:=b ...` of a service's script is run on the launch API stand-ins
of test_robot_files with those arguments: every argument is declared and within its choices, the
conditions are evaluated, and every node that would start comes from agentchemist_ros (a console script)
or from a ROS package the service's Dockerfile installs; the files the launch files open in
share/agentchemist_ros (config/, launch/, urdf/, worlds/) are copied into the image. Before the fix the
robot service started orbbec_camera_node, which Dockerfile.robot does not install (the container restarted
in a loop), and neither image copied worlds/."""
import re
import shlex

import yaml

from tests.conftest import REPO
from tests.unit.test_docker_files import DOCKER, apt_packages, console_scripts, instructions
from tests.unit.test_robot_files import launch_api, run_launch_file  # noqa: F401

# ROS package a launch file starts -> the apt package that installs it; None: no Jazzy release
NODE_PACKAGES = {"robot_state_publisher": "ros-jazzy-robot-state-publisher",
                 "controller_manager": "ros-jazzy-ros2-control", "rviz2": "ros-jazzy-rviz2",
                 "ros_gz_sim": "ros-jazzy-ros-gz", "ros_gz_bridge": "ros-jazzy-ros-gz",
                 "orbbec_camera": "ros-jazzy-orbbec-camera", "realsense2_camera": "ros-jazzy-realsense2-camera",
                 "tracer_base": None}
SHARED_TREES = ("config", "launch", "urdf", "worlds")


def expand_env(text: str) -> str:
    """${VAR:-default} -> default, ${VAR:?message} -> VAR (compose with nothing set but the required)."""
    text = re.sub(r"\$\{(\w+):-([^}]*)\}", r"\2", text)
    return re.sub(r"\$\{(\w+):\?[^}]*\}", r"\1", text)


def launch_commands(script: str) -> list[tuple[str, dict[str, str]]]:
    """(launch file, {argument: value}) of every `ros2 launch agentchemist_ros` in a service's script."""
    joined = expand_env(script.replace("\\\n", " "))
    out = []
    for line in joined.splitlines():
        words = shlex.split(line.split("#", 1)[0].replace("&", " "))
        if words[:3] == ["ros2", "launch", "agentchemist_ros"]:
            out.append((words[3], dict(w.split(":=", 1) for w in words[4:] if ":=" in w)))
    return out


def _text(part, configurations: dict) -> str:
    if isinstance(part, str):
        return part
    if type(part).__name__ == "LaunchConfiguration":
        return configurations[part.fields["variable_name"]]
    if type(part).__name__ == "PythonExpression":
        return str(eval("".join(_text(p, configurations) for p in part.fields["expression"])))  # noqa: S307
    raise AssertionError(f"cannot evaluate {part!r}")


def holds(condition, configurations: dict) -> bool:
    predicate = condition.fields["predicate_expression"]
    parts = predicate if isinstance(predicate, (list, tuple)) else [predicate]
    value = "".join(_text(p, configurations) for p in parts).strip().lower() in ("true", "1")
    return value if type(condition).__name__ == "IfCondition" else not value


def dry_run_problems(service: str, dockerfile_name: str, filename: str, arguments: dict) -> list[str]:
    summary = run_launch_file(filename, **arguments)
    problems = []
    declared = summary["args"]
    for name, value in arguments.items():
        if name not in declared:
            problems.append(f"{service}: {filename} declares no argument {name}")
        elif declared[name].fields.get("choices") and value not in declared[name].fields["choices"]:
            problems.append(f"{service}: {name}:={value} is not one of {declared[name].fields['choices']}")
    configurations = {n: a.fields["default_value"] for n, a in declared.items()} | arguments
    installed = set(apt_packages(dockerfile_name.removeprefix("docker/")))
    scripts = console_scripts()
    for node, guard in summary["nodes"]:
        if not all(holds(c, configurations) for c in guard):
            continue
        package, executable = node.fields["package"], node.fields["executable"]
        if package == "agentchemist_ros":
            if executable not in scripts:
                problems.append(f"{service}: {executable} is not a console script")
            continue
        apt = NODE_PACKAGES.get(package, f"unknown: {package}")
        if apt is None or apt not in installed:
            problems.append(f"{service}: starts {package}/{executable}, which {dockerfile_name} does not install")
    copied = {a.split()[0].rstrip("/") for w, a in instructions(REPO / dockerfile_name) if w == "COPY"}
    problems += [f"{service}: {dockerfile_name} does not copy {t}/" for t in SHARED_TREES if t not in copied]
    return problems


def test_every_compose_service_command_runs_against_the_launch_files_and_its_image(launch_api):  # noqa: F811
    services = yaml.safe_load((DOCKER / "compose.yaml").read_text())["services"]
    problems, launched = [], 0
    for name, svc in services.items():
        for filename, arguments in launch_commands(svc["command"][-1]):
            launched += 1
            problems += dry_run_problems(name, svc["build"]["dockerfile"], filename, arguments)
    assert launched >= 1
    assert problems == []


def test_the_dry_run_sees_a_camera_driver_the_image_lacks_and_a_missing_world(launch_api):  # noqa: F811
    problems = dry_run_problems("robot", "docker/Dockerfile.robot", "robot.launch.py",
                                {"with_agents": "false", "camera_driver": "orbbec"})
    assert [p for p in problems if "orbbec_camera" in p] != []
    assert dry_run_problems("robot", "docker/Dockerfile.robot", "robot.launch.py",
                            {"with_base": "true", "camera_driver": "none"}) == [
        "robot: starts tracer_base/tracer_base_node, which docker/Dockerfile.robot does not install"]
    assert launch_commands("ros2 launch agentchemist_ros robot.launch.py a:=${X:-1} \\\n    b:=2 &\n") == [
        ("robot.launch.py", {"a": "1", "b": "2"})]
