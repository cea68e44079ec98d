"""What ros2_control's topic-based system sends piper_driver before and after the controllers start, built
from the URDF's ros2_control block by the upstream rules, fed to the driver over the simulated firmware.

The rules (facts from ros2_control 4.x for Jazzy and topic_based_hardware_interfaces'
joint_state_topic_hardware_interface/JointStateTopicSystem, read, not copied):
- a command interface starts at its own ``initial_value`` param, else NaN (a state interface's
  initial_value does not count);
- write() publishes a sensor_msgs/JointState with every joint of the block in order and a position for each
  joint that has a position command interface, unless the L1 distance between the position commands and
  states is at most trigger_joint_command_threshold (a NaN distance never is);
- joint_trajectory_controller, on activation, commands the measured position (hold); a
  forward_command_controller writes nothing before its first message.
"""
import math
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path

import can
import pytest

from agentchemist.hardware.piper import DriverConfig, PiperDriver, PiperFirmwareSim

URDF = Path(__file__).resolve().parents[2] / "urdf" / "agentchemist_aloha.urdf"
START = (0.1, 0.5, -0.5, 0.2, 0.3, -1.0)
DT = 0.005


def command_block(root: ET.Element, side: str) -> list[tuple[str, float | None]]:
    """(joint, initial position command) of the side's ros2_control block; None: no position command."""
    block = next(b for b in root.findall("ros2_control") if b.get("name") == f"{side}_piper")
    joints = []
    for joint in block.findall("joint"):
        command = next((c for c in joint.findall("command_interface") if c.get("name") == "position"), None)
        if command is None:
            joints.append((joint.get("name"), None))
            continue
        initial = next((p.text for p in command.findall("param") if p.get("name") == "initial_value"), None)
        joints.append((joint.get("name"), math.nan if initial is None else float(initial)))
    return joints


def published(joints, commands: dict[str, float], states: dict[str, float], threshold: float = 5e-7):
    """The JointState (names, positions) write() publishes, or None when it publishes nothing."""
    with_command = [name for name, initial in joints if initial is not None]
    diff = sum(abs(states.get(n, 0.0) - commands[n]) for n in with_command)
    if diff <= threshold:  # False for NaN: a NaN command is always published
        return None
    return [name for name, _ in joints], [commands[n] for n in with_command]


def driver_takes(names, positions, driver: PiperDriver, now: float):
    """piper_driver's on_command: names without a position are state-only, the rest by name."""
    values = dict(zip([n for n in names if not n.endswith("_centering")], positions))
    arm = [values[f"left_joint{i}"] for i in range(1, 7)]
    return driver.command(arm, values.get("left_gripper"), now)


@pytest.fixture
def rig():
    channel = f"piper-{uuid.uuid4().hex}"
    buses = [can.Bus(interface="virtual", channel=channel) for _ in range(2)]
    driver = PiperDriver(buses[0], DriverConfig(side="left"))
    fw = PiperFirmwareSim(buses[1], joints_rad=START, gripper_m=0.035)
    t = [0.0]

    def run(seconds):
        for _ in range(round(seconds / DT)):
            driver.step(t[0])
            fw.step(t[0] + DT / 2)
            t[0] += DT
    yield driver, fw, run, t
    for bus in buses:
        bus.shutdown()


def startup_sequence(joints, driver, fw, run, t):
    """Controller manager up (commands at their initial values), then the trajectory controller holds the
    measured arm and moves joint1; the gripper controller has written nothing. Returns the driver's answers."""
    run(0.1)
    states = dict(zip([f"left_joint{i}" for i in range(1, 7)], START)) | {"left_gripper": 0.035}
    commands = {name: initial for name, initial in joints if initial is not None}
    answers = [driver_takes(*published(joints, commands, states), driver, t[0])]   # before any controller
    commands.update(zip([f"left_joint{i}" for i in range(1, 7)], START))           # JTC activates: hold
    answers.append(driver_takes(*published(joints, commands, states), driver, t[0]))
    run(0.05)
    commands["left_joint1"] = 0.3                                                  # a trajectory moves joint1
    answers.append(driver_takes(*published(joints, commands, states), driver, t[0]))
    run(2.0)
    return answers


def test_the_urdf_starts_the_gripper_command_at_a_number_so_the_arm_moves_before_the_gripper_is_commanded(rig):
    driver, fw, run, t = rig
    joints = command_block(ET.parse(URDF).getroot(), "left")
    assert dict(joints)["left_gripper"] == pytest.approx(0.07)                   # initial_value on the command
    assert math.isnan(dict(joints)["left_joint1"])                               # arm: NaN until the JTC holds
    before, hold, move = startup_sequence(joints, driver, fw, run, t)
    assert not before.accepted and "left_joint1" in before.error                 # NaN arm: nothing sent
    assert hold.accepted and move.accepted, (hold, move)
    assert fw.joints[0] == pytest.approx(0.3, abs=1e-4)                          # the arm moved
    assert fw.gripper == pytest.approx(0.035)                                    # the startup value opened nothing


def test_a_description_without_the_gripper_initial_value_still_lets_the_arm_move(rig):
    """The NaN gripper the issue found on the real stack: the arm follows, the gripper holds, said once."""
    driver, fw, run, t = rig
    joints = [(n, math.nan if n == "left_gripper" else v)
              for n, v in command_block(ET.parse(URDF).getroot(), "left")]
    _, hold, move = startup_sequence(joints, driver, fw, run, t)
    assert hold.accepted and move.accepted, (hold.error, move.error)
    assert fw.joints[0] == pytest.approx(0.3, abs=1e-4) and fw.gripper == pytest.approx(0.035)
    kinds = [e.kind for e in driver.drain_events()]
    assert kinds.count("gripper_uncommanded") == 1


def test_the_model_publishes_nothing_when_commands_equal_states():
    joints = [("a", 0.0), ("b", None)]
    assert published(joints, {"a": 0.0}, {"a": 0.0}) is None
    names, positions = published(joints, {"a": math.nan}, {"a": 0.0})
    assert names == ["a", "b"] and math.isnan(positions[0])
