"""action_policy: the ExecuteSubtask action server.

Backend "scripted" (default here): the motion primitives of agentchemist.policy.primitives, executed
against the measured joint states. Backend "vla" (with checkpoint:=DIR): the audio-visual-language-action
policy (agentchemist.policy.vla, ROS glue in vla_backend.py) behind the same action. Every subtask ends
with a completion report: the result's symbol (e.g. grasp_ok) which the vision supervisor applies.

The plan's primitive name and parameters choose the motion (grasp the pipette or the solid bottle;
move_to over the beaker, or carry a beaker to a station). Before carrying a beaker (place / move_to of
a beaker_*) the node asks the vision supervisor's scene service where the beaker stands; without an
answer, or with the beaker not in view, the subtask fails: the robot does not move blind. Before grasping
the pipette or the solid bottle and positioning over the beaker it asks the scene too: where the item's
3-D pose is known, the arm goes there by inverse kinematics (agentchemist.policy.seen_targets), else (no
pose, no answer, target_source:=named) to the named pose as before.
"""
import threading

from builtin_interfaces.msg import Duration
from rclpy.action import ActionServer
from rclpy.callback_groups import ReentrantCallbackGroup
from agentchemist_ros.common.guarded import GuardedNode
from rclpy.task import Future
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from agentchemist.contracts import AnomalyKind, Severity
from agentchemist.policy.vla.serve_config import VLAServeConfig
from agentchemist.policy.seen_targets import SeenObject, SeenTargetConfig, SeenTargets
from agentchemist.policy.primitives import (NotSeenError, PrimitiveError, beaker_station, load_poses, needs_beaker_station,
                                            plan_primitive, station_name, stations, step_reached)
from agentchemist_interfaces.action import ExecuteSubtask
from agentchemist_interfaces.msg import Anomaly
from agentchemist_interfaces.srv import DescribeScene
from agentchemist_ros.common.clock_acks import acknowledge_clock
from agentchemist_ros.common import topics
from agentchemist_ros.common.anomaly import make_anomaly
from agentchemist_ros.common.codec import DecodeError, decode_checks, decode_subtask
from agentchemist_ros.common.params import declare, declare_config
from agentchemist_ros.common.peer_waits import peer_waits
from agentchemist_ros.common.qos import RELIABLE
from agentchemist_ros.common.runner import spin_node
from agentchemist_ros.common.step_wait import StepWait
from agentchemist_ros.common.timeconv import node_now, to_sec
from agentchemist_ros.common.waiting import first_of, resolved_after


class SceneUnavailable(Exception):
    """The scene service did not say where things stand."""


