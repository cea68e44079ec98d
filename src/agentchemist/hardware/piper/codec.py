"""Piper CAN frames (protocol V2) <-> small typed records, as python-can ``can.Message`` objects.

Every frame is a standard (11-bit) data frame with 8 data bytes, multi-byte fields big-endian. Values
stay in the wire's integer units here (0.001 deg, 0.001 mm, 0.001 N m); the ``*_to_*`` helpers convert.

Facts read from AgileX's piper_sdk (github agilexrobotics/piper_sdk, commit 1dadd60), not copied:

- ids: ``piper_sdk/piper_msgs/msg_v2/can_id.py`` (CanIDPiper): arm status 0x2A1, joint feedback
  0x2A5/0x2A6/0x2A7 (joints 1-2, 3-4, 5-6), gripper feedback 0x2A8, motion control 2 (mode) 0x151,
  joint control 0x155/0x156/0x157, gripper control 0x159, motor enable/disable 0x471.
- byte layouts and signedness: ``piper_sdk/protocol/protocol_v2/piper_protocol_v2.py``
  (C_PiperParserV2.DecodeMessage / EncodeMessage) with the big-endian default of
  ``piper_sdk/protocol/piper_protocol_base.py`` (ConvertBytesToInt, ConvertToList_32bit ``>i``):
  joint frames two int32; gripper feedback int32 opening, int16 effort, uint8 status, 1 reserved;
  gripper control int32 opening, uint16 effort, uint8 enable code, uint8 set-zero; arm status six uint8
  then uint16 error code; mode frame six uint8 (ctrl mode, move mode, speed %, MIT mode, residence
  time, installation position) then 2 zero bytes; enable frame uint8 motor, uint8 flag, 6 zero bytes.
- enum codes and ranges: ``piper_sdk/piper_msgs/msg_v2/transmit/arm_motion_ctrl_2.py`` (ctrl mode 0x01 =
  CAN command; move mode 0x01 = MOVE J; speed 0..100 %; MIT byte 0x00 = position-speed),
  ``transmit/arm_gripper_ctrl.py`` (effort 0..5000 = 0..5 N m; code 0x00 disable, 0x01 enable, 0x02
  disable + clear error, 0x03 enable + clear error; set-zero 0x00 or 0xAE),
  ``transmit/arm_motor_enable_disable.py`` (flag 0x01 disable, 0x02 enable; motor 1..6 a joint, 7, 0xFF),
  ``feedback/arm_feedback_status.py`` (ctrl mode, arm status and move-mode codes; error code bits 0-5
  joint limit, bits 8-13 joint communication), ``feedback/arm_feedback_gripper.py`` (status bit 6 =
  driver enabled, bit 5 = driver error).
- e-stop / resume and motor feedback (same files): 0x150 "motion control 1" is uint8 e-stop (0x00 none,
  0x01 quick e-stop, 0x02 resume), uint8 trajectory command, uint8 drag-teach command, 5 zero bytes
  (``transmit/arm_motion_ctrl_1.py``; the SDK's EncodeMessage zero-fills bytes 3-7); high-speed driver
  feedback 0x251..0x256 (one per joint) is int16 speed (0.001 rad/s), int16 current (0.001 A; the byte
  description says uint16, the SDK's decoder reads it signed, as we do), int32 position
  (``feedback/arm_feedback_high_spd.py``, whose cal_effort turns current into torque with 1.18125 for
  joints 1-3 and 0.95844 for joints 4-6, 0.001 N m per 0.001 A); low-speed driver feedback 0x261..0x266
  is uint16 voltage (0.1 V), int16 driver temperature (1 C), int8 motor temperature (1 C), uint8 driver
  status (bit 0 voltage low, 1 motor over-temperature, 2 over-current, 3 driver over-temperature,
  4 collision protection, 5 driver error, 6 enabled, 7 stall protection), uint16 bus current (0.001 A)
  (``feedback/arm_feedback_low_spd.py``).
- motor number 7: the SDK's ``EnableArm``/``EnablePiper`` (``piper_sdk/interface/piper_interface_v2.py``)
  send 7 and then expect joints 1-6 enabled, although the enable frame's byte description calls 7 the
  gripper motor and 0xFF "all, gripper included". We send 7 as the SDK does.
"""
from __future__ import annotations

