"""A simulated Piper arm controller on a python-can bus, for testing the driver without an arm.

It behaves the way the driver relies on (codec.py cites the SDK files the frames come from):

- it starts disabled in standby (control mode 0x00), as a Piper does after power-on;
- 0x471 (enable, motor 7 or 0xFF) enables the motors; 0x151 sets control mode, move mode and speed;
- in CAN command mode + MOVE J with the motors enabled, 0x155..0x157 set joint targets and 0x159 the
  gripper target (code 0x01/0x03 enables the gripper, 0x00/0x02 disables it); targets outside the SDK
  limits are clamped and flagged in the status frame (arm status 0x04 and the joint's error-code bit);
- joints move towards their targets at ``max_joint_speed_rad_s`` x speed percent, the gripper at
  ``gripper_speed_m_s`` (rate-limited, exact for any step length);
- it sends status, joint (3 frames), gripper and the drivers' high-speed feedback (6 frames: speed,
  current, position) every ``1 / feedback_rate_hz`` of `now`, and the low-speed feedback (6 frames:
  voltage, temperatures, status) every ``1 / low_speed_rate_hz``;
- 0x150 0x01 (quick e-stop) stops the joints where they are, reports arm status 0x01 and drops to
  standby; 0x150 0x02 resumes (normal status; enable and CAN mode must be sent again);
- faults are injected by setting attributes: ``motor_temp_c`` / ``driver_temp_c`` / ``driver_status``
  (per joint), ``err_code_extra`` (error-code bits), ``gripper_stuck`` (the gripper does not move),
  ``gripper_error`` (its driver-error bit), ``gripper_effort_mnm`` (the effort it reports).

Driven by ``step(now)``, so tests run in simulated time. ``silent = True`` stops it answering and sending
(an unplugged or unpowered arm).
"""
from __future__ import annotations

from typing import Sequence

import can

from agentchemist.workcell.robot import ARM_JOINT_LIMITS_RAD, GRIPPER_RANGE_M
from agentchemist.hardware.piper import codec


def _toward(value: float, target: float, max_step: float) -> float:
    return target if abs(target - value) <= max_step else value + max_step * (1 if target > value else -1)


