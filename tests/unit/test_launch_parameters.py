"""Launch arguments reach the nodes with the type the node declares (issue 39, defect 2).

launch_ros reads a parameter value built from substitutions as YAML: `front_camera_serial:=213622078112`
(RealSense serials are all digits) reached the camera driver as an integer. With the real launch library
importable (docs/real_tool_check.md puts the upstream jazzy sources on the path) the camera and instrument
nodes' parameters are evaluated by launch_ros itself; otherwise the launch files run against the stand-ins
of test_robot_files and every node parameter taken from a launch argument must be a typed ParameterValue.
"""
import importlib.util
import sys

import pytest

from tests.unit.test_robot_files import LAUNCH_DIR, LAUNCH_FILES, launch_api, run_launch_file  # noqa: F401

ARGUMENTS = {"front_camera_serial": "213622078112", "left_wrist_camera_serial": "0042",
             "ph_probe_id": "1", "camera_driver": "realsense"}


def real_launch() -> bool:
    try:
        import launch
        import launch_ros  # noqa: F401
    except ImportError:
        return False
    return hasattr(launch, "LaunchContext")  # not the repository's launch/ folder seen as a namespace package


def bare_configurations(summary: dict) -> list[str]:
    """'node: parameter' for every node parameter that is a bare LaunchConfiguration (read as YAML)."""
    found = []
    for node, _ in summary["nodes"]:
        for entry in node.fields.get("parameters") or ():
            if isinstance(entry, dict):
                found += [f"{node.fields['name']}: {k}" for k, v in entry.items()
                          if type(v).__name__ == "LaunchConfiguration"]
    return found


@pytest.mark.skipif(real_launch(), reason="the real launch library is importable: test_real_launch_* run")
@pytest.mark.parametrize("filename", LAUNCH_FILES)
def test_no_node_parameter_is_a_bare_launch_configuration(launch_api, filename):  # noqa: F811
    summary = run_launch_file(filename)
    assert bare_configurations(summary) == []
    if filename == "robot.launch.py":
        serials = [v for n, _ in summary["nodes"] for e in n.fields["parameters"] or () if isinstance(e, dict)
                   for k, v in e.items() if k in ("serial_no", "serial_number")]
        assert len(serials) == 6 and all(v.fields["value_type"] is str for v in serials)


def test_the_checker_sees_a_bare_configuration(launch_api):  # noqa: F811
    from launch.substitutions import LaunchConfiguration
    from launch_ros.actions import Node
    node = Node(package="p", executable="e", name="cam", parameters=[{"serial_no": LaunchConfiguration("s")}])
    assert bare_configurations({"nodes": [(node, ())]}) == ["cam: serial_no"]


def _drivers_module():
    sys.path.insert(0, str(LAUNCH_DIR))
    try:
        spec = importlib.util.spec_from_file_location("drivers_real", LAUNCH_DIR / "agentchemist_robot_drivers.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(LAUNCH_DIR))


@pytest.mark.skipif(not real_launch(), reason="the real launch library is not importable here")
def test_real_launch_gives_the_drivers_digit_only_serials_and_ids_as_strings():
    from launch import LaunchContext
    from launch_ros.utilities import evaluate_parameters

    drivers = _drivers_module()
    context = LaunchContext()
    for argument in [*drivers.arguments(), *drivers.common.common_arguments()]:
        context.launch_configurations[argument.name] = argument.default_value[0].text \
            if argument.default_value else ""
    context.launch_configurations.update(ARGUMENTS)
    values = []
    for group in [*drivers.camera_nodes(), drivers.instrument_nodes()]:
        for node in [e for e in group.get_sub_entities() if hasattr(e, "_Node__parameters")]:
            for entry in [e for e in evaluate_parameters(context, node._Node__parameters) if isinstance(e, dict)]:
                values += [(k, v) for k, v in entry.items() if k in ("serial_no", "serial_number", "probe_id")]
    assert ("serial_no", "213622078112") in values and ("serial_no", "0042") in values
    assert ("probe_id", "1") in values
    assert all(isinstance(v, str) for _, v in values), values
