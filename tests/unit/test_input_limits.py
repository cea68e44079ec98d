"""Size, depth and alias limits on every YAML/JSON the system reads, checked before any processing, with
errors that name the file (agentchemist.limits)."""
import time

import pytest

from agentchemist.chemistry.reagents import ReagentConfigError, ReagentLibrary
from agentchemist.control.calibration import CalibrationError, load_calibration
from agentchemist.limits import InputLimitError, Limits, check_json, load_json, load_yaml
from agentchemist.plan.protocols import ProtocolError, ProtocolLibrary
from agentchemist.plan.registry import HardwareRegistry, RegistryError
from agentchemist.plan.scene import SceneError, SceneInfo
from agentchemist.sim.scenario import ScenarioError, load_scenario


def alias_bomb(levels: int = 9) -> str:
    """About 3 kB of YAML that expands to 10**levels strings when constructed."""
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]")
    return "\n".join(lines) + "\n"


def deep_yaml(depth: int = 100_000) -> str:
    return "x: " + "[" * depth + "]" * depth + "\n"


@pytest.mark.parametrize("text, match", [
    (alias_bomb(), "aliases"),
    (deep_yaml(), "nested deeper"),
    ("faults:\n  - kind: extra_drop\n    params: {note: '" + "x" * 1_100_000 + "'}\n", "larger than"),
])
def test_a_hostile_scenario_is_refused_quickly_with_its_file_name(tmp_path, text, match):
    path = tmp_path / "hostile.yaml"
    path.write_text(text)
    start = time.monotonic()
    with pytest.raises(ScenarioError, match=match) as err:
        load_scenario(path)
    assert time.monotonic() - start < 5.0  # the bomb took 52 s and 3 GB before the limits
    assert str(path) in str(err.value)


def test_a_scenario_that_is_not_utf8_names_its_file(tmp_path):
    path = tmp_path / "latin1.yaml"
    path.write_bytes("name: titration à 25 °C\n".encode("latin-1"))
    with pytest.raises(ScenarioError, match="not UTF-8") as err:
        load_scenario(path)
    assert str(path) in str(err.value)


@pytest.mark.parametrize("load, error", [
    (lambda p: ReagentLibrary.load(p), ReagentConfigError),
    (lambda p: HardwareRegistry.load(p), RegistryError),
    (lambda p: load_calibration(p), CalibrationError),
    (lambda p: SceneInfo.from_file(p), SceneError),
])
def test_every_config_loader_refuses_an_alias_bomb_naming_the_file(tmp_path, load, error):
    path = tmp_path / "bomb.yaml"
    path.write_text(alias_bomb())
    with pytest.raises(error, match="aliases") as err:
        load(path)
    assert "bomb.yaml" in str(err.value)


def test_a_protocol_folder_with_a_deep_file_is_refused(tmp_path):
    (tmp_path / "deep.yaml").write_text(deep_yaml(1000))
    with pytest.raises(ProtocolError, match="deep.yaml.*nested deeper"):
        ProtocolLibrary.load(tmp_path)


def test_json_depth_is_checked_without_recursion_and_strings_do_not_count():
    with pytest.raises(InputLimitError, match="scene.json: nested deeper than 64"):
        load_json("[" * 100_000 + "]" * 100_000, "scene.json")
    check_json('{"text": "' + "[" * 1000 + '"}', "ok.json")  # brackets inside a string
    assert load_json('{"a": [1, {"b": "]"}]}', "x.json") == {"a": [1, {"b": "]"}]}


def test_ordinary_documents_pass_and_limits_are_configurable():
    assert load_yaml("a: &x [1, 2]\nb: *x\n", "small.yaml") == {"a": [1, 2], "b": [1, 2]}
    with pytest.raises(InputLimitError, match="more than 1 YAML aliases"):
        load_yaml("a: &x 1\nb: *x\nc: *x\n", "two.yaml", Limits(max_aliases=1))
