"""The workcell: the one description of the lab bench, what stands on it and what the robot can reach, as
plain data. (Named workcell so that "bench" means one thing in this project: `bench/`, the benchmarks.)

Imported alike by perception (which tag is which item), hardware (the arm's limits the driver clamps
to), the planner (which scene kinds name the same item), control and policy (the stations a beaker is
carried between) and the twin (what it draws and enforces). It imports nothing of ROS, of the twin
(``agentchemist.sim``) or of OpenCV: frozen dataclasses and tables only. Change the bench here, once.

- :mod:`.labware`: labware kinds, their canonical names and accepted aliases (``magnetic_stirrer`` is
  the ``stirrer``), which of them others stand on;
- :mod:`.tags`: the ArUco dictionary and the tag id -> labware id / kind table printed on the bench;
- :mod:`.robot`: the two Piper arms: sides, joint names, joint limits and gripper range;
- :mod:`.stations`: the named stations a beaker is carried between and the devices with a button.
"""
from agentchemist.workcell.labware import (LABWARE_KINDS, LabwareKind, canonical_kind, kind_names, labware_kind,
                                           platform_kinds)
from agentchemist.workcell.robot import (ARM_JOINT_LIMITS_RAD, ARM_JOINTS, GRIPPER_RANGE_M, JOINT_NAMES, PIPER, SIDES,
                                         ArmSpec, JointLimit, check_side)
from agentchemist.workcell.stations import (BUTTON_SUFFIX, STATION_PREFIX, STATIONS, Station, button_pose,
                                            station_name, station_pose)
from agentchemist.workcell.tags import (ARUCO_DICTIONARY, FREE_IDS, MARKER_TABLE, TAG_CELLS, TAG_SIDE_DESIGN_PX,
                                        MarkerInfo, default_marker_id)

__all__ = [
    "ARM_JOINTS",
    "ARM_JOINT_LIMITS_RAD",
    "ARUCO_DICTIONARY",
    "BUTTON_SUFFIX",
    "FREE_IDS",
    "GRIPPER_RANGE_M",
    "JOINT_NAMES",
    "LABWARE_KINDS",
    "MARKER_TABLE",
    "PIPER",
    "SIDES",
    "STATIONS",
    "STATION_PREFIX",
    "TAG_CELLS",
    "TAG_SIDE_DESIGN_PX",
    "ArmSpec",
    "JointLimit",
    "LabwareKind",
    "MarkerInfo",
    "Station",
    "button_pose",
    "canonical_kind",
    "check_side",
    "default_marker_id",
    "kind_names",
    "labware_kind",
    "platform_kinds",
    "station_name",
    "station_pose",
]
