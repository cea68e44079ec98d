"""The robot-side files (URDF, ros2_control and node parameter YAML, launch files) agree with the code.

`launch`, `launch_ros`, ros2_control and Gazebo are not installed here, so:
- the URDF is read with xml.etree; the xacro is expanded by the real xacro (2.1.1, from PyPI) and the
  checked-in plain URDF must equal what `make urdf` (the xacro command) writes now;
- launch files are read with ast, then run against small stand-ins of the launch API whose constructors
  have the real (Jazzy) signatures, so a misspelt keyword, an undeclared LaunchConfiguration or an
  unknown executable fails here rather than on the robot;
- node parameters are read from the node sources with ast (`declare(self, "<name>", default, ...)`, and
  `declare_config(self, ConfigClass)`: the class's param() fields).
Each checker returns a list of problems; one test per checker feeds it a broken input to show it can fail.
"""
import ast
import importlib.util
import inspect
import shutil
import subprocess
import sys
import types
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
import xacro
import yaml

from agentchemist.workcell.robot import (ARM_JOINT_LIMITS_RAD, GRIPPER_RANGE_M, JOINT_NAMES, camera_body_frame,
                                         camera_optical_frame)
from tests.conftest import REPO
from tests.unit.node_params import config_call_specs, ros_default

URDF_DIR = REPO / "urdf"
LAUNCH_DIR = REPO / "launch"
NODES_DIR = REPO / "ros2_ws" / "src" / "agentchemist_ros" / "agentchemist_ros"
PARAMS_FILE = REPO / "config" / "agentchemist_params.yaml"
CONTROLLERS_FILE = REPO / "config" / "ros2_controllers.yaml"
LAUNCH_FILES = ("twin.launch.py", "robot.launch.py", "gazebo.launch.py", "replay.launch.py")
AGENTS = {"planner", "vision_supervisor", "audio_supervisor", "action_policy", "dispenser_controller",
          "recorder", "summarizer"}
# Nodes the robot launch starts only on request, behind an argument that defaults to false: hardware drivers
# and nodes named before they exist. piper_driver is on by default with the topic-based hardware (checked in
# test_robot_launch_starts_the_control_stack): that hardware has nothing to talk to without it.
PENDING_EXECUTABLES = {"audio_capture"}


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


XACRO_FILE = URDF_DIR / "agentchemist_aloha.urdf.xacro"


def expand_xacro(**args: str) -> str:
    """The robot model expanded by xacro's Python API with ``args`` (name:=value mappings)."""
    return xacro.process_file(str(XACRO_FILE), mappings=args).toprettyxml(indent="  ")


# ============================================================================================ URDF
def expected_limits() -> dict[str, tuple[float, float]]:
    """The bench's joint limits (Piper SDK software limits, agentchemist.workcell.robot) by joint name."""
    limits = {}
    for name in JOINT_NAMES:
        side, joint = name.split("_", 1)
        limits[name] = GRIPPER_RANGE_M if joint == "gripper" else ARM_JOINT_LIMITS_RAD[int(joint[-1]) - 1]
    return limits


def urdf_problems(root: ET.Element) -> list[str]:
    """Structure, limits, inertias and ros2_control of the robot model."""
    problems = []
    links = {link.get("name"): link for link in root.findall("link")}
    joints = {joint.get("name"): joint for joint in root.findall("joint")}
    parents = {}
    for name, joint in joints.items():
        parent, child = joint.find("parent").get("link"), joint.find("child").get("link")
        for link in (parent, child):
            if link not in links:
                problems.append(f"joint {name} names unknown link {link}")
        if child in parents:
            problems.append(f"link {child} has two parent joints")
        parents[child] = parent
    roots = set(links) - set(parents)
    if len(roots) != 1:
        problems.append(f"expected one root link, found {sorted(roots)}")
    for link in links:  # every link reaches the root without a cycle
        seen, cur = set(), link
        while cur in parents:
            if cur in seen:
                problems.append(f"cycle through {cur}")
                break
            seen.add(cur)
            cur = parents[cur]
    for name, link in links.items():
        inertial = link.find("inertial")
        if inertial is None:
            continue
        i = {k: float(v) for k, v in inertial.find("inertia").attrib.items()}
        mass = float(inertial.find("mass").get("value"))
        principal = (i["ixx"], i["iyy"], i["izz"])
        if mass <= 0 or min(principal) <= 0 or any(2 * p > sum(principal) + 1e-15 for p in principal):
            problems.append(f"link {name}: mass {mass} / inertia {principal} is not physical")
    for name, (lo, hi) in expected_limits().items():
        joint = joints.get(name)
        if joint is None:
            problems.append(f"joint {name} missing")
            continue
        kind = "prismatic" if name.endswith("gripper") else "revolute"
        if joint.get("type") != kind:
            problems.append(f"joint {name} is {joint.get('type')}, expected {kind}")
        limit = joint.find("limit")
        got = (float(limit.get("lower")), float(limit.get("upper")))
        if got != pytest.approx((lo, hi), abs=1e-9):
            problems.append(f"joint {name} limits {got} != {(lo, hi)}")
        if joint.find("mimic") is not None:
            problems.append(f"commanded joint {name} must not be a mimic joint")
    for name, joint in joints.items():
        mimic = joint.find("mimic")
        if mimic is not None and mimic.get("joint") not in joints:
            problems.append(f"mimic joint {name} follows unknown joint {mimic.get('joint')}")
    commanded = {}
    for system in root.findall("ros2_control"):
        for joint in system.findall("joint"):
            name = joint.get("name")
            if name not in joints:
                problems.append(f"ros2_control {system.get('name')} names unknown joint {name}")
            for ci in joint.findall("command_interface"):
                commanded.setdefault(name, set()).add(ci.get("name"))
                params = {p.get("name"): float(p.text) for p in ci.findall("param")}
                lim = joints[name].find("limit") if name in joints else None
                if lim is not None and (params.get("min"), params.get("max")) != (
                        float(lim.get("lower")), float(lim.get("upper"))):
                    problems.append(f"ros2_control {name} command range {params} differs from the joint limit")
    if set(commanded) != set(JOINT_NAMES):
        problems.append(f"ros2_control commands {sorted(commanded)}, expected {sorted(JOINT_NAMES)}")
    if any(kinds != {"position"} for kinds in commanded.values()):
        problems.append(f"every commanded joint takes a position command: {commanded}")
    return problems


def _root(text: str) -> ET.Element:
    return ET.fromstring(text.encode())


def test_plain_urdf_has_the_14_joints_limits_and_ros2_control():
    root = ET.parse(URDF_DIR / "agentchemist_aloha.urdf").getroot()
    assert urdf_problems(root) == []
    systems = root.findall("ros2_control")
    assert [s.get("name") for s in systems] == ["left_piper", "right_piper"]
    for system, side in zip(systems, ("left", "right")):
        hw = system.find("hardware")
        assert hw.find("plugin").text == "joint_state_topic_hardware_interface/JointStateTopicSystem"
        params = {p.get("name"): p.text for p in hw.findall("param")}
        assert params == {"joint_commands_topic": f"/{side}_piper/joint_commands",
                          "joint_states_topic": f"/{side}_piper/joint_states",
                          # half a gripper count (1e-6 m): every 0.001 mm step is published
                          "trigger_joint_command_threshold": "5e-7"}


