"""The Piper's health from its feedback: motor drivers (0x251-0x256, 0x261-0x266), arm status and gripper.

:class:`ArmHealth` keeps the latest driver feedback of each joint and turns it, with the arm status frame
and the gripper feedback, into *faults*: conditions under which the driver must stop following commands
and hold the arm where it is (see driver.py for the safe state). Each fault has a kind (the anomaly's
``piper_<kind>``), a severity and a description naming the joints:

- ``arm_status`` (halt on emergency stop, else warn): the status frame is neither normal nor one of the
  two statuses below;
- ``joint_limit`` (warn): status 0x04 or error-code bits 0-5 (the firmware refused a target past a limit);
- ``joint_communication`` (halt): status 0x05 or error-code bits 8-13 (a joint stopped talking to the
  main controller);
- ``over_temperature`` (warn): a motor or a driver at or above its limit, or its over-temperature bit;
  it clears ``temp_hysteresis_c`` below the limit so that a joint at the limit does not flap;
- ``driver_fault`` (warn): any other driver status bit (voltage low, over-current, collision, driver
  error, stall);
- ``gripper_error`` (warn): the gripper's driver-error bit; ``gripper_stuck`` (warn) is decided by
  the driver, which knows the gripper's target.

Temperatures and thresholds are ours (the SDK gives units, not limits): 70 C motor and 75 C driver by
default, parameters of the node.
"""
from __future__ import annotations

from dataclasses import dataclass

from agentchemist.hardware.piper import codec

_TEMP_BITS = {1, 3}                             # motor / driver over-temperature in the driver status


@dataclass(frozen=True)
class Fault:
    kind: str
    severity: str                               # warn | halt
    description: str


@dataclass(frozen=True)
class MotorReport:
    """One joint's driver, for diagnostic_msgs: level 0 OK, 1 WARN, 2 ERROR, 3 STALE."""
    joint: int
    level: int
    message: str
    values: tuple[tuple[str, str], ...]


def _joints(bits: int, offset: int) -> list[int]:
    return [j + 1 for j in range(6) if bits & (1 << (offset + j))]


