"""vision_supervisor: runs the experiment executor (agentchemist.fsm.executor) on the graph.
Every decision is the executor's (scene check, dispatch, ph_stable / colour_stable / endpoint / verified, what a
goal's result means, the dispenser's pauses and holds, anomalies, aborts). This node maps messages (the pH meter's
latched calibration state too) to its events and carries out its effects in order; it owns the subscriptions, QoS, the
timer, the lock and the goal handles; it serves DescribeScene and a person's pause (common/operator_service.py).
"""
import math
import threading
from pathlib import Path

from rclpy.action import ActionClient
from rclpy.callback_groups import ReentrantCallbackGroup
from agentchemist_ros.common.guarded import GuardedNode
from sensor_msgs.msg import Image
from std_msgs.msg import String
from std_srvs.srv import Trigger
from agentchemist.fsm.commands import Report
from agentchemist.fsm.dispensing import DispenseOutcome
from agentchemist.fsm.effects import CallTare, Cancel, Log, PublishHue, PublishState, SendGoal, Snapshot, Tell
from agentchemist.fsm.errors import FsmTimeError, InvalidMachineError
from agentchemist.fsm.executor import Executor
from agentchemist.fsm.plan_gate import busy_refusal, idle_abort, plan_age_problem, rejected
from agentchemist.fsm.frame_problems import FrameProblems
from agentchemist.fsm.supervision import SupervisionConfig
from agentchemist.perception.colour import LiquidRegionConfig
from agentchemist.plan.schema import Plan
from agentchemist.record.snapshots import save_snapshot
from agentchemist_interfaces.action import Dispense, ExecuteSubtask
from agentchemist_interfaces.msg import (AgentMessage, Anomaly, ChemicalReading, ExperimentPlan, FsmState,
                                         QuantityEstimate, RecorderStatus)
from agentchemist_interfaces.srv import DescribeScene
from agentchemist_ros.common.clock_acks import acknowledge_clock
from agentchemist_ros.common.heartbeats import watch_heartbeats
from agentchemist_ros.common.scene_service import FrontGeometry, declared_backend, declared_inventory, describe_front
from agentchemist_ros.common import images, messages, topics
from agentchemist_ros.common.answers import ask, call
from agentchemist_ros.common.logs import log
from agentchemist_ros.common.goals import dispense_goal, subtask_goal
from agentchemist_ros.common.operator_service import serve_pause
from agentchemist_ros.common.params import declare, declare_config
from agentchemist_ros.common.peer_waits import peer_waits, recorder_waits
from agentchemist_ros.common.qos import FSM, LATCHED, READINGS, RELIABLE, SENSOR
from agentchemist_ros.common.runner import spin_node
from agentchemist_ros.common.timeconv import node_now, to_sec


