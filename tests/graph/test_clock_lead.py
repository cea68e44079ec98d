"""The twin keeps its clock within max_lead_s of the slowest agent that runs in its own process
(ClockAck, agentchemist.sim.lockstep): a real audio supervisor process is frozen (SIGSTOP) as a node starved
of CPU would be, and the twin's clock stops within the lead; it runs again when the agent does, and an
agent silent past ack_dead_s (wall) is no longer waited for."""
import os
import signal
import subprocess
import sys
import time

import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.node import Node  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402

from agentchemist_interfaces.msg import ClockAck  # noqa: E402
from agentchemist_ros.common import topics  # noqa: E402
from agentchemist_ros.common.runner import make_executor  # noqa: E402
from agentchemist_ros.common.timeconv import to_sec  # noqa: E402
from agentchemist_ros.lab_sim_node import LabSimNode  # noqa: E402
from tests.conftest import REPO  # noqa: E402

SCENARIO = str(REPO / "config" / "scenarios" / "hcl_naoh.yaml")
MAX_LEAD_S, ACK_DEAD_S, TICK_S = 2.0, 4.0, 0.05


def spin(executor, seconds, until=lambda: False):
    end = time.monotonic() + seconds
    while time.monotonic() < end and not until():
        executor.spin_once(timeout_sec=0.02)


@pytest.fixture
def agent():
    """The audio supervisor in its own process, following the twin's clock."""
    proc = subprocess.Popen([sys.executable, "-m", "agentchemist_ros.audio_supervisor_node", "--ros-args",
                             "-p", "use_sim_time:=true", "-p", "clock_ack_period_s:=0.5"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=os.environ.copy())
    yield proc
    proc.send_signal(signal.SIGCONT)
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


def test_a_frozen_agent_stops_the_clock_within_the_lead(agent):
    rclpy.init()
    sim = probe = None
    try:
        sim = LabSimNode(parameter_overrides=[Parameter("scenario", value=SCENARIO),
                                              Parameter("real_time_factor", value=20.0),
                                              Parameter("max_lead_s", value=MAX_LEAD_S),
                                              Parameter("ack_dead_s", value=ACK_DEAD_S)])
        probe = Node("lead_probe")
        acks = []
        probe.create_subscription(ClockAck, topics.CLOCK_ACKS, lambda m: acks.append(to_sec(m.stamp)), 50)
        executor = make_executor()
        executor.add_node(sim)
        executor.add_node(probe)
        spin(executor, 60.0, until=lambda: len(acks) >= 3)
        assert len(acks) >= 3, f"no clock acknowledgements from the agent process: {agent.stderr.read1().decode()}"

        # A live agent: the clock runs on, as fast as the agent keeps up (on a loaded machine that is
        # slower than the twin's pace: the point of the lead)
        t0 = sim.t
        spin(executor, 20.0, until=lambda: sim.t - t0 > 3.0 * MAX_LEAD_S)
        assert sim.t - t0 > 3.0 * MAX_LEAD_S, "the clock should run on while the agent keeps up"

        agent.send_signal(signal.SIGSTOP)  # starved: its executor runs no more
        spin(executor, 2.0)
        frozen_at = sim.t
        assert frozen_at - max(acks) <= MAX_LEAD_S + 2 * TICK_S, (frozen_at, max(acks))
        spin(executor, 1.0)
        assert sim.t == frozen_at, "the clock ran on ahead of a frozen agent"

        agent.send_signal(signal.SIGCONT)
        spin(executor, 20.0, until=lambda: sim.t - frozen_at > 3.0 * MAX_LEAD_S)
        assert sim.t - frozen_at > 3.0 * MAX_LEAD_S, "the clock should run again once the agent does"

        agent.send_signal(signal.SIGSTOP)  # now for longer than ack_dead_s: not waited for any more
        spin(executor, ACK_DEAD_S + 20.0, until=lambda: sim.t - max(acks) > 3.0 * MAX_LEAD_S)
        assert sim.t - max(acks) > 3.0 * MAX_LEAD_S, "a dead agent must not freeze the world"
    finally:
        for node in (sim, probe):
            if node is not None:
                node.destroy_node()
        rclpy.try_shutdown()