import math
import struct
from dataclasses import dataclass

import can

# ------------------------------------------------------------------------------------------------ ids
ARM_STATUS_ID = 0x2A1
JOINT_FEEDBACK_IDS = (0x2A5, 0x2A6, 0x2A7)   # joints (1, 2), (3, 4), (5, 6)
GRIPPER_FEEDBACK_ID = 0x2A8
MODE_CTRL_ID = 0x151                          # "motion control 2": control mode, move mode, speed
JOINT_CTRL_IDS = (0x155, 0x156, 0x157)        # joints (1, 2), (3, 4), (5, 6)
GRIPPER_CTRL_ID = 0x159
MOTOR_ENABLE_ID = 0x471
MOTION_CTRL_1_ID = 0x150                      # quick e-stop / resume, trajectory and teach commands
HIGH_SPEED_IDS = tuple(range(0x251, 0x257))   # driver feedback of joints 1..6: speed, current, position
LOW_SPEED_IDS = tuple(range(0x261, 0x267))    # driver feedback of joints 1..6: voltage, temperatures, status
FEEDBACK_IDS = (ARM_STATUS_ID, *JOINT_FEEDBACK_IDS, GRIPPER_FEEDBACK_ID, *HIGH_SPEED_IDS, *LOW_SPEED_IDS)

# ------------------------------------------------------------------------------------------------ codes
CTRL_STANDBY = 0x00
CTRL_CAN = 0x01                 # CAN command mode (the only mode in which the arm follows 0x155..0x159)
MOVE_P, MOVE_J, MOVE_L, MOVE_C = 0x00, 0x01, 0x02, 0x03
MIT_POSITION_SPEED = 0x00       # plain position-speed control (0xAD would be MIT torque mode)
ARM_NORMAL = 0x00
ARM_EMERGENCY_STOP = 0x01
ARM_TARGET_EXCEEDS_LIMIT = 0x04
ARM_STATUS_NAMES = {0x00: "normal", 0x01: "emergency stop", 0x02: "no solution", 0x03: "singularity",
                    0x04: "target angle exceeds limit", 0x05: "joint communication error",
                    0x06: "joint brake not released", 0x07: "collision", 0x08: "overspeed in teach drag",
                    0x09: "joint status error", 0x0A: "other error", 0x0B: "teach record",
                    0x0C: "teach execution", 0x0D: "teach pause", 0x0E: "main controller over temperature",
                    0x0F: "release resistor over temperature"}
MOTOR_ALL = 7                   # what the SDK's EnableArm sends for "all motors"
ENABLE_FLAG, DISABLE_FLAG = 0x02, 0x01
GRIPPER_DISABLE, GRIPPER_ENABLE = 0x00, 0x01
GRIPPER_DISABLE_CLEAR, GRIPPER_ENABLE_CLEAR = 0x02, 0x03
GRIPPER_SET_ZERO = 0xAE
GRIPPER_EFFORT_MAX = 5000       # 0.001 N m
GRIPPER_STATUS_ERROR_BIT = 1 << 5
GRIPPER_STATUS_ENABLED_BIT = 1 << 6

ESTOP_NONE, ESTOP_STOP, ESTOP_RESUME = 0x00, 0x01, 0x02
# current (0.001 A) -> torque (0.001 N m), the SDK's fixed coefficients (arm_feedback_high_spd.cal_effort)
EFFORT_PER_CURRENT = (1.18125, 1.18125, 1.18125, 0.95844, 0.95844, 0.95844)
DRIVER_STATUS_BITS = {0: "supply voltage low", 1: "motor over-temperature", 2: "driver over-current",
                      3: "driver over-temperature", 4: "collision protection", 5: "driver error",
                      7: "stall protection"}          # bit 6 is "driver enabled", not a fault
