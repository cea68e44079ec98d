"""Replay recorded ExecuteSubtask goals into the action policy node alone (no twin, no other agent), with the
live run's joint states (and, for carrying a beaker, the scene the vision supervisor described): it sends
the same arm trajectories and gripper commands (joint names, positions within 1e-9, times from start),
step after step, and returns the same results at the same sim times.

Fixtures (tests/fixtures/bags, recorded at the commit named in their *_live.json, see make_fixtures.py):
nodes_hcl_dispense (grasp the pipette, draw the titrant, hold it over the beaker) and nodes_weighing (the
beaker already on the balance, grasp the solid bottle, carry the beaker to the stirrer: the scene service
says where it stands, and not while the bottle hides it; press the stirrer's button).
Each goal is sent when the live server started it; the node moves on to its next step when the recorded
joint states show the arm got there, so its subtasks end when they did live.
"""
import json
from pathlib import Path

import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.serialization import deserialize_message  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402
from trajectory_msgs.msg import JointTrajectory  # noqa: E402

from agentchemist_interfaces.action import Dispense, ExecuteSubtask  # noqa: E402
from agentchemist_interfaces.msg import Anomaly  # noqa: E402
from agentchemist_ros.action_policy_node import ActionPolicyNode  # noqa: E402
from agentchemist_ros.common import topics  # noqa: E402
from agentchemist_ros.common.qos import RELIABLE  # noqa: E402
from tests.replay.harness import (FIXTURES, NODE_KW, TimedProbe, ensure_rclpy, in_bag, recorded_as,  # noqa: E402
                                  replay_nodes)
from tests.replay.peers import GoalSender, RecordedScene, tapped_goals, tapped_scenes  # noqa: E402

NODE = "action_policy"
TICK_S = 0.05  #: the twin's /clock step in the live runs
MOTION = {**{topics.arm_trajectory_topic(s): JointTrajectory for s in topics.SIDES},
          **{topics.gripper_command_topic(s): Float64MultiArray for s in topics.SIDES}}
CASES = {"titration": FIXTURES / "nodes_hcl_dispense", "weighing": FIXTURES / "nodes_weighing"}
#: a command stamped this long after its goal ended live still belongs to it (the recorder's stamp may be a
#: tick late)
AFTER_S = 2 * TICK_S


def _grid(goals) -> list[float]:
    """The twin's ticks over every goal (the node's timer checks a step's progress between joint states)."""
    ticks = set()
    for g in goals:
        k, end = round(g.started / TICK_S), (g.ended if g.ended is not None else g.started) + 2 * TICK_S
        while k * TICK_S <= end:
            ticks.add(round(k * TICK_S, 9))
            k += 1
    return sorted(ticks)


def _replay(bag: Path) -> dict:
    ensure_rclpy()
    goals = tapped_goals(bag, topics.EXECUTE_SUBTASK, ExecuteSubtask)
    node = ActionPolicyNode(**NODE_KW)
    sender = GoalSender(ExecuteSubtask, topics.EXECUTE_SUBTASK, goals)
    scene = RecordedScene(tapped_scenes(bag))
    probe = TimedProbe({**{t: (cls, 10) for t, cls in MOTION.items()}, topics.ANOMALIES: (Anomaly, RELIABLE)})
    result = replay_nodes(bag, [node, sender, scene, probe], [topics.JOINT_STATES], senders={NODE},
                          clock_ticks_s=[*_grid(goals), *sender.due_times(), *scene.due_times()],
                          wait_for=[sender.client.server_is_ready, node.scene_client.service_is_ready])
    return {"goals": goals, "result": result, "sender": sender, "scene_calls": list(scene.asked),
            "motion": {t: probe.on(t) for t in MOTION},
            "anomalies": [m for _t, m in probe.on(topics.ANOMALIES) if m.source == NODE]}


def _live(bag: Path, goals) -> dict:
    """The motion commands the live policy sent: those on the motion topics while one of its goals ran (the
    dispenser commands the right gripper too, but only while a dispense goal runs)."""
    from agentchemist.bag import BagReader
    windows = [(g.started, (g.ended if g.ended is not None else g.started) + AFTER_S) for g in goals]
    dispensing = [(g.started, (g.ended if g.ended is not None else g.started) + AFTER_S)
                  for g in tapped_goals(bag, topics.DISPENSE, Dispense)]
    motion = {t: [] for t in MOTION}
    with BagReader(bag) as reader:
        for m in reader.messages(list(MOTION)):
            t = m.timestamp * 1e-9
            if any(a - 1e-6 <= t <= b for a, b in windows) and not any(a < t <= b for a, b in dispensing):
                motion[m.topic].append((t, deserialize_message(m.data, MOTION[m.topic])))
    anomalies = recorded_as(bag, topics.ANOMALIES, Anomaly) if in_bag(bag, [topics.ANOMALIES]) else []
    return {"motion": motion, "anomalies": [a for a in anomalies if a.source == NODE]}


