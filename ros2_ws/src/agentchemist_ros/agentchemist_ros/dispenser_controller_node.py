"""dispenser_controller: the Dispense action server (modes drops and solid_pour) and the Calibrate service.

The domain logic is agentchemist.control.dispense_session.DispenseSession (who has the gripper, the supervisor's
standing holds, the experiment's cumulative titrant volume, what each control tick sends, the action result); this
node translates messages, declares parameters, and owns the ROS-clock control timer, the QoS and the lock. It sends
gripper (drops, calibration) or arm (solid_pour) commands and publishes QuantityEstimates, anomalies, `tap`s and its
DispenserState (goal start, every controller transition, goal end; the audio supervisor and the recorder read it). A
bad goal is refused with its reason; nothing moves. The vision supervisor's `hold` / `release` / `resume` messages
pace it; holds outlive a goal. Calibrate is a coroutine awaiting a Future the timer completes (common/waiting.py),
refused while a Dispense goal runs.
"""
import threading
from dataclasses import asdict

from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from agentchemist_ros.common.guarded import GuardedNode
from rclpy.task import Future
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory

from agentchemist.contracts import Symbol
from agentchemist.control.dispense_session import (CALIBRATION, DROPS, SOLID_POUR, DispenserConfig, DispenseSession,
                                                   Refusal, SolidPourConfig, StateChange, refused)
from agentchemist.fsm.episodes import Episodes
from agentchemist.perception.ph_stability import ReadingError
from agentchemist_interfaces.action import Dispense
from agentchemist_interfaces.srv import Calibrate
from agentchemist_interfaces.msg import (AgentMessage, Anomaly, AudioEvent, ChemicalReading, DispenserState,
                                         QuantityEstimate)
from agentchemist_ros.common.clock_acks import InputProgress, acknowledge_clock
from agentchemist_ros.common import topics
from agentchemist_ros.common.anomaly import make_anomaly
from agentchemist_ros.common.calibration import declare_calibration
from agentchemist_ros.common.codec import encode_note, hold_reason
from agentchemist_ros.common.goals import RequestError, dispense_request
from agentchemist_ros.common.heartbeats import watch_heartbeats
from agentchemist_ros.common.params import declare, declare_config
from agentchemist_ros.common.peer_waits import hold_until
from agentchemist_ros.common.runner import spin_node
from agentchemist_ros.common.qos import FSM, READINGS, RELIABLE
from agentchemist_ros.common.services import respond_when_done
from agentchemist_ros.common.timeconv import node_now, to_msg, to_sec
from agentchemist_ros.common.trajectories import arm_point


