"""The parameters a node module declares, read from its source with ast (no rclpy, no node started):

- `declare(self, "<name>", <literal default>, "<description>", low=..., high=...)` calls;
- `declare_config(self, <ConfigClass>, prefix="...", overrides={...})` calls: the class is imported from
  the module's own imports and its param() fields listed (agentchemist.params.parameter_specs), less the
  fields in a literal `overrides` dict;
- helpers of agentchemist_ros.common called with the node (`declare_calibration(self)`): their module's
  declare / declare_config calls, as if made by the node.

Each parameter comes back as an agentchemist.params.ParamSpec (name, default, description, unit, range).
"""
from __future__ import annotations

import ast
import importlib
from pathlib import Path

from agentchemist.params import ParamMeta, ParamSpec, parameter_specs
from tests.conftest import REPO

NODES_DIR = REPO / "ros2_ws" / "src" / "agentchemist_ros" / "agentchemist_ros"
COMMON = "agentchemist_ros.common."


def node_parameters(path: Path) -> tuple[str | None, dict[str, ParamSpec]]:
    """(node name, {parameter name: spec}) of the node module at `path`."""
    return source_parameters(path.read_text())


def source_parameters(source: str) -> tuple[str | None, dict[str, ParamSpec]]:
    tree = ast.parse(source)
    imports = _imports(tree)
    node_name, params = None, {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if (isinstance(func, ast.Attribute) and func.attr == "__init__" and isinstance(func.value, ast.Call)
                and isinstance(func.value.func, ast.Name) and func.value.func.id == "super" and node.args
                and isinstance(node.args[0], ast.Constant)):
            node_name = node.args[0].value
        if not (isinstance(func, ast.Name) and node.args and isinstance(node.args[0], ast.Name)
                and node.args[0].id in ("self", "node")):
            continue
        if func.id == "declare":
            spec = declare_call_spec(node)
            params[spec.name] = spec
        elif func.id == "declare_config":
            params.update((s.name, s) for s in config_call_specs(node, imports))
        elif (imports.get(func.id) or "").startswith(COMMON):
            # a shared helper that declares parameters on the node it is given
            module = imports[func.id][len(COMMON):]
            params.update(source_parameters((NODES_DIR / "common" / f"{module}.py").read_text())[1])
    return node_name, params


def declare_call_spec(call: ast.Call) -> ParamSpec:
    """The spec of `declare(self, "name", default, "description", low=..., high=...)` (literals only)."""
    name, default = (ast.literal_eval(a) for a in call.args[1:3])
    description = ast.literal_eval(call.args[3]) if len(call.args) > 3 else ""
    kwargs = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
    return ParamSpec(name, (name,), default, ParamMeta(description, low=kwargs.get("low"), high=kwargs.get("high")))


def config_call(call: ast.Call, imports: dict[str, str]) -> tuple[type, str, set[str]]:
    """(config class, prefix, fields given by overrides) of `declare_config(self, Cls, prefix=..., overrides=...)`."""
    cls_node = call.args[1]
    if not (isinstance(cls_node, ast.Name) and cls_node.id in imports):
        raise ValueError(f"declare_config's class must be imported by name: {ast.dump(cls_node)}")
    cls = getattr(importlib.import_module(imports[cls_node.id]), cls_node.id)
    kwargs = {k.arg: k.value for k in call.keywords}
    prefix = ast.literal_eval(kwargs["prefix"]) if "prefix" in kwargs else ""
    overridden = set()
    if "overrides" in kwargs:
        if not isinstance(kwargs["overrides"], ast.Dict):
            raise ValueError("declare_config's overrides must be a dict literal for the source reader")
        overridden = {ast.literal_eval(k) for k in kwargs["overrides"].keys}
    return cls, prefix, overridden


def config_call_specs(call: ast.Call, imports: dict[str, str]) -> list[ParamSpec]:
    """The parameters `declare_config(self, Cls, prefix=..., overrides=...)` declares."""
    cls, prefix, overridden = config_call(call, imports)
    return [s for s in parameter_specs(cls, prefix) if s.path[0] not in overridden]


def node_configs(path: Path) -> list[tuple[type, str, set[str]]]:
    """Every declare_config call of the node module at `path` (see config_call)."""
    tree = ast.parse(path.read_text())
    imports = _imports(tree)
    return [config_call(node, imports) for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "declare_config"]


def _imports(tree: ast.AST) -> dict[str, str]:
    return {alias.asname or alias.name: node.module for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module for alias in node.names}


def ros_default(spec: ParamSpec):
    """The default as ROS (and YAML) holds it: a tuple is a list."""
    return list(spec.default) if isinstance(spec.default, tuple) else spec.default
