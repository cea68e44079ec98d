"""vision_supervisor: runs the experiment executor (agentchemist.fsm.executor) on the graph.

Every decision is the executor's: the scene check before anything moves, which subtask goes out when,
ph_stable / colour_stable / endpoint / verified from the pH meter, the camera and the balance, what a
goal's result means, the dispenser's pauses and holds, anomalies and aborts. This node maps messages to
the executor's events, carries out its effects in order (publish the FSM state, tell an agent, send or
cancel an ExecuteSubtask / Dispense goal, call the balance's tare service, save a snapshot), and owns the
subscriptions, QoS, the timer and the lock. It also serves DescribeScene.

Agents are asked without blocking the executor (common/answers.py): a request goes out when the graph
shows the agent or after `agent_wait_s` anyway, and the agent counts as not running (agent_unavailable)
only when that request got no answer.
"""
import json
import math
import threading
from pathlib import Path

import cv2
from rclpy.action import ActionClient
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_srvs.srv import Trigger

from agentchemist.fsm.commands import Report
from agentchemist.fsm.dispensing import DispenseOutcome
from agentchemist.fsm.effects import (Announce, CallTare, CancelDispenseGoal, CancelPolicyGoal, Log, PublishHue,
                                      PublishState, SendDropGoal, SendPolicyGoal, SendPourGoal, Snapshot, Tell)
from agentchemist.fsm.errors import FsmTimeError, InvalidMachineError
from agentchemist.fsm.executor import Executor
from agentchemist.fsm.frame_problems import FrameProblems
from agentchemist.fsm.supervision import SupervisionConfig
from agentchemist.perception.colour import LiquidRegionConfig
from agentchemist.perception.scene import describe_scene
from agentchemist.perception.vlm import VlmError, make_backend
from agentchemist.plan.schema import Plan
from agentchemist_interfaces.action import Dispense, ExecuteSubtask
from agentchemist_interfaces.msg import (AgentMessage, Anomaly, ChemicalReading, ExperimentPlan, FsmState,
                                         QuantityEstimate, SceneObject)
from agentchemist_interfaces.srv import DescribeScene
from agentchemist_ros.common import images, topics
from agentchemist_ros.common.anomaly import make_anomaly
from agentchemist_ros.common.answers import DROPPED, answered
from agentchemist_ros.common.params import declare, declare_config
from agentchemist_ros.common.qos import FSM, LATCHED, READINGS, RELIABLE, SENSOR
from agentchemist_ros.common.runner import spin_node
from agentchemist_ros.common.timeconv import node_now, to_msg, to_sec


