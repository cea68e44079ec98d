"""declare_config (agentchemist_ros.common.params) on a real rclpy Node: one typed parameter per param()
field, with range and description; values from the overrides; a bad value is an error naming it."""
from dataclasses import dataclass

import pytest

rclpy = pytest.importorskip("rclpy")

from rcl_interfaces.msg import ParameterType  # noqa: E402
from rclpy.context import Context  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402

from agentchemist.params import ParameterError, nested, param  # noqa: E402
from agentchemist_ros.common.params import declare_config  # noqa: E402


@dataclass(frozen=True)
class Frozen:
    resolution: float = param(0.001, unit="pH", low=1e-6, high=1.0, description="Display step of the meter")


@dataclass(frozen=True)
class Config:
    period_s: float = param(1.0, unit="s", low=0.0, high=60.0, description="Record period")
    count: int = param(3, low=1, high=10, description="How many")
    side: str = param("right", choices=("left", "right"), description="Gripper")
    cameras: tuple = param(("front",), description="Cameras to render")
    frozen: Frozen = nested(Frozen, prefix="ph_")
    computed: float = 0.0

    def __post_init__(self):
        if self.count > 5 and self.side == "left":
            raise ValueError("count above 5 needs side right")


@pytest.fixture
def make_node():
    context = Context()
    rclpy.init(context=context)
    nodes = []

    def make(*overrides):
        node = Node("cfg_test", context=context, start_parameter_services=False,
                    parameter_overrides=[Parameter(n, value=v) for n, v in overrides])
        nodes.append(node)
        return node

    yield make
    for node in nodes:
        node.destroy_node()
    rclpy.shutdown(context=context)


def test_declares_typed_parameters_with_ranges_and_returns_the_config(make_node):
    node = make_node(("period_s", 2.5), ("cameras", ["front", "left_wrist"]), ("ph_resolution", 0.01))
    cfg = declare_config(node, Config, overrides={"computed": 4.0})
    assert cfg == Config(period_s=2.5, cameras=("front", "left_wrist"), frozen=Frozen(0.01), computed=4.0)
    assert all(node.has_parameter(n) for n in ("period_s", "count", "side", "cameras", "ph_resolution"))
    assert not node.has_parameter("computed") and not node.has_parameter("resolution")
    period, = node.describe_parameters(["period_s"])
    assert period.type == ParameterType.PARAMETER_DOUBLE and period.description == "Record period [s]"
    assert (period.floating_point_range[0].from_value, period.floating_point_range[0].to_value) == (0.0, 60.0)
    count, side = node.describe_parameters(["count", "side"])
    assert (count.integer_range[0].from_value, count.integer_range[0].to_value) == (1, 10)
    assert side.additional_constraints == "one of: left, right"


def test_prefix_and_overridden_fields(make_node):
    node = make_node(("left_count", 4))
    cfg = declare_config(node, Config, prefix="left_", overrides={"side": "left"})
    assert (cfg.count, cfg.side) == (4, "left")
    assert not node.has_parameter("left_side") and node.has_parameter("left_ph_resolution")


@pytest.mark.parametrize("name, value, message", [
    ("period_s", 100.0, r"cfg_test: parameter 'period_s' refused: expected a float .*range 0 \.\. 60 s "
                        r"\(Record period\); ROS says: .*out of range"),
    ("period_s", 10, r"cfg_test: parameter 'period_s' refused: expected a float \(written with a decimal point"),
    ("count", 0, r"cfg_test: parameter 'count' refused: expected a int, range 1 \.\. 10"),
    ("side", "middle", r"cfg_test: parameter 'side': 'middle' is not one of 'left', 'right' \(Gripper\)"),
    ("ph_resolution", 2.0, r"parameter 'ph_resolution' refused: .*range 1e-06 \.\. 1 pH"),
])
def test_a_bad_value_is_an_error_naming_the_parameter(make_node, name, value, message):
    with pytest.raises(ParameterError, match=message):
        declare_config(make_node((name, value)), Config)


def test_the_dataclass_check_names_the_parameters_it_mentions(make_node):
    node = make_node(("count", 6), ("side", "left"))
    with pytest.raises(ValueError, match=r"cfg_test: parameter 'count', 'side' refused by Config: count above 5"):
        declare_config(node, Config)
