"""Config fields that carry their parameter metadata (agentchemist.params): specs, names, checks."""
from dataclasses import dataclass

import pytest

from agentchemist.params import ParameterError, build_config, nested, param, parameter_specs


@dataclass(frozen=True)
class Frozen:
    resolution: float = param(0.001, unit="pH", low=1e-6, high=1.0, description="Display step of the meter")
    repeats: int = param(5, low=2, high=100, description="Repeats that make a reading frozen")


@dataclass(frozen=True)
class Watch:
    period_s: float = param(1.0, unit="s", low=0.0, high=60.0, description="Period")
    side: str = param("right", choices=("left", "right"), description="Gripper")
    cameras: tuple = param(("front",), choices=("front", "left_wrist"), description="Cameras")
    enabled: bool = param(True, description="On")
    renamed: float = param(2.0, name="watch_gain", description="Gain")
    frozen: Frozen = nested(Frozen, prefix="ph_")
    internal: int = 7    # not a parameter

    def __post_init__(self):
        if self.period_s == 0.0 and self.enabled:
            raise ValueError("period_s must be > 0 while enabled")


def test_specs_name_every_parameter_field_with_prefixes_and_explicit_names():
    specs = parameter_specs(Watch, prefix="left_")
    assert [s.name for s in specs] == ["left_period_s", "left_side", "left_cameras", "left_enabled", "left_watch_gain",
                                       "left_ph_resolution", "left_ph_repeats"]
    by_name = {s.name: s for s in specs}
    assert by_name["left_ph_resolution"].path == ("frozen", "resolution")
    assert by_name["left_ph_resolution"].description == "Display step of the meter [pH]"
    assert by_name["left_period_s"].constraints == "range 0 .. 60"
    assert by_name["left_side"].constraints == "one of: left, right"


def test_build_takes_values_by_parameter_name_and_keeps_defaults():
    w = build_config(Watch, {"period_s": 2.0, "cameras": ["front", "left_wrist"], "watch_gain": 3.0,
                             "ph_resolution": 0.01})
    assert (w.period_s, w.cameras, w.renamed, w.frozen, w.side, w.internal) == (
        2.0, ("front", "left_wrist"), 3.0, Frozen(resolution=0.01), "right", 7)
    assert build_config(Watch, {}) == Watch()
    assert build_config(Watch, {}, overrides={"internal": 9, "side": "left"}).side == "left"


@pytest.mark.parametrize("values, message", [
    ({"period_s": 61.0}, r"parameter 'period_s': 61.0 is outside 0 .. 60 s \(Period\)"),
    ({"period_s": 10}, r"parameter 'period_s': expected float, got int 10 \(write it with a decimal point\)"),
    ({"period_s": float("nan")}, r"parameter 'period_s': nan is not a finite number"),
    ({"side": "middle"}, r"parameter 'side': 'middle' is not one of 'left', 'right'"),
    ({"cameras": ["front", "roof"]},
     r"parameter 'cameras': 'roof' \(in \['front', 'roof'\]\) is not one of 'front', 'left_wrist'"),
    ({"ph_repeats": 1}, r"parameter 'ph_repeats': 1 is outside 2 .. 100"),
    ({"enabled": 1}, r"parameter 'enabled': expected bool, got int"),
    ({"period_s": 0.0}, r"node: parameter 'period_s', 'enabled' refused by Watch: period_s must be > 0 while enabled"),
    ({"nope": 1}, r"Watch has no parameter nope"),
])
def test_bad_values_name_the_parameter(values, message):
    with pytest.raises(ParameterError, match=message):
        build_config(Watch, values, owner="node")


def test_param_refuses_what_ros_cannot_hold():
    with pytest.raises(TypeError, match="tuple"):
        param(["a"], description="x")
    with pytest.raises(TypeError, match="not a bool, int, float, str"):
        param(None, description="x")
    with pytest.raises(TypeError, match="description"):
        param(1.0, description="")
    with pytest.raises(ValueError, match="the default itself"):
        param(5.0, low=0.0, high=1.0, description="x")


def test_repeated_names_are_refused():
    @dataclass(frozen=True)
    class Twice:
        a: float = param(1.0, description="a")
        b: float = param(1.0, name="a", description="b")

    with pytest.raises(TypeError, match="repeat"):
        parameter_specs(Twice)
