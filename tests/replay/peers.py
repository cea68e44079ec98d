"""Recorded peers: the action servers a supervisor calls (ExecuteSubtask, Dispense), answering as the live
run's peers did, at the sim times they did, from what the bag shows of that conversation.

Actions are not recorded (rosbag2 records topics), but each of their outcomes left a trace on the recorded
topics, and the stubs replay those:

- ExecuteSubtask (the action policy): a goal for subtask X succeeds with the symbol of the live run's FSM
  transition for X, when the replay clock reaches that transition's stamp (the supervisor applied the
  result's symbol as it arrived).
- Dispense (the dispenser controller): the live supervisor told the audio supervisor about the dispenser's
  state on every feedback that changed it (`expect_drops` for MOTION, `stop_expecting` with reason
  "dispenser <STATE>" otherwise) and `stop_expecting` with an empty payload when the result arrived. The
  stub sends the same feedback states at the same times and finishes the goal at the recorded result
  time: canceled if the supervisor asked to cancel, else succeeded. `dispensed_ml` and `drops` come from
  the dispenser's recorded statistical volume estimates up to then.

The stubs act on /clock messages (what the bag player publishes), never on wall time: an answer due at
live time t goes out on the first /clock after t (a replay steps the clock to t + 1 us, `due_times`), so
that sensor data stamped t reach the node before it, as they did live. They never hold a
coroutine open (a pending task would keep a lock-step executor busy): a goal is accepted and parked, and
executed only when its due time has come. A goal the live run never saw (the node under test asked for
something new) fails with a message saying so, which the replayed outputs then show.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from rclpy.action import ActionServer, CancelResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.qos import QoSProfile
from rclpy.serialization import deserialize_message
from rclpy.task import Future
from rosgraph_msgs.msg import Clock

from agentchemist.bag import BagReader
from agentchemist_interfaces.action import Dispense, ExecuteSubtask
from agentchemist_interfaces.msg import AgentMessage, ExperimentPlan, FsmState, QuantityEstimate, RecorderStatus
from agentchemist_ros.common import topics
from agentchemist_ros.common.qos import LATCHED
from agentchemist_ros.common.timeconv import to_msg, to_sec

SUPERVISOR = "vision_supervisor"
AFTER_S = 1e-6  #: answers go out this long after their live time: after the bag's messages of that time
#: (a recorder breaking timestamp ties adds 1 ns per message)


@dataclass
class PeerScript:
    """What the live peers did, from a bag: policy results per subtask, dispenser feedback and results."""

    policy: dict[str, tuple[float, str]] = field(default_factory=dict)   # subtask -> (stamp, symbol)
    feedback: list[tuple[float, str]] = field(default_factory=list)       # (stamp, controller state)
    results: list[float] = field(default_factory=list)                    # dispense result arrivals
    volumes: list[tuple[float, float]] = field(default_factory=list)      # (stamp, statistical mL)

    @classmethod
    def from_bag(cls, bag) -> "PeerScript":
        script = cls()
        policy_tasks: set[str] = set()
        with BagReader(bag) as reader:
            for msg in reader.messages([topics.MESSAGES, topics.FSM_STATE, topics.QUANTITY]):
                if msg.topic == topics.FSM_STATE:
                    state = deserialize_message(msg.data, FsmState)
                    if state.subtask_id in policy_tasks and state.subtask_id not in script.policy and state.symbol:
                        script.policy[state.subtask_id] = (to_sec(state.stamp), state.symbol)
                elif msg.topic == topics.QUANTITY:
                    est = deserialize_message(msg.data, QuantityEstimate)
                    if est.channel == "statistical" and est.quantity == "titrant_volume":
                        script.volumes.append((to_sec(est.stamp), est.value))
                else:
                    m = deserialize_message(msg.data, AgentMessage)
                    if m.sender != SUPERVISOR:
                        continue
                    if m.symbol == "dispatch" and m.receiver == "action_policy":
                        policy_tasks.add(m.subtask_id)
                    elif m.receiver == "audio_supervisor" and m.symbol == "expect_drops":
                        script.feedback.append((to_sec(m.stamp), "MOTION"))
                    elif m.receiver == "audio_supervisor" and m.symbol == "stop_expecting":
                        reason = json.loads(m.payload_json or "{}").get("reason", "")
                        if reason.startswith("dispenser "):
                            script.feedback.append((to_sec(m.stamp), reason.split(" ", 1)[1]))
                        elif not reason:
                            script.results.append(to_sec(m.stamp))
        return script

    def due_times(self) -> list[float]:
        """Every sim time at which a peer answers: AFTER_S after the live time (a replay steps /clock there)."""
        live = {t for t, _ in self.policy.values()} | {t for t, _ in self.feedback} | set(self.results)
        return sorted(t + AFTER_S for t in live)

    def dispensed(self, now: float) -> tuple[float, int]:
        """Statistical volume (mL) and drop count the dispenser had reported by `now`."""
        done = [v for t, v in self.volumes if t <= now + 1e-9]
        return (done[-1] if done else 0.0), len(done)


class RecordedPeers(Node):
    """ExecuteSubtask and Dispense servers that replay a PeerScript on the player's /clock."""

    def __init__(self, script: PeerScript):
        super().__init__("recorded_peers", start_parameter_services=False)
        self.script = script
        self.now: float | None = None
        self.policy_goals: list[tuple[float, object]] = []   # (due, goal handle)
        self.dispense = None                                  # [goal handle, accepted at, fed-back index]
        self.log: list[str] = []
        self.servers = [
            ActionServer(self, ExecuteSubtask, topics.EXECUTE_SUBTASK, execute_callback=self.finish_policy,
                         handle_accepted_callback=self.park_policy),
            ActionServer(self, Dispense, topics.DISPENSE, execute_callback=self.finish_dispense,
                         handle_accepted_callback=self.park_dispense,
                         cancel_callback=lambda _handle: CancelResponse.ACCEPT)]
        self.create_subscription(Clock, "/clock", self.on_clock, QoSProfile(depth=10))
        # The recorded run's recorder acknowledged its plan and kept up (its records are in the bag): say so
        # as it did (agentchemist.fsm.record_watch), at the replayed plan and then every half second.
        self.experiment_id, self.status_at = "", None
        self.status_pub = self.create_publisher(RecorderStatus, topics.RECORDER_STATUS, LATCHED)
        self.create_subscription(ExperimentPlan, topics.PLAN, self.on_plan, LATCHED)

    def destroy_node(self):
        for server in self.servers:
            server.destroy()
        super().destroy_node()

    # ------------------------------------------------------------------ policy
    def park_policy(self, handle):
        subtask = handle.request.subtask_id
        due, _symbol = self.script.policy.get(subtask, (self.now or 0.0, ""))
        self.log.append(f"policy goal {subtask} at {self.now}: due {due}")
        self.policy_goals.append((due, handle))

    def finish_policy(self, handle):
        subtask = handle.request.subtask_id
        result = ExecuteSubtask.Result()
        if subtask in self.script.policy:
            result.success, result.symbol = True, self.script.policy[subtask][1]
            handle.succeed()
        else:
            result.success, result.message = False, f"subtask {subtask!r} was not run in the recorded run"
            handle.abort()
        return result

    # ------------------------------------------------------------------ dispenser
    def park_dispense(self, handle):
        self.log.append(f"dispense goal {handle.request.subtask_id} at {self.now}")
        accepted = self.now if self.now is not None else 0.0
        first = next((i for i, (t, _s) in enumerate(self.script.feedback) if t >= accepted),
                     len(self.script.feedback))
        self.dispense = [handle, accepted, first]

    def finish_dispense(self, handle):
        result = Dispense.Result()
        result.dispensed_ml, result.drops = self.script.dispensed(self.now or 0.0)
        result.final_ph = float("nan")
        if handle.is_cancel_requested:
            result.stop_reason, result.message = "canceled", "canceled by the supervisor (recorded peer)"
            handle.canceled()
        else:
            goal = handle.request
            result.success = True
            result.stop_reason = "target_ph" if goal.use_target_ph else "target_volume"
            result.message = "finished when the live dispenser did (recorded peer)"
            handle.succeed()
        return result

    # ------------------------------------------------------------------ recorder
    def on_plan(self, msg):
        self.experiment_id = msg.experiment_id
        self.recorder_status()

    def recorder_status(self):
        now = self.now or 0.0
        self.status_at = now
        self.status_pub.publish(RecorderStatus(stamp=to_msg(now), experiment_id=self.experiment_id, recording=True,
                                               stored_through=to_msg(now)))

    # ------------------------------------------------------------------ clock
    def on_clock(self, msg):
        self.now = to_sec(msg.clock)
        if self.experiment_id and (self.status_at is None or self.now - self.status_at >= 0.5):
            self.recorder_status()
        due_now = [(d, h) for d, h in self.policy_goals if d < self.now]
        for item in due_now:
            self.policy_goals.remove(item)
            item[1].execute()
        if self.dispense is None:
            return
        handle, accepted, index = self.dispense
        while index < len(self.script.feedback) and self.script.feedback[index][0] < self.now:
            handle.publish_feedback(Dispense.Feedback(controller_state=self.script.feedback[index][1],
                                                      ph=float("nan")))
            index += 1
        self.dispense[2] = index
        result_at = next((t for t in self.script.results if t >= accepted), None)
        # canceled, and the live dispenser never reported a result after this goal: finish now
        if (result_at is not None and result_at < self.now) or (result_at is None and handle.is_cancel_requested):
            self.dispense = None  # executed once; finish_dispense runs as the executor's next task
            handle.execute()