DRIVER_ENABLED_BIT = 1 << 6

DLC = 8
_INT32 = (-2**31, 2**31 - 1)


class FrameError(ValueError):
    """A frame that is not what its id promises (wrong id, length, id format) or a value the wire cannot hold."""


# ------------------------------------------------------------------------------------------------ units
def rad_to_mdeg(rad: float) -> int:
    """Radians -> the wire's 0.001 deg, rounded to the nearest count."""
    return round(math.degrees(rad) * 1000.0)


def mdeg_to_rad(mdeg: int) -> float:
    return math.radians(mdeg / 1000.0)


def m_to_um(m: float) -> int:
    """Metres -> the wire's 0.001 mm (micrometres), rounded to the nearest count."""
    return round(m * 1e6)


def um_to_m(um: int) -> float:
    return um * 1e-6


def nm_to_mnm(nm: float) -> int:
    return round(nm * 1000.0)


# ------------------------------------------------------------------------------------------------ records
@dataclass(frozen=True)
class JointPair:
    """Two joints of one frame (feedback or control): ``first`` is 1, 3 or 5; values in 0.001 deg."""
    first: int
    a_mdeg: int
    b_mdeg: int


@dataclass(frozen=True)
class GripperFeedback:
    opening_um: int
    effort_mnm: int            # int16 on the wire (signed)
    status: int                # uint8 bit field

    @property
    def enabled(self) -> bool:
        return bool(self.status & GRIPPER_STATUS_ENABLED_BIT)

    @property
    def driver_error(self) -> bool:
        return bool(self.status & GRIPPER_STATUS_ERROR_BIT)


@dataclass(frozen=True)
class ArmStatus:
    ctrl_mode: int
    arm_status: int
    move_mode: int
    teach_status: int
    motion_status: int          # 0 reached target, 1 not yet
    trajectory_num: int
    err_code: int               # uint16: bits 0-5 joint over limit, bits 8-13 joint communication error

    def describe(self) -> str:
        return ARM_STATUS_NAMES.get(self.arm_status, f"status 0x{self.arm_status:02X}")


@dataclass(frozen=True)
class ModeCommand:
    ctrl_mode: int = CTRL_CAN
    move_mode: int = MOVE_J
    speed_percent: int = 50
    mit_mode: int = MIT_POSITION_SPEED
    residence_time: int = 0
    installation_pos: int = 0   # 0 = leave the installation setting alone


@dataclass(frozen=True)
class GripperCommand:
    opening_um: int
    effort_mnm: int             # uint16 on the wire, 0..5000
    code: int = GRIPPER_ENABLE
    set_zero: int = 0


@dataclass(frozen=True)
class MotorEnable:
    motor: int
    enable: bool


@dataclass(frozen=True)
class MotionCtrl1:
    emergency_stop: int = ESTOP_NONE   # 0x00 none, 0x01 quick e-stop, 0x02 resume
    track_ctrl: int = 0
    teach_ctrl: int = 0


@dataclass(frozen=True)
class HighSpeedFeedback:
    joint: int                  # 1..6
    speed_mrad_s: int           # int16, 0.001 rad/s
    current_ma: int             # int16, 0.001 A
    position: int               # int32, the driver's own position count (joint feedback is what we use)

    @property
    def effort_mnm(self) -> float:
        return self.current_ma * EFFORT_PER_CURRENT[self.joint - 1]


