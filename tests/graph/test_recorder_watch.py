"""The run depends on its record (agentchemist.fsm.record_watch), with the recorder in its own OS process
as on the robot: the run does not start before it acknowledges the plan; killed mid-titration, the
supervisor holds dispensing with recorder_lost; restarted, it reopens the same experiment, dispensing goes
on, the gap is an anomaly that the restarted recorder stores, and the run is not reported as a success."""
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.action import ActionClient  # noqa: E402
from rclpy.node import Node  # noqa: E402

from agentchemist.sim.scenario import load_scenario  # noqa: E402
from agentchemist_interfaces.action import RunExperiment  # noqa: E402
from agentchemist_interfaces.msg import Anomaly, DispenserState, RecorderStatus  # noqa: E402
from agentchemist_ros.common import topics  # noqa: E402
from agentchemist_ros.common.qos import FSM, LATCHED, RELIABLE  # noqa: E402
from agentchemist_ros.common.timeconv import to_sec  # noqa: E402
from agentchemist_ros.tools.graph import Graph, ensure_init  # noqa: E402
from tests.conftest import REPO  # noqa: E402
from tests.graph.harness import wait_for  # noqa: E402

SCENARIO = REPO / "tests" / "data" / "scenarios" / "hcl_short.yaml"


def recorder_process(runs):
    return subprocess.Popen([sys.executable, "-m", "tests.graph.recorder_process", str(runs), "--sim-time"],
                            cwd=REPO)


class Probe(Node):
    def __init__(self):
        super().__init__("record_watch_probe")
        self.anomalies, self.dispenser, self.statuses = [], [], []
        self.create_subscription(Anomaly, topics.ANOMALIES, self.anomalies.append, RELIABLE)
        self.create_subscription(DispenserState, topics.DISPENSER_STATE, self.dispenser.append, FSM)
        self.create_subscription(RecorderStatus, topics.RECORDER_STATUS, self.statuses.append, LATCHED)

    def drops(self):
        return max((m.drops for m in self.dispenser), default=0)

    def of(self, kind, resolved=False):
        return [a for a in self.anomalies if a.kind == kind and a.resolved == resolved]


def test_a_killed_recorder_holds_dispensing_and_its_gap_is_on_record(tmp_path):
    runs = tmp_path / "runs"
    recorder = recorder_process(runs)
    ensure_init()
    graph = Graph(SCENARIO, runs, without=("recorder",))
    client_node, probe = Node("record_watch_client"), Probe()
    for node in (client_node, probe):
        graph.executor.add_node(node)
    client = ActionClient(client_node, RunExperiment, topics.RUN_EXPERIMENT)
    restarted = None
    try:
        with graph.spinning():
            assert client.wait_for_server(timeout_sec=30)
            goal = client.send_goal_async(RunExperiment.Goal(instruction=load_scenario(SCENARIO).instruction))
            assert wait_for(goal.done, 60) and goal.result().accepted
            result = goal.result().get_result_async()
            # Titrating, with the recorder in its own process acknowledging: kill it.
            assert wait_for(lambda: probe.drops() >= 15 or result.done(), 240), "dispensing did not start"
            assert not result.done(), result.result().result.message
            recorder.send_signal(signal.SIGKILL)
            recorder.wait(timeout=10)
            assert wait_for(lambda: probe.of("recorder_lost"), 60), "no recorder_lost anomaly"
            lost = probe.of("recorder_lost")[0]
            assert lost.source == "vision_supervisor" and lost.severity == "warn" and lost.response == "pause", \
                [(a.source, a.severity, a.response, a.description) for a in probe.anomalies]
            held_at, drops_held = to_sec(lost.stamp), probe.drops()
            # Waiting for the recorder's return is waiting on a peer: the twin's clock stands still meanwhile
            # (a restart that takes seconds of wall time on a loaded machine costs no simulated time).
            lockstep = graph.nodes["lab_sim"].lockstep
            assert wait_for(lambda: any("vision_supervisor" in n for n in lockstep.waiting_on_peers(time.monotonic())),
                            30), "the supervisor does not wait for the recorder"
            restarted = recorder_process(runs)
            assert wait_for(lambda: probe.of("recorder_lost", resolved=True), 120), "the recorder did not come back"
            # Held: at most the drop already forming when the hold arrived.
            assert probe.drops() <= drops_held + 1
            assert wait_for(result.done, 240), "the run did not finish after the recorder came back"
            outcome = result.result().result
            assert wait_for(lambda: probe.of("record_gap"), 10)
    finally:
        graph.shutdown()
        for node in (client_node, probe):
            node.destroy_node()
        rclpy.try_shutdown()
        for proc in (recorder, restarted):
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGINT)
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()
    assert probe.of("recorder_lost", resolved=True), "the recorder's return was not reported"
    assert not outcome.success and outcome.outcome == "completed_with_gap", (outcome.outcome, outcome.message)
    assert "gap from" in outcome.message
    # The restarted recorder reopened the same experiment's store and stored the gap with the rest.
    con = sqlite3.connect(runs / outcome.experiment_id / "records.db")
    kinds = {k for (k,) in con.execute("SELECT kind FROM anomalies")}
    assert "record_gap" in kinds
    stamps = [s for (s,) in con.execute("SELECT stamp FROM fused_records ORDER BY stamp")]
    gap_start = to_sec(probe.of("record_gap")[0].stamp)
    assert stamps[0] < held_at and stamps[-1] > gap_start  # records before the kill and after the return
    status = con.execute("SELECT status FROM experiments").fetchone()[0]
    assert status == "completed"