class DispenserControllerNode(GuardedNode):
    # Read-only views of what the session holds (the graph tests wait on them).
    measured_mm = property(lambda self: self.session.opening_mm)
    arm_positions = property(lambda self: self.session.arm_positions)
    config = property(lambda self: self.session.config)
    controller = property(lambda self: self.session.running(DROPS))
    procedure = property(lambda self: self.session.running(CALIBRATION))
    # A hold, or a reading that stops the squeeze, is carried out on arrival on a wall clock; the twin waits for
    # each tick's answer (lock-step), so there it would only add a second command to the tick.
    wall_clock = property(lambda self: not self.get_clock().ros_time_is_active)

    def __init__(self, **kwargs):
        super().__init__("dispenser_controller", **kwargs)
        self.ph_read = InputProgress()  # its clock acknowledges how far it has read the pH readings
        self.clock_ack = acknowledge_clock(self, self.ph_read)  # in its own process: the twin keeps within reach
        self.session = self._declare_parameters()
        self.lock = threading.Lock()
        self.bad_mass = Episodes()  # refused balance readings, once per episode
        self.done_future = None  # completed by the timer with the running job's stop
        self.goal_handle = None
        self.calibration_path = self.get_parameter("calibration_file").value
        self.input_wait_s = declare(self, "input_wait_s", 15.0, "Wall seconds a goal waits, the twin's clock held, for "
                                    "its inputs to reach this node", low=0.0, high=300.0)
        rgroup = ReentrantCallbackGroup()
        control = MutuallyExclusiveCallbackGroup()  # the timer, readings and messages: an update never runs twice
        self.cmd_pub = self.create_publisher(Float64MultiArray, topics.gripper_command_topic(self.session.side), 10)
        self.arm_pubs = {s: self.create_publisher(JointTrajectory, topics.arm_trajectory_topic(s), 10)
                         for s in topics.SIDES}
        self.qty_pub = self.create_publisher(QuantityEstimate, topics.QUANTITY, RELIABLE)
        self.anomaly_pub = self.create_publisher(Anomaly, topics.ANOMALIES, RELIABLE)
        self.msg_pub = self.create_publisher(AgentMessage, topics.MESSAGES, RELIABLE)
        # Its own state and drop interval, for the audio supervisor and the recorder (nobody derives them).
        self.state_pub = self.create_publisher(DispenserState, topics.DISPENSER_STATE, FSM)
        self.create_subscription(ChemicalReading, topics.BALANCE_READING, self.on_balance, READINGS)
        self.create_subscription(ChemicalReading, topics.PH_READING, self.on_reading, READINGS, callback_group=control)
        self.create_subscription(JointState, topics.JOINT_STATES, self.on_joints, 10)
        self.create_subscription(AudioEvent, topics.AUDIO_EVENTS, self.on_audio_event, RELIABLE)
        self.create_subscription(AgentMessage, topics.MESSAGES, self.on_message, RELIABLE, callback_group=control)
        watch_heartbeats(self, self.on_heartbeat)  # its endpoint judge, when that runs in its own process
        self.server = ActionServer(self, Dispense, topics.DISPENSE, execute_callback=self.execute,
                                   goal_callback=lambda g: GoalResponse.ACCEPT,
                                   cancel_callback=lambda h: CancelResponse.ACCEPT, callback_group=rgroup)
        self.timer = self.create_timer(self.session.config.control_period_s, self.step, callback_group=control)
        self.calibrate_srv = self.create_service(Calibrate, topics.CALIBRATE, self.calibrate, callback_group=rgroup)
        respond_when_done(self, self.calibrate_srv)

    def _declare_parameters(self) -> DispenseSession:
        """config/agentchemist_params.yaml: DispenserConfig and SolidPourConfig fields (their units, ranges and
        descriptions are the dataclasses'), the calibration (a file, see common/calibration.py), the node's own."""
        k, drop, residual, _sd, _source = declare_calibration(self)
        config = declare_config(self, DispenserConfig, overrides={
            "k_ml_per_mm": k, "drop_volume_ml": drop, "calibration_residual_ml": residual})
        pour_config = declare_config(self, SolidPourConfig, overrides={"control_period_s": config.control_period_s})
        return DispenseSession(
            config, pour_config,
            side=declare(self, "side", "right", "Gripper holding the pipette (left|right)"),
            pour_side=declare(self, "pour_side", "left", "Gripper holding the solid bottle by default (left|right)"),
            approach_time_s=declare(self, "pour_approach_time_s", 2.0, "Trajectory time to bring the arm to the "
                                    "pour pose from elsewhere (s)", low=0.1, high=30.0),
            feedback_period_s=declare(self, "feedback_period", 0.5, "Action feedback period (s)", low=0.0, high=10.0))

    # ------------------------------------------------------------------ inputs
    def on_reading(self, msg):
        if msg.quantity != "pH":
            return
        self.ph_read.read(to_sec(msg.header.stamp))
        with self.lock:
            try:
                update_now = self.session.on_ph(to_sec(msg.header.stamp), msg.value, msg.noise)
            except ReadingError:
                return  # refused and never acted on; the vision supervisor reports it, once per episode
        if update_now and self.wall_clock:
            self.step()

    def on_joints(self, msg):
        with self.lock:
            self.session.on_joints(msg.name, msg.position)

    def on_audio_event(self, msg):
        if msg.kind == "droplet":
            with self.lock:
                self.session.on_droplet(to_sec(msg.start), msg.classification)

    def on_balance(self, msg):
        if msg.quantity != "mass" or msg.unit != "g":
            return
        with self.lock:
            stamp = to_sec(msg.header.stamp)
            try:
                self.session.on_mass(stamp, msg.value, msg.self_check_ok)
            except ReadingError as exc:
                reports = self.bad_mass.failed("mass", stamp, f"balance reading refused: {exc}")
            else:
                reports = self.bad_mass.passed("mass", stamp)
        for r in reports:
            self.report(r.kind, r.severity, r.description, resolved=r.resolved)

    def on_heartbeat(self, msg):
        with self.lock:
            anomalies = self.session.on_heartbeat(msg.node, msg.instance, node_now(self))
        for a in anomalies:
            self.report(a.kind, a.severity, a.description, response=a.response, resolved=a.resolved)

    def on_message(self, msg):
        if msg.receiver != self.get_name():
            return
        if msg.symbol == Symbol.RESUME:
            with self.lock:
                self.session.resume()
        elif msg.symbol in (Symbol.HOLD, Symbol.RELEASE):
            reason = hold_reason(msg)
            with self.lock:
                holds = self.session.set_hold(msg.experiment_id, reason, msg.symbol == Symbol.HOLD)
            self.get_logger().info(f"{msg.symbol} ({reason}); holds in force: {holds or 'none'}")
            if msg.symbol == Symbol.HOLD and self.wall_clock:
                self.step()

    # ------------------------------------------------------------------ control loop
    def step(self):
        with self.lock:
            handle, done = self.goal_handle, self.done_future
            now = node_now(self)
            judge = self.session.check_judge(now)
            tick = self.session.step(now, cancel=handle is not None and handle.is_cancel_requested)
        for a in judge:
            self.report(a.kind, a.severity, a.description, response=a.response, resolved=a.resolved)
        if tick is None:
            return
        ids = {"experiment_id": tick.experiment_id, "subtask_id": tick.subtask_id}
        # The arm before the gripper: the twin's next tick goes out as soon as the gripper command arrives.
        if tick.arm is not None:  # (side, positions, duration_s)
            self.arm_pubs[tick.arm[0]].publish(arm_point(*tick.arm))
        if tick.gripper_opening_mm is not None:
            self.cmd_pub.publish(Float64MultiArray(data=[tick.gripper_opening_mm / 1000.0]))
        for est in tick.estimates:
            self.qty_pub.publish(QuantityEstimate(
                stamp=to_msg(est.stamp), quantity="titrant_volume", unit="mL", channel="statistical",
                value=est.value_ml, delta=est.delta_ml, confidence=est.confidence, fsm_state="", event_id="", **ids))
        for tap in tick.taps:
            self.msg_pub.publish(AgentMessage(stamp=to_msg(tap.stamp), sender=self.get_name(), symbol=Symbol.TAP,
                                              receiver="vision_supervisor", payload_json=encode_note(tap.note),
                                              **ids))
        for a in tick.anomalies:
            self.report(a.kind, a.severity, a.description, response=a.response, resolved=a.resolved, **ids)
        for state in tick.states:
            self.publish_state(state)
        if tick.feedback is not None and handle is not None:
            handle.publish_feedback(Dispense.Feedback(**asdict(tick.feedback)))
        if tick.done is not None and done is not None and not done.done():
            done.set_result(tick.done)

    def publish_state(self, state: StateChange | None):
        """DispenserState (see DispenseSession.step); None: nothing to publish."""
        if state is not None:
            self.state_pub.publish(DispenserState(stamp=to_msg(node_now(self)), **asdict(state)))

    def _start(self, start, goal_handle=None):
        """Check and claim the gripper in one step: (the job, the Future its stop completes), or the Refusal."""
        with self.lock:
            try:
                job = start()
            except Refusal as exc:
                return exc
            self.done_future, self.goal_handle = Future(), goal_handle
            return job, self.done_future

    # ------------------------------------------------------------------ Calibrate
    async def calibrate(self, request, response):
        """Calibrate service: see the module docstring. Returns when the procedure has finished."""
        response.success = False
        started = self._start(lambda: self.session.start_calibration(
            samples=request.samples, liquid=request.liquid, pipette_id=request.pipette_id, now=node_now(self)))
        if isinstance(started, Refusal):
            response.message = f"calibration refused: {started}"
            self.get_logger().error(response.message)
            return response
        job, done = started
        self.publish_state(self.session.start_state(job))
        self.get_logger().info(job.summary)
        step = await done
        with self.lock:  # the gripper is free; from now on the dispenser counts with the new calibration
            self.session.finish()
            outcome = self.session.conclude_calibration(job, step, save=request.save, path=self.calibration_path)
        self.publish_state(self.session.end_state(job, ""))
        for name, value in outcome.response_fields().items():
            setattr(response, name, value)
        if outcome.success:
            self.get_logger().info(f"calibration: {outcome.message}")
        elif outcome.fit_failed:
            self.get_logger().error(outcome.message)
            self.report("calibration_failed", "warn", outcome.message, response="none", subtask_id="calibration")
        return response

    # ------------------------------------------------------------------ Dispense
    async def execute(self, goal_handle):
        try:
            request = dispense_request(goal_handle.request)
        except RequestError as exc:  # a goal that cannot be carried out as asked: refused at once
            return self._refuse(goal_handle, goal_handle.request.mode or DROPS, exc)
        await hold_until(self, lambda: self._inputs_ready(request), self.input_wait_s, "the dispenser's inputs")
        started = self._start(lambda: self.session.start(request, now=node_now(self)), goal_handle)
        if isinstance(started, Refusal):
            return self._refuse(goal_handle, request.mode, started)
        job, done = started
        self.publish_state(self.session.start_state(job))
        self.get_logger().info(job.summary)
        await done
        with self.lock:
            self.session.finish()
            self.goal_handle = None
        outcome = self.session.outcome(job)
        self.publish_state(self.session.end_state(job, outcome.stop_reason))
        text = f"solid pour: {outcome.stop_reason}: {outcome.message}"
        if job.mode == SOLID_POUR and outcome.success:  # (rclpy ties a severity to its call site)
            self.get_logger().info(text)
        elif job.mode == SOLID_POUR and outcome.stop_reason == "canceled":
            self.get_logger().warn(text)
        elif job.mode == SOLID_POUR:
            self.get_logger().error(text)
        if goal_handle.is_cancel_requested:  # canceled when asked to, else as the controller's stop says
            goal_handle.canceled()
        elif outcome.success:
            goal_handle.succeed()
        else:
            goal_handle.abort()
        return Dispense.Result(**asdict(outcome))

    def _inputs_ready(self, request) -> bool:
        with self.lock:
            return self.cmd_pub.get_subscription_count() > 0 and not self.session.missing_inputs(request, node_now(self))

    def _refuse(self, goal_handle, mode: str, refusal: Refusal | RequestError):
        self.get_logger().error(f"dispense goal refused: {refusal}")
        self.report("bad_goal", "warn", f"dispense goal refused: {refusal}", experiment_id=refusal.experiment_id,
                    subtask_id=refusal.subtask_id, response="none")
        goal_handle.abort()
        return Dispense.Result(**asdict(refused(mode, str(refusal))))

    def report(self, kind, severity, description, response="", experiment_id=None, subtask_id=None, resolved=False):
        """An anomaly; its ids default to the running job's."""
        experiment, subtask = self.session.ids()
        self.anomaly_pub.publish(make_anomaly(
            now=node_now(self), experiment_id=experiment if experiment_id is None else experiment_id,
            source=self.get_name(), kind=kind, severity=severity, description=description,
            subtask_id=subtask if subtask_id is None else subtask_id, response=response, resolved=resolved))


def main(args=None):
    spin_node(DispenserControllerNode, args)


if __name__ == "__main__":
    main()
