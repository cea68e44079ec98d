"""Typed parameter declaration with ranges and descriptions.

`declare_config` declares a node's parameters from its config dataclass (fields made with
agentchemist.params.param: default, unit, range, description) and returns the validated object, so the
dataclass, the node and the YAML cannot disagree. `declare` is for the odd parameter with no config class.
"""
from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
from rclpy.exceptions import InvalidParameterTypeException, InvalidParameterValueException

from agentchemist.params import ParameterError, ParamSpec, build_config, parameter_specs


def declare(node, name: str, default, description: str, *, low=None, high=None):
    """Declare a parameter with a description (and a range for numbers); return its value."""
    desc = ParameterDescriptor(description=description)
    _set_range(desc, default, low, high)
    return node.declare_parameter(name, default, desc).value


def declare_config(node, cls, *, prefix: str = "", overrides=None):
    """Declare one ROS parameter per parameter field of config dataclass `cls` (named prefix + field name,
    typed, with its range, unit and description), read them and return `cls` built from them.

    `overrides` maps field names to values the node supplies itself (computed or loaded): those fields
    are not declared. A value of the wrong type, out of range, not among the choices or refused by the
    dataclass raises agentchemist.params.ParameterError (a ValueError) that names the parameter."""
    overrides = dict(overrides or {})
    values = {}
    for spec in parameter_specs(cls, prefix):
        if spec.path[0] in overrides:
            continue
        desc = ParameterDescriptor(description=spec.description, additional_constraints=spec.constraints)
        _set_range(desc, spec.default, spec.meta.low, spec.meta.high)
        try:
            values[spec.name] = node.declare_parameter(spec.name, spec.default, desc).value
        except (InvalidParameterTypeException, InvalidParameterValueException) as exc:
            raise ParameterError(f"{node.get_name()}: parameter '{spec.name}' refused: {_expected(spec)}; "
                                 f"ROS says: {exc}") from None
    return build_config(cls, values, prefix=prefix, overrides=overrides, owner=node.get_name())


def _expected(spec: ParamSpec) -> str:
    kind = type(spec.default).__name__ if not isinstance(spec.default, tuple) else "list"
    text = f"expected a {kind}"
    if kind == "float":
        text += " (written with a decimal point: 10.0, not 10)"
    if spec.constraints:
        text += f", {spec.constraints}"
    if spec.meta.unit:
        text += f" {spec.meta.unit}"
    return f"{text} ({spec.meta.description})"


def _set_range(desc: ParameterDescriptor, default, low, high):
    """A ROS range takes both bounds; a one-sided bound is checked by build_config instead."""
    if low is None or high is None or isinstance(default, bool):
        return
    if isinstance(default, int):
        desc.integer_range = [IntegerRange(from_value=int(low), to_value=int(high), step=0)]
    elif isinstance(default, float):
        desc.floating_point_range = [FloatingPointRange(from_value=float(low), to_value=float(high), step=0.0)]
