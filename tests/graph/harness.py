"""Run one experiment through the whole one-process graph on the twin, as a chemist would (a
RunExperiment goal), and hand back what the tests grade: the action result, the FSM feedback, the twin's
ground truth and whatever a probe node collected on the way."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import rclpy
from rclpy.action import ActionClient
from rclpy.node import Node

from agentchemist.sim.scenario import load_scenario
from agentchemist_interfaces.action import RunExperiment
from agentchemist_ros.common import topics
from agentchemist_ros.common.runner import make_executor
from agentchemist_ros.tools.graph import Graph, background_spin, ensure_init


@dataclass
class GraphRun:
    result: object
    truth: dict
    probe: Node | None
    feedback: list[str] = field(default_factory=list)
    leftovers: dict[str, int] = field(default_factory=dict)  # see per_experiment_leftovers


def per_experiment_leftovers(graph: Graph) -> dict[str, int]:
    """What the agents still hold for experiments that have ended (all 0 when none runs): a node that
    serves goal after goal for hours must drop each experiment's bookkeeping when it ends (issue 11)."""
    planner, summarizer = graph.nodes["planner"], graph.nodes["summarizer"]
    return {"planner.goals": len(planner.goals), "planner.ended": len(planner.ended),
            "planner.reported": len(planner.reported), "planner.anomalies": len(planner.anomalies),
            "summarizer.children": len(summarizer.children)}


