"""planner: the RunExperiment action server. Instruction + scene -> verified plan (or a refusal or a
question), published latched on /agentchemist/plan; then follows the FSM to its end and returns the
report path with the outcome the recorder judged when it closed the record (its record_closed note); only
when no record was closed does it judge with the same rules (agentchemist.record.outcome) from what it saw.
dry_run returns the plan only."""
import secrets
import threading
import time

from rclpy.action import ActionServer
from rclpy.callback_groups import ReentrantCallbackGroup
from agentchemist_ros.common.guarded import GuardedNode
from rclpy.task import Future

from agentchemist.contracts import AnomalyKind, Severity, Symbol
from agentchemist.contracts.outcome import OutcomeKind, RunOutcome
from agentchemist.fsm.node_watch import NodeWatch
from agentchemist.plan import plan_instruction
from agentchemist.plan.backends import BackendConfig
from agentchemist.plan.scene import SceneError, SceneInfo
from agentchemist.record.outcome import report_verdict, returned_outcome
from agentchemist_interfaces.action import RunExperiment
from agentchemist_interfaces.msg import AgentMessage, Anomaly, ExperimentPlan, FsmState
from agentchemist_interfaces.srv import DescribeScene
from agentchemist_ros.common import topics
from agentchemist_ros.common.anomaly import make_anomaly
from agentchemist_ros.common.codec import decode_checks, decode_note, decode_scene
from agentchemist_ros.common.heartbeats import watch_heartbeats
from agentchemist_ros.common.params import declare, declare_config
from agentchemist_ros.common.qos import FSM, LATCHED, RELIABLE
from agentchemist_ros.common.runner import spin_node
from agentchemist_ros.common.timeconv import node_now, to_msg
from agentchemist_ros.common.waiting import first_of, resolved_after

def new_experiment_id() -> str:
    """Unique per run (wall-clock date and time plus randomness): one run folder per experiment."""
    return time.strftime("exp-%Y%m%d-%H%M%S-") + secrets.token_hex(3)


