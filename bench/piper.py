"""Benchmark of the Piper driver's real-time path: two arms at 200 Hz, each in its own OS process.

Each arm process runs the real piper_driver node (rclpy, its CAN exchange on the DriverLoop thread) and
the simulated Piper firmware on a python-can `virtual` channel of its own (one CAN bus per arm, as on the
robot: can_left, can_right), plus a sniffer on that channel that sees every frame. A probe (this
process) plays ros2_control's topic-based system over DDS: it commands a slow sine on joint 1 of both
arms at 200 Hz and listens to both joint_states.

Measured, per arm:
- loop period jitter: |actual cycle period - 5 ms| from the loop thread's monotonic start times, p50 /
  p99 / max (goal: p99 <= 1 ms on a quiet core), and lateness against the fixed schedule;
- command-to-frame latency: the probe's publish (wall clock) of a joint_commands message -> the first
  0x155 frame on the bus carrying that joint-1 value (virtual bus send stamp, wall clock); commands
  whose value never reached a frame (two in one cycle: the newer wins) are not counted;
- feedback-to-JointState latency through DDS: the firmware's send of a 0x2A5 frame with a joint-1
  value -> the probe's receipt of the JointState with that value (values sent once only);
- bus load: frames per second on the arm's bus x 111 bits (an 11-bit data frame with 8 bytes, no
  stuffing; 135 bits worst-case stuffing) against the 1 Mbit/s bus.

Run quiet and with a CPU hog per core (busy Python loops at normal priority) beside it, each with the
loop threads on the normal scheduler and at SCHED_FIFO (`--rt-priority`, the node's rt_priority, what a
robot would use). The machine's 1-minute load average before each run is recorded: this machine may be
shared with other work, so "quiet" means no hog of ours, not an idle machine.

Run:  . scripts/env.sh && python bench/piper.py [--seconds 10] [--out bench/results/piper.json]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from bench import dds_bench  # noqa: E402  (also keeps DDS on this machine, in a domain of its own)

RATE_HZ = 200.0
BITS_PER_FRAME, BITS_WORST = 111, 135       # SOF..IFS of a standard 8-byte data frame; + worst stuffing
START = (0.0, 0.5, -0.5, 0.0, 0.3, 0.0)


def percentiles(values: list[float]) -> dict:
    return dds_bench.percentiles(values, within_s=1e-3)


# ------------------------------------------------------------------------------------------------ arm process
def arm_process(side: str, seconds: float, out_path: str, rt_priority: int = 0) -> None:
    import can
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.parameter import Parameter

    from agentchemist.hardware.piper import PiperFirmwareSim, codec
    from agentchemist_ros.piper_driver_node import PiperDriverNode

    channel = f"bench-{side}-{uuid.uuid4().hex}"
    fw_sends: dict[int, list[float]] = {}

    class RecordingFirmware(PiperFirmwareSim):
        def _send_feedback(self):
            fw_sends.setdefault(codec.rad_to_mdeg(self.joints[0]), []).append(time.time())
            super()._send_feedback()

    fw_bus = can.Bus(interface="virtual", channel=channel)
    sniffer = can.Bus(interface="virtual", channel=channel)
    fw = RecordingFirmware(fw_bus, joints_rad=START, gripper_m=0.03)
    stop = threading.Event()
    frames: dict[int, int] = {}
    ctrl_frames: dict[int, list[float]] = {}   # joint-1 command value -> frame times

    def firmware():
        while not stop.is_set():
            fw.step(time.monotonic())
            time.sleep(0.001)

    def sniff():
        while not stop.is_set():
            msg = sniffer.recv(timeout=0.05)
            if msg is None:
                continue
            frames[msg.arbitration_id] = frames.get(msg.arbitration_id, 0) + 1
            if msg.arbitration_id == codec.JOINT_CTRL_IDS[0]:
                ctrl_frames.setdefault(codec.decode_joint_ctrl(msg).a_mdeg, []).append(msg.timestamp)

    threads = [threading.Thread(target=f, daemon=True) for f in (firmware, sniff)]
    for t in threads:
        t.start()
    rclpy.init()
    node = PiperDriverNode(cli_args=["--ros-args", "-r", f"__node:={side}_piper_driver",
                                     "-r", f"joint_states:=/{side}_piper/joint_states",
                                     "-r", f"joint_commands:=/{side}_piper/joint_commands"],
                           parameter_overrides=[Parameter("side", value=side),
                                                Parameter("can_interface", value=channel),
                                                Parameter("can_bustype", value="virtual"),
                                                Parameter("rate_hz", value=RATE_HZ),
                                                Parameter("rt_priority", value=rt_priority)])
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    counted_from = None
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        executor.spin_once(timeout_sec=0.05)
        if counted_from is None and node.driver.arm_armed:
            counted_from = (time.monotonic(), dict(frames))
    loop = node.loop
    starts = list(loop.starts)
    lateness = list(loop.lateness)
    t_end, frames_end = time.monotonic(), dict(frames)
    node.destroy_node()
    rclpy.try_shutdown()
    stop.set()
    for t in threads:
        t.join(2)
    periods = [b - a for a, b in zip(starts, starts[1:])]
    t0, frames0 = counted_from or (t_end, frames_end)
    span = max(t_end - t0, 1e-9)
    rates = {f"0x{i:03X}": (frames_end.get(i, 0) - frames0.get(i, 0)) / span for i in frames_end}
    total = sum(rates.values())
    Path(out_path).write_text(json.dumps({
        "side": side, "cycles": loop.cycles, "missed_periods": loop.missed, "rt": loop.rt_note or "normal scheduling",
        "period_jitter": percentiles([abs(p - 1.0 / RATE_HZ) for p in periods]),
        "lateness": percentiles(lateness),
        "queue_to_frame": percentiles(list(loop.command_latency)),
        "frames_per_s": rates, "frames_per_s_total": total,
        "bus_load": total * BITS_PER_FRAME / 1e6, "bus_load_worst_stuffing": total * BITS_WORST / 1e6,
        "fw_sends": {str(k): v[0] for k, v in fw_sends.items() if len(v) == 1},
        "ctrl_frames": {str(k): v for k, v in ctrl_frames.items()},
    }))


# ------------------------------------------------------------------------------------------------ probe
def probe_run(seconds: float, sides=("left", "right")) -> dict:
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node
    from rclpy.qos import qos_profile_sensor_data
    from sensor_msgs.msg import JointState

    from agentchemist.hardware.piper import codec

    rclpy.init()
    node = Node("bench_piper_probe")
    pubs = {s: node.create_publisher(JointState, f"/{s}_piper/joint_commands", qos_profile_sensor_data) for s in sides}
    received = {s: {} for s in sides}          # joint-1 mdeg -> first receipt (wall)
    latest = {s: None for s in sides}
    sent = {s: {} for s in sides}              # joint-1 mdeg -> publish time (wall)

    def on_state(side):
        def cb(msg):
            latest[side] = msg
            received[side].setdefault(codec.rad_to_mdeg(msg.position[0]), time.time())
        return cb
    for s in sides:
        node.create_subscription(JointState, f"/{s}_piper/joint_states", on_state(s), 10)
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    stop = threading.Event()
    spinner = threading.Thread(target=lambda: [executor.spin_once(0.01) for _ in iter(stop.is_set, True)], daemon=True)
    spinner.start()
    deadline = time.monotonic() + 60
    while any(latest[s] is None for s in sides) and time.monotonic() < deadline:
        time.sleep(0.05)
    t0 = time.monotonic()
    next_t = t0
    end = t0 + seconds
    while time.monotonic() < end:
        t = time.monotonic() - t0
        for s in sides:
            names = [f"{s}_joint{i}" for i in range(1, 7)] + [f"{s}_gripper"]
            # first second at the start pose (the driver's startup hold), then a 0.2 Hz sine on joint 1
            j1 = START[0] + (0.0 if t < 1.0 else 0.6 * math.sin(2 * math.pi * 0.2 * (t - 1.0)))
            msg = JointState(name=names, position=[j1, *START[1:], 0.03])
            sent[s].setdefault(codec.rad_to_mdeg(j1), time.time())
            pubs[s].publish(msg)
        next_t += 1.0 / RATE_HZ
        time.sleep(max(0.0, next_t - time.monotonic()))
    stop.set()
    spinner.join(2)
    node.destroy_node()
    rclpy.try_shutdown()
    return {"sent": sent, "received": received}


def run_condition(seconds: float, with_hog: bool, rt_priority: int = 0) -> dict:
    load = os.getloadavg()[0]
    tmp = Path(os.environ.get("TMPDIR", "/tmp")) / f"bench-piper-{uuid.uuid4().hex}"
    tmp.mkdir(parents=True)
    arm_seconds = seconds + 12.0                # start-up (rclpy, discovery) + the probe's window
    hogs = dds_bench.cpu_hogs(arm_seconds + 5) if with_hog else []
    procs = {s: subprocess.Popen([sys.executable, __file__, "--arm", s, str(arm_seconds), str(tmp / f"{s}.json"),
                                  str(rt_priority)]) for s in ("left", "right")}
    time.sleep(3.0)
    probe = probe_run(seconds)
    for p in procs.values():
        p.wait(timeout=arm_seconds + 60)
    for h in hogs:
        h.kill()
        h.wait()
    out = {"load_1min_before": load, "cpu_hog_processes": len(hogs), "rt_priority": rt_priority, "arms": {}}
    for side, p in procs.items():
        if p.returncode != 0:
            out["arms"][side] = {"failed": p.returncode}
            continue
        arm = json.loads((tmp / f"{side}.json").read_text())
        ctrl = {int(k): v for k, v in arm.pop("ctrl_frames").items()}
        fw = {int(k): v for k, v in arm.pop("fw_sends").items()}
        sent, got = probe["sent"][side], probe["received"][side]
        # the first frame with the command's value after its publish, within 0.5 s (the sine repeats values
        # every 5 s: a later frame is another command's)
        lat = []
        for k, t in sent.items():
            after = [f - t for f in ctrl.get(k, ()) if 0 <= f - t < 0.5]
            if after:
                lat.append(min(after))
        arm["command_to_frame"] = percentiles(lat)
        arm["commands_matched"] = f"{len(lat)}/{len(sent)}"
        arm["feedback_to_joint_state"] = percentiles([got[k] - t for k, t in fw.items() if k in got and got[k] >= t])
        out["arms"][side] = arm
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="measured window per condition (s)")
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "piper.json"))
    parser.add_argument("--rt-priority", type=int, default=20,
                        help="SCHED_FIFO priority of the loop threads in the *_fifo conditions (0: skip them)")
    parser.add_argument("--arm", nargs=4, metavar=("SIDE", "SECONDS", "OUT", "RT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.arm:
        arm_process(args.arm[0], float(args.arm[1]), args.arm[2], int(args.arm[3]))
        return 0
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                            text=True).stdout.strip()
    result = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "commit": commit,
                          "note": "shared machine: other agents' work runs beside it; see load_1min_before"},
              "rate_hz": RATE_HZ, "seconds": args.seconds,
              # per arm and bus, per second: feedback (status, 3 joint, gripper, 6 high-speed) and commands
              # (3 joint, gripper) every cycle, low-speed (6) at the firmware's 100 Hz; below it, the simulated
              # firmware was starved of CPU and sent less
              "bus_load_nominal": ((11 + 4) * RATE_HZ + 6 * 100.0) * BITS_PER_FRAME / 1e6,
              "quiet": run_condition(args.seconds, with_hog=False),
              "cpu_hog": run_condition(args.seconds, with_hog=True)}
    if args.rt_priority > 0:     # the robot's configuration: the loop thread at SCHED_FIFO (rt_priority)
        result["quiet_fifo"] = run_condition(args.seconds, with_hog=False, rt_priority=args.rt_priority)
        result["cpu_hog_fifo"] = run_condition(args.seconds, with_hog=True, rt_priority=args.rt_priority)
    Path(args.out).write_text(json.dumps(result, indent=2))
    for cond in ("quiet", "cpu_hog", "quiet_fifo", "cpu_hog_fifo"):
        if cond not in result:
            continue
        r = result[cond]
        for side, a in r["arms"].items():
            if "failed" in a:
                print(f"{cond:12s} {side:5s} FAILED ({a['failed']})")
                continue
            g = lambda key, q: a[key].get(q, float("nan"))  # noqa: E731
            print(f"{cond:12s} {side:5s} load {r['load_1min_before']:.1f}: jitter p50/p99/max "
                  f"{g('period_jitter', 'p50_ms'):.3f}/{g('period_jitter', 'p99_ms'):.3f}/"
                  f"{g('period_jitter', 'max_ms'):.1f} ms; cmd->frame p50/p99 "
                  f"{g('command_to_frame', 'p50_ms'):.2f}/{g('command_to_frame', 'p99_ms'):.2f} ms; "
                  f"fb->JointState p50/p99 {g('feedback_to_joint_state', 'p50_ms'):.2f}/"
                  f"{g('feedback_to_joint_state', 'p99_ms'):.2f} ms; bus {100 * a['bus_load']:.0f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
