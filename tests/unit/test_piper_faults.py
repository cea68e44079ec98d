"""Each Piper fault on python-can's virtual bus with the simulated firmware, in simulated time: the right
event (the anomaly's kind and severity), the safe state (the arm holds where it was, motors enabled: no
disable frame ever, no following of commands), and recovery without restarting the driver. Also the
e-stop / resume exchange and the velocity / effort / diagnostics read from the drivers' feedback."""
import pytest

from agentchemist.hardware.piper import codec
from tests.unit.test_hardware_piper_driver import DT, START, Rig, armed, rig  # noqa: F401  (rig: fixture)

TARGET = (0.4, 0.7, -0.3, 0.0, 0.1, -0.6)


def no_disable_frame(r: Rig, frames):
    disables = [m for m in frames if m.arbitration_id == codec.MOTOR_ENABLE_ID
                and not codec.decode_motor_enable(m).enable]
    assert disables == [], "a fault must never disable the motors of an arm that may be loaded"


def joint_targets_sent(frames):
    """The arm targets (rad) of the last complete set of joint control frames."""
    last = {}
    for m in frames:
        if m.arbitration_id in codec.JOINT_CTRL_IDS:
            p = codec.decode_joint_ctrl(m)
            last[p.first - 1], last[p.first] = codec.mdeg_to_rad(p.a_mdeg), codec.mdeg_to_rad(p.b_mdeg)
    return tuple(last[k] for k in range(6)) if len(last) == 6 else None


def hold_then_recover(r: Rig, clear, kind: str, severity: str):
    """The common shape: the fault is reported once, the arm holds where it was although commanded on,
    the fault clears, the driver waits for a command at the arm, then follows again."""
    events = {e.kind: e for e in r.driver.drain_events()}
    assert events[kind].severity == severity and not events[kind].resolved, events
    held = r.states[-1].positions[:6]
    r.sniffed()
    r.command(TARGET, 0.035)                  # the controller carries on commanding: not followed
    r.run(0.2)
    frames = r.sniffed()
    no_disable_frame(r, frames)
    assert joint_targets_sent(frames) == pytest.approx(held, abs=2e-5)
    assert r.states[-1].positions[:6] == pytest.approx(held, abs=1e-4)
    assert r.fw.enabled and not r.driver.arm_armed
    assert [e.kind for e in r.driver.drain_events()] == []       # reported once, not every cycle
    clear()
    r.run(0.1)
    kinds = [(e.kind, e.resolved) for e in r.driver.drain_events()]
    assert (kind, True) in kinds and not r.driver.arm_armed       # cleared; the startup hold applies
    r.command(r.states[-1].positions[:6], 0.035)                   # the controller re-syncs to the arm
    r.command(TARGET, 0.035)
    r.run(1.0)
    assert r.driver.arm_armed and r.states[-1].positions[:6] == pytest.approx(TARGET, abs=1e-3)


def moving(r: Rig):
    r.command(TARGET, 0.035)
    r.run(0.1)                               # part-way: a fault now catches the arm in motion
    assert r.states[-1].positions[:6] != pytest.approx(TARGET, abs=1e-3)


def test_driver_error_bits_hold_the_arm_and_recover(rig):
    r = armed(rig)
    moving(r)
    r.fw.driver_status[2] = 1 << 4            # joint 3: collision protection
    r.run(0.05)
    r.command(START, 0.035)
    hold_then_recover(r, lambda: r.fw.driver_status.__setitem__(2, 0), "driver_fault", "warn")


def test_joint_limit_error_bits_name_the_joint_and_hold(rig):
    r = armed(rig)
    r.fw.err_code_extra = 1 << 3              # joint 4 past its limit
    r.run(0.05)
    assert "joint(s) [4]" in r.driver.faults["joint_limit"].description
    hold_then_recover(r, lambda: setattr(r.fw, "err_code_extra", 0), "joint_limit", "warn")


def test_joint_communication_loss_is_a_halt_and_holds(rig):
    r = armed(rig)
    r.fw.err_code_extra = 1 << (8 + 5)        # joint 6 lost
    r.run(0.05)
    hold_then_recover(r, lambda: setattr(r.fw, "err_code_extra", 0), "joint_communication", "halt")


def test_over_temperature_holds_with_hysteresis(rig):
    r = armed(rig)
    moving(r)
    r.fw.motor_temp_c[4] = 71                 # joint 5's motor past the 70 C limit
    r.run(0.05)
    assert "joint 5: motor 71 C" in r.driver.faults["over_temperature"].description

    def cool():
        r.fw.motor_temp_c[4] = 68             # under the limit but within the 5 C hysteresis: still hot
        r.run(0.1)
        assert "over_temperature" in r.driver.faults
        r.fw.motor_temp_c[4] = 60
    hold_then_recover(r, cool, "over_temperature", "warn")


def test_the_drivers_own_over_temperature_bit_counts(rig):
    r = armed(rig)
    r.fw.driver_status[0] = 1 << 3            # driver over-temperature flagged by the driver itself
    r.run(0.05)
    assert "over_temperature" in r.driver.faults and "driver_fault" not in r.driver.faults


