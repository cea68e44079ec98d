"""Structural rules of DESIGN.md: the core never imports rclpy; node modules never import each other."""
import ast
from pathlib import Path

from tests.conftest import REPO

CORE = REPO / "src" / "agentchemist"
NODES = REPO / "ros2_ws" / "src" / "agentchemist_ros" / "agentchemist_ros"
ROS_MODULES = {"rclpy", "rosidl_runtime_py", "agentchemist_interfaces", "agentchemist_ros", "std_msgs",
               "sensor_msgs", "geometry_msgs", "trajectory_msgs", "builtin_interfaces", "rosgraph_msgs",
               "launch", "launch_ros", "cv_bridge"}


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
        elif isinstance(node, ast.ImportFrom) and node.level > 0:
            names.add("." * node.level + (node.module or ""))
    return names


def test_core_never_imports_ros():
    offenders = []
    for path in CORE.rglob("*.py"):
        for name in imported_modules(path):
            if name.split(".")[0] in ROS_MODULES:
                offenders.append(f"{path.relative_to(REPO)} imports {name}")
    assert offenders == []


def test_node_modules_do_not_import_each_other():
    node_modules = {p.stem for p in NODES.glob("*_node.py")}
    assert {"planner_node", "vision_supervisor_node", "audio_supervisor_node", "action_policy_node",
            "dispenser_controller_node", "recorder_node", "summarizer_node", "lab_sim_node"} <= node_modules
    offenders = []
    for path in NODES.glob("*_node.py"):
        for name in imported_modules(path):
            leaf = name.lstrip(".").split(".")[-1]
            if leaf in node_modules and leaf != path.stem:
                offenders.append(f"{path.name} imports {name}")
    assert offenders == []


def test_structural_check_catches_a_violation(tmp_path):
    # The checker itself must be able to fail.
    bad = tmp_path / "bad.py"
    bad.write_text("import rclpy\nfrom .planner_node import X\n")
    assert "rclpy" in imported_modules(bad) and ".planner_node" in imported_modules(bad)


# ---------------------------------------------------------------- bench/ never imports tests/
BENCH = REPO / "bench"


def bench_imports_of_tests(path: Path) -> list[str]:
    """The imports of `path` that reach into the test tree (`tests` or `tests.*`)."""
    return sorted(name for name in imported_modules(path) if name.split(".")[0] == "tests")


def test_bench_never_imports_tests():
    files = sorted(BENCH.rglob("*.py"))
    assert files, "bench/ has no Python files: the check would pass vacuously"
    offenders = [f"{p.relative_to(REPO)} imports {name}" for p in files for name in bench_imports_of_tests(p)]
    assert offenders == []


def test_bench_check_catches_a_test_import(tmp_path):
    bad = tmp_path / "bench_like.py"
    bad.write_text("import json\nfrom agentchemist.sim.closed_loop import ClosedLoop\n"
                   "def f():\n    from tests.replay.harness import replay\n    import tests.e2e\n")
    assert bench_imports_of_tests(bad) == ["tests.e2e", "tests.replay.harness"]
    good = tmp_path / "bench_ok.py"
    good.write_text("from agentchemist_ros.tools.bag.replay import replay\nimport testsuite\n")
    assert bench_imports_of_tests(good) == []
