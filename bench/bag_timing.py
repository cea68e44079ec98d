"""Benchmark of `agentchemist bag play`: timing accuracy on the real rosbag2 reference bags, and the
throughput of lock-step replay (what the replay tests use).

Timing: each reference bag (sqlite3, MCAP; 7 messages over 151 ms) is played `--repeats` times at rate 1
into a subscriber in the same process (spun in its own thread); per message, the error of its relative
time against the recorded relative time, at publish and at receipt.
Throughput: the recorder + summarizer replay of tests/fixtures/bags/hcl_short_agents (no twin).

Run:  . scripts/env.sh && python bench/bag_timing.py [--repeats 20] [--out bench/results/bag_timing.json]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("ROS_DOMAIN_ID", str(random.randint(150, 200)))
os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
os.environ.setdefault("MPLBACKEND", "Agg")

import rclpy  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.node import Node  # noqa: E402

from agentchemist.bag import BagReader, PlaybackOptions, timing_errors  # noqa: E402
from agentchemist_ros.tools.bag.player import BagPlayer  # noqa: E402

REFERENCE = REPO.parent / "shared" / "fixtures" / "rosbag2_reference"
FIXTURES = REPO / "tests" / "fixtures" / "bags"  # data only: bench/ never imports tests/


def play_once(bag: Path) -> tuple[list[float], list[float]]:
    from test_msgs.msg import Arrays, BasicTypes
    probe = Node("bench_probe")
    got = []
    probe.create_subscription(BasicTypes, "/test_topic", lambda m: got.append(time.monotonic()), 10)
    probe.create_subscription(Arrays, "/array_topic", lambda m: got.append(time.monotonic()), 10)
    executor = SingleThreadedExecutor()
    executor.add_node(probe)
    stop = threading.Event()
    spinner = threading.Thread(target=lambda: [executor.spin_once(0.02) for _ in iter(stop.is_set, True)], daemon=True)
    spinner.start()
    player = BagPlayer(bag, PlaybackOptions(rate=1.0), keep_log=True)
    player.wait_for_subscribers(5.0)
    stats = player.play()
    end = time.monotonic() + 2
    while len(got) < 7 and time.monotonic() < end:
        time.sleep(0.005)
    stop.set()
    spinner.join()
    executor.shutdown()
    with BagReader(bag) as reader:
        recorded = [m.timestamp for m in reader.messages()]
    published = timing_errors(recorded, [p.wall for p in stats.log])
    received = timing_errors(recorded, got) if len(got) == 7 else [float("nan")] * 7
    player.destroy_node()
    probe.destroy_node()
    return published, received


def summary(errors: list[float]) -> dict:
    abs_ms = sorted(abs(e) * 1e3 for e in errors if e == e)
    return {"n": len(abs_ms), "median_ms": statistics.median(abs_ms), "p95_ms": abs_ms[int(0.95 * (len(abs_ms) - 1))],
            "max_ms": abs_ms[-1], "within_5ms": sum(e <= 5.0 for e in abs_ms) / len(abs_ms)}


def replay_throughput() -> dict:
    from rclpy.parameter import Parameter
    from agentchemist_interfaces.msg import AgentMessage, FusedRecord
    from agentchemist_ros.common.qos import RELIABLE
    from agentchemist_ros.recorder_node import RecorderNode
    from agentchemist_ros.summarizer_node import SummarizerNode
    from agentchemist_ros.tools.bag.replay import SIM_TIME, replay
    runs = Path(tempfile.mkdtemp(prefix="bench-replay-"))
    params = [*SIM_TIME, Parameter("runs_dir", value=str(runs))]
    nodes = [RecorderNode(parameter_overrides=params, start_parameter_services=False),
             SummarizerNode(parameter_overrides=params, start_parameter_services=False)]
    inputs = ["/agentchemist/plan", "/agentchemist/fsm_state", "/agentchemist/quantity", "/agentchemist/anomalies",
              "/agentchemist/audio_events", "/agentchemist/messages", "/lab/ph_meter/reading"]
    wall, cpu = time.perf_counter(), time.process_time()
    result = replay(FIXTURES / "hcl_short_agents", nodes, inputs,
                    {"/agentchemist/records": (FusedRecord, RELIABLE),
                     "/agentchemist/messages": (AgentMessage, RELIABLE)},
                    senders={"recorder", "summarizer"}, clock_step_s=0.0, drain_on_clock=False)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    with BagReader(FIXTURES / "hcl_short_agents") as reader:
        sim_s = reader.info().duration_ns / 1e9
    return {"messages": result.published, "wall_s": wall, "cpu_s": cpu, "messages_per_wall_s": result.published / wall,
            "sim_s": sim_s, "sim_per_wall": sim_s / wall}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "bag_timing.json"))
    args = parser.parse_args(argv)
    rclpy.init()
    results = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                           "load_1min": os.getloadavg()[0]}}
    for storage in ("sqlite3", "mcap"):
        published, received = [], []
        for _ in range(args.repeats):
            p, r = play_once(REFERENCE / storage / "cdr_test")
            published += p[1:]  # the first message defines zero
            received += r[1:]
        results[storage] = {"publish": summary(published), "receive": summary(received)}
        print(storage, json.dumps(results[storage]))
    results["lockstep_replay"] = replay_throughput()
    print("lockstep", json.dumps(results["lockstep_replay"]))
    rclpy.try_shutdown()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
