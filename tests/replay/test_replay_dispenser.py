"""Replay a recorded Dispense goal into the dispenser controller node alone (no twin, no other agent), with
the live run's pH readings, joint states (the gripper's measured opening), audio events and the
supervisor's messages (resume after each settled drop, hold / release around a deaf microphone): it
squeezes the pipette as it did live (the gripper command stream, every control period) and reports the
same statistical volumes.

Fixtures (tests/fixtures/bags, recorded at the commit named in their *_live.json, see make_fixtures.py):

- nodes_hcl_dispense: pH target 10 with settle-each-drop (fault_noise_burst: the supervisor holds the
  dispenser for the 5 s its microphone is deaf). The dispenser stopped itself at the target live; it will
  not after issue 24 (the supervisor's endpoint decides, then cancels), so the streams are compared up to
  the moment the live dispenser stopped (or was asked to cancel), and its result is not.
- nodes_hcl_volume: 1 mL, no pH target, no settling: compared to its end, result included.

The goal's `ph_direction` (new in issue 24; 0 = let the dispenser decide) is set from the direction the
live dispenser chose when the installed Dispense.Goal has it. Compared: the dispenser's own outputs (its
gripper commands within 1e-6 m and one control period, its statistical titrant_volume estimates, its
anomalies); not the supervisor's expect_drops / stop_expecting to the audio supervisor (replayed, ignored
by the dispenser; replaced by a typed dispenser state in issue 24), nor that state.

The replay's clock runs the control timer when the live one ran (every recorded command marks a run;
the twin waited for each), and delivers each tick's inputs as they reached the live dispenser: the
twin's data, the audio events and the supervisor's resume before its timer, hold and release after
(`_after_timer`). Then the replay is exact, not only within the tolerances.
"""
import json
from dataclasses import dataclass
from pathlib import Path

import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.serialization import deserialize_message  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402

from agentchemist.bag import BagReader  # noqa: E402
from agentchemist_interfaces.action import Dispense  # noqa: E402
from agentchemist_interfaces.msg import AgentMessage, Anomaly, QuantityEstimate  # noqa: E402
from agentchemist_ros.common import topics  # noqa: E402
from agentchemist_ros.common.qos import RELIABLE  # noqa: E402
from agentchemist_ros.common.timeconv import to_sec  # noqa: E402
from agentchemist_ros.dispenser_controller_node import DispenserControllerNode  # noqa: E402
from tests.replay.harness import FIXTURES, NODE_KW, TimedProbe, ensure_rclpy, recorded_as, replay_nodes  # noqa: E402
from tests.replay.peers import GoalSender, TappedGoal, tapped_goals  # noqa: E402

NODE = "dispenser_controller"
GRIPPER = topics.gripper_command_topic("right")
INPUTS = [topics.PH_READING, topics.JOINT_STATES, topics.AUDIO_EVENTS, topics.MESSAGES]
PERIOD_S = 0.05          #: the control period (and the twin's /clock tick) of the live run
OPENING_TOL_M = 1e-6     #: gripper command (metres of opening)
VOLUME_TOL_ML = 1e-6     #: statistical titrant volume


@dataclass(frozen=True)
class Case:
    bag: Path
    to_the_end: bool     # compare to the goal's end and its result (False: to the live stop, no result)


CASES = {"ph_target": Case(FIXTURES / "nodes_hcl_dispense", False),
         "volume_target": Case(FIXTURES / "nodes_hcl_volume", True)}


def _live_json(case: Case) -> dict:
    return json.loads(case.bag.with_name(case.bag.name + "_live.json").read_text())


def _window(goal: TappedGoal) -> tuple[float, float]:
    """(start, end) of the compared stretch: the live goal's start to its stop (the recorded cancel, if the
    supervisor asked to cancel it first)."""
    end = min(t for t in (goal.canceled, goal.ended) if t is not None)
    return goal.started, end


def _timer_ticks(case: Case, goal: TappedGoal, end: float) -> list[float]:
    """When the live dispenser's control timer ran during the goal: the goal's start, then every gripper
    command it sent (one per run of its timer; the twin waited for each), to the compared end. The recorder
    stamps what it gets with the twin's clock, a few ns apart: the tick is that to the microsecond."""
    with BagReader(case.bag) as reader:
        commands = [round(m.timestamp * 1e-3) * 1e-6 for m in reader.messages([GRIPPER])]
    ticks = [t for t in commands if goal.started < t <= end + 1e-6]
    # The twin waited for each command before its next tick, so the recorder got one per tick; two at one
    # time would mean the recorder stamped one late, and this clock would miss a run of the timer.
    assert len(set(ticks)) == len(ticks), "two live gripper commands at one sim time: re-record the fixture"
    return [goal.started, *ticks]