class ArmHealth:
    def __init__(self, motor_temp_limit_c: float = 70.0, driver_temp_limit_c: float = 75.0,
                 temp_hysteresis_c: float = 5.0, stale_s: float = 1.0):
        self.motor_temp_limit_c = motor_temp_limit_c
        self.driver_temp_limit_c = driver_temp_limit_c
        self.temp_hysteresis_c = temp_hysteresis_c
        self.stale_s = stale_s
        self.high: list[codec.HighSpeedFeedback | None] = [None] * 6
        self.low: list[codec.LowSpeedFeedback | None] = [None] * 6
        self.high_at: list[float | None] = [None] * 6
        self.low_at: list[float | None] = [None] * 6
        self._hot: set[int] = set()             # joints over temperature (with hysteresis)

    def on_high(self, fb: codec.HighSpeedFeedback, now: float) -> None:
        self.high[fb.joint - 1], self.high_at[fb.joint - 1] = fb, now

    def on_low(self, fb: codec.LowSpeedFeedback, now: float) -> None:
        self.low[fb.joint - 1], self.low_at[fb.joint - 1] = fb, now
        k = fb.joint - 1
        limit_m, limit_d = self.motor_temp_limit_c, self.driver_temp_limit_c
        if k in self._hot:
            margin = self.temp_hysteresis_c
            if (fb.motor_temp_c < limit_m - margin and fb.driver_temp_c < limit_d - margin
                    and not any(fb.status & (1 << b) for b in _TEMP_BITS)):
                self._hot.discard(k)
        elif (fb.motor_temp_c >= limit_m or fb.driver_temp_c >= limit_d
              or any(fb.status & (1 << b) for b in _TEMP_BITS)):
            self._hot.add(k)

    # ------------------------------------------------------------------------------------ joint states
    def velocities(self, now: float, max_age_s: float) -> tuple[float, ...] | None:
        """Joint speeds (rad/s) from the high-speed feedback, or None unless every joint's is recent."""
        if any(t is None or now - t > max_age_s for t in self.high_at):
            return None
        return tuple(fb.speed_mrad_s / 1000.0 for fb in self.high)

    def efforts(self, now: float, max_age_s: float) -> tuple[float, ...] | None:
        """Joint torques (N m) from the motor currents, or None unless every joint's is recent."""
        if any(t is None or now - t > max_age_s for t in self.high_at):
            return None
        return tuple(fb.effort_mnm / 1000.0 for fb in self.high)

    # ------------------------------------------------------------------------------------ faults
    def faults(self, status: codec.ArmStatus | None, gripper: codec.GripperFeedback | None) -> dict[str, Fault]:
        out: dict[str, Fault] = {}
        if status is not None:
            limit = _joints(status.err_code, 0)
            comm = _joints(status.err_code, 8)
            if status.arm_status == codec.ARM_TARGET_EXCEEDS_LIMIT or limit:
                out["joint_limit"] = Fault("joint_limit", "warn", f"arm reports a target past the limit of joint(s) "
                                           f"{limit or '?'} (status {status.describe()}, error code "
                                           f"0x{status.err_code:04X}): holding")
            if status.arm_status == 0x05 or comm:
                out["joint_communication"] = Fault("joint_communication", "halt", f"joint(s) {comm or '?'} lost "
                                                   f"communication with the main controller (error code "
                                                   f"0x{status.err_code:04X}): holding")
            if status.arm_status not in (codec.ARM_NORMAL, codec.ARM_TARGET_EXCEEDS_LIMIT, 0x05):
                severity = "halt" if status.arm_status == codec.ARM_EMERGENCY_STOP else "warn"
                out["arm_status"] = Fault("arm_status", severity, f"arm reports {status.describe()} (error code "
                                          f"0x{status.err_code:04X})")
        if self._hot:
            hot = sorted(self._hot)
            temps = ", ".join(f"joint {k + 1}: motor {self.low[k].motor_temp_c} C, driver {self.low[k].driver_temp_c} C"
                              for k in hot)
            out["over_temperature"] = Fault("over_temperature", "warn", f"over temperature ({temps}; limits motor "
                                            f"{self.motor_temp_limit_c} C, driver {self.driver_temp_limit_c} C): "
                                            "holding, motors stay enabled")
        bad = [(k + 1, [n for n in fb.faults() if n not in ("motor over-temperature", "driver over-temperature")])
               for k, fb in enumerate(self.low) if fb is not None]
        bad = [(j, names) for j, names in bad if names]
        if bad:
            out["driver_fault"] = Fault("driver_fault", "warn", "joint driver(s) report "
                                        + "; ".join(f"joint {j}: {', '.join(n)}" for j, n in bad) + ": holding")
        if gripper is not None and gripper.driver_error:
            out["gripper_error"] = Fault("gripper_error", "warn", f"gripper driver reports an error (status "
                                         f"0x{gripper.status:02X}): gripper held")
        return out

    # ------------------------------------------------------------------------------------ diagnostics
    def reports(self, now: float) -> list[MotorReport]:
        out = []
        for k in range(6):
            low, high = self.low[k], self.high[k]
            values: list[tuple[str, str]] = []
            if high is not None:
                values += [("speed_rad_s", f"{high.speed_mrad_s / 1000.0:.3f}"),
                           ("current_a", f"{high.current_ma / 1000.0:.3f}"),
                           ("effort_nm", f"{high.effort_mnm / 1000.0:.3f}")]
            if low is None or now - self.low_at[k] > self.stale_s:
                out.append(MotorReport(k + 1, 3, "no driver feedback (0x26x) within "
                                       f"{self.stale_s} s", tuple(values)))
                continue
            values += [("voltage_v", f"{low.voltage_dv / 10.0:.1f}"), ("driver_temp_c", str(low.driver_temp_c)),
                       ("motor_temp_c", str(low.motor_temp_c)), ("status", f"0x{low.status:02X}"),
                       ("enabled", str(low.enabled)), ("bus_current_a", f"{low.bus_current_ma / 1000.0:.3f}")]
            problems = list(low.faults()) + (["over temperature"] if k in self._hot else [])
            out.append(MotorReport(k + 1, 1 if problems else 0, ", ".join(dict.fromkeys(problems)) or "ok",
                                   tuple(values)))
        return out