@pytest.fixture(scope="module", params=sorted(CASES))
def run(request):
    bag = CASES[request.param]
    if not bag.is_dir():
        pytest.fail(f"{bag} is missing: run tests/replay/make_fixtures.py")
    replayed = _replay(bag)
    return request.param, bag, _live(bag, replayed["goals"]), replayed


def _trajectory(msg):
    return [(list(msg.joint_names), [(list(p.positions), p.time_from_start.sec, p.time_from_start.nanosec)
                                     for p in msg.points])]


def _same_trajectory(a, b) -> bool:
    if list(a.joint_names) != list(b.joint_names) or len(a.points) != len(b.points):
        return False
    for p, q in zip(a.points, b.points):
        if (p.time_from_start.sec, p.time_from_start.nanosec) != (q.time_from_start.sec, q.time_from_start.nanosec):
            return False
        if len(p.positions) != len(q.positions) or any(abs(x - y) > 1e-9 for x, y in zip(p.positions, q.positions)):
            return False
    return True


def test_goals_were_replayed(run):
    name, _bag, _live_run, first = run
    goals, sender = first["goals"], first["sender"]
    assert len(goals) >= 3 and all(g.result is not None for g in goals)
    assert sender.accepted == {g.goal_id: True for g in goals}, sender.log
    assert not first["result"].problems, first["result"].problems
    payloads = [json.loads(g.goal.payload_json) for g in goals]
    if name == "titration":
        assert [p["primitive"] for p in payloads] == ["grasp", "draw", "move_to"]
    else:  # carrying the beaker: the node asked where it stands, as live
        assert any(p["primitive"] == "move_to" and p["parameters"].get("object", "").startswith("beaker")
                   for p in payloads)
        assert len(first["scene_calls"]) >= 2


def test_same_arm_trajectories(run):
    _name, _bag, live, first = run
    for side in topics.SIDES:
        topic = topics.arm_trajectory_topic(side)
        theirs, ours = [m for _t, m in live["motion"][topic]], [m for _t, m in first["motion"][topic]]
        assert len(ours) == len(theirs), (topic, len(ours), len(theirs))
        bad = [i for i, (a, b) in enumerate(zip(ours, theirs)) if not _same_trajectory(a, b)]
        assert not bad, (topic, [(_trajectory(ours[i]), _trajectory(theirs[i])) for i in bad[:2]])
    assert sum(len(v) for k, v in live["motion"].items() if "arm" in k) >= 3


def test_same_gripper_commands(run):
    _name, _bag, live, first = run
    for side in topics.SIDES:
        topic = topics.gripper_command_topic(side)
        theirs = [list(m.data) for _t, m in live["motion"][topic]]
        ours = [list(m.data) for _t, m in first["motion"][topic]]
        assert len(ours) == len(theirs), (topic, ours, theirs)
        assert all(len(a) == len(b) and all(abs(x - y) <= 1e-9 for x, y in zip(a, b)) for a, b in zip(ours, theirs)), \
            (topic, ours, theirs)


def test_same_results(run):
    """Each subtask's result, at the live sim time (one tick): its steps took as long as they did live. (The
    commands' own times are not compared: the recorder stamps what it gets with the last /clock it saw,
    which at 50x real time may be a few ticks after the command went out.)"""
    _name, _bag, _live_run, first = run
    for goal in first["goals"]:
        at, status, result = first["sender"].results[goal.goal_id]
        live = goal.result
        assert (status, result.success, result.symbol, result.message) == \
            (goal.status, live.success, live.symbol, live.message), goal.goal.subtask_id
        assert abs(at - goal.ended) <= TICK_S + 1e-6, (goal.goal.subtask_id, at, goal.ended)


def test_same_anomalies(run):
    _name, _bag, live, first = run
    assert [(a.kind, a.severity, a.subtask_id, a.response) for a in first["anomalies"]] == \
        [(a.kind, a.severity, a.subtask_id, a.response) for a in live["anomalies"]]
