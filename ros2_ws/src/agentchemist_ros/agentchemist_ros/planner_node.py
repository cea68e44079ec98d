"""planner: the RunExperiment action server. Instruction + scene -> verified plan (or a refusal or a
question), published latched on /agentchemist/plan; then follows the FSM to its end and returns the
report path. dry_run returns the plan only."""
import json
import threading
import time

from rclpy.action import ActionServer
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node

from agentchemist.plan import plan_instruction
from agentchemist.plan.scene import SceneInfo
from agentchemist_interfaces.action import RunExperiment
from agentchemist_interfaces.msg import AgentMessage, Anomaly, ExperimentPlan, FsmState
from agentchemist_interfaces.srv import DescribeScene
from agentchemist_ros.common import topics
from agentchemist_ros.common.params import declare
from agentchemist_ros.common.qos import LATCHED, RELIABLE
from agentchemist_ros.common.runner import spin_node
from agentchemist_ros.common.timeconv import node_now, to_msg

MARKER_KINDS = {"stirrer": "magnetic_stirrer"}


class PlannerNode(Node):
    def __init__(self, **kwargs):
        super().__init__("planner", **kwargs)
        self.backend = declare(self, "backend", "rules", "Planner backend: rules | openai | transformers")
        self.scene_timeout = declare(self, "scene_timeout_s", 10.0, "Wait for DescribeScene (wall s)", low=0.0, high=120.0)
        self.report_timeout = declare(self, "report_timeout_s", 120.0, "Wait for the report after the end (wall s)",
                                      low=1.0, high=3600.0)
        self.group = ReentrantCallbackGroup()
        self.lock = threading.Lock()
        self.states = {}
        self.anomalies = {}
        self.reports = {}
        self.plan_pub = self.create_publisher(ExperimentPlan, topics.PLAN, LATCHED)
        self.create_subscription(FsmState, topics.FSM_STATE, self.on_fsm, LATCHED, callback_group=self.group)
        self.create_subscription(AgentMessage, topics.MESSAGES, self.on_message, RELIABLE, callback_group=self.group)
        self.create_subscription(Anomaly, topics.ANOMALIES, self.on_anomaly, RELIABLE, callback_group=self.group)
        self.scene_client = self.create_client(DescribeScene, topics.DESCRIBE_SCENE, callback_group=self.group)
        self.server = ActionServer(self, RunExperiment, topics.RUN_EXPERIMENT, self.execute, callback_group=self.group)

    def on_fsm(self, msg):
        with self.lock:
            self.states[msg.experiment_id] = msg

    def on_message(self, msg):
        if msg.receiver == self.get_name() and msg.symbol in ("report_written", "report_failed"):
            with self.lock:
                self.reports[msg.experiment_id] = json.loads(msg.payload_json or "{}")

    def on_anomaly(self, msg):
        with self.lock:
            self.anomalies.setdefault(msg.experiment_id, []).append(msg)

    def scene(self, text_scene: str):
        if text_scene:
            return SceneInfo.from_dict(json.loads(text_scene))
        if not self.scene_client.wait_for_service(timeout_sec=self.scene_timeout):
            self.get_logger().warn("no DescribeScene service: planning without a scene check")
            return None
        future = self.scene_client.call_async(DescribeScene.Request(camera="front"))
        end = time.monotonic() + self.scene_timeout
        while not future.done() and time.monotonic() < end:
            time.sleep(0.01)
        response = future.result() if future.done() else None
        if response is None or not response.success:
            self.get_logger().warn(f"scene unavailable: {response.message if response else 'timeout'}")
            return None
        checks = json.loads(response.checks_json or "{}").get("checks", {})
        return SceneInfo.from_dict({"objects": [{"id": o.id, "kind": MARKER_KINDS.get(o.kind, o.kind)}
                                                for o in response.objects],
                                    "preconditions": {k: bool(v) for k, v in checks.items()}})

    def execute(self, goal_handle):
        goal = goal_handle.request
        result = RunExperiment.Result()
        try:
            scene = self.scene(goal.scene_json)
            outcome = plan_instruction(goal.instruction, scene, backend=self.backend)
        except Exception as exc:  # a planner failure is a refusal with the reason, never a half-plan
            result.outcome, result.message = "failed", f"planning failed: {exc!r}"
            goal_handle.abort()
            return result
        if outcome.kind != "plan":
            result.outcome = "refused" if outcome.kind == "refusal" else "question"
            result.message = outcome.message + ("" if not outcome.reasons else " (" + "; ".join(outcome.reasons) + ")")
            self.get_logger().warn(f"{result.outcome}: {result.message}")
            goal_handle.abort()
            return result
        plan = outcome.plan
        result.plan_json = plan.model_dump_json()
        result.experiment_id = plan.experiment_id
        if goal.dry_run:
            result.success, result.outcome, result.message = True, "planned", "dry run: plan only"
            goal_handle.succeed()
            return result
        self.plan_pub.publish(ExperimentPlan(stamp=to_msg(node_now(self)), experiment_id=plan.experiment_id,
                                             plan_json=result.plan_json))
        self.get_logger().info(f"plan {plan.experiment_id} published ({plan.parsed_instruction.experiment_name})")
        last_state = None
        while True:
            with self.lock:
                state = self.states.get(plan.experiment_id)
            if state is not None and state.state != last_state:
                last_state = state.state
                goal_handle.publish_feedback(RunExperiment.Feedback(experiment_id=plan.experiment_id,
                                                                    fsm_state=state.state, message=state.symbol))
            if state is not None and state.terminal:
                break
            if goal_handle.is_cancel_requested:
                goal_handle.canceled()
                result.outcome, result.message = "aborted", "canceled by the user"
                return result
            time.sleep(0.02)
        end = time.monotonic() + self.report_timeout
        while time.monotonic() < end:
            with self.lock:
                report = self.reports.get(plan.experiment_id)
            if report is not None:
                break
            time.sleep(0.05)
        result.report_path = (report or {}).get("report", "")
        with self.lock:
            halts = [a for a in self.anomalies.get(plan.experiment_id, []) if a.severity == "halt"]
        if state.accepting:
            result.success, result.outcome = True, "completed"
            result.message = "experiment completed" + ("" if report else "; the report was not written in time")
            goal_handle.succeed()
        else:
            result.outcome = "aborted"
            result.message = "; ".join(f"{a.kind}: {a.description}" for a in halts) or f"ended in {state.state}"
            goal_handle.abort()
        return result


def main(args=None):
    spin_node(PlannerNode, args)


if __name__ == "__main__":
    main()
