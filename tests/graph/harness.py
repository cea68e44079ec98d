"""Run one experiment through the whole one-process graph on the twin, as a chemist would (a
RunExperiment goal), and hand back what the tests grade: the action result, the FSM feedback, the twin's
ground truth and whatever a probe node collected on the way."""
from __future__ import annotations

import threading
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
from agentchemist_ros.tools.graph import Graph, ensure_init


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


@contextmanager
def spinning(nodes, threads: int | None = None):
    """Spin ``nodes`` in one executor on a background thread for the ``with`` block; then stop it, destroy
    the nodes and shut rclpy down (a test's nodes never outlive it)."""
    executor = make_executor(threads) if threads else make_executor()
    for node in nodes:
        executor.add_node(node)
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            executor.spin_once(timeout_sec=0.05)

    thread = threading.Thread(target=spin, daemon=True)
    thread.start()
    try:
        yield executor
    finally:
        stop.set()
        thread.join(timeout=10)
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
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            graph.spin_once(0.05)

    thread = threading.Thread(target=spin, daemon=True)
    thread.start()
    try:
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
        time.sleep(settle_s)  # let the last messages reach the probe
        truth = graph.nodes["lab_sim"].twin.truth() if "lab_sim" in graph.nodes else {}
        leftovers = per_experiment_leftovers(graph)
    finally:
        stop.set()
        thread.join(timeout=10)
        graph.shutdown()
        for node in (client_node, extra):
            if node is not None:
                node.destroy_node()
        rclpy.try_shutdown()
    assert result_future.done(), f"the experiment did not finish within {wall_limit_s:.0f} s"
    return GraphRun(result_future.result().result, truth, extra, feedback, leftovers)