# ---------------------------------------------------------------------------------------------------------
# The node fixtures (nodes_*: tests/replay/make_fixtures.py, `Taps`) also hold what the live nodes' action
# servers and scene service were asked and answered, on /replay_tap/... topics: every goal a server started
# (`<Action>_SendGoal_Request`), every cancel it accepted (GoalInfo), how each goal ended (GoalStatus, then
# `<Action>_GetResult_Response`), and each DescribeScene answer (JSON). Here they are read back as installed
# rclpy messages (by field name: an interface that gained a field since still reads), replayed as a client
# sending the same goals at the same sim times (`GoalSender`) and as the scene service (`RecordedScene`).

TAP = "/replay_tap"


def tap_time(ns: int) -> float:
    """Sim seconds of a tap: the live node's clock (the twin's ticks), which the bag writer may have moved by
    a few ns to keep time stamps distinct: rounded to the microsecond."""
    return round(ns / 1e3) * 1e-6


@dataclass
class TappedGoal:
    """One goal the live server ran: when it started executing it, was asked to cancel it, and ended it."""

    goal_id: str                    # hex of the live goal's UUID
    goal: object                    # the installed action type's Goal
    started: float                  # sim s
    canceled: float | None = None
    ended: float | None = None
    status: int | None = None       # action_msgs GoalStatus (4 succeeded, 5 canceled, 6 aborted)
    result: object | None = None    # the installed action type's Result


