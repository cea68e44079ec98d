"""Typed parameter declaration with ranges and descriptions."""
from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor


def declare(node, name: str, default, description: str, *, low=None, high=None):
    """Declare a parameter with a description (and a range for numbers); return its value."""
    desc = ParameterDescriptor(description=description)
    if low is not None and high is not None:
        if isinstance(default, bool):
            pass
        elif isinstance(default, int):
            desc.integer_range = [IntegerRange(from_value=int(low), to_value=int(high), step=0)]
        elif isinstance(default, float):
            desc.floating_point_range = [FloatingPointRange(from_value=float(low), to_value=float(high), step=0.0)]
    return node.declare_parameter(name, default, desc).value