def test_gripper_joint_is_the_opening_between_symmetric_jaws():
    root = ET.parse(URDF_DIR / "agentchemist_aloha.urdf").getroot()
    joints = {j.get("name"): j for j in root.findall("joint")}
    for side in ("left", "right"):
        gripper, centering = joints[f"{side}_gripper"], joints[f"{side}_gripper_centering"]
        # finger a rides on finger b (the opening); finger b moves by -opening/2 (centring mimic).
        assert gripper.find("parent").get("link") == centering.find("child").get("link") == f"{side}_finger_b"
        assert gripper.find("axis").get("xyz") == centering.find("axis").get("xyz")
        mimic = centering.find("mimic")
        assert (mimic.get("joint"), float(mimic.get("multiplier"))) == (f"{side}_gripper", -0.5)


def test_camera_and_microphone_frames_match_the_names_the_twin_stamps():
    root = ET.parse(URDF_DIR / "agentchemist_aloha.urdf").getroot()
    links = {link.get("name") for link in root.findall("link")}
    topics = _load(NODES_DIR / "common" / "topics.py", "agentchemist_topics")
    lab_sim = (NODES_DIR / "lab_sim_node.py").read_text()
    assert 'frame_id=camera_optical_frame(name)' in lab_sim and 'frame_id=f"{side}_gripper_mic"' in lab_sim
    for camera in topics.CAMERAS:
        assert {camera_optical_frame(camera), camera_body_frame(camera)} <= links
    for side in topics.SIDES:
        assert f"{side}_gripper_mic" in links


# The vendor drivers' frame names for camera_name <name> (realsense-ros 4.x, OrbbecSDK_ROS2): body <name>_link,
# colour optical frame <name>_color_optical_frame (what the image headers name). With publish_tf false
# they publish no TF of their own, so the URDF is the only parent of these frames.
DRIVER_IMAGE_FRAME = "{}_color_optical_frame"


def tf_tree_problems(root: ET.Element, image_frames: list[str]) -> list[str]:
    """REP-105/REP-103 checks of the TF tree robot_state_publisher builds from the URDF, joined with the
    frames the camera drivers stamp: one tree (one root), every image frame in it, each optical frame
    z forward (its body's x), x right (body -y), y down (body -z)."""
    problems = []
    joints = root.findall("joint")
    parent = {j.find("child").get("link"): j for j in joints}
    links = {link.get("name") for link in root.findall("link")}
    roots = sorted(links - set(parent))
    if len(roots) != 1:
        problems.append(f"TF is not one tree: roots {roots}")
    for frame in image_frames:
        if frame not in links:
            problems.append(f"image frame {frame} is not in the TF tree")
            continue
        joint = parent[frame]
        body = joint.find("parent").get("link")
        rpy = [float(v) for v in joint.find("origin").get("rpy").split()]
        rotation = _rpy_matrix(*rpy)  # columns: the optical frame's axes in the body frame
        expected = np.array([[0, 0, 1], [-1, 0, 0], [0, -1, 0]], dtype=float)  # x -> -y, y -> -z, z -> x
        if not np.allclose(rotation, expected, atol=1e-6):
            problems.append(f"{frame}: not REP-103's optical convention relative to {body}")
    return problems


def _rpy_matrix(r: float, p: float, y: float) -> np.ndarray:
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def test_tf_tree_of_the_urdf_and_the_camera_drivers_frames_is_one_tree_with_optical_frames():
    root = ET.parse(URDF_DIR / "agentchemist_aloha.urdf").getroot()
    frames = [DRIVER_IMAGE_FRAME.format(c) for c in ("front", "left_wrist", "right_wrist")]
    assert tf_tree_problems(root, frames) == []
    drivers = (LAUNCH_DIR / "agentchemist_robot_drivers.py").read_text()
    assert drivers.count('"publish_tf": False') == 2      # orbbec and realsense leave the camera frames to the URDF


def test_tf_tree_checker_catches_a_foreign_frame_and_a_wrong_optical_rotation():
    root = ET.parse(URDF_DIR / "agentchemist_aloha.urdf").getroot()
    assert tf_tree_problems(root, ["front_camera"]) == ["image frame front_camera is not in the TF tree"]
    joint = next(j for j in root.findall("joint") if j.find("child").get("link") == "front_color_optical_frame")
    joint.find("origin").set("rpy", "0 0 0")
    assert tf_tree_problems(root, ["front_color_optical_frame"]) == [
        "front_color_optical_frame: not REP-103's optical convention relative to front_link"]


@pytest.mark.parametrize("hardware", ["topic_based", "mock", "gazebo"])
def test_every_hardware_variant_expands_to_a_valid_model(hardware):
    text = expand_xacro(hardware=hardware, controllers_file="/x/ros2_controllers.yaml")
    root = _root(text)
    assert urdf_problems(root) == []
    plugins = {s.find("hardware/plugin").text for s in root.findall("ros2_control")}
    assert plugins == {{"topic_based": "joint_state_topic_hardware_interface/JointStateTopicSystem",
                        "mock": "mock_components/GenericSystem",
                        "gazebo": "gz_ros2_control/GazeboSimSystem"}[hardware]}
    gz = root.findall("gazebo/plugin")
    if hardware == "gazebo":
        assert [p.find("parameters").text for p in gz if p.get("filename") == "gz_ros2_control-system"] == [
            "/x/ros2_controllers.yaml"]
        drive = next(p for p in gz if p.get("filename") == "gz-sim-diff-drive-system")
        assert drive.findtext("topic") == "/cmd_vel" and drive.findtext("odom_topic") == "/odom"
        joints = {j.get("name"): j for j in root.findall("joint")}
        for wheel in (drive.findtext("left_joint"), drive.findtext("right_joint")):
            assert joints[wheel].get("type") == "continuous"
        sensors = {g.get("reference"): g.find("sensor") for g in root.findall("gazebo") if g.find("sensor") is not None}
        assert set(sensors) == {f"{c}_link" for c in ("front", "left_wrist", "right_wrist")}
        for link, sensor in sensors.items():
            name = link[:-len("_link")]
            assert sensor.get("type") == "rgbd_camera" and sensor.findtext("topic") == f"camera/{name}"
            assert sensor.findtext("gz_frame_id") == f"{name}_color_optical_frame"
            assert (sensor.findtext("camera/image/width"), sensor.findtext("camera/image/height")) == ("640", "480")
        state_only = {j.get("name") for s in root.findall("ros2_control") for j in s.findall("joint")
                      if j.find("command_interface") is None}
        assert state_only == {"left_gripper_centering", "right_gripper_centering"}
    else:
        assert gz == []