def tapped_goals(bag, action: str, action_type) -> list[TappedGoal]:
    """The goals the live server of `action` (e.g. topics.DISPENSE) ran, in the order it started them."""
    from tests.replay.harness import from_rosbags

    name = {kind: f"{TAP}{action}/{kind}" for kind in ("goal", "cancel", "status", "result")}
    goals: dict[str, TappedGoal] = {}
    finished: list[str] = []   # goal ids in the order they ended
    results: list = []         # their results, in the same order (a status and its result share a time)
    with BagReader(bag) as reader:
        for msg in reader.messages(list(name.values())):
            data = reader.decode(msg)
            if msg.topic == name["goal"]:
                gid = bytes(data.goal_id.uuid).hex()
                goals[gid] = TappedGoal(gid, from_rosbags(data.goal, action_type.Goal), tap_time(msg.timestamp))
            elif msg.topic == name["cancel"]:
                goals[bytes(data.goal_id.uuid).hex()].canceled = to_sec(data.stamp)
            elif msg.topic == name["status"]:
                gid = bytes(data.goal_info.goal_id.uuid).hex()
                goals[gid].ended, goals[gid].status = to_sec(data.goal_info.stamp), int(data.status)
                finished.append(gid)
            else:
                results.append(from_rosbags(data.result, action_type.Result))
    for gid, result in zip(finished, results):
        goals[gid].result = result
    return list(goals.values())


