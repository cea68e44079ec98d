"""The graph split across two network namespaces joined by a veth link (run by test_two_hosts.py):

- `robot` (inside `unshare -n`): the lab twin (standing in for the lab instruments and the arms),
  dispenser_controller, recorder, audio_supervisor and summarizer (the report reads the recorder's
  store, so it runs beside it); it starts the `workstation` in a second namespace and moves the link's
  other end into it;
- `workstation`: planner, vision_supervisor and action_policy, and the client that sends the titration
  (RunExperiment) and waits for its result.

Discovery as in docker/compose.yaml (LOCALHOST + ROS_STATIC_PEERS, one ROS_DOMAIN_ID). With `--drop`, the
robot takes the link down for 5 s once the titration is under way and counts what the recorder stored
against what its own probe saw published on the robot side. One JSON line on stdout."""
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.graph.two_hosts_peer import ROBOT_IP, STATION_IP, ros_env, sh  # noqa: E402

SCENARIO = Path(__file__).resolve().parents[2] / "tests" / "data" / "scenarios" / "hcl_short.yaml"
WORKSTATION = ("planner", "vision_supervisor", "action_policy")
ROBOT = ("audio_supervisor", "dispenser_controller", "recorder", "summarizer")


def spin_graph(graph, extra=()):
    for node in extra:
        graph.executor.add_node(node)
    stop = threading.Event()
    thread = threading.Thread(target=lambda: [graph.spin_once(0.05) for _ in iter(stop.is_set, True)], daemon=True)
    thread.start()
    return stop, thread


def workstation(runs: str) -> int:
    assert sys.stdin.readline().strip() == "link"
    sh(f"ip link set lo up && ip addr add {STATION_IP}/24 dev w0 && ip link set w0 up")
    ros_env(ROBOT_IP)
    from rclpy.action import ActionClient
    from rclpy.node import Node

    from agentchemist.sim.scenario import load_scenario
    from agentchemist_interfaces.action import RunExperiment
    from agentchemist_ros.common import topics
    from agentchemist_ros.tools.graph import Graph, ensure_init

    ensure_init()
    graph = Graph(SCENARIO, runs, with_twin=False, without=ROBOT)
    client_node = Node("two_hosts_client")
    client = ActionClient(client_node, RunExperiment, topics.RUN_EXPERIMENT)
    stop, thread = spin_graph(graph, [client_node])
    out = {"server": False}
    try:
        out["server"] = client.wait_for_server(timeout_sec=60)
        print("started", flush=True)
        goal = RunExperiment.Goal(instruction=load_scenario(SCENARIO).instruction)
        sent = client.send_goal_async(goal)
        end = time.monotonic() + 400
        while not sent.done() and time.monotonic() < end:
            time.sleep(0.05)
        result = sent.result().get_result_async() if sent.done() else None
        while result is not None and not result.done() and time.monotonic() < end:
            time.sleep(0.1)
        if result is not None and result.done():
            r = result.result().result
            out.update(success=r.success, outcome=r.outcome, message=r.message, report=r.report_path)
    finally:
        print(json.dumps(out), flush=True)
        stop.set()
        thread.join(10)
        graph.shutdown()
        client_node.destroy_node()
    return 0


def robot(runs: str, drop: bool) -> int:
    sh("ip link set lo up && ip link add r0 type veth peer name w0")
    station = subprocess.Popen(["unshare", "-n", sys.executable, __file__, "workstation", runs + "-ws"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    out = {"drop": drop}
    try:
        time.sleep(0.5)
        sh(f"ip link set w0 netns {station.pid} && ip addr add {ROBOT_IP}/24 dev r0 && ip link set r0 up")
        station.stdin.write("link\n")
        station.stdin.flush()
        ros_env(STATION_IP)
        run_robot(station, runs, drop, out)
    finally:
        try:
            station.wait(timeout=60)
        except subprocess.TimeoutExpired:
            station.kill()
    print(json.dumps(out))
    return 0


def run_robot(station, runs: str, drop: bool, out: dict) -> None:
    from rclpy.node import Node

    from rosgraph_msgs.msg import Clock

    from agentchemist_interfaces.msg import FsmState, FusedRecord
    from agentchemist_ros.common import topics
    from agentchemist_ros.common.qos import FSM, RELIABLE
    from agentchemist_ros.tools.graph import Graph, ensure_init

    ensure_init()
    graph = Graph(SCENARIO, runs, without=WORKSTATION)
    probe = Node("robot_probe")
    records, states = [], []
    probe.create_subscription(FusedRecord, topics.RECORDS, records.append, RELIABLE)
    probe.create_subscription(FsmState, topics.FSM_STATE, lambda m: states.append((time.monotonic(), m.state)), FSM)
    sim = [0.0]
    probe.create_subscription(Clock, "/clock", lambda m: sim.__setitem__(0, m.clock.sec + m.clock.nanosec * 1e-9), 10)
    stop, thread = spin_graph(graph, [probe])
    try:
        out["started"] = station.stdout.readline().strip() == "started"
        result_line = {}
        reader = threading.Thread(target=lambda: result_line.update(json.loads(station.stdout.readline() or "{}")),
                                  daemon=True)
        reader.start()
        if drop:
            end = time.monotonic() + 300
            while not any(s == "titrating" for _, s in states) and reader.is_alive() and time.monotonic() < end:
                time.sleep(0.05)
            time.sleep(2.0)
            n_before = len(records)
            sh("ip link set r0 down")
            t_down, sim_down = time.monotonic(), sim[0]
            time.sleep(5.0)
            out["sim_s_during_drop"] = sim[0] - sim_down
            sh("ip link set r0 up")
            out["records_during_drop"] = len(records) - n_before
            out["states_during_drop"] = sorted({s for t, s in states if t_down <= t <= t_down + 5.0})
        reader.join(420)
        out["result"] = result_line
        time.sleep(1.0)
        truth = graph.nodes["lab_sim"].twin.truth()
        out["drops_landed"] = truth.get("drops_landed")
        out["sim_t"] = truth.get("t")
    finally:
        stop.set()
        thread.join(10)
        graph.shutdown()
        probe.destroy_node()
    out["published_records"] = len(records)
    dbs = list(Path(runs).glob("*/records.db"))
    out["dbs"] = [str(d) for d in dbs]
    if dbs:
        con = sqlite3.connect(dbs[0])
        stored = {(s, q) for s, q in con.execute("SELECT seq, quantity FROM fused_records")}
        out["missing_records"] = len({(m.seq, m.quantity) for m in records} - stored)
        out["stored_records"] = len(stored)
        out["fsm_last"] = con.execute("SELECT to_state FROM fsm_transitions ORDER BY stamp DESC LIMIT 1").fetchone()
        out["anomalies"] = con.execute("SELECT source, kind, severity FROM anomalies").fetchall()


if __name__ == "__main__":
    if sys.argv[1:2] == ["workstation"]:
        sys.exit(workstation(sys.argv[2]))
    sys.exit(robot(sys.argv[1], "--drop" in sys.argv))
