"""Every shipped node parameters YAML (config/*.yaml with `ros__parameters` blocks) names only parameters
the node declares (its config dataclasses' param() fields and its declare() calls, read from the source
by tests/unit/node_params.py), each with the declared type, within the declared range and choices, and
the config dataclasses accept the values together (their own checks).

tests/unit/test_robot_files.py checks the other direction for agentchemist_params.yaml: every declared
parameter is in the YAML with its default."""
from pathlib import Path

import yaml

from agentchemist.params import ParameterError, build_config, parameter_specs
from tests.conftest import REPO
from tests.unit.node_params import NODES_DIR, node_configs, node_parameters

#: Node modules whose YAML blocks are checked: one line per node.
CHECKED = (
    "recorder_node",
    "lab_sim_node",
    "piper_driver_node",
    "planner_node",
    "action_policy_node",
    "summarizer_node",
    "wav_source_node",
    "audio_capture_node",
    "vision_supervisor_node",
    "dispenser_controller_node",
    "audio_supervisor_node",
)
#: declared by rclpy itself on every node
ROS_OWN = {"use_sim_time"}


def params_files() -> list[Path]:
    return sorted(p for p in (REPO / "config").rglob("*.yaml") if "ros__parameters" in p.read_text())


def yaml_blocks() -> dict[str, list[tuple[str, dict]]]:
    """node name -> [(file name, its ros__parameters block)] over every shipped params file."""
    blocks: dict[str, list[tuple[str, dict]]] = {}
    for path in params_files():
        for node, body in (yaml.safe_load(path.read_text()) or {}).items():
            if isinstance(body, dict) and "ros__parameters" in body:
                blocks.setdefault(node, []).append((path.name, body["ros__parameters"] or {}))
    return blocks


def block_problems(node: str, block: dict, specs: dict, configs) -> list[str]:
    """What is wrong with one YAML block of `node` against its declared parameters and config classes."""
    problems = []
    for name, value in block.items():
        if name in ROS_OWN:
            continue
        if name not in specs:
            problems.append(f"{node}.{name}: not a parameter of the node")
        elif (problem := specs[name].problem(value)) is not None:
            problems.append(f"{node}.{name}: {problem}")
    if problems:
        return problems
    for cls, prefix, overridden in configs:  # the dataclass's own checks, on the YAML's values together
        names = {s.name for s in parameter_specs(cls, prefix) if s.path[0] not in overridden}
        try:
            build_config(cls, {k: v for k, v in block.items() if k in names}, prefix=prefix, owner=node)
        except ParameterError as exc:
            problems.append(str(exc))
    return problems


def test_every_checked_node_has_a_block_and_it_matches_what_the_node_declares():
    blocks = yaml_blocks()
    assert params_files(), "no params YAML under config/"
    problems = []
    for module in CHECKED:
        path = NODES_DIR / f"{module}.py"
        node, specs = node_parameters(path)
        assert node and specs, f"no node name or parameters found in {path.name}"
        if node not in blocks:
            problems.append(f"{node}: no ros__parameters block in {[p.name for p in params_files()]}")
        for filename, block in blocks.get(node, []):
            problems += [f"{filename}: {p}" for p in block_problems(node, block, specs, node_configs(path))]
    assert problems == []


def test_the_converted_nodes_take_their_parameters_from_config_classes():
    converted = {m: [c.__name__ for c, _, _ in node_configs(NODES_DIR / f"{m}.py")] for m in CHECKED}
    assert {m: c for m, c in converted.items() if c} == {
        "recorder_node": ["RecorderConfig"], "lab_sim_node": ["LabSimConfig"], "piper_driver_node": ["DriverConfig"],
        "planner_node": ["BackendConfig"], "vision_supervisor_node": ["SupervisionConfig"],
        "dispenser_controller_node": ["DispenserConfig", "SolidPourConfig"],
        "audio_supervisor_node": ["NoiseConfig"], "action_policy_node": ["VLAServeConfig", "SeenTargetConfig"]}


def test_block_checker_catches_unknown_names_types_ranges_choices_and_dataclass_refusals():
    path = NODES_DIR / "piper_driver_node.py"
    node, specs = node_parameters(path)
    configs = node_configs(path)
    good = {"side": "right", "rate_hz": 200.0, "speed_percent": 50, "use_sim_time": False}
    assert block_problems(node, good, specs, configs) == []
    bad = {"side": "middle", "rate_hz": 200, "speed_percent": 101, "feedback_timout_s": 0.1, "can_bustype": 3}
    assert block_problems(node, bad, specs, configs) == [
        "piper_driver.side: 'middle' is not one of 'left', 'right'",
        "piper_driver.rate_hz: expected float, got int 200 (write it with a decimal point)",
        "piper_driver.speed_percent: 101 is outside 1 .. 100 %",
        "piper_driver.feedback_timout_s: not a parameter of the node",
        "piper_driver.can_bustype: expected str, got int 3",
    ]


def test_block_checker_runs_the_dataclass_checks_on_the_yaml_values():
    from dataclasses import dataclass

    from agentchemist.params import param

    @dataclass(frozen=True)
    class Pair:
        low: float = param(1.0, description="Lower")
        high: float = param(2.0, description="Upper")

        def __post_init__(self):
            if self.low >= self.high:
                raise ValueError("low must be below high")

    specs = {s.name: s for s in parameter_specs(Pair)}
    assert block_problems("n", {"low": 3.0}, specs, [(Pair, "", set())]) == [
        "n: parameter 'low', 'high' refused by Pair: low must be below high"]
