"""PiperDriver against the simulated Piper firmware, both on one python-can `virtual` channel, in simulated
time: start-up sequence on the bus, feedback -> joint state, following commands, the startup hold,
clamping, non-finite commands, a dead bus. A third bus on the channel sniffs every frame."""
import math
import uuid

import can
import pytest

from agentchemist.hardware.piper import DriverConfig, PiperDriver, PiperFirmwareSim, codec

DT = 0.005                              # the driver's 200 Hz
START = (0.1, 0.5, -0.5, 0.2, 0.3, -1.0)
JOINT_TOL = 2e-5                        # 0.001 deg is 1.7e-5 rad
MOTION_IDS = {*codec.JOINT_CTRL_IDS, codec.GRIPPER_CTRL_ID}


class Rig:
    def __init__(self, firmware: bool = True, **config):
        channel = f"piper-{uuid.uuid4().hex}"
        self.buses = [can.Bus(interface="virtual", channel=channel) for _ in range(3)]
        self.driver = PiperDriver(self.buses[0], DriverConfig(side="left", **config))
        self.fw = PiperFirmwareSim(self.buses[1], joints_rad=START, gripper_m=0.035) if firmware else None
        self.sniffer = self.buses[2]
        self.t = 0.0
        self.states = []

    def run(self, seconds: float):
        for _ in range(round(seconds / DT)):
            self.states.append(self.driver.step(self.t))
            if self.fw is not None:
                self.fw.step(self.t + DT / 2)
            self.t += DT
        return self.states[-1]

    def sniffed(self) -> list[can.Message]:
        frames = []
        while (msg := self.sniffer.recv(timeout=0)) is not None:
            frames.append(msg)
        return frames

    def sent_by_driver(self) -> list[can.Message]:
        return [m for m in self.sniffed() if m.arbitration_id not in codec.FEEDBACK_IDS]

    def command(self, arm, gripper=None):
        return self.driver.command(arm, gripper, self.t)

    def kinds(self):
        return [(e.kind, e.resolved) for e in self.driver.drain_events()]

    def close(self):
        for bus in self.buses:
            bus.shutdown()


@pytest.fixture
def rig():
    made = []

    def make(**kwargs):
        made.append(Rig(**kwargs))
        return made[-1]
    yield make
    for r in made:
        r.close()


def armed(rig_factory, **kwargs) -> Rig:
    """A rig whose driver follows commands: the first command matched the measured position."""
    r = rig_factory(**kwargs)
    r.run(0.1)
    assert r.command(START, 0.035).accepted
    r.run(0.02)
    assert r.driver.arm_armed
    r.sniffed()
    r.driver.drain_events()
    return r


def test_start_enables_the_motors_then_asks_for_can_command_mode(rig):
    r = rig(speed_percent=40)
    r.run(DT)
    first = r.sent_by_driver()
    assert [(m.arbitration_id, bytes(m.data)) for m in first] == [
        (0x471, bytes.fromhex("0702000000000000")), (0x151, bytes.fromhex("0101280000000000"))]
    r.run(0.2)
    assert r.fw.enabled and r.fw.ctrl_mode == codec.CTRL_CAN and r.fw.move_mode == codec.MOVE_J
    assert r.driver.in_can_mode
    # confirmed by the status frame: no more mode frames, and nothing that moves the arm without a command
    assert r.sent_by_driver() == []
    assert r.kinds() == []


def test_mode_is_resent_and_reported_until_the_arm_confirms_it(rig):
    r = rig(firmware=False, mode_retry_s=0.1)
    r.run(0.26)
    mode_frames = [m for m in r.sent_by_driver() if m.arbitration_id == codec.MODE_CTRL_ID]
    assert len(mode_frames) == 3                    # at t = 0, 0.1, 0.2
    assert ("not_in_can_mode", False) in r.kinds()


def test_feedback_becomes_a_joint_state_in_rad_and_metres(rig):
    r = rig()
    state = r.run(0.1)
    assert state.names == ("left_joint1", "left_joint2", "left_joint3", "left_joint4", "left_joint5",
                           "left_joint6", "left_gripper")
    assert state.positions[:6] == pytest.approx(START, abs=JOINT_TOL)
    assert state.positions[6] == pytest.approx(0.035, abs=1e-9)
    assert r.t - state.stamp <= 2 * DT


