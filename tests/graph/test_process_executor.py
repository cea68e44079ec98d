"""A node in its own process does not spend its CPU on the executor: the real audio supervisor, spun by
`common/runner.spin_node` as `ros2 run` starts it, fed a microphone's 10 ms chunks in real time.

rclpy's MultiThreadedExecutor (the earlier choice) rebuilt its wait set each time a worker finished a
callback; at 100 chunks per second that took 60-100 % of a core and the node missed drops. What is checked
is CPU seconds per second of audio, not wall time: on a loaded machine the node gets less wall time but
needs the same CPU for the same chunks, so the bound holds under load."""
import os
import subprocess
import sys
import time

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.node import Node  # noqa: E402
from std_msgs.msg import Header  # noqa: E402

from agentchemist_interfaces.msg import AudioChunk  # noqa: E402
from agentchemist_ros.common import topics  # noqa: E402
from agentchemist_ros.common.qos import AUDIO  # noqa: E402
from agentchemist_ros.common.timeconv import to_msg  # noqa: E402
from tests.graph.harness import wait_for  # noqa: E402

SAMPLE_RATE, CHUNK_S, AUDIO_S = 48000, 0.01, 4.0
CPU_PER_AUDIO_S = 0.25  # single-threaded: 0.055 here at load 7 (see the slow mark below); multi-threaded: 0.31 at
# load 7, 0.6-1.0 quiet


def cpu_seconds(pid: int) -> float:
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.fixture
def supervisor():
    env = {k: v for k, v in os.environ.items() if k != "AGENTCHEMIST_EXECUTOR"}  # the shipped default
    proc = subprocess.Popen([sys.executable, "-m", "agentchemist_ros.audio_supervisor_node", "--ros-args",
                             "-p", "use_sim_time:=false", "-p", "clock_ack_period_s:=0.0",
                             "-p", f"sample_rate:={SAMPLE_RATE}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    yield proc
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


# slow (make test-all): a CPU budget, not a behaviour. On 2026-11-26 this machine ran the single-threaded node at
# 0.17-0.28 CPU s per audio s (0.055 the week before), overlapping the multi-threaded executor's 0.31 at load 7:
# there the budget cannot tell the two apart, and the default run must not depend on the machine's speed.
@pytest.mark.slow
def test_ten_ms_chunks_cost_little_cpu_in_the_nodes_own_process(supervisor):
    rclpy.init()
    probe = Node("executor_probe")
    try:
        pub = probe.create_publisher(AudioChunk, topics.audio_topic("right"), AUDIO)
        assert wait_for(lambda: pub.get_subscription_count() > 0, 60.0), supervisor.stderr.read1().decode()
        n = int(SAMPLE_RATE * CHUNK_S)
        rng = np.random.default_rng(3)
        room = (rng.normal(0.0, 30.0, int(AUDIO_S / CHUNK_S) * n)).astype(np.int16)  # room noise, no drops
        start_cpu, start = cpu_seconds(supervisor.pid), time.monotonic()
        for k in range(int(AUDIO_S / CHUNK_S)):
            time.sleep(max(0.0, start + (k + 1) * CHUNK_S - time.monotonic()))  # a microphone's pace
            msg = AudioChunk(header=Header(stamp=to_msg(time.time())), sample_rate=SAMPLE_RATE, channels=1)
            msg.data = room[k * n:(k + 1) * n].tolist()
            pub.publish(msg)
        time.sleep(0.5)  # the last chunks are taken
        used = cpu_seconds(supervisor.pid) - start_cpu
        assert supervisor.poll() is None, supervisor.stderr.read1().decode()
        assert used < CPU_PER_AUDIO_S * AUDIO_S, (
            f"the audio supervisor used {used:.2f} CPU s for {AUDIO_S:.0f} s of 10 ms chunks: its executor spins")
    finally:
        probe.destroy_node()
        rclpy.try_shutdown()
