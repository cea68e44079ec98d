"""The bench description (agentchemist.workcell) is one, consistent, and what the twin, the taught poses and the
planner's registry agree with."""
import math
import subprocess
import sys

import pytest
import yaml

from agentchemist.workcell import (ARM_JOINT_LIMITS_RAD, FREE_IDS, GRIPPER_RANGE_M, JOINT_NAMES, LABWARE_KINDS,
                                   MARKER_TABLE, STATIONS, canonical_kind, check_side, default_marker_id, kind_names,
                                   labware_kind, platform_kinds, station_name, station_pose)
from agentchemist.plan import HardwareRegistry, SceneInfo
from agentchemist.plan.registry import default_registry_path
from tests.conftest import REPO


def test_the_bench_loads_neither_the_twin_nor_opencv_nor_ros():
    code = ("import sys, agentchemist.workcell; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('cv2', 'rclpy') or m.startswith('agentchemist.sim')]; "
            "print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.strip() == "[]"


def test_aliases_name_one_kind_each_and_resolve_to_the_bench_name():
    names = [n for k in LABWARE_KINDS for n in k.names]
    assert len(names) == len(set(names))
    assert canonical_kind("magnetic_stirrer") == "stirrer" == canonical_kind("Stir_Plate")
    assert canonical_kind("scale") == "balance" and canonical_kind("stirrer") == "stirrer"
    assert canonical_kind("beaker_100ml") == "beaker_100ml"  # sizes are the registry's, not aliases
    assert kind_names("magnetic_stirrer")[:2] == ("magnetic_stirrer", "stirrer")
    assert kind_names(["thermometer"]) == ("thermometer",)
    assert set(platform_kinds()) == {"stirrer", "balance"}
    assert station_name("magnetic_stirrer") == "stirrer" and station_pose("scale") == "beaker_at_balance"


def test_the_tag_table_marks_bench_kinds():
    assert all(labware_kind(m.kind) is not None and labware_kind(m.kind).name == m.kind for m in MARKER_TABLE.values())
    assert all(0 <= i < 50 and i not in FREE_IDS for i in MARKER_TABLE)
    assert len({m.labware_id for m in MARKER_TABLE.values()}) == len(MARKER_TABLE)
    assert default_marker_id("stirrer") == 3 and default_marker_id("no_such_item") is None


def test_the_twin_uses_the_bench_kinds_and_limits():
    from agentchemist.sim import markers, robot
    from agentchemist.sim.scenario import LAYOUT_KINDS

    assert LAYOUT_KINDS == tuple(k.name for k in LABWARE_KINDS)
    assert robot.ARM_JOINT_LIMITS_RAD is ARM_JOINT_LIMITS_RAD and robot.JOINT_NAMES is JOINT_NAMES
    assert markers.MARKER_TABLE is MARKER_TABLE
    from agentchemist.sim.errors import SimCommandError
    with pytest.raises(SimCommandError):
        robot.check_side("middle")
    with pytest.raises(ValueError):
        check_side("middle")


def test_every_station_has_its_taught_pose_and_every_taught_station_is_a_bench_station():
    poses = yaml.safe_load((REPO / "config" / "poses.yaml").read_text())["arms"]
    right = poses["right"]
    for station in STATIONS:
        assert station.pose in right, station
        if station.button_pose:
            assert station.button_pose in right, station
    taught = {n for arm in poses.values() for n in arm if n.startswith("beaker_at_")}
    assert taught == {s.pose for s in STATIONS}


def test_the_registry_agrees_with_the_bench_robot():
    reg = HardwareRegistry.load()
    for i, (lo, hi) in enumerate(ARM_JOINT_LIMITS_RAD):
        rlo, rhi = reg.joint_limits_deg[f"joint{i + 1}"]
        assert math.degrees(lo) == pytest.approx(rlo, abs=0.1) and math.degrees(hi) == pytest.approx(rhi, abs=0.1)
    assert tuple(1000.0 * x for x in GRIPPER_RANGE_M) == pytest.approx(reg.gripper_travel_mm)


def test_the_planner_reads_any_name_of_a_bench_kind():
    """The stirrer's tag says 'stirrer'; a registry that lists only 'magnetic_stirrer' still finds it."""
    doc = yaml.safe_load(default_registry_path().read_text())
    doc["instrument_kinds"]["magnetic_stirrer"] = ["magnetic_stirrer"]
    reg = HardwareRegistry.from_dict(doc)
    assert "stirrer" in reg.kinds_for("magnetic_stirrer") and "stirrer" in reg.instrument_kinds["magnetic_stirrer"]
    assert "stirrer" in reg.kinds_for("stir_plate")  # an instrument the registry does not list
    scene = SceneInfo.from_dict({"objects": [{"id": "plate", "kind": "stirrer"}, {"id": "b", "kind": "beaker"}]})
    assert [o.id for o in scene.of_kinds(reg.kinds_for("magnetic_stirrer"))] == ["plate"]