class PlannerNode(GuardedNode):
    def __init__(self, **kwargs):
        super().__init__("planner", **kwargs)
        self.backend = declare_config(self, BackendConfig)
        self.scene_timeout = declare(self, "scene_timeout_s", 10.0, "Wait for DescribeScene (wall s)", low=0.0, high=120.0)
        self.report_timeout = declare(self, "report_timeout_s", 120.0, "Wait for the report after the end (wall s)",
                                      low=1.0, high=3600.0)
        self.group = ReentrantCallbackGroup()
        self.lock = threading.Lock()
        # Per running experiment only (a long run sends goal after goal to this node): its goal handle, the
        # futures its execute() awaits, the anomalies it reports and the recorder's latest record_closed;
        # execute() drops them when it returns.
        self.anomalies, self.goals, self.ended, self.reported, self.closed = {}, {}, {}, {}, {}
        self.plan_pub = self.create_publisher(ExperimentPlan, topics.PLAN, LATCHED)
        self.anomaly_pub = self.create_publisher(Anomaly, topics.ANOMALIES, RELIABLE)
        self.create_subscription(FsmState, topics.FSM_STATE, self.on_fsm, FSM, callback_group=self.group)
        self.create_subscription(AgentMessage, topics.MESSAGES, self.on_message, RELIABLE, callback_group=self.group)
        self.create_subscription(Anomaly, topics.ANOMALIES, self.on_anomaly, RELIABLE, callback_group=self.group)
        self.scene_client = self.create_client(DescribeScene, topics.DESCRIBE_SCENE, callback_group=self.group)
        self.server = ActionServer(self, RunExperiment, topics.RUN_EXPERIMENT, self.execute, callback_group=self.group)
        # The executor in its own process can die; then no terminal state would ever end the goal.
        self.executor_watch = NodeWatch(peers=frozenset({"vision_supervisor"}))
        watch_heartbeats(self, lambda m: self.on_executor(self.executor_watch.on_heartbeat(m.node, m.instance,
                                                                                           node_now(self))))
        self.create_timer(0.5, lambda: self.on_executor(self.executor_watch.check(node_now(self))))

    def on_executor(self, events):
        """The executor gone too long, or restarted (the new one does not run the old plan): the running
        experiments end aborted with a node_lost anomaly (the record keeps what was stored: its report says
        interrupted)."""
        for e in events:
            if e.what not in ("abort", "restarted"):
                continue
            with self.lock:
                running = [(exp, f) for exp, f in self.ended.items() if not f.done()]
            for exp, ended in running:
                self.get_logger().error(f"{exp}: {e.text}: the experiment ends here")
                anomaly = make_anomaly(now=node_now(self), experiment_id=exp, source=self.get_name(),
                                       kind=AnomalyKind.NODE_LOST, severity=Severity.HALT, response="abort",
                                       description=f"{e.text}: the experiment ends here")
                self.anomaly_pub.publish(anomaly)
                with self.lock:
                    self.anomalies.setdefault(exp, []).append(anomaly)
                ended.set_result(FsmState(experiment_id=exp, state="executor lost", terminal=True, accepting=False))

    def on_fsm(self, msg):
        with self.lock:
            handle = self.goals.get(msg.experiment_id)
            ended = self.ended.get(msg.experiment_id)
        if handle is not None:
            handle.publish_feedback(RunExperiment.Feedback(experiment_id=msg.experiment_id, fsm_state=msg.state,
                                                           message=msg.symbol))
        if msg.terminal and ended is not None and not ended.done():
            ended.set_result(msg)

    def on_message(self, msg):
        if msg.symbol == Symbol.RECORD_CLOSED:  # to the summarizer; the latest says how the run ended
            with self.lock:
                if msg.experiment_id in self.ended:
                    self.closed[msg.experiment_id] = decode_note(msg)
            return
        if msg.receiver == self.get_name() and msg.symbol in (Symbol.REPORT_WRITTEN, Symbol.REPORT_FAILED):
            with self.lock:
                future = self.reported.get(msg.experiment_id)
            if future is not None and not future.done():
                future.set_result(decode_note(msg))

    def on_anomaly(self, msg):
        with self.lock:
            if msg.experiment_id in self.ended:  # not kept for ended or foreign experiments (nor for "")
                self.anomalies.setdefault(msg.experiment_id, []).append(msg)

    async def scene(self, text_scene: str):
        if text_scene:
            return SceneInfo.from_dict(decode_scene(text_scene))
        # The camera may not have delivered a frame yet: ask again until the timeout (wall clock).
        deadline = resolved_after(self, self.scene_timeout, steady=True)
        response = None
        while not deadline.done():
            if not self.scene_client.service_is_ready():
                await first_of(resolved_after(self, 0.2, steady=True), deadline)
                continue
            response = await self.scene_client.call_async(DescribeScene.Request(camera="front"))
            if response is not None and response.success:
                break
            await first_of(resolved_after(self, 0.2, steady=True), deadline)
        deadline.cancel()  # its timer goes now, not when it would have fired
        if response is None or not response.success:
            self.get_logger().warn("scene unavailable: " + (response.message if response else "no DescribeScene service"))
            return None
        extra = decode_checks(response.checks_json)
        checks = extra.get("checks", {})
        if extra.get("inventory_error"):  # the bench's contents cannot be known: nothing may move
            raise SceneError(f"the lab inventory cannot be read: {extra['inventory_error']}")
        contents = extra.get("contents") or {}
        held = {i: {"reagent": c.get("reagent"), "concentration_m": c.get("concentration_m")}
                for i, c in contents.items() if isinstance(c, dict)}
        on = extra.get("on") if isinstance(extra.get("on"), dict) else {}  # what stands where, from 3-D poses
        scene = {"objects": [{"id": o.id, "kind": o.kind, "u": o.u, "v": o.v, **held.get(o.id, {}),
                              **({"on": str(on[o.id])} if on.get(o.id) else {})} for o in response.objects],
                 "preconditions": {k: bool(v) for k, v in checks.items()}}
        if len(extra.get("image_size") or ()) == 2:  # positions are in this image's pixels
            scene["image_size"] = extra["image_size"]
        return SceneInfo.from_dict(scene)

    async def execute(self, goal_handle):
        goal = goal_handle.request
        result = RunExperiment.Result()
        try:
            scene = await self.scene(goal.scene_json)
            outcome = plan_instruction(goal.instruction, scene, backend=self.backend.create(),
                                       experiment_id=new_experiment_id())
        except SceneError as exc:  # what the bench holds cannot be known: refused, nothing moves
            return answered(goal_handle, result, RunOutcome(OutcomeKind.REFUSED, f"I cannot check the bench: {exc}"))
        except Exception as exc:  # a planner failure is a refusal with the reason, never a half-plan
            return answered(goal_handle, result, RunOutcome(OutcomeKind.FAILED, f"planning failed: {exc!r}"))
        if outcome.kind != "plan":
            answer = RunOutcome(OutcomeKind.REFUSED if outcome.kind == "refusal" else OutcomeKind.QUESTION,
                                outcome.message + ("" if not outcome.reasons else " (" + "; ".join(outcome.reasons) + ")"),
                                tuple(outcome.reasons))
            self.get_logger().warn(f"{answer.kind}: {answer.message}")
            return answered(goal_handle, result, answer)
        plan = outcome.plan
        result.plan_json = plan.model_dump_json()
        result.experiment_id = plan.experiment_id
        if goal.dry_run:
            return answered(goal_handle, result, RunOutcome(OutcomeKind.PLANNED, "dry run: plan only"))
        exp = plan.experiment_id
        with self.lock:
            self.goals[exp] = goal_handle
            ended = self.ended[exp] = Future()
            reported = self.reported[exp] = Future()
        try:
            self.plan_pub.publish(ExperimentPlan(stamp=to_msg(node_now(self)), experiment_id=exp,
                                                 instruction=goal.instruction, plan_json=result.plan_json))
            self.get_logger().info(f"plan {exp} published ({plan.parsed_instruction.experiment_name})")
            state = await ended
            report = None
            if state.state == "executor lost":  # nobody will write the report: `agentchemist report` can
                reported.set_result(None)
            timeout = resolved_after(self, self.report_timeout, steady=True)
            index, value = await first_of(reported, timeout)
            timeout.cancel()
            if index == 0:
                report = value
        finally:
            with self.lock:
                anomalies = self.anomalies.pop(exp, [])
                closed = self.closed.pop(exp, None)
                for book in (self.goals, self.ended, self.reported):
                    book.pop(exp, None)
        result.report_path = report.report if report is not None else ""
        return answered(goal_handle, result, returned_outcome(closed, report is not None, state.state,
                                                              state.accepting, anomalies, report_verdict(report)))


def answered(goal_handle, result, outcome: RunOutcome):
    """The goal ends with `outcome`: succeeded when it is a success, else aborted (the kind says why)."""
    result.success, result.outcome, result.message = outcome.success, outcome.kind.value, outcome.message
    goal_handle.succeed() if outcome.success else goal_handle.abort()
    return result


def main(args=None):
    spin_node(PlannerNode, args)


if __name__ == "__main__":
    main()