def test_a_command_moves_the_simulated_arm_to_its_target(rig):
    r = armed(rig)
    target = (-0.4, 1.2, -1.1, 0.5, -0.2, 0.8)
    assert r.command(target, 0.010).accepted
    state = r.run(2.0)
    assert r.fw.joints == pytest.approx(target, abs=JOINT_TOL)
    assert state.positions[:6] == pytest.approx(target, abs=JOINT_TOL)
    assert state.positions[6] == pytest.approx(0.010, abs=1e-6)
    joint_frames = [m for m in r.sniffed() if m.arbitration_id == 0x155]
    assert codec.decode_joint_ctrl(joint_frames[-1]) == codec.JointPair(1, codec.rad_to_mdeg(-0.4),
                                                                        codec.rad_to_mdeg(1.2))


def test_startup_hold_sends_nothing_until_commands_match_the_arm(rig):
    r = rig()
    r.run(0.1)
    r.sniffed()
    # ros2_control's first commands: the URDF's initial values (0 rad, gripper 0.07 m), far from the arm
    assert r.command((0.0, 0.0, 0.0, 0.0, 0.0, 0.0), 0.07).accepted
    r.run(0.5)
    assert [m for m in r.sent_by_driver() if m.arbitration_id in MOTION_IDS] == []
    assert r.fw.joints == pytest.approx(START, abs=JOINT_TOL) and r.fw.gripper == pytest.approx(0.035)
    assert ("holding", False) in r.kinds()
    # the trajectory controller activates and commands the measured position: the arm is followed, the
    # gripper still is not (its command has not changed from the startup value)
    r.command(tuple(v + 0.01 for v in START), 0.07)
    r.run(0.05)
    sent = r.sent_by_driver()
    assert {m.arbitration_id for m in sent} == set(codec.JOINT_CTRL_IDS)
    assert ("tracking", True) in r.kinds()
    r.command(START, 0.02)
    r.run(0.6)
    assert r.fw.gripper == pytest.approx(0.02, abs=1e-6)


def test_commands_are_clamped_to_the_sdk_limits_and_each_clamp_reported(rig):
    r = armed(rig)
    result = r.command((0.1, 3.5, -0.5, 0.2, 0.3, -1.0), 0.09)
    assert result.accepted and result.clamped == ("left_joint2", "left_gripper")
    events = [e for e in r.driver.drain_events() if e.kind == "clamped"]
    assert [e.severity for e in events] == ["warn", "warn"]
    assert "left_joint2 command 3.5000 clamped to 3.1400" in events[0].description
    r.command((0.1, 3.5, -0.5, 0.2, 0.3, -1.0), 0.09)      # the same clamp again: not reported twice
    assert r.kinds() == []
    r.run(0.05)
    pair = codec.decode_joint_ctrl(next(m for m in r.sniffed() if m.arbitration_id == 0x155))
    assert pair.b_mdeg == codec.rad_to_mdeg(3.14)
    assert r.fw.err_code == 0                                  # the firmware saw nothing beyond its limits


def test_non_finite_commands_are_refused_and_nothing_is_sent(rig):
    r = armed(rig)
    before = r.driver.frames_sent
    result = r.command((0.1, 0.5, math.nan, 0.2, 0.3, -1.0), 0.03)
    assert not result.accepted and "left_joint3" in result.error
    assert r.driver.frames_sent == before and r.sniffed() == []
    assert r.kinds() == [("command_rejected", False)]
    assert not r.command(START, math.inf).accepted             # the gripper alone spoils the command too
    r.run(0.2)
    # the driver keeps holding the last valid command; the arm did not move
    assert r.fw.joints == pytest.approx(START, abs=JOINT_TOL) and r.fw.gripper == pytest.approx(0.035)
    joint_frames = [codec.decode_joint_ctrl(m) for m in r.sniffed() if m.arbitration_id == 0x156]
    assert joint_frames and all(p == codec.JointPair(3, codec.rad_to_mdeg(-0.5), codec.rad_to_mdeg(0.2))
                                for p in joint_frames)
    assert r.command(START, 0.035).accepted and r.kinds() == [("command_rejected", True)]