class PiperFirmwareSim:
    def __init__(self, bus: can.BusABC, *, joints_rad: Sequence[float] = (0.0, 0.5, -0.5, 0.0, 0.3, 0.0),
                 gripper_m: float = 0.02, feedback_rate_hz: float = 200.0, max_joint_speed_rad_s: float = 3.0,
                 gripper_speed_m_s: float = 0.05, low_speed_rate_hz: float = 100.0):
        if len(joints_rad) != 6:
            raise ValueError("joints_rad needs 6 values")
        self.bus = bus
        self.joints = [float(v) for v in joints_rad]
        self.gripper = float(gripper_m)
        self.joint_targets = list(self.joints)
        self.gripper_target = self.gripper
        self.period = 1.0 / feedback_rate_hz
        self.max_joint_speed = max_joint_speed_rad_s
        self.gripper_speed = gripper_speed_m_s
        self.enabled = False
        self.gripper_enabled = False
        self.ctrl_mode = codec.CTRL_STANDBY
        self.move_mode = codec.MOVE_P
        self.speed_percent = 0
        self.arm_status = codec.ARM_NORMAL
        self.err_code = 0
        self.silent = False
        self.received: list[can.Message] = []      # every frame taken off the bus, for tests
        self.rejected: list[str] = []              # frames the firmware could not parse
        self._last: float | None = None
        self._next_feedback: float | None = None
        self._next_low: float | None = None
        self.low_speed_period = 1.0 / low_speed_rate_hz
        self.speeds = [0.0] * 6                    # rad/s over the last step
        self.currents_ma = [300, 900, 700, 120, 60, 20]   # a still arm's holding currents (made up, plausible)
        self.motor_temp_c = [35] * 6
        self.driver_temp_c = [38] * 6
        self.driver_status = [0] * 6               # extra status bits (DRIVER_STATUS_BITS) per joint
        self.err_code_extra = 0
        self.gripper_stuck = False
        self.gripper_error = False
        self.gripper_effort_mnm = 0

    # -------------------------------------------------------------------------------------------- cycle
    def step(self, now: float) -> None:
        if self.silent:
            self._drain()          # an unplugged arm hears nothing; keep the queue from growing
            self._last = now
            return
        self._read()
        dt = 0.0 if self._last is None else max(0.0, now - self._last)
        self._last = now
        self._move(dt)
        if self._next_feedback is None or now >= self._next_feedback:
            self._send_feedback()
            self._next_feedback = (now if self._next_feedback is None else self._next_feedback) + self.period
            if self._next_feedback <= now:   # a long step: no burst of stale feedback to catch up
                self._next_feedback = now + self.period
        if self._next_low is None or now >= self._next_low:
            self._send_low_speed()
            self._next_low = max(now, (now if self._next_low is None else self._next_low) + self.low_speed_period)

    @property
    def following(self) -> bool:
        return self.enabled and self.ctrl_mode == codec.CTRL_CAN and self.move_mode == codec.MOVE_J

    def _move(self, dt: float) -> None:
        if not self.enabled:
            return      # motors off: joints stay where they are in this model
        step = self.max_joint_speed * self.speed_percent / 100.0 * dt
        moved = [_toward(v, t, step) for v, t in zip(self.joints, self.joint_targets)]
        self.speeds = [(b - a) / dt if dt > 0 else 0.0 for a, b in zip(self.joints, moved)]
        self.joints = moved
        if self.gripper_enabled and not self.gripper_stuck:
            self.gripper = _toward(self.gripper, self.gripper_target, self.gripper_speed * dt)

    # -------------------------------------------------------------------------------------------- input
    def _drain(self) -> None:
        while self.bus.recv(timeout=0) is not None:
            pass

    def _read(self) -> None:
        while (msg := self.bus.recv(timeout=0)) is not None:
            self.received.append(msg)
            try:
                self._handle(msg)
            except codec.FrameError as exc:
                self.rejected.append(str(exc))

    def _handle(self, msg: can.Message) -> None:
        i = msg.arbitration_id
        if i == codec.MOTION_CTRL_1_ID:
            cmd = codec.decode_motion_ctrl_1(msg)
            if cmd.emergency_stop == codec.ESTOP_STOP:
                self.arm_status, self.ctrl_mode = codec.ARM_EMERGENCY_STOP, codec.CTRL_STANDBY
                self.joint_targets = list(self.joints)
            elif cmd.emergency_stop == codec.ESTOP_RESUME and self.arm_status == codec.ARM_EMERGENCY_STOP:
                self.arm_status = codec.ARM_NORMAL
        elif self.arm_status == codec.ARM_EMERGENCY_STOP:
            return                  # only resume leaves the e-stop
        elif i == codec.MOTOR_ENABLE_ID:
            cmd = codec.decode_motor_enable(msg)
            if cmd.motor in (codec.MOTOR_ALL, 0xFF):
                self.enabled = cmd.enable
                self.gripper_enabled = self.gripper_enabled and cmd.enable
        elif i == codec.MODE_CTRL_ID:
            mode = codec.decode_mode(msg)
            self.ctrl_mode, self.move_mode, self.speed_percent = mode.ctrl_mode, mode.move_mode, mode.speed_percent
        elif i in codec.JOINT_CTRL_IDS and self.following:
            pair = codec.decode_joint_ctrl(msg)
            for k, mdeg in ((pair.first - 1, pair.a_mdeg), (pair.first, pair.b_mdeg)):
                self._set_joint_target(k, codec.mdeg_to_rad(mdeg))
        elif i == codec.GRIPPER_CTRL_ID and self.following:
            cmd = codec.decode_gripper_ctrl(msg)
            self.gripper_enabled = cmd.code in (codec.GRIPPER_ENABLE, codec.GRIPPER_ENABLE_CLEAR)
            lo, hi = GRIPPER_RANGE_M
            self.gripper_target = min(max(codec.um_to_m(cmd.opening_um), lo), hi)

    def _set_joint_target(self, k: int, rad: float) -> None:
        lo, hi = ARM_JOINT_LIMITS_RAD[k]
        # The firmware's own limits, compared in its wire units (0.001 deg) so that a target the driver
        # clamped to the limit in radians is not flagged for a rounding count.
        lo_mdeg, hi_mdeg = codec.rad_to_mdeg(lo), codec.rad_to_mdeg(hi)
        mdeg = codec.rad_to_mdeg(rad)
        if lo_mdeg <= mdeg <= hi_mdeg:
            self.err_code &= ~(1 << k)
            self.joint_targets[k] = rad
        else:
            self.err_code |= 1 << k
            self.joint_targets[k] = min(max(rad, lo), hi)
        if self.arm_status in (codec.ARM_NORMAL, codec.ARM_TARGET_EXCEEDS_LIMIT):
            self.arm_status = codec.ARM_TARGET_EXCEEDS_LIMIT if self.err_code & 0x3F else codec.ARM_NORMAL

    # -------------------------------------------------------------------------------------------- output
    def _send_feedback(self) -> None:
        reached = all(abs(v - t) < 1e-6 for v, t in zip(self.joints, self.joint_targets))
        err = self.err_code | self.err_code_extra
        frames = [codec.encode_arm_status(codec.ArmStatus(self.ctrl_mode, self.arm_status, self.move_mode, 0,
                                                          0 if reached else 1, 0, err))]
        mdeg = [codec.rad_to_mdeg(v) for v in self.joints]
        frames += [codec.encode_joint_feedback(codec.JointPair(first, mdeg[first - 1], mdeg[first]))
                   for first in (1, 3, 5)]
        status = ((codec.GRIPPER_STATUS_ENABLED_BIT if self.gripper_enabled else 0)
                  | (codec.GRIPPER_STATUS_ERROR_BIT if self.gripper_error else 0))
        frames.append(codec.encode_gripper_feedback(codec.GripperFeedback(codec.m_to_um(self.gripper),
                                                                          int(self.gripper_effort_mnm), status)))
        frames += [codec.encode_high_speed(codec.HighSpeedFeedback(
            k + 1, max(-32768, min(32767, round(self.speeds[k] * 1000))), self.currents_ma[k] if self.enabled else 0,
            codec.rad_to_mdeg(self.joints[k]))) for k in range(6)]
        for frame in frames:
            self.bus.send(frame)

    def _send_low_speed(self) -> None:
        for k in range(6):
            status = self.driver_status[k] | (codec.DRIVER_ENABLED_BIT if self.enabled else 0)
            self.bus.send(codec.encode_low_speed(codec.LowSpeedFeedback(
                k + 1, 246, int(self.driver_temp_c[k]), int(self.motor_temp_c[k]), status, 0)))
