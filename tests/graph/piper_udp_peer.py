"""Two OS processes on python-can's udp_multicast bus (run by test_piper_udp_cross_process.py inside a
private network namespace): `firmware` runs the simulated Piper, `driver` (the default) starts it as a
child process, drives it with PiperDriver on the wall clock and prints one JSON line with what it saw.
`loop` does the same with the driver on its real-time thread (rt_loop.DriverLoop, 200 Hz on the
monotonic clock), commands handed to it from this main thread as the ROS node does."""
import json
import subprocess
import sys
import time

import can

from agentchemist.hardware.piper import DriverConfig, PiperDriver, PiperFirmwareSim

GROUP = "239.74.163.2"          # python-can's default IPv4 group; the namespace routes 224.0.0.0/4 via lo
START = (0.1, 0.5, -0.5, 0.2, 0.3, -1.0)
TARGET = (-0.2, 0.8, -0.7, 0.0, 0.1, -0.5)


def bus():
    return can.Bus(interface="udp_multicast", channel=GROUP, fd=False)


def firmware(seconds: float) -> None:
    with bus() as b:
        fw = PiperFirmwareSim(b, joints_rad=START, gripper_m=0.03)
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            fw.step(time.monotonic())
            time.sleep(0.002)


def wait(driver, condition, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        state = driver.step(time.monotonic())
        if condition(state):
            return state
        time.sleep(0.005)
    return None


def loop_main(out: dict) -> None:
    from agentchemist.hardware.piper.rt_loop import DriverLoop

    with bus() as b:
        loop = DriverLoop(PiperDriver(b, DriverConfig(side="left", feedback_timeout_s=0.5)), 200.0)
        loop.start()

        def until(condition, seconds):
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                cycle, _ = loop.latest.get()
                if cycle is not None and cycle.state is not None and condition(cycle.state):
                    return cycle.state
                time.sleep(0.01)
            return None
        state = until(lambda s: loop.driver.in_can_mode, 10.0)
        out["state"] = None if state is None else list(state.positions)
        if state is not None:
            loop.command(state.positions[:6], state.positions[6])
            loop.command(TARGET, 0.01)
            state = until(lambda s: all(abs(a - b) < 1e-3 for a, b in zip(s.positions, (*TARGET, 0.01))), 10.0)
            out["reached"] = None if state is None else list(state.positions)
            out["velocities"] = None if state is None else list(state.velocities)
        loop.stop()
        periods = [b - a for a, b in zip(loop.starts, list(loop.starts)[1:])]
        out.update(events=[e.kind for e in loop.drain_events()], cycles=loop.cycles, missed=loop.missed,
                   period_max_s=max(periods, default=None), alive_after_stop=loop.alive)


def main() -> int:
    if sys.argv[1:2] == ["firmware"]:
        firmware(float(sys.argv[2]))
        return 0
    if sys.argv[1:2] == ["loop"]:
        child = subprocess.Popen([sys.executable, __file__, "firmware", "20"])
        out = {"state": None, "reached": None}
        try:
            loop_main(out)
        finally:
            child.terminate()
            child.wait(timeout=10)
        print(json.dumps(out))
        return 0
    child = subprocess.Popen([sys.executable, __file__, "firmware", "20"])
    out = {"state": None, "reached": None}
    try:
        with bus() as b:
            driver = PiperDriver(b, DriverConfig(side="left", feedback_timeout_s=0.5))
            state = wait(driver, lambda s: s is not None and driver.in_can_mode, 10.0)
            out["state"] = None if state is None else list(state.positions)
            if state is not None:
                driver.command(state.positions[:6], state.positions[6], time.monotonic())
                driver.command(TARGET, 0.01, time.monotonic())
                state = wait(driver, lambda s: s is not None and all(
                    abs(a - b) < 1e-3 for a, b in zip(s.positions, (*TARGET, 0.01))), 10.0)
                out["reached"] = None if state is None else list(state.positions)
            out["events"] = [e.kind for e in driver.drain_events()]
    finally:
        child.terminate()
        child.wait(timeout=10)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