def test_a_dead_bus_is_reported_and_motion_commands_stop(rig):
    r = armed(rig, feedback_timeout_s=0.1)
    r.command((0.5, 0.5, -0.5, 0.2, 0.3, -1.0), 0.035)
    r.run(0.05)
    r.fw.silent = True                                         # the arm goes quiet
    r.run(0.15)
    assert r.states[-1] is None
    events = r.driver.drain_events()
    assert [(e.kind, e.severity) for e in events] == [("feedback_timeout", "halt")]
    r.sniffed()
    r.run(0.3)
    assert [m for m in r.sent_by_driver() if m.arbitration_id in MOTION_IDS] == []
    assert not r.driver.arm_armed
    # feedback returns: reported; the arm stopped half-way, so the last command (0.5 rad on joint 1) no
    # longer matches it and is held until a command does
    r.fw.silent = False
    r.run(0.05)
    assert r.states[-1] is not None
    assert r.kinds() == [("feedback_timeout", True), ("holding", False)]
    assert not r.driver.arm_armed and r.sent_by_driver() == []
    r.command(r.states[-1].positions[:6], 0.035)
    r.run(0.02)
    assert r.driver.arm_armed and {m.arbitration_id for m in r.sent_by_driver()} == set(codec.JOINT_CTRL_IDS)


def test_no_feedback_at_all_is_a_dead_bus(rig):
    r = rig(firmware=False, feedback_timeout_s=0.1)
    r.run(0.05)
    assert r.kinds() == []
    r.run(0.1)
    assert ("feedback_timeout", False) in r.kinds()
    assert all(s is None for s in r.states)


def test_malformed_feedback_and_arm_faults_are_reported(rig):
    r = rig()
    r.run(0.05)
    r.fw.bus.send(can.Message(arbitration_id=0x2A5, data=bytes(4), is_extended_id=False))
    r.fw.bus.send(codec.encode_arm_status(codec.ArmStatus(codec.CTRL_CAN, codec.ARM_EMERGENCY_STOP,
                                                          codec.MOVE_J, 0, 0, 0, 0)))
    r.driver.step(r.t)          # faults are judged once per cycle, on every frame that arrived
    events = {e.kind: e for e in r.driver.drain_events()}
    assert "4 data bytes" in events["malformed_frame"].description
    assert events["arm_status"].severity == "halt" and "emergency stop" in events["arm_status"].description


def test_the_firmware_enforces_its_own_limits(rig):
    r = rig()
    r.run(0.05)
    r.fw.bus.recv(timeout=0)
    r.sniffer.send(codec.encode_joint_ctrl(codec.JointPair(1, 0, codec.rad_to_mdeg(math.radians(200.0)))))
    r.fw.step(r.t)
    assert r.fw.err_code == 0b10 and r.fw.arm_status == codec.ARM_TARGET_EXCEEDS_LIMIT
    assert r.fw.joint_targets[1] == pytest.approx(3.14)


def test_a_nan_gripper_is_not_yet_commanded_the_arm_follows_and_the_gripper_holds(rig):
    """ros2_control's topic-based system sends NaN for a gripper whose controller has written nothing yet (a
    command interface without initial_value): the arm's commands must still be followed."""
    r = armed(rig)
    target = (0.2, 0.5, -0.5, 0.2, 0.3, -1.0)
    result = r.command(target, math.nan)
    assert result.accepted, result.error
    assert r.kinds() == [("gripper_uncommanded", False)]
    assert r.command(target, math.nan).accepted and r.kinds() == []       # said once, not at 200 Hz
    r.run(1.5)
    assert r.fw.joints == pytest.approx(target, abs=JOINT_TOL)
    assert r.fw.gripper == pytest.approx(0.035)                         # held where it was
    assert r.command(target, 0.02).accepted and ("gripper_uncommanded", True) in r.kinds()
    r.run(1.5)
    assert r.fw.gripper == pytest.approx(0.02, abs=1e-5)
    assert not r.command((0.2, math.nan, -0.5, 0.2, 0.3, -1.0), math.nan).accepted  # a NaN arm joint: refused