def test_checked_in_urdf_is_what_xacro_writes_now(tmp_path):
    """`make urdf` runs the xacro command in urdf/; running it again must reproduce the checked-in file."""
    command = shutil.which("xacro") or str(Path(sys.executable).parent / "xacro")
    out = tmp_path / "fresh.urdf"
    subprocess.run([command, XACRO_FILE.name, "-o", str(out)], cwd=URDF_DIR, check=True, timeout=60)
    assert (URDF_DIR / "agentchemist_aloha.urdf").read_text() == out.read_text(), "stale URDF: run make urdf"


def test_urdf_checkers_catch_broken_models():
    good = (URDF_DIR / "agentchemist_aloha.urdf").read_text()
    wrong_limit = good.replace('lower="-2.967"', 'lower="-3.1"', 1)
    assert any("limits" in p for p in urdf_problems(_root(wrong_limit)))
    no_control = _root(good)
    no_control.remove(no_control.findall("ros2_control")[1])
    assert any("ros2_control commands" in p for p in urdf_problems(no_control))
    with pytest.raises(xacro.XacroException, match="topic_based, gazebo or mock"):
        expand_xacro(hardware="kinematic")
    with pytest.raises(xacro.XacroException, match="controllers_file"):
        expand_xacro(hardware="gazebo")


# ============================================================================================ node parameters
def _default_value(node: ast.expr, local_objects: dict):
    try:
        return ast.literal_eval(node)
    except ValueError:
        pass
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in local_objects:
        module, cls = local_objects[node.value.id]  # e.g. d = DispenserConfig(); default d.rate_mm_s
        return getattr(getattr(importlib.import_module(module), cls)(), node.attr)
    raise ValueError(f"cannot read the default {ast.dump(node)}")


