"""action_policy: the ExecuteSubtask action server.

Backend "scripted" (default here): the motion primitives of agentchemist.policy.primitives, executed
against the measured joint states. A VLA backend plugs in behind the same action. Every subtask ends
with a completion report: the result's symbol (e.g. grasp_ok) which the vision supervisor applies.
"""
import json
import threading

from builtin_interfaces.msg import Duration
from rclpy.action import ActionServer
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.task import Future
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from agentchemist.policy.primitives import PrimitiveError, load_poses, plan_primitive, step_reached
from agentchemist_interfaces.action import ExecuteSubtask
from agentchemist_interfaces.msg import Anomaly
from agentchemist_ros.common import topics
from agentchemist_ros.common.anomaly import make_anomaly
from agentchemist_ros.common.params import declare
from agentchemist_ros.common.qos import RELIABLE
from agentchemist_ros.common.runner import spin_node
from agentchemist_ros.common.timeconv import node_now


class ActionPolicyNode(Node):
    def __init__(self, **kwargs):
        super().__init__("action_policy", **kwargs)
        self.backend = declare(self, "backend", "scripted", "Policy backend: scripted | vla")
        self.poses = load_poses(declare(self, "poses_file", "", "Named poses YAML (default config/poses.yaml)") or None)
        self.joints: dict[str, float] = {}
        self.lock = threading.Lock()
        self.arm_pubs = {s: self.create_publisher(JointTrajectory, topics.arm_trajectory_topic(s), 10)
                         for s in topics.SIDES}
        self.grip_pubs = {s: self.create_publisher(Float64MultiArray, topics.gripper_command_topic(s), 10)
                          for s in topics.SIDES}
        self.anomaly_pub = self.create_publisher(Anomaly, topics.ANOMALIES, RELIABLE)
        self.create_subscription(JointState, topics.JOINT_STATES, self.on_joints, 10)
        self._waiting = None
        self.create_timer(0.1, self.check_step)
        self.server = ActionServer(self, ExecuteSubtask, topics.EXECUTE_SUBTASK, self.execute,
                                   callback_group=ReentrantCallbackGroup())

    def on_joints(self, msg):
        with self.lock:
            self.joints.update(zip(msg.name, msg.position))
        self.check_step()

    def arm(self, side):
        with self.lock:
            values = [self.joints.get(f"{side}_joint{i}") for i in range(1, 7)]
        return None if any(v is None for v in values) else tuple(values)

    def gripper(self, side):
        with self.lock:
            return self.joints.get(f"{side}_gripper")

    async def execute(self, goal_handle):
        g = goal_handle.request
        result = ExecuteSubtask.Result()
        try:
            payload = json.loads(g.payload_json or "{}")
            primitive = payload["primitive"]
            side = payload.get("side", "right")
            steps = plan_primitive(primitive, self.poses, side)
        except (json.JSONDecodeError, KeyError, PrimitiveError) as exc:
            return self._fail(goal_handle, result, g, f"cannot execute subtask {g.subtask_id}: {exc!r}")
        if self.backend != "scripted":
            return self._fail(goal_handle, result, g, f"policy backend '{self.backend}' is not available here")
        for i, step in enumerate(steps):
            if goal_handle.is_cancel_requested:
                goal_handle.canceled()
                result.message = "canceled"
                return result
            self._send(step)
            reached = await self._wait_for(step)
            if not reached:
                return self._fail(goal_handle, result, g,
                                  f"step '{step.label}' of {primitive} did not complete within {step.timeout_s} s")
            goal_handle.publish_feedback(ExecuteSubtask.Feedback(phase=step.label, progress=(i + 1) / len(steps)))
        result.success = True
        result.symbol = payload.get("symbol", "")
        result.message = f"{primitive} done"
        goal_handle.succeed()
        return result

    def _wait_for(self, step):
        """A Future: True when the measured state reaches the step (after a short settle), False on timeout."""
        future = Future()
        self._waiting = (step, node_now(self), future)
        return future

    def check_step(self):
        """Runs on joint states and on a timer: resolves the step being waited for."""
        waiting = self._waiting
        if waiting is None:
            return
        step, start, future = waiting
        now = node_now(self)
        if step.kind == "wait":
            done = now - start >= step.duration_s
        else:
            done = now - start >= 0.2 and step_reached(step, self.arm(step.side), self.gripper(step.side),
                                                        self.poses.tolerance_rad)
        if done or now - start > step.timeout_s:
            self._waiting = None
            if not future.done():
                future.set_result(bool(done))

    def _send(self, step):
        if step.kind == "arm":
            point = JointTrajectoryPoint(positions=list(step.target),
                                         time_from_start=Duration(sec=int(step.duration_s),
                                                                  nanosec=int((step.duration_s % 1) * 1e9)))
            self.arm_pubs[step.side].publish(JointTrajectory(
                joint_names=[f"{step.side}_joint{i}" for i in range(1, 7)], points=[point]))
        elif step.kind == "gripper":
            self.grip_pubs[step.side].publish(Float64MultiArray(data=[step.target[0]]))

    def _fail(self, goal_handle, result, g, message):
        self.get_logger().error(message)
        self.anomaly_pub.publish(make_anomaly(now=node_now(self), experiment_id=g.experiment_id,
                                              source=self.get_name(), kind="subtask_failed", severity="warn",
                                              description=message, subtask_id=g.subtask_id, response="retry"))
        result.success = False
        result.message = message
        goal_handle.abort()
        return result


def main(args=None):
    spin_node(ActionPolicyNode, args)


if __name__ == "__main__":
    main()