def test_stuck_gripper_is_held_and_the_arm_keeps_following(rig):
    r = armed(rig)
    r.fw.gripper_stuck = True
    r.command(START, 0.06)
    r.run(0.3)
    assert "gripper_stuck" not in r.driver.faults           # not yet: 0.5 s without motion
    r.run(0.4)
    fault = r.driver.faults["gripper_stuck"]
    assert fault.severity == "warn" and "35.00 mm" in fault.description
    r.driver.drain_events()
    r.sniffed()
    r.command(TARGET, 0.06)                                   # arm commands are still followed
    r.run(1.0)
    frames = r.sniffed()
    no_disable_frame(r, frames)
    grip = [codec.decode_gripper_ctrl(m) for m in frames if m.arbitration_id == codec.GRIPPER_CTRL_ID]
    assert grip and {g.opening_um for g in grip} == {35000}   # held where it is, still enabled
    assert all(g.code == codec.GRIPPER_ENABLE for g in grip)
    assert r.states[-1].positions[:6] == pytest.approx(TARGET, abs=1e-3)
    # freed and commanded somewhere else: cleared, follows again
    r.fw.gripper_stuck = False
    r.command(TARGET, 0.05)
    r.run(0.6)
    assert ("gripper_stuck", True) in [(e.kind, e.resolved) for e in r.driver.drain_events()]
    assert r.states[-1].positions[6] == pytest.approx(0.05, abs=1e-5)


def test_a_grasp_is_not_a_stuck_gripper(rig):
    r = armed(rig)
    r.fw.gripper_stuck = True                 # stopped on an object...
    r.fw.gripper_effort_mnm = 900             # ...squeezing it with 0.9 N m
    r.command(START, 0.01)
    r.run(1.5)
    assert "gripper_stuck" not in r.driver.faults and r.driver.gripper_armed


def test_gripper_error_bit_holds_the_gripper(rig):
    r = armed(rig)
    r.fw.gripper_error = True
    r.run(0.05)
    assert r.driver.faults["gripper_error"].severity == "warn"
    assert r.driver._hold is None                            # the arm itself is not held for a gripper fault
    r.fw.gripper_error = False
    r.run(0.05)
    assert "gripper_error" not in r.driver.faults


def test_emergency_stop_and_resume(rig):
    r = armed(rig)
    moving(r)
    r.sniffed()
    r.driver.emergency_stop(r.t)
    r.run(0.1)
    frames = r.sniffed()
    stops = [codec.decode_motion_ctrl_1(m) for m in frames if m.arbitration_id == codec.MOTION_CTRL_1_ID]
    assert stops == [codec.MotionCtrl1(codec.ESTOP_STOP)]
    assert [m for m in frames if m.arbitration_id in (*codec.JOINT_CTRL_IDS, codec.GRIPPER_CTRL_ID)] == []
    no_disable_frame(r, frames)
    assert r.fw.arm_status == codec.ARM_EMERGENCY_STOP
    kinds = {e.kind: e for e in r.driver.drain_events()}
    assert kinds["emergency_stop"].severity == "halt" and kinds["arm_status"].severity == "halt"
    stopped = r.states[-1].positions[:6]
    r.run(0.3)
    assert r.states[-1].positions[:6] == pytest.approx(stopped, abs=1e-9)   # the arm stays stopped
    assert [m for m in r.sniffed() if m.arbitration_id == codec.MODE_CTRL_ID] == []  # no mode while stopped

    r.driver.resume(r.t)
    r.run(0.1)
    frames = r.sniffed()
    assert codec.MotionCtrl1(codec.ESTOP_RESUME) in [codec.decode_motion_ctrl_1(m) for m in frames
                                                     if m.arbitration_id == codec.MOTION_CTRL_1_ID]
    assert r.driver.in_can_mode and r.fw.arm_status == codec.ARM_NORMAL
    assert not r.driver.arm_armed                             # holds until a command matches the arm
    r.command(r.states[-1].positions[:6], 0.035)
    r.command(TARGET, 0.035)
    r.run(1.0)
    assert r.states[-1].positions[:6] == pytest.approx(TARGET, abs=1e-3)


def test_joint_state_carries_velocity_and_effort(rig):
    r = armed(rig)
    r.fw.gripper_effort_mnm = -250
    r.command((0.6, *START[1:]), 0.035)
    r.run(0.05)
    s = r.states[-1]
    assert len(s.velocities) == len(s.efforts) == 7
    assert s.velocities[0] == pytest.approx(1.5, abs=0.01)   # 3 rad/s x 50 % speed, joint 1 moving up
    assert s.velocities[1:6] == pytest.approx([0.0] * 5, abs=1e-3)
    coef = codec.EFFORT_PER_CURRENT
    assert s.efforts[:6] == pytest.approx([c * k / 1e3 for c, k in zip(r.fw.currents_ma, coef)], rel=1e-9)
    assert s.efforts[6] == pytest.approx(-0.25)
    r.command((0.6, *START[1:]), 0.05)
    r.run(0.1)
    assert r.states[-1].velocities[6] == pytest.approx(0.05, rel=0.05)   # the gripper opening at 50 mm/s


def test_diagnostics_report_each_driver(rig):
    r = armed(rig)
    reports = r.driver.health.reports(r.t)
    assert [x.level for x in reports] == [0] * 6
    values = dict(reports[0].values)
    assert values["voltage_v"] == "24.6" and values["motor_temp_c"] == "35" and values["enabled"] == "True"
    r.fw.driver_status[1] = 1 << 0
    r.fw.motor_temp_c[3] = 90
    r.run(0.05)
    reports = r.driver.health.reports(r.t)
    assert reports[1].level == 1 and "supply voltage low" in reports[1].message
    assert reports[3].level == 1 and "over temperature" in reports[3].message
    r.fw.silent = True
    r.run(1.2)
    assert {x.level for x in r.driver.health.reports(r.t)} == {3}          # stale