def _after_timer(reader):
    """Inputs that reached the live dispenser after its control timer of the tick they are recorded at.
    Everything else the recorder got before the dispenser's command of a tick had reached the dispenser
    before its timer ran (the twin's readings and joint states, published with /clock; the audio events
    and the supervisor's resume, one reaction away from them). The supervisor's hold and release answer
    the audio supervisor's anomaly, itself a reaction to the twin's audio: two reactions away, they came
    after (the recorded commands show it: the live dispenser squeezed once more before holding).
    `reader`: the bag, to decode with its own definitions."""
    def late(msg) -> bool:
        return msg.topic == topics.MESSAGES and reader.decode(msg).symbol in ("hold", "release")
    return late


def _replay(case: Case) -> dict:
    ensure_rclpy()
    (goal,) = tapped_goals(case.bag, topics.DISPENSE, Dispense)
    directions = _live_json(case)["dispense_directions"]

    def adapt(tapped):
        request = tapped.goal
        if hasattr(request, "ph_direction"):  # issue 24: the supervisor decides the direction once
            request.ph_direction = int(directions.get(tapped.goal_id, 0)) if request.use_target_ph else 0
        return request

    node = DispenserControllerNode(**NODE_KW)
    sender = GoalSender(Dispense, topics.DISPENSE, [goal], adapt)
    probe = TimedProbe({GRIPPER: (Float64MultiArray, 10), topics.QUANTITY: (QuantityEstimate, RELIABLE),
                        topics.ANOMALIES: (Anomaly, RELIABLE)})
    start, end = _window(goal)
    with BagReader(case.bag) as reader:
        result = replay_nodes(case.bag, [node, sender, probe], INPUTS, senders={NODE},
                              timer_ticks_s=[*_timer_ticks(case, goal, end), *sender.due_times()],
                              after_timer=_after_timer(reader), wait_for=[sender.client.server_is_ready])
    return {"goal": goal, "window": (start, end), "result": result, "sender": sender,
            "commands": [(t, m.data[0]) for t, m in probe.on(GRIPPER)],
            "volumes": [m for _t, m in probe.on(topics.QUANTITY) if m.quantity == "titrant_volume"],
            "anomalies": [m for _t, m in probe.on(topics.ANOMALIES) if m.source == NODE]}


def _live(case: Case, goal: TappedGoal) -> dict:
    with BagReader(case.bag) as reader:
        commands = [(m.timestamp * 1e-9, deserialize_message(m.data, Float64MultiArray).data[0])
                    for m in reader.messages([GRIPPER])]
    volumes = [m for m in recorded_as(case.bag, topics.QUANTITY, QuantityEstimate)
               if m.channel == "statistical" and m.quantity == "titrant_volume"]
    return {"commands": commands, "volumes": volumes,
            "anomalies": [m for m in recorded_as(case.bag, topics.ANOMALIES, Anomaly) if m.source == NODE]}


@pytest.fixture(scope="module", params=sorted(CASES))
def run(request):
    case = CASES[request.param]
    assert case.bag.is_dir(), f"{case.bag} is missing: run tests/replay/make_fixtures.py --only dispense --only volume"
    replayed = _replay(case)
    return request.param, case, _live(case, replayed["goal"]), replayed


def _paired(live, replayed, window, stamp, to_the_end: bool):
    """(live, replayed) items of the compared stretch, paired in order. The replayed ones are those stamped
    after the goal's start and before its stop (at it too, `to_the_end`); the live ones, as many from the
    start on. A live gripper command is stamped when the recorder got it, which may be after the twin's next
    tick (the bag says one period late; the value says which period it was), so no window is cut from them
    by time: they are the live run's commands in order, and a comparison asserts the times within a period."""
    start, end = window
    ours = [x for x in replayed if start < stamp(x) < end or (to_the_end and abs(stamp(x) - end) < 1e-6)]
    theirs = [x for x in live if stamp(x) > start]
    within = [x for x in theirs if stamp(x) <= end + PERIOD_S + 1e-6]
    if to_the_end:
        assert len(ours) == len(within), f"{len(ours)} replayed, {len(within)} live to the end of the goal"
    else:
        assert len(ours) <= len(within), f"{len(ours)} replayed before the live stop, only {len(within)} live"
    return list(zip(theirs, ours))