@dataclass(frozen=True)
class LowSpeedFeedback:
    joint: int                  # 1..6
    voltage_dv: int             # uint16, 0.1 V
    driver_temp_c: int          # int16
    motor_temp_c: int           # int8
    status: int                 # uint8 bit field, DRIVER_STATUS_BITS
    bus_current_ma: int         # uint16

    def faults(self) -> tuple[str, ...]:
        return tuple(name for bit, name in DRIVER_STATUS_BITS.items() if self.status & (1 << bit))

    @property
    def enabled(self) -> bool:
        return bool(self.status & DRIVER_ENABLED_BIT)


# ------------------------------------------------------------------------------------------------ helpers
def _message(arbitration_id: int, data: bytes) -> can.Message:
    return can.Message(arbitration_id=arbitration_id, data=data, is_extended_id=False, dlc=DLC)


def _payload(msg: can.Message, expected_ids: tuple[int, ...]) -> bytes:
    """The 8 data bytes of a frame whose id is one of ``expected_ids``, or FrameError saying why not."""
    if msg.arbitration_id not in expected_ids:
        wanted = ", ".join(f"0x{i:03X}" for i in expected_ids)
        raise FrameError(f"frame id 0x{msg.arbitration_id:03X} is not {wanted}")
    if msg.is_extended_id:
        raise FrameError(f"frame 0x{msg.arbitration_id:03X} has a 29-bit id; the Piper uses 11-bit ids")
    if msg.is_remote_frame or msg.is_error_frame:
        raise FrameError(f"frame 0x{msg.arbitration_id:03X} is a remote or error frame, not data")
    if len(msg.data) != DLC:
        raise FrameError(f"frame 0x{msg.arbitration_id:03X} has {len(msg.data)} data bytes, expected {DLC}")
    return bytes(msg.data)


def _int32(value: int, what: str) -> int:
    if not isinstance(value, int) or not _INT32[0] <= value <= _INT32[1]:
        raise FrameError(f"{what} {value!r} does not fit an int32")
    return value


def _uint(value: int, bits: int, what: str) -> int:
    if not isinstance(value, int) or not 0 <= value < 2**bits:
        raise FrameError(f"{what} {value!r} does not fit a uint{bits}")
    return value


def _pair_index(first: int) -> int:
    if first not in (1, 3, 5):
        raise FrameError(f"joint pairs start at joint 1, 3 or 5, not {first}")
    return (first - 1) // 2


def _encode_pair(ids: tuple[int, ...], pair: JointPair) -> can.Message:
    """Joint feedback and joint control share one layout (two int32, 0.001 deg) on their own ids."""
    return _message(ids[_pair_index(pair.first)],
                    struct.pack(">ii", _int32(pair.a_mdeg, "joint"), _int32(pair.b_mdeg, "joint")))


def _decode_pair(ids: tuple[int, ...], msg: can.Message) -> JointPair:
    a, b = struct.unpack(">ii", _payload(msg, ids))
    return JointPair(1 + 2 * ids.index(msg.arbitration_id), a, b)


# ------------------------------------------------------------------------------------------------ feedback
def encode_joint_feedback(pair: JointPair) -> can.Message:
    return _encode_pair(JOINT_FEEDBACK_IDS, pair)


def decode_joint_feedback(msg: can.Message) -> JointPair:
    return _decode_pair(JOINT_FEEDBACK_IDS, msg)


def encode_gripper_feedback(fb: GripperFeedback) -> can.Message:
    if not -2**15 <= fb.effort_mnm < 2**15:
        raise FrameError(f"gripper effort {fb.effort_mnm} does not fit an int16")
    return _message(GRIPPER_FEEDBACK_ID, struct.pack(">ihBx", _int32(fb.opening_um, "gripper opening"),
                                                     fb.effort_mnm, _uint(fb.status, 8, "gripper status")))


def decode_gripper_feedback(msg: can.Message) -> GripperFeedback:
    opening, effort, status = struct.unpack(">ihBx", _payload(msg, (GRIPPER_FEEDBACK_ID,)))
    return GripperFeedback(opening, effort, status)


