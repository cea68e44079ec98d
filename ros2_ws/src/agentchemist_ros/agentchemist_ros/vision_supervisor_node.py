"""vision_supervisor: the scheduler. Owns the experiment FSM (agentchemist.fsm.supervision), checks the
scene before anything moves, dispatches subtasks to the action policy and the dispenser, turns pH
readings and the liquid colour (agentchemist.perception.colour) into ph_stable / colour_stable /
endpoint / verified, and escalates anomalies.

Colour endpoints (the plan's vision.endpoint == "colour"): every front frame's liquid hue goes to the
recorder as a vision-channel QuantityEstimate (quantity colour_hue, unit deg). The dispenser is held by
cancelling its goal (a candidate change, a stale camera) and resumed with a new goal for the rest of
the volume cap. Bad images, unreadable colour and out-of-range readings are anomalies, once per
episode, and never advance the machine.

Faults of the bench and the sensors (agentchemist.fsm.supervision): every front frame's ArUco tags are
compared with the scene check's (labware missing or moved: pause, anomaly, resume or abort); the audio
supervisor's audio_noise pauses dispensing until the microphone hears again; a frozen pH meter takes no
decision. Pauses go to the dispenser as `hold` / `release` messages (its goal goes on afterwards).
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

from agentchemist.fsm.commands import (Abort, Apply, HoldDispensing, PauseDispensing, Report, ResumeDispensing,
                                       StopDispensing, UnpauseDispensing)
from agentchemist.fsm.dispensing import DispenseBook, DispenseOutcome, Next, pour_goal
from agentchemist.fsm.errors import FsmTimeError, InvalidMachineError
from agentchemist.fsm.own_moves import OwnMoves
from agentchemist.fsm.supervision import COLOUR_WATCH_STATES, Supervision, SupervisionConfig
from agentchemist.bench.tags import MARKER_TABLE
from agentchemist.perception.colour import BeakerColourTracker, ColourError, LiquidRegionConfig
from agentchemist.perception.colour_change import HueReadingError
from agentchemist.perception.dissolution import DissolutionError, DissolutionWatch
from agentchemist.perception.frozen_reading import FrozenConfig
from agentchemist.perception.ph_stability import ReadingError
from agentchemist.perception.scene import LabwareWatchConfig, describe_scene
from agentchemist.perception.tags import detect_markers
from agentchemist.perception.vlm import VlmError, make_backend
from agentchemist.plan.schema import Plan
from agentchemist_interfaces.action import Dispense, ExecuteSubtask
from agentchemist_interfaces.msg import (AgentMessage, Anomaly, ChemicalReading, ExperimentPlan, FsmState,
                                         QuantityEstimate, SceneObject)
from agentchemist_interfaces.srv import DescribeScene
from agentchemist_ros.common import images, topics
from agentchemist_ros.common.anomaly import make_anomaly
from agentchemist_ros.common.answers import DROPPED, answered
from agentchemist_ros.common.params import declare
from agentchemist_ros.common.qos import FSM, LATCHED, READINGS, RELIABLE, SENSOR
from agentchemist_ros.common.runner import spin_node
from agentchemist_ros.common.timeconv import node_now, to_msg, to_sec


class VisionSupervisorNode(Node):
    def __init__(self, **kwargs):
        super().__init__("vision_supervisor", **kwargs)
        self.runs_dir = Path(declare(self, "runs_dir", "runs", "Folder of the experiment run folders"))
        self.require_scene = declare(self, "require_scene_check", True,
                                     "Check the preconditions on the front camera before the first action")
        self.sup_config = SupervisionConfig(
            stale_camera_s=declare(self, "camera_stale_s", 10.0,
                                   "No usable front image this long (s) while a colour endpoint is watched: "
                                   "anomaly + hold",
                                   low=0.5, high=600.0),
            colour_max_gap_s=declare(self, "colour_max_gap_s", 2.0,
                                     "A longer gap between usable frames restarts a colour confirmation (s)",
                                     low=0.1, high=60.0),
            colour_confirm_frames=declare(self, "colour_confirm_frames", 3,
                                          "Frames a colour change must hold before the endpoint", low=1, high=100),
            frozen=FrozenConfig(resolution=declare(self, "ph_resolution", 0.001,
                                                   "Display step of the pH meter (pH): identical readings "
                                                   "its noise makes improbable are a frozen meter",
                                                   low=1e-6, high=1.0)),
            labware=LabwareWatchConfig(
                move_tolerance_px=declare(self, "labware_move_tolerance_px", 8.0,
                                          "A tag this far (front image px) from where the scene check saw it: "
                                          "the item moved", low=0.5, high=500.0),
                confirm_frames=declare(self, "labware_confirm_frames", 2,
                                       "Consecutive front frames an item must be missing or moved before it is "
                                       "an anomaly (the first one already holds dispensing)", low=1, high=100),
                return_timeout_s=declare(self, "labware_return_timeout_s", 30.0,
                                         "An item not back in place this long after it was first missed: abort",
                                         low=1.0, high=3600.0)),
        )
        self.region = LiquidRegionConfig(marker_id=declare(self, "beaker_marker_id", 1,
                                                           "ArUco id of the titration beaker (agentchemist/bench/tags.py)",
                                                           low=0, high=49))
        self.tracker = BeakerColourTracker(self.region)
        backend = declare(self, "vision_backend", "opencv",
                          "Scene description backend: opencv (default) | openai (an OpenAI-compatible VLM endpoint)")
        vlm = {"base_url": declare(self, "vlm_base_url", "", "OpenAI-compatible endpoint, e.g. http://host:8000/v1"),
               "model": declare(self, "vlm_model", "", "Model name served at vlm_base_url"),
               "timeout_s": declare(self, "vlm_timeout_s", 20.0, "Timeout of one VLM request (s)", low=0.1, high=600.0)}
        self.vision_backend = make_backend("opencv") if backend == "opencv" else make_backend(backend, **vlm)
        self.lock = threading.RLock()
        self.sup: Supervision | None = None
        self.book = DispenseBook()      # the dispensing subtask's goals (agentchemist.fsm.dispensing)
        self.policy_goal = None         # the running action-policy goal (an abort cancels it)
        self.last_hue = None
        self.frame_problem = ("", "")   # (kind, stage) of the open bad-frame anomaly (once per episode)
        self.experiment_id = ""
        self.front = None
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
        self.dispense_goal = None
        # DDS discovery of another node's action server can take seconds on a loaded machine: a request goes
        # out once the graph shows the agent or after this wait anyway, and the agent counts as not running
        # only when that request gets no answer within this wait again (common/answers.py).
        self.agent_wait_s = declare(self, "agent_wait_s", 15.0,
                                    "Wall seconds to wait for an agent's action server or service to show in the "
                                    "ROS graph, and then for its answer, before the run aborts with "
                                    "agent_unavailable", low=0.1, high=300.0)
        self.tare_client = self.create_client(Trigger, topics.BALANCE_TARE, callback_group=self.group)
        self.dissolution = DissolutionWatch()
        self.own_moves = OwnMoves()  # the robot's own labware moves: the bench watch restarts after each
        self.balance_problem = False
        self.create_service(DescribeScene, topics.DESCRIBE_SCENE, self.describe, callback_group=self.group)
        self.create_timer(0.5, self.check_timeouts)

    # ------------------------------------------------------------------ plan -> machine
    def on_plan(self, msg):
        now = node_now(self)
        with self.lock:
            if msg.experiment_id == self.experiment_id:
                return
            self.experiment_id = msg.experiment_id
            try:
                plan = Plan.model_validate_json(msg.plan_json)
                self.sup = Supervision(plan, now, self.sup_config)
                self.book = DispenseBook()
                self.last_hue, self.frame_problem = None, ("", "")
                self.tracker.reset()
                self.dissolution = DissolutionWatch()
                self.own_moves.reset()
                self.balance_problem = False
            except InvalidMachineError as exc:
                self.sup = None
                self.report("invalid_plan", "halt", "plan rejected: " + "; ".join(exc.reasons), response="abort")
                self.publish_state("aborted", "", "reject", terminal=True)
                return
            except ValueError as exc:
                self.sup = None
                self.report("invalid_plan", "halt", f"plan rejected: {exc}", response="abort")
                self.publish_state("aborted", "", "reject", terminal=True)
                return
            self.publish_state(self.sup.machine.state, "", "")
        self.get_logger().info(f"running experiment {msg.experiment_id}")
        if self.require_scene and not self.scene_ok(now):
            return
        self.start_watch()
        self.snapshot("start")
        self.dispatch()

    def start_watch(self, frame=None):
        """The bench as the scene check saw it (or as the robot left it after moving labware) is the one to
        keep during the run; items the robot holds are not part of it."""
        frame = self.front if frame is None else frame
        if frame is None:
            self.get_logger().warn("no front image at the start: the bench is not watched during this run")
            return
        held = {m for m, info in MARKER_TABLE.items() if info.labware_id in self.own_moves.held}
        seen = {m: uv for m, uv in detect_markers(frame).items() if m not in held}
        with self.lock:
            if self.sup is not None:
                self.sup.start_watch(seen, frame.shape[1])

    def weighing(self) -> bool:
        with self.lock:
            return self.sup is not None and self.sup.mass is not None

    def suspend_watch(self):
        """The robot itself is about to move labware (weighing: the beaker between balance and stirrer,
        the bottle into the gripper): its own moves are not faults of the bench."""
        self.own_moves.moving()  # no frame is the bench before this motion is over
        with self.lock:
            if self.sup is None:
                return
            self.sup.watch = None
            commands = self.sup.unpause("labware")
        self.run_commands(commands, node_now(self))

    def scene_ok(self, now):
        frame = self.front
        if frame is None:
            self.abort("no front camera image: cannot check the scene before moving", "scene_unavailable")
            return False
        desc = describe_scene(frame)
        with self.lock:
            required = list(self.sup.plan.module_instantiation.vision.preconditions) if self.sup else []
        # Only the plan's preconditions are required (a weighing needs no probe in the beaker); one the
        # front camera cannot judge is not taken as met.
        failed = {k: desc.reasons.get(k, "") if k in desc.checks else "the front camera check does not know it"
                  for k in required if not desc.checks.get(k, False)}
        if failed:
            self.abort("preconditions not met: " + "; ".join(f"{k}: {v}" for k, v in failed.items()),
                       "precondition_failed")
            return False
        return True

    # ------------------------------------------------------------------ dispatch
    def dispatch(self):
        with self.lock:
            if self.sup is None:
                return
            tasks = self.sup.dispatchable()
        for task in tasks:
            self.msg_pub.publish(AgentMessage(
                stamp=to_msg(node_now(self)), experiment_id=self.experiment_id, sender=self.get_name(),
                receiver=task.receiver, subtask_id=task.id, instruction=task.description,
                target_state=task.expected_transition.target if task.expected_transition else "",
                symbol="dispatch", payload_json=json.dumps({"primitive": task.primitive,
                                                            "parameters": task.parameters})))
            if task.receiver == "action_policy":
                self.send_policy_goal(task)
            elif task.receiver == "dispenser_controller":
                self.send_dispense_goal(task)
            elif task.receiver == "vision_supervisor":
                if task.primitive == "tare":
                    self.tare(task)
                # verification runs on the pH stream (Supervision.on_ph), the balance or the camera
            elif task.receiver == "summarizer":
                with self.lock:
                    self.sup.subtask_finished(task.id, True)

    def send_policy_goal(self, task):
        if self.weighing():
            self.suspend_watch()
        symbol = task.expected_transition.symbol if task.expected_transition else ""
        goal = ExecuteSubtask.Goal(experiment_id=self.experiment_id, subtask_id=task.id, instruction=task.description,
                                   target_state=task.expected_transition.target if task.expected_transition else "",
                                   payload_json=json.dumps({"primitive": task.primitive, "symbol": symbol,
                                                            "parameters": task.parameters}))
        self.ask(self.policy, lambda: self.policy.send_goal_async(goal), "the action policy", task,
                 self.on_policy_accepted)

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

    def ask_dispenser(self, task, send):
        """A Dispense goal: while it is on its way a stop or a hold cancels it on arrival, and a resume
        leaves it be (agentchemist.fsm.dispensing.DispenseBook)."""
        book = self.book
        book.sending()
        self.ask(self.dispenser, send, "the dispenser controller", task, self.on_dispense_accepted,
                 wanted=lambda: not book.stopped, settled=book.settled)

    def running(self, experiment_id) -> bool:
        with self.lock:
            return self.experiment_id == experiment_id and self.sup is not None and not self.sup.machine.terminal

    def on_policy_accepted(self, task, handle):
        if not handle.accepted:
            self.abort(f"action policy refused subtask {task.id}", "subtask_refused")
            return
        self.policy_goal = handle
        handle.get_result_async().add_done_callback(lambda f, t=task: self.on_policy_result(t, f))

    def on_policy_result(self, task, future):
        self.policy_goal = None
        result = future.result().result
        now = node_now(self)
        if not result.success:
            with self.lock:
                self.sup.subtask_finished(task.id, False, result.message)
            self.abort(f"subtask {task.id} failed: {result.message}", "subtask_failed")
            return
        with self.lock:
            self.sup.subtask_finished(task.id, True)
        if self.weighing():
            held = str(task.parameters.get("object", "")) if task.primitive == "grasp" else None
            self.own_moves.moved(now, held)  # the first frame after the motion is the bench to keep
        self.apply(result.symbol, now, "action_policy", task.id)

    def tare(self, task):
        """The tare subtask: the balance zeroes with the beaker (and its water) on the pan; tare_ok follows
        from the readings (Supervision.on_mass), not from the service's word."""
        experiment = self.experiment_id
        answered(self, ready=self.tare_client.service_is_ready, wait_s=self.agent_wait_s, what="the balance",
                 wanted=lambda: self.running(experiment),
                 send=lambda: self.tare_client.call_async(Trigger.Request())).add_done_callback(
            lambda f, t=task: self.on_tared(t, f, experiment))

    def on_tared(self, task, future, experiment):
        response = future.result()
        if response is DROPPED or not self.running(experiment):
            return
        if response is None:
            self.abort(f"the balance offers no tare service ({topics.BALANCE_TARE}: no answer; agent_wait_s "
                       f"{self.agent_wait_s:g} s)", "balance_unavailable")
            return
        if not response.success:
            self.abort(f"the balance did not tare: {response.message}", "tare_failed")
            return
        with self.lock:
            if self.sup is not None and self.sup.mass is not None:
                self.sup.mass.tare_sent(node_now(self))

    def send_solid_goal(self, task):
        """Pour a mass of solid (the dispenser's solid_pour mode); the balance decides target_mass."""
        g = pour_goal(task.parameters)
        goal = Dispense.Goal(experiment_id=self.experiment_id, subtask_id=task.id, mode="solid_pour",
                             target_mass_g=g.target_mass_g, mass_tolerance_g=g.mass_tolerance_g,
                             tilt_rate_deg_s=g.tilt_rate_deg_s, side=g.side,
                             wait_on_change_threshold=g.wait_on_change_threshold,
                             stable_window_s=g.stable_window_s, settle_each_drop=g.settle_each_drop)
        self.book.task = task
        # The tilted bottle hangs over the beaker and hides its tag from the front camera: the robot's own
        # pour is not a missing beaker. The bench is watched again from the first frame after the pour.
        self.suspend_watch()
        self.apply("dose", node_now(self), self.get_name(), task.id)
        self.ask_dispenser(task, lambda: self.dispenser.send_goal_async(goal))

    def send_dispense_goal(self, task, resume=False):
        if task.primitive == "pour_solid":
            self.send_solid_goal(task)
            return
        now = node_now(self)
        with self.lock:
            commands = [] if resume else self.sup.start_dispensing(now, self.sup.last_ph)
            g = self.book.drop_goal(task, colour_endpoint=self.sup.colour_endpoint,
                                    ph_direction=self.sup.ph_direction, resume=resume)
        self.run_commands(commands, now)
        if isinstance(g, str):
            self.abort(g, "endpoint_not_reached")
            return
        goal = Dispense.Goal(experiment_id=self.experiment_id, subtask_id=task.id, target_volume_ml=g.target_volume_ml,
                             use_target_ph=g.target_ph is not None, target_ph=g.target_ph or 0.0,
                             ph_direction=g.ph_direction, rate_mm_s=g.rate_mm_s,
                             wait_on_change_threshold=g.wait_on_change_threshold, stable_window_s=g.stable_window_s,
                             settle_each_drop=g.settle_each_drop, resume_on_command=g.resume_on_command)
        if not resume:
            self.apply("titrate", now, self.get_name(), task.id)
        self.ask_dispenser(task, lambda: self.dispenser.send_goal_async(goal))

    def on_dispense_accepted(self, task, handle):
        self.dispense_goal = handle
        if self.book.accepted():  # held or stopped while the goal was on its way
            handle.cancel_goal_async()
        handle.get_result_async().add_done_callback(lambda f, t=task: self.on_dispense_result(t, f))

    def on_dispense_result(self, task, future):
        result = future.result().result
        self.dispense_goal = None
        if self.weighing():
            self.own_moves.moved(node_now(self))
        self.get_logger().info(f"dispensing stopped: {result.stop_reason} ({result.message}), "
                               f"{result.dispensed_ml:.3f} mL, {result.drops} drops")
        outcome = DispenseOutcome(result.success, result.stop_reason, result.message, result.dispensed_ml,
                                  result.drops)
        with self.lock:
            if self.sup is None:
                return
            sup = self.sup
            step = self.book.decide_result(outcome, state=sup.machine.state, colour_endpoint=sup.colour_endpoint,
                                           terminal=sup.machine.terminal, subtask_done=task.id in sup.scheduler.done)
            if step is Next.FINISHED:
                sup.subtask_finished(task.id, True)
                if sup.mass is not None:
                    sup.mass.dispenser_finished()  # target_mass waits for the balance to agree
            elif step is Next.FAILED:
                sup.subtask_finished(task.id, False, result.message)
        if step is Next.FINISHED:
            self.dispatch()
        elif step is Next.CAP_WITHOUT_COLOUR:
            self.abort(f"the volume cap was dispensed ({result.dispensed_ml + self.book.dispensed_before_ml:.3f} "
                       "mL) without the colour change", "endpoint_not_reached")
        elif step is Next.RESUME:
            self.send_dispense_goal(task, resume=True)
        elif step is Next.FAILED:
            self.abort(f"dispensing failed: {result.stop_reason}: {result.message}", "dispense_failed")

    # ------------------------------------------------------------------ events
    def on_message(self, msg):
        if msg.receiver != self.get_name() or msg.sender == self.get_name():
            return
        if msg.symbol in ("drop", "tap"):
            self.apply(msg.symbol, to_sec(msg.stamp) or node_now(self), msg.sender, msg.subtask_id)

    def on_reading(self, msg):
        with self.lock:
            sup = self.sup
            if sup is None:
                return
            if msg.quantity == "temperature":
                try:
                    sup.on_temperature(msg.value)
                except ReadingError as exc:
                    self.report("bad_reading", "warn", f"temperature reading refused: {exc}")
                return
            if msg.quantity != "pH":
                return
            noise = msg.noise if math.isfinite(msg.noise) and msg.noise >= 0.0 else None
            try:
                commands = sup.on_ph(to_sec(msg.header.stamp), msg.value, noise)
            except ReadingError as exc:
                self.report("bad_reading", "warn", f"pH reading refused: {exc}")
                return
        self.run_commands(commands, to_sec(msg.header.stamp))

    def on_balance(self, msg):
        if msg.quantity != "mass":
            return
        stamp = to_sec(msg.header.stamp)
        with self.lock:
            if self.sup is None or self.sup.mass is None:
                return
            try:
                commands = self.sup.on_mass(stamp, msg.value)
            except ReadingError as exc:
                problem = f"balance reading refused: {exc}"
            else:
                problem = ""
        if problem:
            if not self.balance_problem:  # once per episode, not at the balance's rate
                self.balance_problem = True
                self.report("bad_reading", "warn", problem)
            return
        if self.balance_problem:
            self.balance_problem = False
            self.report("bad_reading", "info", "balance readings are valid again", resolved=True)
        self.run_commands(commands, stamp)

    def run_commands(self, commands, stamp):
        """Carry out what the supervision core decided (agentchemist.fsm.commands); decide nothing here."""
        for cmd in commands:
            if isinstance(cmd, StopDispensing):
                if self.book.stop() and self.dispense_goal is not None:  # one on its way: cancelled on arrival
                    self.dispense_goal.cancel_goal_async()
            elif isinstance(cmd, HoldDispensing):
                if self.book.hold():
                    self.get_logger().info(f"holding the dispenser: {cmd.reason}")
                    if self.dispense_goal is not None:
                        self.dispense_goal.cancel_goal_async()
            elif isinstance(cmd, ResumeDispensing):
                with self.lock:
                    watching = self.sup is not None and self.sup.machine.state in COLOUR_WATCH_STATES
                if self.book.resume(watching):
                    self.get_logger().info(f"resuming the dispenser: {cmd.reason}")
                    self.send_dispense_goal(self.book.task, resume=True)
            elif isinstance(cmd, (PauseDispensing, UnpauseDispensing)):
                # The dispenser holds its goal (position, volume, high-water mark) and goes on afterwards.
                symbol = "hold" if isinstance(cmd, PauseDispensing) else "release"
                self.get_logger().info(f"{symbol} the dispenser: {cmd}")
                task_id = self.book.task.id if self.book.task is not None else ""
                self.tell("dispenser_controller", symbol, task_id, {"reason": cmd.reason})
            elif isinstance(cmd, Apply):
                self.apply(cmd.symbol, stamp, self.get_name(), "", cmd.detail)
            elif isinstance(cmd, Report):
                self.report(cmd.kind, cmd.severity, cmd.description, response=cmd.response, resolved=cmd.resolved)
                if cmd.kind.startswith("labware_") and cmd.severity == "warn":
                    self.snapshot("anomaly")
            elif isinstance(cmd, Abort):
                self.abort(cmd.reason, cmd.kind)

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
            # No drop can be heard: none may be squeezed (the dispenser relies on hearing each one).
            with self.lock:
                if self.sup is None:
                    return
                commands = self.sup.unpause("audio_noise") if msg.resolved else self.sup.pause("audio_noise")
            self.run_commands(commands, to_sec(msg.stamp))

    def on_front(self, msg):
        stamp = to_sec(msg.header.stamp)
        try:
            frame = images.to_rgb(msg)
        except images.ImageEncodingError as exc:
            self.frame_issue("bad_image", "image", f"front camera: {exc}")
            return
        if frame.ndim != 3:
            self.frame_issue("bad_image", "image", f"front camera sends {msg.encoding}: colour tracking and scene "
                                                   "checks need rgb8 or bgr8")
            return
        self.front = frame
        self.frame_ok("image", "front camera images are readable again")
        if self.own_moves.rebaseline(stamp):
            self.start_watch(frame)
        with self.lock:
            sup = self.sup
            watching = sup is not None and sup.watch is not None and not sup.machine.terminal
            dissolving = (sup is not None and sup.mass is not None
                          and sup.machine.state in ("dissolving", "solution_ready"))
        if dissolving:
            self.watch_dissolution(stamp, frame)
        if watching:
            seen = detect_markers(frame)
            with self.lock:
                commands = sup.on_scene(stamp, seen)
            self.run_commands(commands, stamp)
        with self.lock:
            track = sup is not None and sup.track_colour and not sup.machine.terminal
        if not track:
            return
        try:
            m = self.tracker.measure(frame, stamp)
        except ColourError as exc:
            self.frame_issue("colour_unreadable", "colour", f"front camera: {exc}")
            return
        with self.lock:
            try:
                commands = sup.on_colour(stamp, m.hue_deg, m.confidence)
            except HueReadingError as exc:
                self.frame_issue("bad_image", "colour", f"front camera colour refused: {exc}")
                return
            state = sup.machine.state
        self.frame_ok("colour", "front camera colour readable again")
        delta = 0.0 if self.last_hue is None else (m.hue_deg - self.last_hue + 180.0) % 360.0 - 180.0
        self.last_hue = m.hue_deg
        self.qty_pub.publish(QuantityEstimate(
            stamp=msg.header.stamp, experiment_id=self.experiment_id, quantity="colour_hue", unit="deg",
            channel="vision", value=float(m.hue_deg), delta=float(delta), confidence=float(m.confidence),
            fsm_state=state, subtask_id=self.book.task.id if self.book.task is not None else "",
            event_id=""))
        self.run_commands(commands, stamp)

    def watch_dissolution(self, stamp, frame):
        try:
            seen = self.dissolution.update(stamp, frame)
        except DissolutionError as exc:
            self.frame_issue("bad_image", "dissolution", f"front camera: cannot see the beaker's contents: {exc}")
            return
        self.frame_ok("dissolution", "front camera shows the beaker's contents again")
        with self.lock:
            commands = self.sup.on_dissolution(stamp, seen.solid_visible, seen.dissolved)
        self.run_commands(commands, stamp)

    def frame_issue(self, kind, stage, description):
        """A frame that says nothing: reported once until a frame passes the same `stage` (image: decoded;
        colour: hue measured; dissolution: contents seen), not at the frame rate."""
        if self.frame_problem == (kind, stage):
            return
        if self.frame_problem[0]:  # a different problem now: the earlier one is over
            self.report(self.frame_problem[0], "info", f"{self.frame_problem[0]} is over; now {description}",
                        resolved=True)
        self.frame_problem = (kind, stage)
        self.report(kind, "warn", description)

    def frame_ok(self, stage, description):
        """A frame passed `stage`: the open problem of that stage, or of decoding, is over."""
        if self.frame_problem[0] and self.frame_problem[1] in (stage, "image"):
            self.report(self.frame_problem[0], "info", description, resolved=True)
            self.frame_problem = ("", "")

    # ------------------------------------------------------------------ FSM
    def apply(self, symbol, now, source, subtask_id, detail=None):
        with self.lock:
            if self.sup is None or not symbol:
                return
            previous = self.sup.machine.state
            transition = self.sup.apply(symbol, now, source, subtask_id)
            if transition is None:
                return
            state = self.sup.machine.state
            self.publish_state(state, previous, symbol, subtask_id)
        if symbol == "ph_stable":
            self.tell("recorder", "ph_stable", subtask_id, {"ph": detail.get("ph") if detail else None}, now)
        if symbol in ("mass_stable", "target_mass") and detail:
            self.tell("recorder", "mass_settled", subtask_id, {"mass_g": detail.get("mass_g"),
                                                               "final": symbol == "target_mass"}, now)
        if symbol == "dissolved":
            self.tell("recorder", "dissolved", subtask_id, dict(detail or {}), now)
            self.snapshot("dissolved")
        if symbol == "target_mass":
            self.snapshot("weighed")
        if symbol in ("ph_stable", "colour_stable", "mass_stable"):
            # The solution settled after the drop: the dispenser may squeeze the next one.
            self.tell("dispenser_controller", "resume", subtask_id, {}, now)
        if symbol == "endpoint":
            self.snapshot("endpoint")
            task = self.book.task
            with self.lock:
                # a held (cancelled) dispenser has no result left to report: its subtask ends here
                if self.book.endpoint() and task.id not in self.sup.scheduler.done:
                    self.sup.subtask_finished(task.id, True)
        if symbol in ("endpoint", "verified"):
            with self.lock:
                temp = self.sup.last_temperature
            self.tell("recorder", symbol, subtask_id, {"ph": detail.get("ph") if detail else None,
                                                        "temperature_c": temp}, now)
        if state != previous or symbol in ("grasp_ok", "draw_ok", "act", "titrate", "verified"):
            self.dispatch()

    def publish_state(self, state, previous, symbol, subtask_id="", terminal=None):
        sup = self.sup
        accepting = bool(sup and sup.machine.accepting)
        self.fsm_pub.publish(FsmState(stamp=to_msg(node_now(self)), experiment_id=self.experiment_id, state=state,
                                      previous_state=previous, symbol=symbol, subtask_id=subtask_id,
                                      accepting=accepting,
                                      terminal=bool(terminal if terminal is not None else (sup and sup.machine.terminal))))

    def abort(self, reason, kind, experiment=None) -> bool:
        """Abort the running experiment (only `experiment`, when given: one that has ended already, or has
        been replaced, is not aborted again); False when it was not aborted for that."""
        if experiment is not None and not self.running(experiment):
            return False
        now = node_now(self)
        self.get_logger().error(f"abort: {reason}")
        self.report(kind, "halt", reason, response="abort")
        for goal in (self.dispense_goal, self.policy_goal):
            if goal is not None:  # the robot stops what it is doing for the experiment
                goal.cancel_goal_async()
        with self.lock:
            if self.sup is None or self.sup.machine.terminal:
                self.publish_state("aborted", "", "abort", terminal=True)
                return True
            previous = self.sup.machine.state
            self.sup.abort(reason, now)
            self.publish_state(self.sup.machine.state, previous, "abort", terminal=True)
        self.snapshot("anomaly")
        return True

    def check_timeouts(self):
        now = node_now(self)
        kind = "state_timeout"
        try:
            with self.lock:
                reason = self.sup.check_timeout(now) if self.sup else None
                commands = self.sup.check_camera(now) if self.sup and not reason else []
        except FsmTimeError as exc:
            # The clock went back under a running experiment (the twin or a bag restarted, or another
            # graph on this ROS domain): no timing can be trusted, so stop the run and say why.
            reason, kind, commands = f"the ROS clock went back during the experiment: {exc}", "clock_jump", []
        if reason:
            self.abort(reason, kind)
            return
        self.run_commands(commands, now)

    # ------------------------------------------------------------------ outputs
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

    def report(self, kind, severity, description, response="", resolved=False):
        with self.lock:
            state = self.sup.machine.state if self.sup else ""
        self.anomaly_pub.publish(make_anomaly(now=node_now(self), experiment_id=self.experiment_id,
                                              source=self.get_name(), kind=kind, severity=severity,
                                              description=description, fsm_state=state, response=response,
                                              resolved=resolved))

    def describe(self, request, response):
        frame = self.front
        response.header.stamp = to_msg(node_now(self))
        response.header.frame_id = "front_camera"
        if request.camera not in ("", "front"):
            response.success, response.message = False, f"camera {request.camera!r} is not used for scene checks"
            return response
        if frame is None:
            response.success, response.message = False, "no front camera image received yet"
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