def test_the_goal_was_replayed(run):
    name, case, _live_run, first = run
    goal, sender = first["goal"], first["sender"]
    assert not first["result"].problems, first["result"].problems
    assert first["result"].per_topic[topics.PH_READING] > 1000 and first["result"].per_topic[topics.JOINT_STATES] > 1000
    assert sender.accepted == {goal.goal_id: True}, sender.log
    if name == "ph_target":
        assert goal.goal.use_target_ph and goal.goal.settle_each_drop and goal.goal.resume_on_command
        told = [m for m in recorded_as(case.bag, topics.MESSAGES, AgentMessage)
                if m.receiver == NODE and goal.started < to_sec(m.stamp) < first["window"][1]]
        assert {m.symbol for m in told} >= {"resume", "hold", "release"}  # the supervisor paced and held it
    else:
        assert not goal.goal.use_target_ph and goal.goal.target_volume_ml > 0 and not goal.goal.settle_each_drop


def test_same_gripper_commands(run):
    """Every control period's command (metres of opening) as live, at the same sim time (one period)."""
    _name, case, live, first = run
    pairs = _paired(live["commands"], first["commands"], first["window"], lambda c: c[0], case.to_the_end)
    assert len(pairs) > 300
    bad = [(round(b[0], 3), round(a[0], 3), b[1], a[1]) for a, b in pairs
           if abs(a[0] - b[0]) > PERIOD_S + 1e-6 or abs(a[1] - b[1]) > OPENING_TOL_M]
    assert not bad, f"{len(bad)} of {len(pairs)} commands differ (live t, replayed t, live m, replayed m): {bad[:5]}"
    # the squeeze went somewhere: the gripper closed by millimetres over the goal
    assert pairs[0][0][1] - pairs[-1][0][1] > 1e-3


def test_same_statistical_volumes(run):
    """The titrant_volume estimates (one per drop volume of squeeze): same values, same stamps (one period)."""
    _name, case, live, first = run
    stamp = lambda m: to_sec(m.stamp)  # noqa: E731
    pairs = _paired(live["volumes"], first["volumes"], first["window"], stamp, case.to_the_end)
    assert len(pairs) >= 19
    kind = lambda m: (m.unit, m.channel, m.subtask_id)  # noqa: E731
    bad = [(stamp(b), stamp(a), b.value, a.value, b.delta, a.delta) for b, a in pairs
           if abs(a.value - b.value) > VOLUME_TOL_ML or abs(a.delta - b.delta) > VOLUME_TOL_ML
           or abs(stamp(a) - stamp(b)) > PERIOD_S + 1e-6 or kind(a) != kind(b)]
    assert not bad, f"{len(bad)} of {len(pairs)} estimates differ (live t, replayed t, values, deltas): {bad[:5]}"


def test_same_anomalies(run):
    _name, case, live, first = run
    stamp = lambda a: to_sec(a.stamp)  # noqa: E731
    start, end = first["window"]
    ours = [(a.kind, a.severity, a.response) for a in first["anomalies"] if start < stamp(a) < end]
    theirs = [(a.kind, a.severity, a.response) for a in live["anomalies"] if start < stamp(a) < end]
    assert ours == theirs


def test_same_result_at_a_volume_target(run):
    name, case, _live_run, first = run
    if not case.to_the_end:
        pytest.skip("a pH goal's end is the supervisor's to decide after issue 24: compared up to the live stop")
    goal, sender = first["goal"], first["sender"]
    assert goal.goal_id in sender.results, sender.log
    at, status, result = sender.results[goal.goal_id]
    live = goal.result
    assert (status, result.success, result.stop_reason, result.drops) == \
        (goal.status, live.success, live.stop_reason, live.drops) == (4, True, "target_volume", live.drops)
    assert result.dispensed_ml == pytest.approx(live.dispensed_ml, abs=VOLUME_TOL_ML)
    assert abs(at - goal.ended) <= PERIOD_S + 1e-6