def encode_arm_status(st: ArmStatus) -> can.Message:
    fields = [_uint(v, 8, "arm status field") for v in (st.ctrl_mode, st.arm_status, st.move_mode,
                                                        st.teach_status, st.motion_status, st.trajectory_num)]
    return _message(ARM_STATUS_ID, struct.pack(">6BH", *fields, _uint(st.err_code, 16, "error code")))


def decode_arm_status(msg: can.Message) -> ArmStatus:
    return ArmStatus(*struct.unpack(">6BH", _payload(msg, (ARM_STATUS_ID,))))


# ------------------------------------------------------------------------------------------------ control
def encode_mode(cmd: ModeCommand) -> can.Message:
    if not 0 <= cmd.speed_percent <= 100:
        raise FrameError(f"speed {cmd.speed_percent} % is outside 0..100")
    fields = [_uint(v, 8, "mode field") for v in (cmd.ctrl_mode, cmd.move_mode, cmd.speed_percent, cmd.mit_mode,
                                                  cmd.residence_time, cmd.installation_pos)]
    return _message(MODE_CTRL_ID, struct.pack(">6B2x", *fields))


def decode_mode(msg: can.Message) -> ModeCommand:
    return ModeCommand(*struct.unpack(">6B2x", _payload(msg, (MODE_CTRL_ID,))))


def encode_joint_ctrl(pair: JointPair) -> can.Message:
    return _encode_pair(JOINT_CTRL_IDS, pair)


def decode_joint_ctrl(msg: can.Message) -> JointPair:
    return _decode_pair(JOINT_CTRL_IDS, msg)


def encode_gripper_ctrl(cmd: GripperCommand) -> can.Message:
    if not 0 <= cmd.effort_mnm <= GRIPPER_EFFORT_MAX:
        raise FrameError(f"gripper effort {cmd.effort_mnm} is outside 0..{GRIPPER_EFFORT_MAX} (0.001 N m)")
    if cmd.code not in (GRIPPER_DISABLE, GRIPPER_ENABLE, GRIPPER_DISABLE_CLEAR, GRIPPER_ENABLE_CLEAR):
        raise FrameError(f"gripper code 0x{cmd.code:02X} is not 0x00..0x03")
    if cmd.set_zero not in (0, GRIPPER_SET_ZERO):
        raise FrameError(f"gripper set-zero byte 0x{cmd.set_zero:02X} is not 0x00 or 0xAE")
    return _message(GRIPPER_CTRL_ID, struct.pack(">iHBB", _int32(cmd.opening_um, "gripper opening"),
                                                 cmd.effort_mnm, cmd.code, cmd.set_zero))


def decode_gripper_ctrl(msg: can.Message) -> GripperCommand:
    return GripperCommand(*struct.unpack(">iHBB", _payload(msg, (GRIPPER_CTRL_ID,))))


def encode_motor_enable(cmd: MotorEnable) -> can.Message:
    if cmd.motor not in (1, 2, 3, 4, 5, 6, 7, 0xFF):
        raise FrameError(f"motor {cmd.motor} is not 1..7 or 0xFF")
    return _message(MOTOR_ENABLE_ID, struct.pack(">BB6x", cmd.motor, ENABLE_FLAG if cmd.enable else DISABLE_FLAG))


def decode_motor_enable(msg: can.Message) -> MotorEnable:
    motor, flag = struct.unpack(">BB6x", _payload(msg, (MOTOR_ENABLE_ID,)))
    if flag not in (ENABLE_FLAG, DISABLE_FLAG):
        raise FrameError(f"enable flag 0x{flag:02X} is not 0x01 (disable) or 0x02 (enable)")
    return MotorEnable(motor, flag == ENABLE_FLAG)