class ActionPolicyNode(GuardedNode):
    def __init__(self, **kwargs):
        super().__init__("action_policy", **kwargs)
        self.clock_ack = acknowledge_clock(self)  # in its own process: the twin keeps within reach
        self.backend = declare(self, "backend", "scripted", "Policy backend: scripted | vla")
        self.poses = load_poses(declare(self, "poses_file", "", "Named poses YAML (default config/poses.yaml)") or None)
        self.scene_timeout = declare(self, "scene_timeout_s", 10.0,
                                     "Wait this long (wall s) for the scene service before carrying a beaker",
                                     low=0.0, high=120.0)
        self.occlusion_wait = declare(self, "scene_occlusion_wait_s", 5.0,
                                      "A beaker not seen is looked for on newer frames this long (sim s) before "
                                      "the carry fails", low=0.0, high=120.0)
        self.scene_tolerance = declare(self, "scene_horizontal_tolerance", 0.12,
                                       "Fraction of the image width within which a beaker stands on a station "
                                       "(as the scene check)", low=0.01, high=0.5)
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
        self.scene_client = self.create_client(DescribeScene, topics.DESCRIBE_SCENE,
                                               callback_group=ReentrantCallbackGroup())
        self.waits = peer_waits(self)
        self.seen = SeenTargets(self.poses, declare_config(self, SeenTargetConfig))
        vla_config = declare_config(self, VLAServeConfig)
        self.vla = None
        if self.backend == "vla":  # torch and the model load only for this backend (seconds; see serve_config)
            from agentchemist_ros.vla_backend import VLABackend
            self.vla = VLABackend(self, vla_config)
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
            payload = decode_subtask(g.payload_json)
            primitive = payload["primitive"]
            parameters = payload.get("parameters") or {}
            if not isinstance(parameters, dict):
                raise PrimitiveError(f"parameters must be a JSON object, got {parameters!r}")
            side = parameters.get("side") or payload.get("side") or None
            if self.vla is not None:  # the policy decides the motion; it refuses subtasks it was not trained on
                return await self._execute_vla(goal_handle, result, g, primitive, parameters, payload)
            beaker_at = None
            if needs_beaker_station(primitive, parameters):
                beaker_at, parameters = await self.locate_beaker(parameters)
            seen = await self.seen_plan(primitive, side, parameters)
            steps = seen.steps if seen is not None else plan_primitive(primitive, self.poses, side, parameters,
                                                                         beaker_at)
        except (DecodeError, KeyError, PrimitiveError) as exc:
            return self._fail(goal_handle, result, g, f"cannot execute subtask {g.subtask_id}: {exc!r}")
        except SceneUnavailable as exc:  # where the beaker stands is not known
            return self._fail(goal_handle, result, g, f"cannot execute subtask {g.subtask_id}: {exc}; "
                              "the robot does not move blind")
        if self.backend != "scripted":
            return self._fail(goal_handle, result, g, f"policy backend '{self.backend}' is not available here")
        if not steps:  # e.g. the beaker already stands where the plan wants it
            result.success = True
            result.symbol = payload.get("symbol", "")
            result.message = f"{primitive}: {parameters.get('object', '')} already on the {beaker_at}"
            self.get_logger().info(result.message)
            goal_handle.succeed()
            return result
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

    async def _execute_vla(self, goal_handle, result, g, primitive, parameters, payload):
        ok, message, _report = await self.vla.execute(goal_handle, primitive, parameters, payload.get("symbol", ""))
        if goal_handle.is_cancel_requested:
            goal_handle.canceled()
            result.message = message
            return result
        if not ok:
            return self._fail(goal_handle, result, g, f"cannot execute subtask {g.subtask_id}: {message}")
        result.success, result.symbol, result.message = True, payload.get("symbol", ""), message
        self.get_logger().info(message)
        goal_handle.succeed()
        return result

    async def locate_beaker(self, parameters):
        """(station the beaker stands on per the front camera, parameters with the target as a station
        name). The target may be a scene id ("hot_plate_2"): its kind in the scene names the station."""
        known = stations(self.poses)
        # The robot's own arm or a held bottle can hide the beaker in the last frame: look again on newer
        # frames for a while (sim time) before saying it is not there.
        deadline = resolved_after(self, self.occlusion_wait, steady=False)
        try:
            while True:
                response = await self.describe_scene()
                extra = decode_checks(response.checks_json)
                size = extra.get("image_size") or ()
                if len(size) != 2:
                    raise SceneUnavailable("the scene service gave no image size")
                objects = [(o.id, o.kind, o.u, o.v) for o in response.objects]
                try:
                    at = beaker_station(str(parameters.get("object")), objects, size[0], known, self.scene_tolerance,
                                        extra.get("on") if isinstance(extra.get("on"), dict) else None)
                    break
                except NotSeenError:
                    if deadline.done():
                        raise
                    await first_of(resolved_after(self, 0.5), deadline)
        finally:
            deadline.cancel()  # its timer goes now, not when it would have fired
        if at is None:  # seen, but not above any station the arm can pick it up from
            raise PrimitiveError(f"{parameters.get('object')} stands on none of the stations "
                                 f"({', '.join(known)}) per the front camera")
        target = parameters.get("target")
        kind = next((k for i, k, _, _ in objects if i == target), None)
        if kind is not None and station_name(kind) in known:
            parameters = {**parameters, "target": station_name(kind)}
        self.get_logger().info(f"{parameters.get('object')} stands on the {at} per the front camera")
        return at, parameters

    async def seen_plan(self, primitive, side, parameters):
        """Steps to where the camera sees the item (IK), or None: the named pose (no 3-D pose known)."""
        response = None
        if self.seen.needs_scene(primitive, parameters):
            try:
                response = await self.describe_scene(self.seen.config.target_scene_timeout_s)
            except SceneUnavailable as exc:
                self.get_logger().warn(f"{primitive}: the named pose ({exc})")  # as before the camera
        objects = [SeenObject(o.id, o.kind, (o.pose.position.x, o.pose.position.y, o.pose.position.z),
                              (o.pose.orientation.x, o.pose.orientation.y, o.pose.orientation.z,
                               o.pose.orientation.w)) for o in (response.objects if response else ())]
        with self.lock:
            joints = dict(self.joints)
        plan = self.seen.plan(primitive, side, parameters, response.header.frame_id if response else "",
                              to_sec(response.header.stamp) if response else 0.0, objects, node_now(self),
                              {s: self.arm(s) for s in topics.SIDES}, joints)
        if response is not None or plan is not None:
            self.get_logger().info(f"{primitive}: {plan.note if plan else 'named pose (no 3-D pose seen)'}")
        return plan

    async def describe_scene(self, timeout_s=None):
        """The vision supervisor's scene, asked until it answers or the wall timeout passes (the camera
        may not have delivered a frame yet)."""
        timeout_s = self.scene_timeout if timeout_s is None else timeout_s
        deadline = resolved_after(self, timeout_s, steady=True)
        why = "no DescribeScene service"
        while not deadline.done():
            if self.scene_client.service_is_ready():
                call = self.scene_client.call_async(DescribeScene.Request(camera="front"))
                token = self.waits.begin("the vision supervisor: DescribeScene")
                try:
                    await first_of(call, deadline)
                finally:
                    self.waits.end(token)
                if call.done():
                    response = call.result()
                    if response is not None and response.success:
                        deadline.cancel()  # its timer goes now, not when it would have fired
                        return response
                    why = response.message if response is not None else "no answer"
                else:
                    why = "the scene service did not answer"
            if not deadline.done():
                await first_of(resolved_after(self, 0.2, steady=True), deadline)
        raise SceneUnavailable(f"the scene is unknown: {why} (within {timeout_s:.0f} s)")

    def _wait_for(self, step):
        """A Future: True when the measured state reaches the step (after a short settle), False on timeout."""
        future = Future()
        self._waiting = StepWait(step, node_now(self), future)
        return future

    def check_step(self):
        """Runs on joint states and on a timer: resolves the step being waited for."""
        waiting = self._waiting
        if waiting is None:
            return
        step, future = waiting.step, waiting.future
        elapsed = waiting.elapsed(node_now(self))
        if step.kind == "wait":
            done = elapsed >= step.duration_s
        else:
            done = elapsed >= 0.2 and step_reached(step, self.arm(step.side), self.gripper(step.side),
                                                   self.poses.tolerance_rad)
        if done or elapsed > step.timeout_s:
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
                                              source=self.get_name(), kind=AnomalyKind.SUBTASK_FAILED,
                                              severity=Severity.WARN,
                                              description=message, subtask_id=g.subtask_id, response="abort"))
        result.success = False
        result.message = message
        goal_handle.abort()
        return result


def main(args=None):
    spin_node(ActionPolicyNode, args)


if __name__ == "__main__":
    main()