class VisionSupervisorNode(GuardedNode):
    def __init__(self, **kwargs):
        super().__init__("vision_supervisor", **kwargs)
        self.clock_ack = acknowledge_clock(self)  # in its own process: the twin keeps within reach
        self.runs_dir = Path(declare(self, "runs_dir", "runs", "Folder of the experiment run folders"))
        self.require_scene = declare(self, "require_scene_check", True,
                                     "Check the preconditions on the front camera before the first action")
        self.sup_config = declare_config(self, SupervisionConfig)  # the core's thresholds, ranges and units
        self.region = LiquidRegionConfig(marker_id=declare(
            self, "beaker_marker_id", 1, "ArUco id of the titration beaker (agentchemist/workcell/tags.py)", low=0, high=49))
        self.vision_backend, self.inventory_file = declared_backend(self), declared_inventory(self)
        # DDS discovery of another node's action server can take seconds on a loaded machine (answers.py).
        self.agent_wait_s = declare(self, "agent_wait_s", 15.0, "Wall seconds to wait for an agent's action server "
                                    "or service to show in the ROS graph, and then for its answer, before the run "
                                    "aborts with agent_unavailable", low=0.1, high=300.0)
        self.lock = threading.RLock()
        self.ex: Executor | None = None   # the running experiment's executor
        self.frames = FrameProblems()     # bad front frames, once per episode
        self.experiment_id = ""
        self.front = self.recorder_status = self.ack_wait = self.back_wait = self.ph_calibration = None
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
        self.front_geometry = FrontGeometry(self)  # CameraInfo and aligned depth: the tags' 3-D poses
        self.create_subscription(RecorderStatus, topics.RECORDER_STATUS, self.on_recorder, LATCHED)
        watch_heartbeats(self, lambda m: self.event(Executor.on_heartbeat, m.node, m.instance, node_now(self)))
        self.create_subscription(String, topics.PH_CALIBRATION, self.on_calibration, LATCHED)
        self.policy = ActionClient(self, ExecuteSubtask, topics.EXECUTE_SUBTASK, callback_group=self.group)
        peer_waits(self)  # its publisher matched before the first request (common/answers.py uses it)
        self.dispenser = ActionClient(self, Dispense, topics.DISPENSE, callback_group=self.group)
        self.tare_client = self.create_client(Trigger, topics.BALANCE_TARE, callback_group=self.group)
        self.create_service(DescribeScene, topics.DESCRIBE_SCENE, self.describe, callback_group=self.group)
        serve_pause(self)  # a person's pause and resume (the console's buttons; agentchemist.fsm.operator)
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
            if self.ex is not None and self.ex.running:  # one experiment at a time: the running one untouched
                return self.carry_out(busy_refusal(msg.experiment_id, self.experiment_id))
            self.experiment_id, self.frames = msg.experiment_id, FrameProblems()
            try:
                plan = Plan.model_validate_json(msg.plan_json)
                if plan.experiment_id != msg.experiment_id:  # the message's id names the run folder
                    raise ValueError(f"the message's experiment_id {msg.experiment_id!r} is not the plan's")
                if stale := plan_age_problem(to_sec(msg.stamp), now, self.sup_config.max_plan_age_s):
                    raise ValueError(stale)
                self.ex = Executor(plan, now, self.sup_config, self.region, self.frames, self.ph_calibration)
            except (InvalidMachineError, ValueError) as exc:
                self.ex = None
                self.carry_out(rejected(exc))
                return
            self.carry_out([self.ex.initial_state()])
        self.get_logger().info(f"running experiment {msg.experiment_id}")
        self.event(Executor.start, now, self.front, self.require_scene)
        self.on_recorder(self.recorder_status)

    def on_message(self, msg):
        if msg.receiver == self.get_name() and msg.sender != self.get_name():
            self.event(Executor.on_agent_symbol, msg.symbol, to_sec(msg.stamp) or node_now(self), msg.sender,
                       msg.subtask_id)

    def on_reading(self, msg):
        if msg.quantity == "temperature":
            self.event(Executor.on_temperature, msg.value, to_sec(msg.header.stamp))
        elif msg.quantity == "pH":
            noise = msg.noise if math.isfinite(msg.noise) and msg.noise >= 0.0 else None
            self.event(Executor.on_ph, to_sec(msg.header.stamp), msg.value, noise)

    def on_calibration(self, msg):
        self.ph_calibration = msg.data  # latched, usually long before a plan: each executor gets the latest
        self.event(Executor.on_calibration, msg.data)

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
        elif msg.kind == "audio_noise" and (msg.resolved or msg.severity != "info"):  # info: a pour, no pause
            self.event(Executor.on_audio_noise, msg.resolved, to_sec(msg.stamp))

    def on_recorder(self, msg):
        self.recorder_status = msg  # the latest: a status from before the plan acknowledges it too
        if msg is not None:
            self.event(Executor.on_recorder_status, msg.experiment_id, msg.recording, to_sec(msg.stored_through),
                       node_now(self), self.front)
        recorder_waits(self)

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
        camera, depth, _ = self.front_geometry.for_frame(frame, node_now(self))  # the floor in 3-D, where known
        self.event(Executor.on_frame, to_sec(msg.header.stamp), frame, camera, depth)

    def check_timeouts(self):
        try:
            self.event(Executor.on_tick, node_now(self))
        except FsmTimeError as exc:  # the clock went back (a restart, another graph): no timing can be trusted
            self.abort(f"the ROS clock went back during the experiment: {exc}", "clock_jump")
        recorder_waits(self)

    def report_failure(self, text):
        super().report_failure(text)  # its own callback failed (it ignores its own anomalies): stop the run
        self.abort(f"vision_supervisor: {text}", "node_error", self.experiment_id)

    def running(self, experiment_id) -> bool:
        with self.lock:
            return self.experiment_id == experiment_id and self.ex is not None and self.ex.running

    def abort(self, reason, kind, experiment=None) -> bool:
        """Abort the running experiment (only `experiment`, when given); False when it was not aborted."""
        if experiment is not None and not self.running(experiment):
            return False
        with self.lock:
            effects = self.ex.abort(reason, kind, node_now(self)) if self.ex is not None else idle_abort(reason, kind)
        self.carry_out(effects)
        return True

    # ------------------------------------------------------------------ effects
    def carry_out(self, effects):
        """Do what the executor decided, in order (agentchemist.fsm.effects); decide nothing here."""
        for e in effects:
            now, exp = node_now(self), self.experiment_id
            if isinstance(e, PublishState):
                self.fsm_pub.publish(messages.fsm_state(e, exp, now))
            elif isinstance(e, Tell):
                self.msg_pub.publish(messages.agent_message(e, exp, self.get_name(), now))
            elif isinstance(e, Report):
                state = self.ex.machine.state if self.ex else ""
                self.anomaly_pub.publish(messages.anomaly(e, exp, self.get_name(), state, now))
            elif isinstance(e, Snapshot) and self.front is not None and exp:
                path = save_snapshot(self.runs_dir, exp, e.label, now, self.front)
                self.carry_out([Tell("recorder", "artifact", "", {"kind": "snapshot", "path": str(path),
                                                                  "label": e.label})])
            elif isinstance(e, SendGoal) and e.goal is None:
                goal = subtask_goal(exp, e.task, e.payload)
                self.ask(self.policy, lambda g=goal: self.policy.send_goal_async(g), "the action policy", e.task,
                         self.on_policy_accepted)
            elif isinstance(e, SendGoal):
                self.send_dispense_goal(e)
            elif isinstance(e, CallTare):
                self.tare()
            elif isinstance(e, Cancel):
                handle = self.dispense_goal if e.agent == "dispenser_controller" else self.policy_goal
                if handle is not None:
                    handle.cancel_goal_async()
            elif isinstance(e, PublishHue):
                self.qty_pub.publish(messages.hue_estimate(e, exp))
            elif isinstance(e, Log):
                log(self.get_logger(), e.level, e.text)

    def ask(self, client, send, agent, task, on_handle, **kw):
        """A goal for the running experiment (common/answers.py); silence aborts it as agent_unavailable."""
        experiment = self.experiment_id
        ask(self, client, send, what=agent, subtask_id=task.id, wait_s=self.agent_wait_s,
            running=lambda: self.running(experiment), on_handle=lambda handle: on_handle(task, handle),
            on_silent=lambda why: self.abort(why, "agent_unavailable", experiment), **kw)

    def on_policy_accepted(self, task, handle):
        if not handle.accepted:
            return self.abort(f"action policy refused subtask {task.id}", "subtask_refused")
        self.policy_goal = handle
        handle.get_result_async().add_done_callback(lambda f, t=task: self.on_policy_result(t, f))

    def on_policy_result(self, task, future):
        self.policy_goal, r = None, future.result().result
        self.event(Executor.on_policy_result, task, r.success, r.symbol, r.message, node_now(self))

    def send_dispense_goal(self, e):
        """A Dispense goal: a stop or a hold on its way cancels it on arrival (fsm/dispensing.DispenseBook)."""
        goal = dispense_goal(self.experiment_id, e.task.id, e.goal)
        book = self.ex.book
        self.ask(self.dispenser, lambda: self.dispenser.send_goal_async(goal), "the dispenser controller", e.task,
                 self.on_dispense_accepted, wanted=lambda: not book.stopped, settled=book.settled)

    def on_dispense_accepted(self, task, handle):
        self.dispense_goal = handle
        with self.lock:
            cancel = self.ex is not None and self.ex.book.accepted()  # held or stopped while on its way
        if cancel:
            handle.cancel_goal_async()
        handle.get_result_async().add_done_callback(lambda f, t=task: self.on_dispense_result(t, f))

    def on_dispense_result(self, task, future):
        self.dispense_goal, r = None, future.result().result
        self.get_logger().info(f"dispensing stopped: {r.stop_reason} ({r.message}), {r.dispensed_ml:.3f} mL, "
                               f"{r.drops} drops")
        outcome = DispenseOutcome(r.success, r.stop_reason, r.message, r.dispensed_ml, r.drops)
        self.event(Executor.on_dispense_result, task, outcome, node_now(self))

    def tare(self):
        """The tare subtask; tare_ok follows from the readings (Supervision.on_mass), not from the service."""
        experiment = self.experiment_id

        def tared(response):
            if response.success:
                self.event(Executor.on_tared, node_now(self))
            else:
                self.abort(f"the balance did not tare: {response.message}", "tare_failed")

        call(self, self.tare_client, Trigger.Request(), what="the balance", wait_s=self.agent_wait_s,
             running=lambda: self.running(experiment), on_response=tared,
             on_silent=lambda why: self.abort(why, "balance_unavailable"))

    def describe(self, request, response):
        return describe_front(self.front, self.vision_backend, node_now(self), request, response, self.inventory_file,
                              self.front_geometry)

def main(args=None):
    spin_node(VisionSupervisorNode, args)


if __name__ == "__main__":
    main()