def encode_motion_ctrl_1(cmd: MotionCtrl1) -> can.Message:
    if cmd.emergency_stop not in (ESTOP_NONE, ESTOP_STOP, ESTOP_RESUME):
        raise FrameError(f"e-stop byte 0x{cmd.emergency_stop:02X} is not 0x00, 0x01 or 0x02")
    return _message(MOTION_CTRL_1_ID, struct.pack(">3B5x", cmd.emergency_stop, _uint(cmd.track_ctrl, 8, "track"),
                                                  _uint(cmd.teach_ctrl, 8, "teach")))


def decode_motion_ctrl_1(msg: can.Message) -> MotionCtrl1:
    return MotionCtrl1(*struct.unpack(">3B5x", _payload(msg, (MOTION_CTRL_1_ID,))))


def _joint_of(ids: tuple[int, ...], joint: int) -> int:
    if joint not in range(1, 7):
        raise FrameError(f"joint {joint} is not 1..6")
    return ids[joint - 1]


def encode_high_speed(fb: HighSpeedFeedback) -> can.Message:
    for v, what in ((fb.speed_mrad_s, "motor speed"), (fb.current_ma, "motor current")):
        if not isinstance(v, int) or not -2**15 <= v < 2**15:
            raise FrameError(f"{what} {v!r} does not fit an int16")
    return _message(_joint_of(HIGH_SPEED_IDS, fb.joint),
                    struct.pack(">hhi", fb.speed_mrad_s, fb.current_ma, _int32(fb.position, "motor position")))


def decode_high_speed(msg: can.Message) -> HighSpeedFeedback:
    speed, current, pos = struct.unpack(">hhi", _payload(msg, HIGH_SPEED_IDS))
    return HighSpeedFeedback(1 + HIGH_SPEED_IDS.index(msg.arbitration_id), speed, current, pos)


def encode_low_speed(fb: LowSpeedFeedback) -> can.Message:
    if not isinstance(fb.driver_temp_c, int) or not -2**15 <= fb.driver_temp_c < 2**15:
        raise FrameError(f"driver temperature {fb.driver_temp_c!r} does not fit an int16")
    if not isinstance(fb.motor_temp_c, int) or not -128 <= fb.motor_temp_c < 128:
        raise FrameError(f"motor temperature {fb.motor_temp_c!r} does not fit an int8")
    return _message(_joint_of(LOW_SPEED_IDS, fb.joint),
                    struct.pack(">HhbBH", _uint(fb.voltage_dv, 16, "voltage"), fb.driver_temp_c, fb.motor_temp_c,
                                _uint(fb.status, 8, "driver status"), _uint(fb.bus_current_ma, 16, "bus current")))


def decode_low_speed(msg: can.Message) -> LowSpeedFeedback:
    fields = struct.unpack(">HhbBH", _payload(msg, LOW_SPEED_IDS))
    return LowSpeedFeedback(1 + LOW_SPEED_IDS.index(msg.arbitration_id), *fields)


_DECODERS = {MOTION_CTRL_1_ID: decode_motion_ctrl_1,
             **{i: decode_high_speed for i in HIGH_SPEED_IDS}, **{i: decode_low_speed for i in LOW_SPEED_IDS},
             ARM_STATUS_ID: decode_arm_status, GRIPPER_FEEDBACK_ID: decode_gripper_feedback,
             MODE_CTRL_ID: decode_mode, GRIPPER_CTRL_ID: decode_gripper_ctrl, MOTOR_ENABLE_ID: decode_motor_enable,
             **{i: decode_joint_feedback for i in JOINT_FEEDBACK_IDS},
             **{i: decode_joint_ctrl for i in JOINT_CTRL_IDS}}


def decode(msg: can.Message):
    """Any frame this module knows -> its record; FrameError for an unknown id or a malformed frame."""
    decoder = _DECODERS.get(msg.arbitration_id)
    if decoder is None:
        raise FrameError(f"frame id 0x{msg.arbitration_id:03X} is not a Piper frame this codec knows")
    return decoder(msg)