class VisionSupervisorNode(Node):
    def __init__(self, **kwargs):
        super().__init__("vision_supervisor", **kwargs)
        self.runs_dir = Path(declare(self, "runs_dir", "runs", "Folder of the experiment run folders"))
        self.require_scene = declare(self, "require_scene_check", True,
                                     "Check the preconditions on the front camera before the first action")
        self.sup_config = declare_config(self, SupervisionConfig)  # the core's thresholds, ranges and units
        self.region = LiquidRegionConfig(marker_id=declare(
            self, "beaker_marker_id", 1, "ArUco id of the titration beaker (agentchemist/bench/tags.py)", low=0, high=49))
        backend = declare(self, "vision_backend", "opencv",
                          "Scene description backend: opencv (default) | openai (an OpenAI-compatible VLM endpoint)")
        vlm = {"base_url": declare(self, "vlm_base_url", "", "OpenAI-compatible endpoint, e.g. http://host:8000/v1"),
               "model": declare(self, "vlm_model", "", "Model name served at vlm_base_url"),
               "timeout_s": declare(self, "vlm_timeout_s", 20.0, "Timeout of one VLM request (s)", low=0.1, high=600.0)}
        self.vision_backend = make_backend("opencv") if backend == "opencv" else make_backend(backend, **vlm)
        # DDS discovery of another node's action server can take seconds on a loaded machine (answers.py).
        self.agent_wait_s = declare(self, "agent_wait_s", 15.0, "Wall seconds to wait for an agent's action server "
                                    "or service to show in the ROS graph, and then for its answer, before the run "
                                    "aborts with agent_unavailable", low=0.1, high=300.0)
        self.lock = threading.RLock()
        self.ex: Executor | None = None   # the running experiment's executor
        self.frames = FrameProblems()     # bad front frames, once per episode
        self.experiment_id = ""
        self.front = None
        self.dispense_goal = self.policy_goal = None  # running goal handles (cancelled on the executor's word)
        self.group = ReentrantCallbackGroup()
        self.fsm_pub = self.create_publisher(FsmState, topics.FSM_STATE, FSM)
        self.msg_pub = self.create_publisher(AgentMessage, topics.MESSAGES, RELIABLE)
        self.anomaly_pub = self.create_publisher(Anomaly, topics.ANOMALIES, RELIABLE)
        self.qty_pub = self.create_publisher(QuantityEstimate, topics.QUANTITY, RELIABLE)
        self.create_subscription(ExperimentPlan, topics.PLAN, self.on_plan, LATCHED, callback_group=self.group)
        self.create_subscription(ChemicalReading, topics.PH_READING, self.on_reading, READINGS)
        self.create_subscription(ChemicalReading, topics.BALANCE_READING, self.on_balance, READINGS)
        self.create_subscription(AgentMessage, topics.MESSAGES, self.on_message, RELIABLE)
        self.create_subscription(Anomaly, topics.ANOMALIES, self.on_anomaly, RELIABLE)
        self.create_subscription(Image, topics.camera_topic("front"), self.on_front, SENSOR)
        self.policy = ActionClient(self, ExecuteSubtask, topics.EXECUTE_SUBTASK, callback_group=self.group)
        self.dispenser = ActionClient(self, Dispense, topics.DISPENSE, callback_group=self.group)
        self.tare_client = self.create_client(Trigger, topics.BALANCE_TARE, callback_group=self.group)
        self.create_service(DescribeScene, topics.DESCRIBE_SCENE, self.describe, callback_group=self.group)
        self.create_timer(0.5, self.check_timeouts)

    # ------------------------------------------------------------------ events -> executor
    def event(self, call, *args):
        """Run `call(executor, *args)` under the lock and carry out its effects (nothing without an experiment)."""
        with self.lock:
            if self.ex is None:
                return
            effects = call(self.ex, *args)
        self.carry_out(effects)

    def on_plan(self, msg):
        now = node_now(self)
        with self.lock:
            if msg.experiment_id == self.experiment_id:
                return
            self.experiment_id, self.frames = msg.experiment_id, FrameProblems()
            try:
                self.ex = Executor(Plan.model_validate_json(msg.plan_json), now, self.sup_config, self.region,
                                   self.frames)
            except (InvalidMachineError, ValueError) as exc:
                self.ex = None
                why = "; ".join(exc.reasons) if isinstance(exc, InvalidMachineError) else str(exc)
                self.carry_out([Report("invalid_plan", "halt", f"plan rejected: {why}", response="abort"),
                                PublishState("aborted", "", "reject", terminal=True)])
                return
            self.carry_out([self.ex.initial_state()])
        self.get_logger().info(f"running experiment {msg.experiment_id}")
        self.event(Executor.start, now, self.front, self.require_scene)

    def on_message(self, msg):
        if msg.receiver == self.get_name() and msg.sender != self.get_name():
            self.event(Executor.on_agent_symbol, msg.symbol, to_sec(msg.stamp) or node_now(self), msg.sender,
                       msg.subtask_id)

    def on_reading(self, msg):
        if msg.quantity == "temperature":
            self.event(Executor.on_temperature, msg.value)
        elif msg.quantity == "pH":
            noise = msg.noise if math.isfinite(msg.noise) and msg.noise >= 0.0 else None
            self.event(Executor.on_ph, to_sec(msg.header.stamp), msg.value, noise)

    def on_balance(self, msg):
        if msg.quantity == "mass":
            self.event(Executor.on_mass, to_sec(msg.header.stamp), msg.value)

    def on_anomaly(self, msg):
        if msg.source == self.get_name() or msg.experiment_id not in ("", self.experiment_id):
            return
        if msg.severity == "halt":
            # With nothing running (e.g. an arm powered after the graph came up) there is nothing to stop: an
            # "aborted" state now would be stamped on the last experiment, which had already ended.
            if not self.abort(f"{msg.source} reported {msg.kind}: {msg.description}", msg.kind, self.experiment_id):
                self.get_logger().warn(f"{msg.source} reported {msg.kind} with no experiment running: "
                                       f"{msg.description}")
        elif msg.kind == "audio_noise":
            self.event(Executor.on_audio_noise, msg.resolved, to_sec(msg.stamp))

    def on_front(self, msg):
        try:
            frame = images.to_rgb(msg)
            if frame.ndim != 3:
                raise images.ImageEncodingError(f"sends {msg.encoding}: colour tracking and scene checks need "
                                                "rgb8 or bgr8")
        except images.ImageEncodingError as exc:
            with self.lock:
                effects = self.frames.issue("bad_image", "image", f"front camera: {exc}")
            self.carry_out(effects)
            return
        self.front = frame
        with self.lock:
            effects = self.frames.passed("image", "front camera images are readable again")
        self.carry_out(effects)
        self.event(Executor.on_frame, to_sec(msg.header.stamp), frame)

    def check_timeouts(self):
        try:
            self.event(Executor.on_tick, node_now(self))
        except FsmTimeError as exc:
            # The clock went back under a running experiment (the twin or a bag restarted, or another
            # graph on this ROS domain): no timing can be trusted, so stop the run and say why.
            self.abort(f"the ROS clock went back during the experiment: {exc}", "clock_jump")

    def running(self, experiment_id) -> bool:
        with self.lock:
            return self.experiment_id == experiment_id and self.ex is not None and self.ex.running

    def abort(self, reason, kind, experiment=None) -> bool:
        """Abort the running experiment (only `experiment`, when given); False when it was not aborted."""
        if experiment is not None and not self.running(experiment):
            return False
        with self.lock:
            effects = self.ex.abort(reason, kind, node_now(self)) if self.ex is not None else [
                Log(f"abort: {reason}", "error"), Report(kind, "halt", reason, response="abort"),
                PublishState("aborted", "", "abort", terminal=True)]
        self.carry_out(effects)
        return True

    # ------------------------------------------------------------------ effects
    def carry_out(self, effects):
        """Do what the executor decided, in order (agentchemist.fsm.effects); decide nothing here."""
        for e in effects:
            if isinstance(e, PublishState):
                self.fsm_pub.publish(FsmState(stamp=to_msg(node_now(self)), experiment_id=self.experiment_id,
                                              state=e.state, previous_state=e.previous, symbol=e.symbol,
                                              subtask_id=e.subtask_id, accepting=e.accepting, terminal=e.terminal))
            elif isinstance(e, Tell):
                self.tell(e.receiver, e.symbol, e.subtask_id, dict(e.payload), e.stamp)
            elif isinstance(e, Report):
                state = e.fsm_state if e.fsm_state is not None else self.ex.machine.state if self.ex else ""
                self.anomaly_pub.publish(make_anomaly(
                    now=node_now(self), experiment_id=self.experiment_id, source=self.get_name(), kind=e.kind,
                    severity=e.severity, description=e.description, fsm_state=state, response=e.response,
                    resolved=e.resolved))
            elif isinstance(e, Announce):
                t = e.task
                self.msg_pub.publish(AgentMessage(
                    stamp=to_msg(node_now(self)), experiment_id=self.experiment_id, sender=self.get_name(),
                    receiver=t.receiver, subtask_id=t.id, instruction=t.description,
                    target_state=t.expected_transition.target if t.expected_transition else "", symbol="dispatch",
                    payload_json=json.dumps({"primitive": t.primitive, "parameters": t.parameters})))
            elif isinstance(e, Snapshot):
                self.snapshot(e.label)
            elif isinstance(e, SendPolicyGoal):
                t = e.task
                goal = ExecuteSubtask.Goal(experiment_id=self.experiment_id, subtask_id=t.id, instruction=t.description,
                                           target_state=t.expected_transition.target if t.expected_transition else "",
                                           payload_json=json.dumps(dict(e.payload)))
                self.ask(self.policy, lambda g=goal: self.policy.send_goal_async(g), "the action policy", t,
                         self.on_policy_accepted)
            elif isinstance(e, (SendDropGoal, SendPourGoal)):
                self.send_dispense_goal(e)
            elif isinstance(e, CallTare):
                self.tare(e.task)
            elif isinstance(e, CancelDispenseGoal) and self.dispense_goal is not None:
                self.dispense_goal.cancel_goal_async()
            elif isinstance(e, CancelPolicyGoal) and self.policy_goal is not None:
                self.policy_goal.cancel_goal_async()
            elif isinstance(e, PublishHue):
                self.qty_pub.publish(QuantityEstimate(
                    stamp=to_msg(e.stamp), experiment_id=self.experiment_id, quantity="colour_hue", unit="deg",
                    channel="vision", value=e.hue_deg, delta=e.delta_deg, confidence=e.confidence,
                    fsm_state=e.fsm_state, subtask_id=e.subtask_id, event_id=""))
            elif isinstance(e, Log):
                self.log(e)

    def log(self, e):
        # rclpy ties a severity to its call site: one call per severity
        if e.level == "error":
            self.get_logger().error(e.text)
        elif e.level == "warn":
            self.get_logger().warn(e.text)
        else:
            self.get_logger().info(e.text)

    def ask(self, client, send, agent, task, on_handle, wanted=lambda: True, settled=lambda: None):
        """Send a goal to an agent without blocking the executor (common/answers.py); `on_handle(task,
        handle)` gets the goal handle, after `settled()` (whatever the outcome). An agent that gives no
        answer aborts the experiment as agent_unavailable. A goal is not sent once its experiment has ended
        or it is no longer `wanted`, and one accepted after its experiment ended is cancelled at once."""
        experiment = self.experiment_id

        def answered_with(future):
            handle = future.result()
            settled()
            if handle is DROPPED:
                return
            if handle is None:
                self.abort(f"{agent} is not running: subtask {task.id} got no answer (agent_wait_s "
                           f"{self.agent_wait_s:g} s)", "agent_unavailable", experiment)
            elif not self.running(experiment):
                if handle.accepted:
                    handle.cancel_goal_async()
            else:
                on_handle(task, handle)

        answered(self, ready=client.server_is_ready, send=send, wait_s=self.agent_wait_s, what=agent,
                 wanted=lambda: self.running(experiment) and wanted(),
                 late=lambda handle: handle.accepted and handle.cancel_goal_async()).add_done_callback(answered_with)

    def on_policy_accepted(self, task, handle):
        if not handle.accepted:
            self.abort(f"action policy refused subtask {task.id}", "subtask_refused")
            return
        self.policy_goal = handle
        handle.get_result_async().add_done_callback(lambda f, t=task: self.on_policy_result(t, f))

    def on_policy_result(self, task, future):
        self.policy_goal = None
        r = future.result().result
        self.event(Executor.on_policy_result, task, r.success, r.symbol, r.message, node_now(self))

    def send_dispense_goal(self, e):
        """A Dispense goal: while it is on its way a stop or a hold cancels it on arrival, and a resume
        leaves it be (agentchemist.fsm.dispensing.DispenseBook)."""
        g, t = e.goal, e.task
        if isinstance(e, SendPourGoal):
            goal = Dispense.Goal(experiment_id=self.experiment_id, subtask_id=t.id, mode="solid_pour",
                                 target_mass_g=g.target_mass_g, mass_tolerance_g=g.mass_tolerance_g,
                                 tilt_rate_deg_s=g.tilt_rate_deg_s, side=g.side, settle_each_drop=g.settle_each_drop,
                                 wait_on_change_threshold=g.wait_on_change_threshold, stable_window_s=g.stable_window_s)
        else:
            goal = Dispense.Goal(experiment_id=self.experiment_id, subtask_id=t.id, target_volume_ml=g.target_volume_ml,
                                 use_target_ph=g.target_ph is not None, target_ph=g.target_ph or 0.0,
                                 ph_direction=g.ph_direction, rate_mm_s=g.rate_mm_s,
                                 wait_on_change_threshold=g.wait_on_change_threshold, stable_window_s=g.stable_window_s,
                                 settle_each_drop=g.settle_each_drop, resume_on_command=g.resume_on_command)
        book = self.ex.book
        self.ask(self.dispenser, lambda: self.dispenser.send_goal_async(goal), "the dispenser controller", t,
                 self.on_dispense_accepted, wanted=lambda: not book.stopped, settled=book.settled)

    def on_dispense_accepted(self, task, handle):
        self.dispense_goal = handle
        with self.lock:
            cancel = self.ex is not None and self.ex.book.accepted()  # held or stopped while on its way
        if cancel:
            handle.cancel_goal_async()
        handle.get_result_async().add_done_callback(lambda f, t=task: self.on_dispense_result(t, f))

    def on_dispense_result(self, task, future):
        r = future.result().result
        self.dispense_goal = None
        self.get_logger().info(f"dispensing stopped: {r.stop_reason} ({r.message}), {r.dispensed_ml:.3f} mL, "
                               f"{r.drops} drops")
        outcome = DispenseOutcome(r.success, r.stop_reason, r.message, r.dispensed_ml, r.drops)
        self.event(Executor.on_dispense_result, task, outcome, node_now(self))

    def tare(self, task):
        """The tare subtask: the balance zeroes with the beaker (and its water) on the pan; tare_ok follows
        from the readings (Supervision.on_mass), not from the service's word."""
        experiment = self.experiment_id

        def tared(future):
            response = future.result()
            if response is DROPPED or not self.running(experiment):
                return
            if response is None:
                self.abort(f"the balance offers no tare service ({topics.BALANCE_TARE}: no answer; agent_wait_s "
                           f"{self.agent_wait_s:g} s)", "balance_unavailable")
            elif not response.success:
                self.abort(f"the balance did not tare: {response.message}", "tare_failed")
            else:
                self.event(Executor.on_tared, node_now(self))

        answered(self, ready=self.tare_client.service_is_ready, wait_s=self.agent_wait_s, what="the balance",
                 wanted=lambda: self.running(experiment),
                 send=lambda: self.tare_client.call_async(Trigger.Request())).add_done_callback(tared)

    def tell(self, receiver, symbol, subtask_id, payload, now=None):
        self.msg_pub.publish(AgentMessage(stamp=to_msg(now if now is not None else node_now(self)),
                                          experiment_id=self.experiment_id, sender=self.get_name(),
                                          receiver=receiver, subtask_id=subtask_id, symbol=symbol,
                                          payload_json=json.dumps(payload)))

    def snapshot(self, label):
        frame = self.front
        if frame is None or not self.experiment_id:
            return
        folder = self.runs_dir / self.experiment_id / "snapshots"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{label}_{node_now(self):.1f}.png"
        cv2.imwrite(str(path), cv2.cvtColor(frame, cv2.COLOR_RGB2BGR))
        self.tell("recorder", "artifact", "", {"kind": "snapshot", "path": str(path.resolve()), "label": label})

    def describe(self, request, response):
        frame = self.front
        response.header.stamp = to_msg(node_now(self))
        response.header.frame_id = "front_camera"
        if request.camera not in ("", "front") or frame is None:
            response.success = False
            response.message = f"camera {request.camera!r} is not used for scene checks" if request.camera not in \
                ("", "front") else "no front camera image received yet"
            return response
        desc = describe_scene(frame)
        response.objects = [SceneObject(id=o.id, kind=o.kind, u=o.u, v=o.v, confidence=o.confidence)
                            for o in desc.objects]
        response.checks_json = json.dumps({"checks": desc.checks, "reasons": desc.reasons,
                                           "image_size": list(desc.image_size or ())})
        response.success, response.message = True, f"{len(desc.objects)} objects"
        if self.vision_backend.name != "opencv":
            # The VLM adds its description; the objects and checks stay the marker-based ones.
            try:
                response.message += ": " + self.vision_backend.describe_scene(frame).summary
            except VlmError as exc:
                response.message += f" (vision backend {self.vision_backend.name} failed: {exc})"
        return response


def main(args=None):
    spin_node(VisionSupervisorNode, args)


if __name__ == "__main__":
    main()
