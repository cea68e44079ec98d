"""Structural rules of DESIGN.md: the core never imports rclpy; node modules never import each other; the
robot-side core and nodes never import the twin (agentchemist.sim)."""
import ast
from pathlib import Path

import pytest

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


# ---------------------------------------------------------------- the core never imports the twin
# Robot-side code takes the bench (tags, kinds, limits, stations) from agentchemist.workcell and detects
# tags with agentchemist.perception; only the twin itself, its node (lab_sim) and tools load agentchemist.sim.
SIM = "agentchemist.sim"
NO_SIM_PACKAGES = ("perception", "hardware", "control", "plan", "fsm", "record", "report", "policy", "chemistry",
                   "workcell")


def absolute_imports(source: str, package: str) -> set[str]:
    """Every module a source text imports, anywhere in it (function bodies too), as absolute dotted names;
    ``package`` is the package the text's relative imports start from. ``from a import b`` gives both
    ``a`` and ``a.b`` (b may be a module: ``from agentchemist import sim``)."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - (node.level - 1)])
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


def sim_imports(source: str, package: str) -> list[str]:
    """The imports of agentchemist.sim (or a module in it) in a source text, sorted."""
    return sorted(n for n in absolute_imports(source, package) if n == SIM or n.startswith(SIM + "."))


def module_package(path: Path, root: Path) -> str:
    """The package a file's relative imports start from (a package's __init__ is in the package itself)."""
    return ".".join(path.relative_to(root).parent.parts)


def test_core_never_imports_the_twin():
    offenders = []
    for name in NO_SIM_PACKAGES:
        folder = CORE / name
        files = sorted(folder.rglob("*.py"))
        assert files, f"{folder} has no Python files: the check would pass vacuously"
        for path in files:
            for imported in sim_imports(path.read_text(), module_package(path, CORE.parent)):
                offenders.append(f"{path.relative_to(REPO)} imports {imported}")
    assert offenders == []


def test_twin_import_check_catches_a_violation():
    source = (
        "import math\n"
        "import agentchemist.sim.lab\n"
        "from agentchemist.workcell.tags import MARKER_TABLE\n"
        "from agentchemist import sim\n"
        "import agentchemist.simulated_but_not_the_twin\n"
        "def render():\n"
        "    from agentchemist.sim.markers import detect_markers\n"
        "    from ..sim import robot\n"
        "    from . import scene\n"
    )
    assert sim_imports(source, "agentchemist.perception") == [
        "agentchemist.sim", "agentchemist.sim.lab", "agentchemist.sim.markers",
        "agentchemist.sim.markers.detect_markers", "agentchemist.sim.robot",
    ]
    assert sim_imports("from agentchemist.perception.tags import detect_markers\n", "agentchemist.plan") == []
    assert module_package(CORE / "plan" / "__init__.py", CORE.parent) == "agentchemist.plan"
    assert module_package(CORE / "plan" / "rules.py", CORE.parent) == "agentchemist.plan"


@pytest.mark.parametrize("node", [p.name for p in sorted(NODES.glob("*_node.py")) if p.stem != "lab_sim_node"])
def test_node_modules_never_import_the_twin(node):
    """Nodes that run on the robot take tags, kinds and limits from the bench, not from the twin (lab_sim,
    the twin's own node, is the exception)."""
    assert sim_imports((NODES / node).read_text(), "agentchemist_ros") == []


# ---------------------------------------------------------------- no import cycles in the core
def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_level_imports(source: str, module: str, is_package: bool) -> list[tuple[str, tuple[str, ...]]]:
    """(imported module, names) for every import that runs when `module` is imported: top level, inside
    if / try / with at top level, and under `if TYPE_CHECKING:` too (a type dependency is a dependency);
    not inside functions or classes (deferred imports). Relative imports are resolved."""
    found = []

    def visit(statements):
        for st in statements:
            if isinstance(st, ast.Import):
                found.extend((alias.name, ()) for alias in st.names)
            elif isinstance(st, ast.ImportFrom):
                name = st.module or ""
                if st.level:
                    base = module.split(".") if is_package else module.split(".")[:-1]
                    base = base[:len(base) - (st.level - 1)]
                    name = ".".join(base + ([st.module] if st.module else []))
                found.append((name, tuple(alias.name for alias in st.names)))
            elif isinstance(st, ast.If):
                visit(st.body)
                visit(st.orelse)
            elif isinstance(st, ast.Try):
                visit(st.body)
                visit(st.orelse)
                visit(st.finalbody)
                for handler in st.handlers:
                    visit(handler.body)
            elif isinstance(st, ast.With):
                visit(st.body)

    visit(ast.parse(source).body)
    return found


def import_graph(root: Path) -> dict[str, set[str]]:
    """module -> the modules of the same tree it imports at module level (`from pkg import sub` is an
    edge to pkg.sub when sub is a module, to pkg for the names that are not)."""
    files = {_module_name(p, root): p for p in root.rglob("*.py")}
    graph = {}
    for module, path in files.items():
        edges = set()
        for name, names in module_level_imports(path.read_text(), module, path.name == "__init__.py"):
            subs = {f"{name}.{n}" for n in names} & files.keys()
            edges |= subs
            if name in files and (not names or len(subs) < len(names)):
                edges.add(name)
        edges.discard(module)
        graph[module] = edges
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, successors = work[-1]
            for w in successors:
                if w not in graph:
                    continue
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    component = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        component.append(w)
                        if w == v:
                            break
                    if len(component) > 1:
                        cycles.append(sorted(component))
    return cycles


def test_core_has_no_import_cycles():
    graph = import_graph(CORE)
    assert "agentchemist.plan.registry" in graph["agentchemist.plan.checks"]  # the graph sees real edges
    assert import_cycles(graph) == []


def test_cycle_check_catches_a_cycle(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    # a -> b at top level, b -> a only for type checking: still a cycle
    (pkg / "sub" / "a.py").write_text("from pkg.sub.b import B\n")
    (pkg / "sub" / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                      "    from .a import A\n")
    # c -> d -> e -> c through `from package import module` and a relative import
    (pkg / "c.py").write_text("from pkg import d\n")
    (pkg / "d.py").write_text("import pkg.e\n")
    (pkg / "e.py").write_text("from . import c\n")
    # f -> g at top level, g -> f only inside a function (deferred): no cycle
    (pkg / "f.py").write_text("from pkg.g import G\n")
    (pkg / "g.py").write_text("def later():\n    from pkg.f import F\n")
    assert sorted(import_cycles(import_graph(pkg))) == [["pkg.c", "pkg.d", "pkg.e"], ["pkg.sub.a", "pkg.sub.b"]]


# ---------------------------------------------------------------- thin nodes
NODE_MAX_LINES = 300


def long_modules(folder: Path, limit: int = NODE_MAX_LINES) -> dict[str, int]:
    """Node modules (*_node.py) longer than `limit` lines: a node holds message translation, parameters,
    timers, QoS and locks; what makes it longer is domain logic that belongs in the core."""
    counts = {p.name: len(p.read_text().splitlines()) for p in sorted(folder.glob("*_node.py"))}
    return {name: n for name, n in counts.items() if n > limit}


def test_node_modules_are_at_most_300_lines():
    assert sorted(NODES.glob("*_node.py")), "no node modules found"
    assert long_modules(NODES) == {}


def test_node_length_check_catches_a_fat_node(tmp_path):
    (tmp_path / "thin_node.py").write_text("x = 1\n" * NODE_MAX_LINES)
    (tmp_path / "fat_node.py").write_text("x = 1\n" * (NODE_MAX_LINES + 1))
    (tmp_path / "helper.py").write_text("x = 1\n" * 1000)  # not a node module
    assert long_modules(tmp_path) == {"fat_node.py": NODE_MAX_LINES + 1}


def unguarded_nodes(source: str) -> list[str]:
    """Node classes of a node module that derive from rclpy's Node directly instead of GuardedNode
    (common/guarded.py: a callback's exception must not end the executor that spins every node)."""
    tree = ast.parse(source)
    return [c.name for c in tree.body if isinstance(c, ast.ClassDef)
            and any(isinstance(b, ast.Name) and b.id == "Node" or isinstance(b, ast.Attribute) and b.attr == "Node"
                    for b in c.bases)]


def test_every_node_is_guarded():
    found = {p.name: unguarded_nodes(p.read_text()) for p in sorted(NODES.glob("*_node.py"))}
    assert len(found) >= 12 and not {k: v for k, v in found.items() if v}


def test_guard_check_catches_a_plain_node():
    assert unguarded_nodes("from rclpy.node import Node\nclass Bare(Node):\n    pass\n") == ["Bare"]
    assert unguarded_nodes("class Fine(GuardedNode):\n    pass\n") == []


# ---------------------------------------------------------------- JSON fields only in the codec
#: Node modules still allowed to import json. Each entry is a debt, not a rule:
JSON_ALLOWED: set[str] = set()


def json_importers(folder: Path) -> list[str]:
    """Node modules (and the VLA backend, a node's half) of `folder` that import json themselves: the
    interfaces' JSON fields are read and written in common/codec.py only."""
    modules = [*folder.glob("*_node.py"), *folder.glob("vla_backend.py")]
    return sorted(p.name for p in modules if any(n.split(".")[0] == "json" for n in imported_modules(p)))


def test_node_modules_never_import_json():
    assert len(list(NODES.glob("*_node.py"))) >= 12
    assert set(json_importers(NODES)) - JSON_ALLOWED == set()


def test_json_check_catches_a_node_that_decodes(tmp_path):
    (tmp_path / "chatty_node.py").write_text("import json\n")
    (tmp_path / "sly_node.py").write_text("from json import loads\n")
    (tmp_path / "vla_backend.py").write_text("import json.decoder\n")
    (tmp_path / "quiet_node.py").write_text("from agentchemist_ros.common.codec import decode_note\n")
    (tmp_path / "codec.py").write_text("import json\n")  # the codec is where json belongs
    assert json_importers(tmp_path) == ["chatty_node.py", "sly_node.py", "vla_backend.py"]
