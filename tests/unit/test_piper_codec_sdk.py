"""Our Piper codec against AgileX's own Python SDK (piper_sdk, a test-only dependency pinned in
requirements/constraints.txt): for the same command, the SDK's encoder (C_PiperParserV2.EncodeMessage)
produces the same id and bytes as ours; for the same frame, the SDK's decoder (DecodeMessage) reads the
same values as ours. No CAN interface is opened: the SDK's parser works on python-can Message objects.
Values are drawn by hypothesis over each field's whole wire range."""
import can
import pytest
from hypothesis import given, settings, strategies as st

from agentchemist.hardware.piper import codec

sdk_msgs = pytest.importorskip("piper_sdk.piper_msgs.msg_v2", reason="piper_sdk is a test dependency "
                               "(requirements/test.txt); make setup installs it")
from piper_sdk.protocol.protocol_v2.piper_protocol_v2 import C_PiperParserV2  # noqa: E402

T = sdk_msgs.ArmMsgType
PARSER = C_PiperParserV2()
INT32 = st.integers(-2**31, 2**31 - 1)
INT16 = st.integers(-2**15, 2**15 - 1)
U8 = st.integers(0, 255)
FAST = settings(max_examples=150, deadline=None)


def sdk_encode(**fields) -> can.Message:
    frame = can.Message(is_extended_id=False)
    assert PARSER.EncodeMessage(sdk_msgs.PiperMessage(**fields), frame)
    return frame


def sdk_decode(frame: can.Message):
    msg = sdk_msgs.PiperMessage()
    assert PARSER.DecodeMessage(frame, msg)
    return msg


def same_frame(ours: can.Message, theirs: can.Message):
    assert ours.arbitration_id == theirs.arbitration_id
    assert bytes(ours.data) == bytes(theirs.data)
    assert ours.dlc == 8 and not ours.is_extended_id


def val(x) -> int:
    return int(getattr(x, "value", x))          # the SDK keeps some status fields as enums


# -------------------------------------------------------------------------------------------- transmit
@FAST
@given(st.sampled_from([0, 1, 2]), st.integers(0, 8), st.integers(0, 7))
def test_motion_ctrl_1_estop_matches_sdk(estop, track, teach):
    ours = codec.encode_motion_ctrl_1(codec.MotionCtrl1(estop, track, teach))
    same_frame(ours, sdk_encode(type_=T.PiperMsgMotionCtrl_1,
                                arm_motion_ctrl_1=sdk_msgs.ArmMsgMotionCtrl_1(estop, track, teach)))
    assert codec.decode_motion_ctrl_1(ours) == codec.MotionCtrl1(estop, track, teach)


@FAST
@given(st.sampled_from([0x00, 0x01, 0x03, 0x04, 0x07]), st.integers(0, 5), st.integers(0, 100),
       st.sampled_from([0x00, 0xAD, 0xFF]), U8, st.integers(0, 3))
def test_mode_frame_matches_sdk(ctrl, move, speed, mit, residence, install):
    ours = codec.encode_mode(codec.ModeCommand(ctrl, move, speed, mit, residence, install))
    same_frame(ours, sdk_encode(type_=T.PiperMsgMotionCtrl_2, arm_motion_ctrl_2=sdk_msgs.ArmMsgMotionCtrl_2(
        ctrl, move, speed, mit, residence, install)))
    theirs = sdk_decode(ours).arm_motion_ctrl_2
    assert (val(theirs.ctrl_mode), val(theirs.move_mode), theirs.move_spd_rate_ctrl) == (ctrl, move, speed)


@FAST
@given(st.lists(INT32, min_size=6, max_size=6))
def test_joint_ctrl_frames_match_sdk(mdeg):
    sdk_joint = sdk_msgs.ArmMsgJointCtrl(*mdeg)
    for first, kind in ((1, T.PiperMsgJointCtrl_12), (3, T.PiperMsgJointCtrl_34), (5, T.PiperMsgJointCtrl_56)):
        ours = codec.encode_joint_ctrl(codec.JointPair(first, mdeg[first - 1], mdeg[first]))
        same_frame(ours, sdk_encode(type_=kind, arm_joint_ctrl=sdk_joint))
        back = sdk_decode(ours).arm_joint_ctrl
        theirs = (getattr(back, f"joint_{first}"), getattr(back, f"joint_{first + 1}"))
        assert theirs == tuple(mdeg[first - 1:first + 1])


@FAST
@given(INT32, st.integers(0, codec.GRIPPER_EFFORT_MAX), st.sampled_from([0, 1, 2, 3]), st.sampled_from([0, 0xAE]))
def test_gripper_ctrl_matches_sdk(opening, effort, code, zero):
    ours = codec.encode_gripper_ctrl(codec.GripperCommand(opening, effort, code, zero))
    same_frame(ours, sdk_encode(type_=T.PiperMsgGripperCtrl,
                                arm_gripper_ctrl=sdk_msgs.ArmMsgGripperCtrl(opening, effort, code, zero)))
    back = sdk_decode(ours).arm_gripper_ctrl
    assert (back.grippers_angle, back.grippers_effort, back.status_code, back.set_zero) == (opening, effort, code, zero)