def declared_parameters(source: str) -> tuple[str, dict]:
    """(node name, {parameter: default}) from a node module's `declare(self, "<name>", default, ...)` calls."""
    tree = ast.parse(source)
    imports = {alias.asname or alias.name: node.module for node in ast.walk(tree)
               if isinstance(node, ast.ImportFrom) for alias in node.names}
    local_objects = {}
    for node in ast.walk(tree):  # name = ImportedClass(): defaults may read name.<field>
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name)
                and not node.value.args and not node.value.keywords and node.value.func.id in imports):
            local_objects[node.targets[0].id] = (imports[node.value.func.id], node.value.func.id)
    node_name, params = None, {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if (isinstance(func, ast.Attribute) and func.attr == "__init__" and isinstance(func.value, ast.Call)
                and isinstance(func.value.func, ast.Name) and func.value.func.id == "super" and node.args
                and isinstance(node.args[0], ast.Constant)):
            node_name = node.args[0].value
        if (isinstance(func, ast.Name) and func.id == "declare" and len(node.args) >= 3
                and isinstance(node.args[0], ast.Name) and node.args[0].id in ("self", "node")
                and isinstance(node.args[1], ast.Constant)):
            params[node.args[1].value] = _default_value(node.args[2], local_objects)
        if isinstance(func, ast.Name) and func.id == "declare_config":
            # Parameters from a config dataclass's param() fields (read as tests/unit/node_params.py does).
            params.update((s.name, ros_default(s)) for s in config_call_specs(node, imports))
        if isinstance(func, ast.Name) and func.id in SHARED_DECLARERS:
            # Parameters declared for the node by a shared helper in agentchemist_ros/common/.
            params.update(declared_parameters((NODES_DIR / "common" / SHARED_DECLARERS[func.id]).read_text())[1])
    return node_name, params


#: helpers in agentchemist_ros/common that declare parameters on the node they are given
SHARED_DECLARERS = {"declare_calibration": "calibration.py", "acknowledge_clock": "clock_acks.py",
                    "declared_backend": "scene_service.py"}


def _type_name(value) -> str:
    if isinstance(value, list):
        return "list[" + ",".join(sorted({type(v).__name__ for v in value})) + "]"
    return type(value).__name__


def parameter_problems(declared: dict[str, dict], params_yaml: dict) -> list[str]:
    """YAML blocks vs declarations: same nodes, same parameter names, same types, same defaults."""
    problems = []
    for node in sorted(set(params_yaml) - set(declared)):
        problems.append(f"{node}: in the YAML but no node has that name")
    for node, params in sorted(declared.items()):
        block = (params_yaml.get(node) or {}).get("ros__parameters")
        if block is None:
            problems.append(f"{node}: no ros__parameters block")
            continue
        for name in sorted(set(block) - set(params)):
            problems.append(f"{node}.{name}: in the YAML but not declared by the node")
        for name in sorted(set(params) - set(block)):
            problems.append(f"{node}.{name}: declared but missing from the YAML")
        for name in sorted(set(params) & set(block)):
            if _type_name(block[name]) != _type_name(params[name]):
                problems.append(f"{node}.{name}: YAML type {_type_name(block[name])} != "
                                f"declared {_type_name(params[name])}")
            elif block[name] != params[name]:
                problems.append(f"{node}.{name}: YAML {block[name]!r} != declared default {params[name]!r}")
    return problems


def all_declared_parameters() -> dict[str, dict]:
    out = {}
    for path in sorted(NODES_DIR.glob("*_node.py")):
        name, params = declared_parameters(path.read_text())
        assert name and params, f"no node name or parameters found in {path.name}"
        out[name] = params
    return out


def test_params_yaml_names_exactly_the_declared_parameters_with_their_defaults():
    declared = all_declared_parameters()
    assert set(declared) == AGENTS | {"lab_sim", "wav_source", "audio_capture", "piper_driver", "status_overlay",
                                      "ph_meter", "balance"}
    assert parameter_problems(declared, yaml.safe_load(PARAMS_FILE.read_text())) == []


def test_parameter_checker_catches_mismatches():
    source = ('class N(Node):\n    def __init__(self):\n        super().__init__("n")\n'
              '        self.a = declare(self, "a", 1.0, "A (s)")\n        self.c = declare(self, "c", "x", "C")\n')
    declared = {"n": declared_parameters(source)[1]}
    assert declared == {"n": {"a": 1.0, "c": "x"}}
    problems = parameter_problems(declared, {"n": {"ros__parameters": {"a": 1, "b": 2}}, "ghost": {}})
    assert problems == ["ghost: in the YAML but no node has that name", "n.b: in the YAML but not declared by the node",
                        "n.c: declared but missing from the YAML", "n.a: YAML type int != declared float"]


# ============================================================================================ controllers
def controller_problems(controllers: dict, root: ET.Element) -> list[str]:
    """Every controller's joints exist in the URDF and are commanded through ros2_control."""
    problems = []
    manager = controllers["controller_manager"]["ros__parameters"]
    urdf_joints = {j.get("name") for j in root.findall("joint")}
    commanded = {j.get("name") for s in root.findall("ros2_control") for j in s.findall("joint")
                 if j.find("command_interface") is not None}
    for name, spec in manager.items():
        if not isinstance(spec, dict):
            continue
        params = controllers.get(name, {}).get("ros__parameters", {})
        if spec["type"] == "joint_state_broadcaster/JointStateBroadcaster":
            continue
        joints = params.get("joints")
        if not joints:
            problems.append(f"{name}: no joints")
            continue
        for joint in joints:
            if joint not in urdf_joints:
                problems.append(f"{name}: joint {joint} is not in the URDF")
            elif joint not in commanded:
                problems.append(f"{name}: joint {joint} has no ros2_control command interface")
    return problems


def test_controllers_yaml_matches_the_urdf_and_the_topic_map():
    controllers = yaml.safe_load(CONTROLLERS_FILE.read_text())
    root = ET.parse(URDF_DIR / "agentchemist_aloha.urdf").getroot()
    assert controller_problems(controllers, root) == []
    manager = controllers["controller_manager"]["ros__parameters"]
    assert manager["update_rate"] == 200
    types_ = {k: v["type"] for k, v in manager.items() if isinstance(v, dict)}
    jtc, fwd = ("joint_trajectory_controller/JointTrajectoryController",
                "forward_command_controller/ForwardCommandController")
    assert types_ == {"joint_state_broadcaster": "joint_state_broadcaster/JointStateBroadcaster",
                      "left_arm_controller": jtc, "right_arm_controller": jtc,
                      "left_gripper_controller": fwd, "right_gripper_controller": fwd}
    for side in ("left", "right"):
        arm = controllers[f"{side}_arm_controller"]["ros__parameters"]
        assert arm["joints"] == [f"{side}_joint{i}" for i in range(1, 7)]
        assert arm["command_interfaces"] == ["position"]
        gripper = controllers[f"{side}_gripper_controller"]["ros__parameters"]
        assert (gripper["joints"], gripper["interface_name"]) == ([f"{side}_gripper"], "position")


def test_controller_checker_catches_a_joint_the_urdf_lacks():
    controllers = yaml.safe_load(CONTROLLERS_FILE.read_text())
    controllers["left_gripper_controller"]["ros__parameters"]["joints"] = ["left_gripper_finger"]
    root = ET.parse(URDF_DIR / "agentchemist_aloha.urdf").getroot()
    assert controller_problems(controllers, root) == [
        "left_gripper_controller: joint left_gripper_finger is not in the URDF"]


# ============================================================================================ launch files (ast)
def launch_ast_problems(source: str) -> list[str]:
    """generate_launch_description is defined; every DeclareLaunchArgument has a non-empty description."""
    tree = ast.parse(source)
    problems = []
    if not any(isinstance(n, ast.FunctionDef) and n.name == "generate_launch_description" for n in tree.body):
        problems.append("no top-level generate_launch_description()")
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == \
                "DeclareLaunchArgument":
            name = ast.unparse(node.args[0]) if node.args else "?"
            desc = next((kw.value for kw in node.keywords if kw.arg == "description"), None)
            if desc is None:
                problems.append(f"argument {name} has no description")
            elif isinstance(desc, ast.Constant) and not str(desc.value).strip():
                problems.append(f"argument {name} has an empty description")
    return problems


@pytest.mark.parametrize("filename", [*LAUNCH_FILES, "agentchemist_launch_common.py"])
def test_launch_files_parse_and_describe_every_argument(filename):
    problems = launch_ast_problems((LAUNCH_DIR / filename).read_text())
    if filename == "agentchemist_launch_common.py":  # a helper, not a launch file
        problems = [p for p in problems if "generate_launch_description" not in p]
    assert problems == []


def test_launch_ast_checker_catches_a_missing_description():
    source = ("from launch.actions import DeclareLaunchArgument\n"
              "def generate_launch_description():\n    return [DeclareLaunchArgument('x', default_value='1'),\n"
              "            DeclareLaunchArgument('y', description='')]\n")
    assert launch_ast_problems(source) == ["argument 'x' has no description", "argument 'y' has an empty description"]
    assert launch_ast_problems("x = 1\n") == ["no top-level generate_launch_description()"]


# ============================================================================================ launch files (run)
class _Recorded:
    """Base of the launch API stand-ins: keeps the constructor's arguments."""

    def __init__(self, **fields):
        self.fields = fields

    def __repr__(self):
        return f"{type(self).__name__}({self.fields})"


def _stub(name: str, signature: str):
    """A class whose __init__ has the real signature (checked by Python) and records its arguments."""
    namespace: dict = {}
    exec(f"def __init__(self, {signature}):\n    _Recorded.__init__(self, **{{k: v for k, v in locals().items() "
         f"if k != 'self'}})\n", {"_Recorded": _Recorded}, namespace)
    return type(name, (_Recorded,), {"__init__": namespace["__init__"]})


# Keyword arguments the real ExecuteProcess (and so Node) accepts besides its own (Jazzy).
_PROCESS_KW = ("prefix=None, name=None, cwd=None, env=None, additional_env=None, shell=False, sigterm_timeout=None, "
               "sigkill_timeout=None, emulate_tty=False, output='log', output_format=None, log_cmd=False, "
               "on_exit=None, respawn=False, respawn_delay=None, respawn_max_retries=-1, cached_output=False, "
               "condition=None")
LAUNCH_API = {
    "launch": {"LaunchDescription": "initial_entities=None, *, deprecated_reason=None"},
    "launch.actions": {
        "DeclareLaunchArgument": "name, *, default_value=None, description=None, choices=None, condition=None",
        "SetEnvironmentVariable": "name, value, *, condition=None",
        "GroupAction": "actions, *, scoped=True, forwarding=True, launch_configurations=None, condition=None",
        "RegisterEventHandler": "event_handler, *, condition=None",
        "IncludeLaunchDescription": "launch_description_source, *, launch_arguments=None, condition=None",
        "ExecuteProcess": "*, cmd, " + _PROCESS_KW,
        "OpaqueFunction": "*, function, args=None, kwargs=None, condition=None",
    },
    "launch.conditions": {"IfCondition": "predicate_expression", "UnlessCondition": "predicate_expression"},
    "launch.event_handlers": {"OnProcessExit": "*, target_action=None, on_exit"},
    "launch.launch_description_sources": {"PythonLaunchDescriptionSource": "launch_file_path"},
    "launch.substitutions": {
        "LaunchConfiguration": "variable_name, *, default=None",
        "Command": "command, *, on_stderr='fail'",
        "FindExecutable": "*, name",
        "PathJoinSubstitution": "substitutions",
        "PythonExpression": "expression, python_modules=None",
    },
    "launch_ros.actions": {
        "Node": "*, executable, package=None, name=None, namespace=None, exec_name=None, parameters=None, "
                "remappings=None, ros_arguments=None, arguments=None, "
                + _PROCESS_KW.replace("name=None, ", "", 1)},
    "launch_ros.parameter_descriptions": {"ParameterValue": "value, *, value_type=None"},
    "launch_ros.substitutions": {"FindPackageShare": "package"},
}


@pytest.fixture
def launch_api(monkeypatch):
    """Install the stand-ins as the launch modules; share/agentchemist_ros is the repository."""
    classes = {}
    for module_name, members in LAUNCH_API.items():
        module = types.ModuleType(module_name)
        for cls_name, signature in members.items():
            classes[cls_name] = module.__dict__[cls_name] = _stub(cls_name, signature)
        monkeypatch.setitem(sys.modules, module_name, module)
    ament = types.ModuleType("ament_index_python.packages")

    def get_package_share_directory(package):
        if package != "agentchemist_ros":
            raise LookupError(f"package {package} not found (only agentchemist_ros is mapped)")
        return str(REPO)

    ament.get_package_share_directory = get_package_share_directory
    utilities = types.ModuleType("launch.utilities")

    def perform_substitutions(context, substitutions):
        """The stand-in context's value of each LaunchConfiguration (texts pass through), joined."""
        return "".join(s if isinstance(s, str) else context.launch_configurations[s.fields["variable_name"]]
                       for s in substitutions)

    utilities.perform_substitutions = perform_substitutions
    monkeypatch.setitem(sys.modules, "launch.utilities", utilities)
    monkeypatch.setitem(sys.modules, "ament_index_python", types.ModuleType("ament_index_python"))
    monkeypatch.setitem(sys.modules, "ament_index_python.packages", ament)
    # The launch files put launch/ on sys.path and import their helper against the stand-ins: keep both local.
    monkeypatch.setattr(sys, "path", list(sys.path))
    sys.modules.pop("agentchemist_launch_common", None)
    yield classes
    sys.modules.pop("agentchemist_launch_common", None)


def _walk(value, guard=()):
    """(object, conditions above it) for every recorded object reachable from value."""
    if isinstance(value, _Recorded):
        condition = value.fields.get("condition")
        inner = guard + ((condition,) if condition is not None else ())
        yield value, inner
        for field in value.fields.values():
            yield from _walk(field, inner)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _walk(item, guard)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _walk(item, guard)


def console_scripts() -> set[str]:
    tree = ast.parse((REPO / "ros2_ws" / "src" / "agentchemist_ros" / "setup.py").read_text())
    nodes = next(n.value for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "NODES")
    return set(ast.literal_eval(nodes))


class _Context:
    """What an OpaqueFunction gets: the launch configurations (here the declared defaults, then overrides)."""

    def __init__(self, configurations: dict):
        self.launch_configurations = configurations


def run_launch_file(filename: str, **arguments: str) -> dict:
    """Run generate_launch_description() on the stand-ins, then its OpaqueFunctions with the arguments'
    defaults (``arguments`` override them); summarise what it starts."""
    module = _load(LAUNCH_DIR / filename, filename.replace(".", "_"))
    description = module.generate_launch_description()
    objects = list(_walk(description))
    defaults = {o.fields["name"]: o.fields["default_value"] for o, _ in objects
                if type(o).__name__ == "DeclareLaunchArgument"}
    context = _Context({**defaults, **arguments})
    for opaque, guard in [(o, g) for o, g in objects if type(o).__name__ == "OpaqueFunction"]:
        objects.extend((inner, guard + g) for inner, g in _walk(opaque.fields["function"](context)))
    args = {o.fields["name"]: o for o, _ in objects if type(o).__name__ == "DeclareLaunchArgument"}
    used = {o.fields["variable_name"] for o, _ in objects if type(o).__name__ == "LaunchConfiguration"}
    nodes = [(o, g) for o, g in objects if type(o).__name__ == "Node"]
    return {"module": module, "args": args, "used": used, "nodes": nodes, "objects": objects}


def argument_of(value) -> str:
    """The launch argument a node parameter takes its value from (a typed ParameterValue or bare)."""
    if type(value).__name__ == "ParameterValue":
        value = value.fields["value"]
    return value.fields["variable_name"]


def launch_run_problems(summary: dict, scripts: set[str]) -> list[str]:
    problems = []
    args = summary["args"]
    for name in sorted(summary["used"] - set(args)):
        problems.append(f"LaunchConfiguration {name!r} is not a declared argument")
    for name, arg in args.items():
        if not (arg.fields["description"] or "").strip():
            problems.append(f"argument {name} has no description")
        default = arg.fields["default_value"]
        if isinstance(default, str) and default.startswith(str(REPO)) and not Path(default).exists() \
                and name != "runs_dir":
            problems.append(f"argument {name}: default {default} does not exist")
    for node, guard in summary["nodes"]:
        f = node.fields
        if f["package"] != "agentchemist_ros":
            continue
        exe = f["executable"]
        if exe in PENDING_EXECUTABLES:
            guards = [c.fields["predicate_expression"] for c in guard]
            off = [g for g in guards if type(g).__name__ == "LaunchConfiguration"
                   and args[g.fields["variable_name"]].fields["default_value"] == "false"]
            if not off:
                problems.append(f"pending node {exe} is not behind an argument that defaults to false")
        elif exe not in scripts:
            problems.append(f"executable {exe} is not a console script of agentchemist_ros")
    return problems


@pytest.mark.parametrize("filename", LAUNCH_FILES)
def test_launch_files_run_against_the_launch_api(launch_api, filename):
    summary = run_launch_file(filename)
    assert launch_run_problems(summary, console_scripts()) == []
    ours = {n.fields["name"]: n for n, _ in summary["nodes"] if n.fields["package"] == "agentchemist_ros"
            and n.fields["executable"] not in PENDING_EXECUTABLES}
    # status_overlay: the rviz text overlay, started with rviz:=true only (checked below).
    expected = {"twin.launch.py": AGENTS | {"lab_sim", "ph_meter", "balance"},
                "robot.launch.py": AGENTS | {"left_piper_driver", "right_piper_driver", "ph_meter", "balance"},
                "gazebo.launch.py": AGENTS | {"lab_sim"}, "replay.launch.py": AGENTS}[filename] | {"status_overlay"}
    assert set(ours) == expected
    agents_sim_time = filename != "robot.launch.py"
    for name, node in ours.items():
        if node.fields["executable"] == "piper_driver":
            continue            # wall clock, its own parameters (test_robot_launch_starts_the_control_stack)
        params_file, overrides = node.fields["parameters"]
        assert type(params_file).__name__ == "LaunchConfiguration"
        assert params_file.fields["variable_name"] == "params_file"
        # lab_sim paces /clock from the wall clock, so it never runs on sim time itself, except beside
        # Gazebo, where it follows Gazebo's /clock (checked in test_gazebo_launch_keeps_the_twin_off_the_clock).
        beside_gazebo = filename == "gazebo.launch.py" and name == "lab_sim"
        assert overrides["use_sim_time"] is (agents_sim_time and (name != "lab_sim" or beside_gazebo))
        assert node.fields["executable"] == name
    assert Path(summary["args"]["params_file"].fields["default_value"]) == PARAMS_FILE


def test_robot_launch_starts_the_control_stack(launch_api):
    summary = run_launch_file("robot.launch.py")
    nodes = [n.fields for n, _ in summary["nodes"]]
    executables = [(n["package"], n["executable"]) for n in nodes]
    assert ("robot_state_publisher", "robot_state_publisher") in executables
    assert ("controller_manager", "ros2_control_node") in executables
    spawned = {a for n in nodes if n["executable"] == "spawner" for a in n["arguments"] if not a.startswith("-")}
    spawned.discard("/controller_manager")
    controllers = yaml.safe_load(CONTROLLERS_FILE.read_text())["controller_manager"]["ros__parameters"]
    assert spawned == {k for k, v in controllers.items() if isinstance(v, dict)}
    drivers = [n for n in nodes if n["executable"] == "piper_driver"]
    # on by default, but only with the topic-based hardware (hardware:=mock has no arms to drive)
    guards = {tuple(c.fields["predicate_expression"].fields["expression"]) for n, g in summary["nodes"]
              if n.fields["executable"] == "piper_driver" for c in g}
    assert len(guards) == 1
    expression = next(iter(guards))
    variables = [p.fields["variable_name"] for p in expression if not isinstance(p, str)]
    assert variables == ["with_piper_driver", "hardware"] and "topic_based" in "".join(
        p for p in expression if isinstance(p, str))
    assert sorted(argument_of(d["parameters"][0]["can_interface"]) for d in drivers) == [
        "can_left", "can_right"]
    assert "piper_driver" in console_scripts()
    for driver in drivers:
        side = driver["parameters"][0]["side"]
        assert driver["name"] == f"{side}_piper_driver"
        assert dict(driver["remappings"]) == {"joint_states": f"/{side}_piper/joint_states",
                                              "joint_commands": f"/{side}_piper/joint_commands"}
    args = summary["args"]
    assert {k: args[k].fields["default_value"] for k in ("can_left", "can_right", "with_piper_driver",
                                                        "with_audio_capture")} == {
        "can_left": "can_left", "can_right": "can_right", "with_piper_driver": "true",
        "with_audio_capture": "false"}
    assert Path(args["controllers_file"].fields["default_value"]) == CONTROLLERS_FILE


def test_robot_launch_starts_instruments_cameras_microphones_and_base(launch_api):
    """The issue-18 drivers: serial instruments on by default with the ports and dialects of the arguments;
    three cameras per vendor driver on DESIGN.md's topic names with aligned depth and the intrinsics in
    config/cameras; both contact microphones; the base behind an argument that defaults to false."""
    summary = run_launch_file("robot.launch.py")
    args, nodes = summary["args"], summary["nodes"]

    def guards(guard):
        out = []
        for c in guard:
            pred = c.fields["predicate_expression"]
            out.append(pred.fields.get("variable_name") if type(pred).__name__ == "LaunchConfiguration"
                       else "".join(p if isinstance(p, str) else "<" + p.fields["variable_name"] + ">"
                                    for p in pred.fields["expression"]))
        return out
    by_exe = {}
    for node, guard in nodes:
        by_exe.setdefault(node.fields["executable"], []).append((node.fields, guards(guard)))
    (ph, ph_guard), = by_exe["ph_meter"]
    (bal, bal_guard), = by_exe["balance"]
    assert ph_guard == ["with_instruments"] == bal_guard and args["with_instruments"].fields["default_value"] == "true"
    assert argument_of(ph["parameters"][1]["port"]) == "ph_port"
    assert argument_of(ph["parameters"][1]["dialect"]) == "ph_dialect"
    assert set(args["ph_dialect"].fields["choices"]) == {"tps_continuous", "hanna_ras"}
    assert set(args["balance_dialect"].fields["choices"]) == {"mt_sics", "sartorius_sbi"}
    for exe, driver in (("orbbec_camera_node", "orbbec"), ("realsense2_camera_node", "realsense")):
        cams = by_exe[exe]
        assert sorted(f["name"] for f, _ in cams) == ["front", "left_wrist", "right_wrist"]
        for fields, guard in cams:
            assert fields["namespace"] == "camera"        # -> /camera/<name>/color/image_raw (DESIGN.md)
            assert guard == [f"'<camera_driver>' == '{driver}'"]
            params = fields["parameters"][0]
            assert params.get("depth_registration", params.get("align_depth.enable")) is True
            wrist = fields["name"] != "front"
            assert ("color.image_raw.compressed.jpeg_quality" in params) is wrist
    for fields, _ in by_exe["orbbec_camera_node"]:
        url = fields["parameters"][0]["color_info_url"]
        assert url.startswith("file://") and Path(url[len("file://"):]).exists()
        assert yaml.safe_load(Path(url[len("file://"):]).read_text())["image_width"] == 640
    mics = by_exe["audio_capture"]
    assert sorted(f["name"] for f, _ in mics) == ["left_audio_capture", "right_audio_capture"]
    assert all(g == ["with_audio_capture"] for _, g in mics)
    (supervisor, _), = by_exe["audio_supervisor"]
    assert supervisor["parameters"][1]["sides"] == ["left", "right"]
    (base, base_guard), = by_exe["tracer_base_node"]
    assert base_guard == ["with_base"] and args["with_base"].fields["default_value"] == "false"


def test_gazebo_launch_keeps_the_twin_off_the_clock(launch_api):
    summary = run_launch_file("gazebo.launch.py")
    lab_sim = next(n for n, _ in summary["nodes"] if n.fields["executable"] == "lab_sim")
    overrides = lab_sim.fields["parameters"][1]
    assert overrides["use_sim_time"] is True
    assert overrides["publish_clock"] is False and overrides["publish_joint_states"] is False
    assert not dict(lab_sim.fields.get("remappings") or [])
    rsp = next(n for n, _ in summary["nodes"] if n.fields["executable"] == "robot_state_publisher")
    model = _root(rsp.fields["parameters"][0]["robot_description"])
    assert {s.find("hardware/plugin").text for s in model.findall("ros2_control")} == {"gz_ros2_control/GazeboSimSystem"}
    assert model.find("gazebo/plugin/parameters").text == str(CONTROLLERS_FILE)
    bridges = [n.fields["parameters"][0]["config_file"] for n, _ in summary["nodes"]
               if n.fields["executable"] == "parameter_bridge"]
    assert len(bridges) == 1
    clock = [e for e in yaml.safe_load(Path(bridges[0]).read_text()) if e["ros_topic_name"] == "/clock"]
    assert clock == [{"ros_topic_name": "/clock", "gz_topic_name": "/clock", "ros_type_name": "rosgraph_msgs/msg/Clock",
                      "gz_type_name": "gz.msgs.Clock", "direction": "GZ_TO_ROS"}]  # Gazebo owns the clock


def test_launch_stand_ins_and_run_checker_can_fail(launch_api):
    node_cls, arg_cls, lc = launch_api["Node"], launch_api["DeclareLaunchArgument"], launch_api["LaunchConfiguration"]
    with pytest.raises(TypeError):  # a keyword the real Node does not take
        node_cls(package="agentchemist_ros", executable="planner", parameter=[])
    assert "description" in inspect.signature(arg_cls.__init__).parameters
    bad = {"args": {"x": arg_cls("x", default_value="1", description=" ")},
           "used": {"x", "typo"},
           "nodes": [(node_cls(package="agentchemist_ros", executable="planer"), ()),
                     (node_cls(package="agentchemist_ros", executable="audio_capture"), ())],
           "objects": []}
    assert launch_run_problems(bad, console_scripts()) == [
        "LaunchConfiguration 'typo' is not a declared argument", "argument x has no description",
        "executable planer is not a console script of agentchemist_ros",
        "pending node audio_capture is not behind an argument that defaults to false"]
    assert lc("x").fields == {"variable_name": "x", "default": None}


# ============================================================================================ rviz
RVIZ_CONFIG = REPO / "config" / "agentchemist.rviz"
PACKAGE_XML = REPO / "ros2_ws" / "src" / "agentchemist_ros" / "package.xml"


def test_twin_launch_publishes_the_robot_model_and_opens_rviz_only_on_request(launch_api):
    summary = run_launch_file("twin.launch.py")
    nodes = {(n.fields["package"], n.fields["executable"]): (n, g) for n, g in summary["nodes"]}
    rsp, rsp_guard = nodes[("robot_state_publisher", "robot_state_publisher")]
    assert rsp_guard == ()  # always: the arms in rviz and TF for anyone else
    params = rsp.fields["parameters"][0]
    assert params["use_sim_time"] is True  # the joint states are stamped on the twin's clock
    # xacro's Python API expanded the model at launch time, with the mock hardware (no ros2_control here).
    model = _root(params["robot_description"])
    assert urdf_problems(model) == []
    assert {s.find("hardware/plugin").text for s in model.findall("ros2_control")} == {"mock_components/GenericSystem"}
    rviz, guard = nodes[("rviz2", "rviz2")]
    args = summary["args"]
    assert [g.fields["predicate_expression"].fields["variable_name"] for g in guard] == ["rviz"]
    assert args["rviz"].fields["default_value"] == "false"  # robots and CI have no display
    flag, config = rviz.fields["arguments"]
    assert flag == "-d" and config.fields["variable_name"] == "rviz_config"
    assert Path(args["rviz_config"].fields["default_value"]) == RVIZ_CONFIG
    assert rviz.fields["parameters"] == [{"use_sim_time": True}]


@pytest.mark.parametrize("filename", LAUNCH_FILES)
def test_launch_files_name_only_files_that_exist_and_offer_rviz(launch_api, filename):
    summary = run_launch_file(filename)
    paths = set()

    def strings(value):
        if isinstance(value, str):
            yield value
        elif isinstance(value, dict):
            for v in value.values():
                yield from strings(v)
        elif isinstance(value, (list, tuple)):
            for v in value:
                yield from strings(v)
        elif hasattr(value, "fields"):
            yield from strings(value.fields)

    for obj, _ in summary["objects"]:
        for text in strings(obj.fields):
            for piece in text.replace("'", " ").split():
                if piece.startswith(str(REPO)):
                    paths.add(piece)
    missing = sorted(p for p in paths if not Path(p).exists() and not p.startswith(str(REPO / "runs")))
    assert missing == []
    args = summary["args"]
    assert args["rviz"].fields["default_value"] == "false"
    for exe in ("rviz2", "status_overlay"):
        shown = [n for n, _ in summary["nodes"] if n.fields["executable"] == exe]
        assert len(shown) == 1 and shown[0].fields["condition"].fields["predicate_expression"].fields[
            "variable_name"] == "rviz", exe


def test_gazebo_launch_opens_the_lab_world_and_bridges_the_cameras(launch_api):
    summary = run_launch_file("gazebo.launch.py")
    assert summary["args"]["world"].fields["default_value"] == "lab"
    includes = [dict(o.fields["launch_arguments"]) for o, _ in summary["objects"]
                if type(o).__name__ == "IncludeLaunchDescription"]
    assert len(includes) == 2  # the GUI and the server-only start
    for gz_args in (inc["gz_args"] for inc in includes):
        world = gz_args[0].fields["expression"]  # "'<lab.sdf>' if '<world>' == 'lab' else '<world>'"
        assert world[1] == str(REPO / "worlds" / "lab.sdf") and Path(world[1]).is_file()
        assert world[3].fields["variable_name"] == "world"
    bridge = next(n for n, _ in summary["nodes"] if n.fields["executable"] == "parameter_bridge")
    config = yaml.safe_load(Path(bridge.fields["parameters"][0]["config_file"]).read_text())
    ros_topics = {e["ros_topic_name"]: e for e in config}
    assert {"/clock", "/cmd_vel", "/odom"} <= set(ros_topics)
    for cam in ("front", "left_wrist", "right_wrist"):
        for topic, gz in ((f"/camera/{cam}/color/image_raw", "image"),
                          (f"/camera/{cam}/aligned_depth_to_color/image_raw", "depth_image"),
                          (f"/camera/{cam}/color/camera_info", "camera_info")):
            assert ros_topics[topic]["gz_topic_name"] == f"camera/{cam}/{gz}"
            assert ros_topics[topic]["direction"] == "GZ_TO_ROS"
    assert ros_topics["/cmd_vel"]["direction"] == "ROS_TO_GZ"


def _displays(config: dict) -> dict[str, dict]:
    """The first display of each class, by class name."""
    out: dict[str, dict] = {}
    for d in config["Visualization Manager"]["Displays"]:
        out.setdefault(d["Class"].split("/")[-1], d)
    return out


def rviz_problems(config: dict, publishers: dict[str, str], frames: set[str]) -> list[str]:
    """The rviz config shows what the graph publishes: displays, topics, QoS the publishers can serve,
    a fixed frame of the robot model. ``publishers``: topic -> "latched" | "best_effort" | "reliable"."""
    problems = []
    displays = _displays(config)
    for needed in ("RobotModel", "TF", "MarkerArray", "Image"):
        if needed not in displays:
            problems.append(f"no {needed} display")
    fixed = config["Visualization Manager"]["Global Options"]["Fixed Frame"]
    if fixed not in frames:
        problems.append(f"fixed frame {fixed} is not a link of the robot model")
    for display in config["Visualization Manager"]["Displays"]:
        name = display["Class"].split("/")[-1]
        key = "Description Topic" if name == "RobotModel" else "Topic"
        if key not in display:
            continue
        topic = display[key]
        kind = publishers.get(topic["Value"])
        if kind is None:
            problems.append(f"{name} shows {topic['Value']}, which nothing publishes")
            continue
        # A reliable subscription gets nothing from a best-effort publisher; transient local needs a
        # latched one.
        if kind == "best_effort" and topic.get("Reliability Policy") != "Best Effort":
            problems.append(f"{name} on {topic['Value']} must subscribe best effort")
        if topic.get("Durability Policy") == "Transient Local" and kind != "latched":
            problems.append(f"{name} on {topic['Value']} asks transient local of a volatile publisher")
    return problems


def _graph_publishers() -> dict[str, str]:
    """What the twin graph publishes that rviz shows, with QoS read from lab_sim's source."""
    topics = _load(NODES_DIR / "common" / "topics.py", "agentchemist_topics")
    lab_sim = (NODES_DIR / "lab_sim_node.py").read_text()
    assert "create_publisher(MarkerArray, topics.BENCH_MARKERS, LATCHED)" in lab_sim
    assert "topics.camera_topic(c), SENSOR)" in lab_sim and "topics.depth_topic(c), SENSOR)" in lab_sim
    cameras = {topics.camera_topic(c): "best_effort" for c in topics.CAMERAS}  # those in lab_sim's `cameras`
    overlay = (NODES_DIR / "status_overlay_node.py").read_text()
    assert "create_publisher(Marker, topics.STATUS_OVERLAY, LATCHED)" in overlay
    return {topics.BENCH_MARKERS: "latched", **cameras, topics.depth_topic("front"): "best_effort",
            topics.STATUS_OVERLAY: "latched",
            "/robot_description": "latched"}  # robot_state_publisher latches the model


def test_rviz_config_shows_the_robot_the_bench_markers_and_the_front_camera():
    config = yaml.safe_load(RVIZ_CONFIG.read_text())
    links = {link.get("name") for link in ET.parse(URDF_DIR / "agentchemist_aloha.urdf").getroot().findall("link")}
    assert rviz_problems(config, _graph_publishers(), links) == []
    displays = _displays(config)
    assert config["Visualization Manager"]["Global Options"]["Fixed Frame"] == "base_link"
    assert displays["MarkerArray"]["Topic"]["Value"] == "/lab/bench_markers"
    assert displays["Marker"]["Topic"]["Value"] == "/agentchemist/status_overlay"  # FSM / pH / volume text
    images = [d["Topic"]["Value"] for d in config["Visualization Manager"]["Displays"]
              if d["Class"].endswith("/Image")]
    assert images == [f"/camera/{c}/color/image_raw" for c in ("front", "left_wrist", "right_wrist")]
    cloud = displays["DepthCloud"]  # the depth as a point cloud, coloured by the aligned colour image
    assert cloud["Depth Map Topic"] == "/camera/front/aligned_depth_to_color/image_raw"
    assert cloud["Color Image Topic"] == "/camera/front/color/image_raw"
    assert displays["RobotModel"]["Description Source"] == "Topic"
    from agentchemist.sim.workcell_view import BASE_FRAME
    assert BASE_FRAME == "base_link"  # the markers' frame is the fixed frame: no TF lookup needed


def test_rviz_checker_catches_wrong_topics_qos_and_frames():
    config = yaml.safe_load(RVIZ_CONFIG.read_text())
    displays = _displays(config)
    displays["Image"]["Topic"]["Reliability Policy"] = "Reliable"
    displays["MarkerArray"]["Topic"]["Value"] = "/lab/markers"
    config["Visualization Manager"]["Global Options"]["Fixed Frame"] = "map"
    del config["Visualization Manager"]["Displays"][[d["Class"] for d in config["Visualization Manager"]
                                                      ["Displays"]].index("rviz_default_plugins/TF")]
    publishers = dict(_graph_publishers(), **{"/lab/markers": "reliable"})
    displays = _displays(config)
    displays["MarkerArray"]["Topic"]["Durability Policy"] = "Transient Local"
    assert rviz_problems(config, publishers, {"base_link"}) == [
        "no TF display", "fixed frame map is not a link of the robot model",
        "MarkerArray on /lab/markers asks transient local of a volatile publisher",
        "Image on /camera/front/color/image_raw must subscribe best effort"]


def test_every_message_package_the_nodes_import_is_declared_and_installed():
    """package.xml names it (rosdep on a robot), and the wheel bootstrap installs it (pinned)."""
    imported = set()
    for path in NODES_DIR.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[-1] in ("msg", "srv",
                                                                                                  "action"):
                imported.add(node.module.split(".")[0])
    imported -= {"rclpy"}  # rclpy.action is the client library, not an interface package
    assert "visualization_msgs" in imported
    depends = {e.text for e in ET.parse(PACKAGE_XML).getroot().findall("exec_depend")}
    assert imported - depends == set()
    runtime = set((REPO / "requirements" / "ros-runtime.txt").read_text().split())
    pins = dict(line.split("==") for line in (REPO / "requirements" / "constraints.txt").read_text().splitlines()
                if "==" in line and not line.startswith("#"))
    # Ours are built by colcon; rcl_interfaces comes with the rclpy wheel.
    for package in sorted(imported - {"agentchemist_interfaces", "rcl_interfaces"}):
        wheel = "ros-jazzy-" + package.replace("_", "-")
        assert wheel in runtime, f"{wheel} is not in requirements/ros-runtime.txt"
        assert wheel in pins, f"{wheel} is not pinned in requirements/constraints.txt"


# ============================================================================================ docker
@pytest.mark.parametrize("dockerfile", ["Dockerfile.robot", "Dockerfile.workstation"])
def test_dockerfiles_use_jazzy_and_copy_files_that_exist(dockerfile):
    text = (REPO / "docker" / dockerfile).read_text()
    assert text.splitlines()[0].startswith("# ") and "FROM ros:jazzy" in text
    for package in ("ros-jazzy-ros2-control", "ros-jazzy-ros2-controllers",
                    "ros-jazzy-joint-state-topic-hardware-interface", "ros-jazzy-xacro"):
        assert package in text
    assert ("ros-jazzy-ros-gz" in text) == (dockerfile == "Dockerfile.workstation")
    for line in text.splitlines():
        if line.startswith("COPY ") and "--from" not in line:
            for source in line.split()[1:-1]:
                assert (REPO / source).exists(), f"{dockerfile}: COPY {source} does not exist"


@pytest.mark.parametrize("hardware, plugin", [("topic_based", "joint_state_topic_hardware_interface/JointStateTopicSystem"),
                                              ("mock", "mock_components/GenericSystem")])
def test_robot_launch_expands_the_model_with_xacro_for_the_chosen_hardware(launch_api, hardware, plugin):
    """The launch argument reaches xacro's Python API through the OpaqueFunction."""
    summary = run_launch_file("robot.launch.py", hardware=hardware)
    rsp = next(n for n, _ in summary["nodes"] if n.fields["executable"] == "robot_state_publisher")
    model = _root(rsp.fields["parameters"][0]["robot_description"])
    assert urdf_problems(model) == []
    assert {s.find("hardware/plugin").text for s in model.findall("ros2_control")} == {plugin}
