"""DriverLoop: the Piper's CAN exchange on its own thread on a fixed monotonic schedule.

The schedule itself is checked on a fake clock (exact numbers: a late cycle does not shift the ones
after it, whole missed periods are skipped and counted, never caught up in a burst). The thread is
checked for real against the simulated firmware on a python-can virtual bus: commands queued from
another thread move the arm, states and events come back through the bounded hand-offs."""
import threading
import time
import uuid

import can
import pytest

from agentchemist.hardware.piper import DriverConfig, PiperDriver, PiperFirmwareSim
from agentchemist.hardware.piper.rt_loop import COMMAND_QUEUE, DriverLoop, LatestSlot

START = (0.1, 0.5, -0.5, 0.2, 0.3, -1.0)


class FakeClock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t

    def sleep(self, dt):
        assert dt > 0
        self.t += dt


def test_the_schedule_is_fixed_and_missed_periods_are_skipped():
    bus = can.Bus(interface="virtual", channel=f"rt-{uuid.uuid4().hex}")
    clock = FakeClock()
    loop = DriverLoop(PiperDriver(bus, DriverConfig()), 200.0, clock=clock, sleep=clock.sleep)
    step, calls = loop.driver.step, []

    def slow_step(now):
        calls.append(now)
        clock.t += 0.001                      # every cycle takes 1 ms of the 5 ms period
        if len(calls) == 5:
            clock.t += 0.012                  # one cycle overruns by 2.6 periods
        if len(calls) == 12:
            loop._stop.set()
        return step(now)
    loop.driver.step = slow_step
    loop._run()
    starts = [round(t - 100.0, 9) for t in loop.starts]
    # cycles 0..4 on time; cycle 4 ends at 0.020 + 0.013 = 0.033: the start at 0.025 is missed entirely
    # (skipped, counted), the one due at 0.030 runs at once (3 ms late), and the schedule continues on
    # the same grid: 0.035, 0.040 ... (no catching up on 0.025)
    assert starts == pytest.approx([0.0, 0.005, 0.010, 0.015, 0.020, 0.033, 0.035, 0.040, 0.045, 0.050,
                                    0.055, 0.060], abs=1e-9)
    assert loop.missed == 1 and loop.cycles == 12
    assert max(loop.lateness) == pytest.approx(0.003, abs=1e-9)
    assert sorted(loop.lateness)[-2] == pytest.approx(0.0, abs=1e-9)
    bus.shutdown()


def test_latest_slot_and_bounded_queues():
    slot = LatestSlot()
    assert slot.get() == (None, 0)
    slot.put("a")
    slot.put("b")
    assert slot.get() == ("b", 2)
    bus = can.Bus(interface="virtual", channel=f"rt-{uuid.uuid4().hex}")
    loop = DriverLoop(PiperDriver(bus, DriverConfig()), 200.0)
    for k in range(COMMAND_QUEUE + 5):
        loop.command([float(k)] * 6, None)
    assert len(loop.commands) == COMMAND_QUEUE and loop.commands[-1].arm_rad == (COMMAND_QUEUE + 4.0,) * 6
    with pytest.raises(ValueError):
        loop.request("disable")
    with pytest.raises(ValueError):
        DriverLoop(loop.driver, 0.0)
    bus.shutdown()


def test_the_loop_thread_drives_the_simulated_arm():
    channel = f"rt-{uuid.uuid4().hex}"
    fw_bus, drv_bus = (can.Bus(interface="virtual", channel=channel) for _ in range(2))
    fw = PiperFirmwareSim(fw_bus, joints_rad=START, gripper_m=0.03)
    stop = threading.Event()

    def firmware():
        while not stop.is_set():
            fw.step(time.monotonic())
            time.sleep(0.002)
    arm = threading.Thread(target=firmware, daemon=True)
    arm.start()
    woken = threading.Event()
    loop = DriverLoop(PiperDriver(drv_bus, DriverConfig(feedback_timeout_s=0.5)), 200.0, notify=woken.set)
    loop.start()
    try:
        def wait(cond, what, timeout=20.0):
            end = time.monotonic() + timeout
            while time.monotonic() < end:
                if cond():
                    return
                time.sleep(0.01)
            raise AssertionError(f"timed out waiting for {what}")

        def state():
            cycle, _ = loop.latest.get()
            return None if cycle is None else cycle.state
        wait(lambda: state() is not None and loop.driver.in_can_mode, "a joint state in CAN mode")
        assert woken.is_set()
        loop.command(START, 0.03)
        loop.command((0.3, *START[1:]), 0.04)
        wait(lambda: state() is not None and abs(state().positions[0] - 0.3) < 1e-3
             and abs(state().positions[6] - 0.04) < 1e-5, "the arm at the commanded target")
        assert [e.kind for e in loop.drain_events()].count("tracking") == 2
        assert len(loop.command_latency) == 2 and loop.cycles > 10 and loop.alive
        loop.request("emergency_stop")
        wait(lambda: fw.arm_status == 0x01, "the firmware in e-stop")
        wait(lambda: any(e.kind == "emergency_stop" for e in loop.drain_events()), "the e-stop event")
    finally:
        loop.stop()
        stop.set()
        arm.join(5)
        fw_bus.shutdown()
        drv_bus.shutdown()
    assert not loop.alive
