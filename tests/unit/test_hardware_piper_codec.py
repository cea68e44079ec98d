"""Piper CAN codec: exact bytes for known values (ids and layouts from piper_sdk protocol V2), round trips,
malformed frames refused."""
import math

import can
import pytest

from agentchemist.hardware.piper import codec


def test_joint_frames_are_two_big_endian_int32_in_millidegrees():
    # +90.000 deg = 90000 = 0x00015F90; -1.5 deg = -1500 = 0xFFFFFA24 (two's complement)
    pair = codec.JointPair(3, codec.rad_to_mdeg(math.radians(90.0)), codec.rad_to_mdeg(math.radians(-1.5)))
    assert (pair.a_mdeg, pair.b_mdeg) == (90000, -1500)
    fb = codec.encode_joint_feedback(pair)
    assert (fb.arbitration_id, fb.is_extended_id, fb.dlc) == (0x2A6, False, 8)
    assert bytes(fb.data) == bytes.fromhex("00015F90 FFFFFA24")
    ctrl = codec.encode_joint_ctrl(codec.JointPair(5, 90000, -1500))
    assert ctrl.arbitration_id == 0x157 and bytes(ctrl.data) == bytes.fromhex("00015F90 FFFFFA24")
    assert codec.decode_joint_feedback(fb) == pair
    assert codec.decode_joint_ctrl(ctrl) == codec.JointPair(5, 90000, -1500)
    assert [codec.encode_joint_feedback(codec.JointPair(f, 0, 0)).arbitration_id for f in (1, 3, 5)] == \
        [0x2A5, 0x2A6, 0x2A7]
    assert [codec.encode_joint_ctrl(codec.JointPair(f, 0, 0)).arbitration_id for f in (1, 3, 5)] == \
        [0x155, 0x156, 0x157]
    assert codec.mdeg_to_rad(-1500) == pytest.approx(math.radians(-1.5))


def test_gripper_frames():
    # 35.000 mm = 35000 um = 0x000088B8; effort 1.000 N m = 1000 = 0x03E8
    ctrl = codec.encode_gripper_ctrl(codec.GripperCommand(codec.m_to_um(0.035), codec.nm_to_mnm(1.0),
                                                          codec.GRIPPER_ENABLE))
    assert ctrl.arbitration_id == 0x159
    assert bytes(ctrl.data) == bytes.fromhex("000088B8 03E8 01 00")
    assert codec.decode_gripper_ctrl(ctrl) == codec.GripperCommand(35000, 1000, 0x01, 0x00)
    # feedback: effort is a signed int16 (-2.0 N m = 0xF830), then the status byte, then a reserved byte
    fb = codec.encode_gripper_feedback(codec.GripperFeedback(35000, -2000, 0x40))
    assert fb.arbitration_id == 0x2A8
    assert bytes(fb.data) == bytes.fromhex("000088B8 F830 40 00")
    decoded = codec.decode_gripper_feedback(fb)
    assert decoded == codec.GripperFeedback(35000, -2000, 0x40)
    assert decoded.enabled and not decoded.driver_error
    assert codec.um_to_m(decoded.opening_um) == pytest.approx(0.035)


def test_status_mode_and_enable_frames():
    status = codec.ArmStatus(ctrl_mode=0x01, arm_status=0x04, move_mode=0x01, teach_status=0, motion_status=1,
                             trajectory_num=0, err_code=0x0102)
    frame = codec.encode_arm_status(status)
    assert frame.arbitration_id == 0x2A1 and bytes(frame.data) == bytes.fromhex("01 04 01 00 01 00 0102")
    assert codec.decode_arm_status(frame) == status
    assert status.describe() == "target angle exceeds limit"

    mode = codec.encode_mode(codec.ModeCommand(codec.CTRL_CAN, codec.MOVE_J, 50))
    assert mode.arbitration_id == 0x151 and bytes(mode.data) == bytes.fromhex("01 01 32 00 00 00 00 00")
    assert codec.decode_mode(mode) == codec.ModeCommand(0x01, 0x01, 50, 0x00, 0, 0)

    enable = codec.encode_motor_enable(codec.MotorEnable(codec.MOTOR_ALL, True))
    assert enable.arbitration_id == 0x471 and bytes(enable.data) == bytes.fromhex("07 02 000000000000")
    disable = codec.encode_motor_enable(codec.MotorEnable(7, False))
    assert bytes(disable.data)[:2] == bytes.fromhex("07 01")
    assert codec.decode_motor_enable(disable) == codec.MotorEnable(7, False)


@pytest.mark.parametrize("mdeg", [0, 1, -1, 150000, -150000, 2**31 - 1, -2**31])
def test_joint_round_trip_over_the_int32_range(mdeg):
    pair = codec.JointPair(1, mdeg, -mdeg if mdeg > -2**31 else 0)
    assert codec.decode_joint_feedback(codec.encode_joint_feedback(pair)) == pair
    assert codec.decode_joint_ctrl(codec.encode_joint_ctrl(pair)) == pair


def test_generic_decode_dispatches_by_id():
    frames = [codec.encode_arm_status(codec.ArmStatus(1, 0, 1, 0, 0, 0, 0)),
              codec.encode_gripper_feedback(codec.GripperFeedback(1, 2, 3)),
              codec.encode_mode(codec.ModeCommand()),
              codec.encode_motor_enable(codec.MotorEnable(7, True))]
    assert [type(codec.decode(f)).__name__ for f in frames] == ["ArmStatus", "GripperFeedback", "ModeCommand",
                                                                "MotorEnable"]


def test_malformed_frames_are_rejected_with_a_reason():
    short = can.Message(arbitration_id=0x2A5, data=bytes(4), is_extended_id=False)
    with pytest.raises(codec.FrameError, match="4 data bytes"):
        codec.decode_joint_feedback(short)
    with pytest.raises(codec.FrameError, match="0x2A8 is not 0x2A5, 0x2A6, 0x2A7"):
        codec.decode_joint_feedback(can.Message(arbitration_id=0x2A8, data=bytes(8), is_extended_id=False))
    with pytest.raises(codec.FrameError, match="29-bit"):
        codec.decode_gripper_feedback(can.Message(arbitration_id=0x2A8, data=bytes(8), is_extended_id=True))
    with pytest.raises(codec.FrameError, match="remote"):
        codec.decode_arm_status(can.Message(arbitration_id=0x2A1, is_remote_frame=True, dlc=8,
                                            is_extended_id=False))
    with pytest.raises(codec.FrameError, match="not a Piper frame"):
        codec.decode(can.Message(arbitration_id=0x123, data=bytes(8), is_extended_id=False))
    with pytest.raises(codec.FrameError, match="enable flag"):
        codec.decode_motor_enable(can.Message(arbitration_id=0x471, data=bytes([7, 5, 0, 0, 0, 0, 0, 0]),
                                              is_extended_id=False))


def test_values_the_wire_cannot_hold_are_refused():
    with pytest.raises(codec.FrameError, match="int32"):
        codec.encode_joint_ctrl(codec.JointPair(1, 2**31, 0))
    with pytest.raises(codec.FrameError, match="joint 1, 3 or 5"):
        codec.encode_joint_ctrl(codec.JointPair(2, 0, 0))
    with pytest.raises(codec.FrameError, match="effort"):
        codec.encode_gripper_ctrl(codec.GripperCommand(0, 5001))
    with pytest.raises(codec.FrameError, match="0..100"):
        codec.encode_mode(codec.ModeCommand(speed_percent=101))
    with pytest.raises(codec.FrameError, match="motor"):
        codec.encode_motor_enable(codec.MotorEnable(8, True))