@pytest.mark.parametrize("motor", [1, 2, 3, 4, 5, 6, 7, 0xFF])
@pytest.mark.parametrize("enable", [True, False])
def test_motor_enable_matches_sdk(motor, enable):
    ours = codec.encode_motor_enable(codec.MotorEnable(motor, enable))
    same_frame(ours, sdk_encode(type_=T.PiperMsgMotorEnableDisableConfig,
                                arm_motor_enable=sdk_msgs.ArmMsgMotorEnableDisableConfig(motor, 2 if enable else 1)))


# -------------------------------------------------------------------------------------------- feedback
def sdk_codes(enum_name: str):
    """The codes the SDK defines for a status field (it maps any other byte to its UNKNOWN member)."""
    return st.sampled_from([m.value for m in getattr(sdk_msgs.ArmMsgFeedbackStatusEnum, enum_name)])


@FAST
@given(sdk_codes("CtrlMode"), sdk_codes("ArmStatus"), sdk_codes("ModeFeed"), sdk_codes("TeachingState"),
       sdk_codes("MotionStatus"), U8, st.integers(0, 0xFFFF))
def test_arm_status_decodes_as_sdk(ctrl, status, move, teach, motion, traj, err):
    frame = codec.encode_arm_status(codec.ArmStatus(ctrl, status, move, teach, motion, traj, err))
    ours, theirs = codec.decode_arm_status(frame), sdk_decode(frame).arm_status_msgs
    assert (ours.ctrl_mode, ours.arm_status, ours.move_mode, ours.teach_status, ours.motion_status,
            ours.trajectory_num, ours.err_code) == (val(theirs.ctrl_mode), val(theirs.arm_status),
                                                    val(theirs.mode_feed), val(theirs.teach_status),
                                                    val(theirs.motion_status), theirs.trajectory_num,
                                                    theirs.err_code)


@FAST
@given(st.lists(INT32, min_size=6, max_size=6))
def test_joint_feedback_decodes_as_sdk(mdeg):
    for first in (1, 3, 5):
        frame = codec.encode_joint_feedback(codec.JointPair(first, mdeg[first - 1], mdeg[first]))
        theirs = sdk_decode(frame).arm_joint_feedback
        ours = codec.decode_joint_feedback(frame)
        assert (ours.a_mdeg, ours.b_mdeg) == (getattr(theirs, f"joint_{first}"), getattr(theirs, f"joint_{first + 1}"))


@FAST
@given(INT32, INT16, U8)
def test_gripper_feedback_with_effort_decodes_as_sdk(opening, effort, status):
    frame = codec.encode_gripper_feedback(codec.GripperFeedback(opening, effort, status))
    theirs = sdk_decode(frame).gripper_feedback
    ours = codec.decode_gripper_feedback(frame)
    assert (ours.opening_um, ours.effort_mnm, ours.status) == (theirs.grippers_angle, theirs.grippers_effort,
                                                               val(theirs.status_code))


@FAST
@given(st.integers(1, 6), INT16, INT16, INT32)
def test_high_speed_feedback_decodes_as_sdk(joint, speed, current, pos):
    frame = codec.encode_high_speed(codec.HighSpeedFeedback(joint, speed, current, pos))
    assert frame.arbitration_id == 0x250 + joint
    theirs = getattr(sdk_decode(frame), f"arm_high_spd_feedback_{joint}")
    ours = codec.decode_high_speed(frame)
    assert (ours.joint, ours.speed_mrad_s, ours.current_ma, ours.position) == (
        joint, theirs.motor_speed, theirs.current, theirs.pos)
    # the torque: the SDK's own fixed coefficients, same current -> same effort
    assert ours.effort_mnm == pytest.approx(theirs.cal_effort(current))


@FAST
@given(st.integers(1, 6), st.integers(0, 0xFFFF), INT16, st.integers(-128, 127), U8, st.integers(0, 0xFFFF))
def test_low_speed_feedback_decodes_as_sdk(joint, volts, driver_t, motor_t, status, bus_current):
    frame = codec.encode_low_speed(codec.LowSpeedFeedback(joint, volts, driver_t, motor_t, status, bus_current))
    assert frame.arbitration_id == 0x260 + joint
    theirs = getattr(sdk_decode(frame), f"arm_low_spd_feedback_{joint}")
    ours = codec.decode_low_speed(frame)
    assert (ours.voltage_dv, ours.driver_temp_c, ours.motor_temp_c, ours.status, ours.bus_current_ma) == (
        theirs.vol, theirs.foc_temp, theirs.motor_temp, theirs.foc_status_code, theirs.bus_current)
    # the status bits name the same conditions as the SDK's FOC_Status flags
    flags = theirs.foc_status
    assert ("motor over-temperature" in ours.faults()) == flags.motor_overheating
    assert ("driver over-temperature" in ours.faults()) == flags.driver_overheating
    assert ("supply voltage low" in ours.faults()) == flags.voltage_too_low
    assert ("stall protection" in ours.faults()) == flags.stall_status
    assert ours.enabled == flags.driver_enable_status


def test_malformed_motor_frames_are_refused():
    with pytest.raises(codec.FrameError):
        codec.decode_high_speed(can.Message(arbitration_id=0x251, data=b"\x00" * 7, is_extended_id=False))
    with pytest.raises(codec.FrameError):
        codec.encode_motion_ctrl_1(codec.MotionCtrl1(0x03))
    with pytest.raises(codec.FrameError):
        codec.encode_low_speed(codec.LowSpeedFeedback(7, 0, 0, 0, 0, 0))