class GoalSender(Node):
    """A client of `action` that sends the recorded goals when the replay's /clock reaches the sim time the
    live server started each (so the server under test starts it then too), asks to cancel each when the
    live server was asked, and keeps the answers: results[goal id] = (sim s, status, result), accepted,
    feedback[goal id] = [(sim s, feedback)]. `adapt(tapped) -> goal` may fill fields the recording lacks.
    Nothing waits: every step is a callback of the lock-step executor."""

    def __init__(self, action_type, action: str, goals: list[TappedGoal], adapt=None, name="replay_goal_sender"):
        from rclpy.action import ActionClient
        super().__init__(name, start_parameter_services=False)
        self.client = ActionClient(self, action_type, action)
        self.pending = sorted(goals, key=lambda g: g.started)
        self.cancels = sorted((g for g in goals if g.canceled is not None), key=lambda g: g.canceled)
        self.adapt = adapt
        self.now: float | None = None
        self.handles: dict[str, object] = {}
        self.accepted: dict[str, bool] = {}
        self.results: dict[str, tuple[float, int, object]] = {}
        self.feedback: dict[str, list] = {}
        self.log: list[str] = []
        self.create_subscription(Clock, "/clock", self.on_clock, QoSProfile(depth=10))

    def due_times(self) -> list[float]:
        """Sim times at which this client acts (a replay steps /clock there)."""
        return sorted({g.started for g in self.pending} | {g.canceled for g in self.cancels})

    def on_clock(self, msg):
        self.now = to_sec(msg.clock)
        while self.pending and self.pending[0].started <= self.now + 1e-9:
            tapped = self.pending.pop(0)
            goal = self.adapt(tapped) if self.adapt else tapped.goal
            self.log.append(f"goal {tapped.goal_id[:8]} sent at {self.now:.6f}")
            sent = self.client.send_goal_async(
                goal, feedback_callback=lambda fb, g=tapped.goal_id: self.feedback.setdefault(g, []).append(
                    (self.now, fb.feedback)))
            sent.add_done_callback(lambda future, g=tapped.goal_id: self._answered(g, future.result()))
        while self.cancels and self.cancels[0].canceled <= self.now + 1e-9:
            tapped = self.cancels.pop(0)
            handle = self.handles.get(tapped.goal_id)
            self.log.append(f"cancel {tapped.goal_id[:8]} at {self.now:.6f}" + ("" if handle else ": not accepted"))
            if handle is not None:
                handle.cancel_goal_async()

    def _answered(self, gid: str, handle) -> None:
        self.accepted[gid] = bool(handle.accepted)
        if not handle.accepted:
            return
        self.handles[gid] = handle
        handle.get_result_async().add_done_callback(
            lambda future: self.results.__setitem__(gid, (self.now, future.result().status, future.result().result)))


def tapped_scenes(bag) -> list[tuple[float, object]]:
    """(sim s, DescribeScene.Response) of every scene the live vision supervisor described, in order."""
    from types import SimpleNamespace

    from agentchemist_interfaces.srv import DescribeScene
    from tests.replay.harness import from_rosbags

    def namespace(value):
        if isinstance(value, dict):
            return SimpleNamespace(**{k: namespace(v) for k, v in value.items()})
        return [namespace(v) for v in value] if isinstance(value, list) else value

    with BagReader(bag) as reader:
        return [(tap_time(m.timestamp),
                 from_rosbags(namespace(json.loads(reader.decode(m).data)), DescribeScene.Response))
                for m in reader.messages([f"{TAP}{topics.DESCRIBE_SCENE}/response"])]


class RecordedScene(Node):
    """The DescribeScene service, answering a call made at sim time t with the first scene the live service
    gave at or after t (the live answer to the same question; the last one when asked later than live),
    when the replay's /clock reaches the time the live answer went out (the live round trip took a tick or
    so; a caller that polls must see the same delays). `asked` lists the sim times of the calls."""

    def __init__(self, scenes: list[tuple[float, object]]):
        from agentchemist_interfaces.srv import DescribeScene
        super().__init__("recorded_scene", start_parameter_services=False)
        self.scenes = scenes
        self.now: float | None = None
        self.asked: list[float] = []
        self.waiting: list[tuple[float, Future]] = []
        # the clock must get through while an answer waits for it: not one mutually exclusive group
        group = ReentrantCallbackGroup()
        self.create_subscription(Clock, "/clock", self.on_clock, QoSProfile(depth=10), callback_group=group)
        self.create_service(DescribeScene, topics.DESCRIBE_SCENE, self.describe, callback_group=group)

    def due_times(self) -> list[float]:
        return [t for t, _answer in self.scenes]

    def on_clock(self, msg):
        self.now = to_sec(msg.clock)
        for item in [w for w in self.waiting if w[0] <= self.now + 1e-9]:
            self.waiting.remove(item)
            item[1].set_result(True)

    async def describe(self, request, response):
        now = self.now if self.now is not None else 0.0
        self.asked.append(now)
        if not self.scenes:
            response.success, response.message = False, "no scene was described in the recorded run"
            return response
        at, answer = next(((t, a) for t, a in self.scenes if t >= now - 1e-6), self.scenes[-1])
        if at > now + 1e-9:
            ready = Future()
            self.waiting.append((at, ready))
            await ready
        return answer
