"""Some agents of the one-process graph in a second process, so the graph uses two cores.

    python -m agentchemist_ros.tools.agents_apart --scenario FILE --runs DIR --agents recorder,summarizer

The child composes those agents as graph.py does (one executor, one shared sim-time source fed by the
twin's /clock over DDS) and acknowledges the sim time its executor has reached (ClockAck, as an agent in
its own process does: common/clock_acks.py), so the twin in the parent keeps its clock within max_lead_s
of it (agentchemist.sim.lockstep): a starved child slows the twin instead of falling behind it.
Python's GIL lets one process use one core; a process per core is what makes both of them work.

Which agents go apart: those that only listen while a titration runs (the recorder with its durable
writes, the summarizer, the planner and the action policy, idle once the pipette is over the beaker).
The dispenser, the supervisor that judges its endpoint, and the audio supervisor whose drop symbols
drive the supervisor's state machine stay with the twin, in the FIFO order of one executor.

Opt-in (scenario runner --apart, demo --two-processes), not the default: a titration completes with the
same drops and no anomaly, but not quite the same run as in one process (hcl_naoh seed 1: task
2596-2633 s on the twin's clock against 2592.7-2593.3 s in one process, equivalence error -0.23, -0.51 and
-0.55 drops against -0.05 to -0.07; bench/results/rtf.json). Not explained yet; the one-process graph is
not immune either: beside a CPU hog the same run gave -0.33 drops (bench/results/rtf_outcomes.json).
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

#: the twin's lead over the agents apart (its max_lead_s; its lowest) and their acknowledgement period: the
#: recorder's status then reaches the supervisor well within the record watch's stale_s (3 s), as it does
#: in one process
LEAD_S, ACK_PERIOD_S = 1.0, 0.1
#: the default second process: the agents that only listen during a titration (see the module docstring)
DEFAULT_APART = ("recorder", "summarizer", "planner", "action_policy")


@contextmanager
def agents_apart(scenario: str | Path, runs_dir: str | Path, agents: tuple[str, ...], probe, *,
                 ready_timeout_s: float = 60.0):
    """Run `agents` in a child process for the with-block; returns once their nodes are on the graph
    (seen by `probe`, a node the caller spins), raises RuntimeError when they do not come up."""
    if not agents:
        yield None
        return
    Path(runs_dir).mkdir(parents=True, exist_ok=True)
    log = open(Path(runs_dir) / "agents_apart.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "agentchemist_ros.tools.agents_apart", "--scenario",
                             str(scenario), "--runs", str(runs_dir), "--agents", ",".join(agents)],
                            env=os.environ.copy(), stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + ready_timeout_s
        while not set(agents) <= set(probe.get_node_names()):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the agents process ({', '.join(agents)}) did not come up; see {log.name}")
            time.sleep(0.1)
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()


def main(argv: list[str] | None = None) -> int:
    from agentchemist_ros.common.clock_acks import acknowledge_clock
    from agentchemist_ros.tools.graph import AGENTS, Graph, ensure_init

    p = argparse.ArgumentParser(prog="agents_apart")
    p.add_argument("--scenario", required=True)
    p.add_argument("--runs", required=True)
    p.add_argument("--agents", required=True, help="comma-separated agent names (tools/graph.py AGENTS)")
    args = p.parse_args(argv)
    agents = tuple(a for a in args.agents.split(",") if a)
    unknown = sorted(set(agents) - set(AGENTS))
    if unknown:
        p.error(f"unknown agents {unknown}; known: {sorted(AGENTS)}")
    import rclpy
    from rclpy.executors import ExternalShutdownException

    ensure_init()  # rclpy's own SIGINT / SIGTERM handling shuts the context down: the loop ends there
    from rclpy.node import Node
    from rclpy.parameter import Parameter

    graph = Graph(args.scenario, args.runs, with_twin=False, without=tuple(a for a in AGENTS if a not in agents))
    # The executor's progress in sim time, for the twin's lead bound (every ACK_PERIOD_S: see LEAD_S).
    acker = Node("agents_apart_clock", parameter_overrides=[Parameter("use_sim_time", value=True),
                                                            Parameter("clock_ack_period_s", value=ACK_PERIOD_S)])
    graph.time_source.attach_clock(acker.get_clock())
    acknowledge_clock(acker)
    graph.executor.add_node(acker)
    try:
        while rclpy.ok():
            graph.spin_once(0.1)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        graph.shutdown()
        rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