def wait_for(condition: Callable[[], bool], seconds: float = 10.0) -> bool:
    """Poll ``condition`` until it holds or ``seconds`` of wall time pass; its last value."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.02)
    return bool(condition())


def before_marker(received: list, send_marker: Callable[[], object], is_marker: Callable[[object], bool], *,
                  since: int = 0, seconds: float = 10.0,
                  wait: Callable[[Callable[[], bool], float], bool] = wait_for) -> list:
    """What arrived in `received` (from index `since`) before a marker: the "nothing arrived" check
    without a sleep, which would pass on a slow machine whether or not the code works.

    `send_marker()` causes one last message after the stimulus on a path ordered after whatever must not
    arrive: the same publisher (a node's next output), or, in one process, any publisher on the same topic
    (Fast DDS delivers intra-process messages during publish(), so what was published before the marker is
    in the subscriber's queue ahead of it). Waits (with `wait(condition, seconds)`: a test that spins its
    own executor passes its spinning wait) until a message that `is_marker` accepts is in `received`, and
    returns the messages before it; the test asserts on those.
    """
    send_marker()
    assert wait(lambda: any(is_marker(m) for m in received[since:]), seconds), \
        f"the marker did not arrive within {seconds} s"
    arrived = received[since:]
    return arrived[:next(i for i, m in enumerate(arrived) if is_marker(m))]


MARKER_JOINT = "__end_of_test_marker__"


class MotionProbe(Node):
    """Every arm and gripper command anyone sends (`commands`), and the anomalies; `flush()` (called by
    run_experiment after the result, while the graph still spins) sends one marker command on each of
    those topics and waits for them, so that `commands` then holds everything sent before: no sleep."""

    def __init__(self, name: str = "motion_probe"):
        from std_msgs.msg import Float64MultiArray
        from trajectory_msgs.msg import JointTrajectory

        from agentchemist_interfaces.msg import Anomaly
        from agentchemist_ros.common.qos import RELIABLE

        super().__init__(name)
        self.commands, self.anomalies, self.markers = [], [], []
        self._marker_pubs = []
        for topic, cls, marker in [
                *[(topics.arm_trajectory_topic(side), JointTrajectory, JointTrajectory(joint_names=[MARKER_JOINT]))
                  for side in topics.SIDES],
                *[(topics.gripper_command_topic(side), Float64MultiArray, Float64MultiArray(data=[-1.0]))
                  for side in topics.SIDES]]:
            self.create_subscription(cls, topic, lambda m, t=topic: self._on_command(t, m), 10)
            self._marker_pubs.append((topic, self.create_publisher(cls, topic, 10), marker))
        self.create_subscription(Anomaly, topics.ANOMALIES, self.anomalies.append, RELIABLE)
        self._flushing = False

    def _on_command(self, topic, msg):
        if self._flushing and (list(getattr(msg, "joint_names", ())) == [MARKER_JOINT]
                               or list(getattr(msg, "data", ())) == [-1.0]):
            self.markers.append(topic)
        else:
            self.commands.append(msg)

    def flush(self, seconds: float = 10.0) -> None:
        self._flushing = True
        for _topic, pub, marker in self._marker_pubs:
            pub.publish(marker)
        assert wait_for(lambda: len(set(self.markers)) == len(self._marker_pubs), seconds), \
            f"markers arrived on {sorted(set(self.markers))} only"


@contextmanager
def spinning(nodes, threads: int | None = None):
    """Spin ``nodes`` in one executor on a background thread for the ``with`` block; then stop it, destroy
    the nodes and shut rclpy down (a test's nodes never outlive it)."""
    executor = make_executor(threads) if threads else make_executor()
    for node in nodes:
        executor.add_node(node)
    try:
        with background_spin(lambda t: executor.spin_once(timeout_sec=t)):
            yield executor
    finally:
        executor.shutdown(timeout_sec=2.0)
        for node in nodes:
            node.destroy_node()
        rclpy.try_shutdown()


def run_experiment(scenario: str | Path, runs: str | Path, *, instruction: str | None = None,
                   probe: Callable[[], Node] | None = None, overrides: dict | None = None,
                   wall_limit_s: float = 240.0, settle_s: float = 0.5, without: tuple[str, ...] = ()) -> GraphRun:
    """Compose the graph, send the scenario's instruction (or `instruction`), wait for the result.
    `probe` builds an extra node (after rclpy is initialised) that subscribes to whatever the test needs."""
    ensure_init()
    graph = Graph(scenario, runs, overrides=overrides, without=without)
    client_node = Node("graph_test_client")
    client = ActionClient(client_node, RunExperiment, topics.RUN_EXPERIMENT)
    extra = probe() if probe else None
    for node in (client_node, extra):
        if node is not None:
            graph.executor.add_node(node)
    feedback: list[str] = []
    try:
        with graph.spinning():
            assert client.wait_for_server(timeout_sec=30), "the planner's RunExperiment server did not come up"
            goal = RunExperiment.Goal(instruction=instruction or load_scenario(scenario).instruction)
            sent = client.send_goal_async(goal, feedback_callback=lambda f: feedback.append(f.feedback.fsm_state))
            end = time.monotonic() + wall_limit_s
            while not sent.done() and time.monotonic() < end:
                time.sleep(0.05)
            assert sent.done(), "the goal was not accepted"
            result_future = sent.result().get_result_async()
            while not result_future.done() and time.monotonic() < end:
                time.sleep(0.05)
            if callable(getattr(extra, "flush", None)):
                extra.flush()  # a marker after the last message the probe must see (see before_marker)
            else:
                time.sleep(settle_s)  # let the last messages reach the probe
            truth = graph.nodes["lab_sim"].twin.truth() if "lab_sim" in graph.nodes else {}
            leftovers = per_experiment_leftovers(graph)
    finally:
        graph.shutdown()
        for node in (client_node, extra):
            if node is not None:
                node.destroy_node()
        rclpy.try_shutdown()
    assert result_future.done(), f"the experiment did not finish within {wall_limit_s:.0f} s"
    return GraphRun(result_future.result().result, truth, extra, feedback, leftovers)


def run_worker(scenario: Path, out_dir: Path, *extra: str, worker_timeout_s: float, timeout_s: float) -> dict:
    """One scenario-runner worker in its own process and a ROS domain claimed from the runner's locks, on
    `scenario` (seed 1, runs in out_dir/runs); its run_record.json. `extra`: more worker arguments."""
    from agentchemist_ros.tools.scenario_runner import claim_domain
    domain, lock = claim_domain()
    try:
        env = dict(os.environ, ROS_DOMAIN_ID=str(domain), ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST")
        proc = subprocess.run([sys.executable, "-m", "agentchemist_ros.tools.scenario_runner", "--worker",
                               "--scenario", str(scenario), "--seed", "1", "--runs", str(out_dir / "runs"),
                               "--out", str(out_dir / "run_record.json"), "--timeout", str(worker_timeout_s), *extra],
                              env=env, capture_output=True, text=True, timeout=timeout_s)
    finally:
        lock.close()
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return json.loads((out_dir / "run_record.json").read_text())
