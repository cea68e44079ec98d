"""Compose the whole graph in one process (as ROS 2 composition does): the demo and graph tests.

All agents run on the twin's sim time through one shared TimeSource (one /clock subscription for the
process instead of one per node). Long actions are coroutines, so the fast single-threaded
EventsExecutor serves the whole graph (see common/runner.py).
"""
import os
import threading
from contextlib import contextmanager
from pathlib import Path

import rclpy
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.time_source import TimeSource

from agentchemist_ros.action_policy_node import ActionPolicyNode
from agentchemist_ros.audio_supervisor_node import AudioSupervisorNode
from agentchemist_ros.balance_node import BalanceNode
from agentchemist.sim.lab_inventory import write_twin_inventory
from agentchemist.sim.scenario import load_scenario
from agentchemist_ros.common.runner import make_executor
from agentchemist_ros.dispenser_controller_node import DispenserControllerNode
from agentchemist_ros.lab_sim_node import LabSimNode
from agentchemist_ros.ph_meter_node import PhMeterNode
from agentchemist_ros.planner_node import PlannerNode
from agentchemist_ros.recorder_node import RecorderNode
from agentchemist_ros.summarizer_node import SummarizerNode
from agentchemist_ros.vision_supervisor_node import VisionSupervisorNode

AGENTS = {
    "planner": PlannerNode,
    "vision_supervisor": VisionSupervisorNode,
    "audio_supervisor": AudioSupervisorNode,
    "action_policy": ActionPolicyNode,
    "dispenser_controller": DispenserControllerNode,
    "recorder": RecorderNode,
    "summarizer": SummarizerNode,
}


class Graph:
    """The twin plus every agent node, sharing one sim clock; `spin_once` drives them."""

    def __init__(self, scenario: str | Path, runs_dir: str | Path, *, real_time_factor: float = 0.0,
                 overrides: dict | None = None, threads: int = 12, with_twin: bool = True,
                 without: tuple[str, ...] = ()):
        """`without` names agents left out (a test of a dead agent)."""
        overrides = overrides or {}
        runs = str(Path(runs_dir).resolve())
        self.nodes: dict[str, Node] = {}
        if with_twin:
            self.nodes["lab_sim"] = LabSimNode(parameter_overrides=_params(
                {"scenario": str(scenario), "real_time_factor": float(real_time_factor), **overrides.get("lab_sim", {})}))
        sim = overrides.get("lab_sim", {})
        if with_twin and sim.get("instruments") == "serial":
            # The twin's instruments on ptys: the drivers publish pH, mass and serve the tare (docs/robot.md).
            folder = Path(sim.get("instrument_dir", "/tmp/agentchemist_instruments"))
            self.nodes["ph_meter"] = PhMeterNode(parameter_overrides=_params(
                {"port": str(folder / "ph_meter"), "require_calibration": False, **overrides.get("ph_meter", {})}))
            self.nodes["balance"] = BalanceNode(parameter_overrides=_params(
                {"port": str(folder / "balance"), "poll_period_s": 0.05, **overrides.get("balance", {})}))
        for name, cls in AGENTS.items():
            if name in without:
                continue
            params = dict(overrides.get(name, {}))
            if name in ("vision_supervisor", "recorder", "summarizer"):
                params.setdefault("runs_dir", runs)
            if name == "vision_supervisor" and with_twin and "inventory_file" not in params:
                # What the twin's lab believes its bottles hold (the scenario's labels and inventory block).
                file = Path(runs) / f".twin-inventory-{Path(scenario).stem}-{os.getpid()}-{id(self)}.yaml"
                params["inventory_file"] = str(write_twin_inventory(load_scenario(scenario), file))
            self.nodes[name] = cls(parameter_overrides=_params(params))
        # One /clock subscription for the process: the clock node itself stays on wall time (with
        # use_sim_time its own TimeSource would subscribe a second time, one more callback per tick).
        self.clock_node = Node("sim_clock")
        self.time_source = TimeSource(node=self.clock_node)
        self.time_source.ros_time_is_active = True
        for name, node in self.nodes.items():
            if name != "lab_sim":
                self.time_source.attach_clock(node.get_clock())
        self.executor = make_executor(threads)
        for node in [self.clock_node, *self.nodes.values()]:
            self.executor.add_node(node)

    def spin_once(self, timeout_sec: float = 0.1) -> None:
        self.executor.spin_once(timeout_sec=timeout_sec)

    @contextmanager
    def spinning(self, period_s: float = 0.05):
        """Spin the graph in a background thread for the with-block (tests and tools drive it from here)."""
        with background_spin(self.spin_once, period_s):
            yield self

    def shutdown(self) -> None:
        self.executor.shutdown(timeout_sec=2.0)
        for node in [*self.nodes.values(), self.clock_node]:
            node.destroy_node()


@contextmanager
def background_spin(spin_once, period_s: float = 0.05):
    """Call ``spin_once(period_s)`` on a background thread until the with-block ends."""
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            spin_once(period_s)

    thread = threading.Thread(target=spin, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=10)


def _params(values: dict) -> list[Parameter]:
    return [Parameter(k, value=v) for k, v in values.items()]


def ensure_init():
    if not rclpy.ok():
        rclpy.init()
