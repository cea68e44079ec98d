"""dispenser_controller: the Dispense action server over agentchemist.control.DispenserController, and
the Calibrate service over agentchemist.control.calibration_procedure.CalibrationProcedure.

Steps the controller on a ROS-clock timer (sim time in the twin), sends gripper commands, publishes the
statistical channel's QuantityEstimates and anomalies. A bad goal is refused with its reason and
nothing moves.

The vision supervisor holds and releases dispensing with `hold` / `release` messages (a payload
reason: a missing labware item, a deafened microphone); holds outlive a goal, so a goal sent while
one is in force starts held. pH readings carry the meter's noise to the controller's frozen-meter check.

Calibrate squeezes drop by drop onto the balance (/lab/balance/reading, quantity "mass"), counting the
droplets the audio supervisor hears, fits k and the drop volume, optionally saves them and from then on
dispenses with them. The same control timer drives it; the service callback is a coroutine awaiting a
Future that the timer completes, so no executor thread is blocked (see common/waiting.py). Calibrate is
refused while a Dispense goal runs, and Dispense while a calibration runs.

Mode "solid_pour" (Dispense.mode) pours a mass of solid instead: agentchemist.control.solid_pour tilts
the bottle held by the goal's side (left by default) in pulses, reading the balance between them. The
bottle's tilt is the wrist joint6 at the `pour_over_beaker` pose (the contract's convention; the arm is
commanded there upright first if it is elsewhere); every pour pulse is told to the vision supervisor as
a "tap" stamped when the bottle came back under the flow. Holds and cancel put the bottle upright.
"""
import inspect
import json
import math
import threading
from dataclasses import replace

from builtin_interfaces.msg import Duration
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.task import Future
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from agentchemist.control.calibration import CalibrationError, default_calibration_path, save_calibration
from agentchemist.control.calibration_procedure import CalibrationProcedure, CalibrationProcedureConfig
from agentchemist.control.dispenser import DispenseGoal, DispenserConfig, DispenserController, GoalError
from agentchemist.control.solid_pour import SolidPourConfig, SolidPourController, SolidPourGoal
from agentchemist.policy.primitives import PrimitiveError, load_poses
from agentchemist.perception.ph_stability import ReadingError
from agentchemist_interfaces.action import Dispense
from agentchemist_interfaces.srv import Calibrate
from agentchemist_interfaces.msg import (AgentMessage, Anomaly, AudioEvent, ChemicalReading, DispenserState,
                                         QuantityEstimate)
from agentchemist_ros.common import topics
from agentchemist_ros.common.anomaly import make_anomaly
from agentchemist_ros.common.calibration import declare_calibration
from agentchemist_ros.common.params import declare
from agentchemist_ros.common.runner import spin_node
from agentchemist_ros.common.qos import FSM, READINGS, RELIABLE
from agentchemist_ros.common.timeconv import node_now, to_msg, to_sec


class DispenserControllerNode(Node):
    def __init__(self, **kwargs):
        super().__init__("dispenser_controller", **kwargs)
        d = DispenserConfig()
        k, drop, residual, _sd, _source = declare_calibration(self)
        self.period = declare(self, "control_period", 0.05, "Control period (s, ROS clock)", low=0.001, high=1.0)
        self.config = DispenserConfig(
            control_period_s=self.period,
            k_ml_per_mm=k, drop_volume_ml=drop, calibration_residual_ml=residual,
            rate_mm_s=declare(self, "rate_mm_s", d.rate_mm_s, "Default closing rate (mm/s)", low=0.001, high=5.0),
            fine_rate_mm_s=declare(self, "fine_rate_mm_s", d.fine_rate_mm_s, "Closing rate near the target (mm/s)", low=0.001, high=5.0),
            change_rate_threshold=declare(self, "change_rate_threshold", d.change_rate_threshold,
                                          "|dpH/dt| that makes MOTION hold (pH/s)", low=1e-4, high=10.0),
            near_target_ph=declare(self, "near_target_ph", d.near_target_ph, "Fine mode within this of the target pH", low=0.0, high=14.0),
            sensor_timeout_s=declare(self, "sensor_timeout_s", d.sensor_timeout_s, "pH silence that is an anomaly (s)", low=0.1, high=600.0),
            no_drop_factor=declare(self, "no_drop_factor", d.no_drop_factor, "Drop displacements without a drop before an anomaly", low=1.0, high=100.0),
            safe_opening_mm=declare(self, "safe_opening_mm", d.safe_opening_mm, "RESET retracts to this opening (mm)", low=1.0, high=70.0),
            frozen=replace(d.frozen, resolution=declare(self, "ph_resolution", 0.001,
                                                        "Display step of the pH meter (pH): identical readings "
                                                        "its noise makes improbable are a frozen meter (ph_stuck)",
                                                        low=1e-6, high=1.0)),
        )
        self.side = declare(self, "side", "right", "Gripper holding the pipette (left|right)")
        p = SolidPourConfig()
        self.pour_config = replace(
            p, control_period_s=self.period,
            balance_resolution_g=declare(self, "balance_resolution_g", p.balance_resolution_g,
                                         "Readability of the balance (g)", low=1e-5, high=1.0),
            balance_tau_s=declare(self, "balance_tau_s", p.balance_tau_s,
                                  "Settling time constant of the balance display (s)", low=0.01, high=30.0),
            arm_tau_s=declare(self, "pour_arm_tau_s", p.arm_tau_s,
                              "Lag with which the wrist follows its command (s)", low=0.01, high=5.0),
            stale_reading_s=declare(self, "pour_stale_reading_s", p.stale_reading_s,
                                    "No balance reading this long: no tilting on old news (s)", low=0.05, high=60.0),
            sensor_timeout_s=declare(self, "pour_sensor_timeout_s", p.sensor_timeout_s,
                                     "No balance reading this long: bottle upright, goal aborted (s)",
                                     low=0.1, high=600.0),
            max_tilt_deg=declare(self, "max_tilt_deg", p.max_tilt_deg,
                                 "The flow search gives up at this tilt (deg)", low=10.0, high=180.0))
        self.pour_side = declare(self, "pour_side", "left", "Gripper holding the solid bottle by default (left|right)")
        self.approach_time = declare(self, "pour_approach_time_s", 2.0,
                                     "Trajectory time to bring the arm to the pour pose from elsewhere (s)",
                                     low=0.1, high=30.0)
        self.feedback_period = declare(self, "feedback_period", 0.5, "Action feedback period (s)", low=0.0, high=10.0)
        self._last_feedback = -1e9
        self.rgroup = ReentrantCallbackGroup()
        self.lock = threading.Lock()
        self.controller: DispenserController | None = None
        self.goal_meta = None
        self.measured_mm: float | None = None
        self.arm_positions: dict[str, tuple[float, ...]] = {}  # measured joints 1..6 per arm (rad)
        self.pour: SolidPourController | None = None
        self.pour_arm = None  # (side, joints(tilt), tilt(positions)) of the running solid pour
        self.last_ph: float | None = None
        self.holds: set[str] = set()  # the supervisor's holds in force (see the module docstring)
        self.holds_experiment = ""    # ... for this experiment (a new one starts with none)
        self.experiment_volume = ("", 0.0)  # (experiment id, cumulative titrant volume published for it)
        self.done_future = None
        self.procedure: CalibrationProcedure | None = None
        self.calibration_future = None
        self.calibration_path = self.get_parameter("calibration_file").value
        self.cmd_pub = self.create_publisher(Float64MultiArray, topics.gripper_command_topic(self.side), 10)
        self.arm_pubs = {s: self.create_publisher(JointTrajectory, topics.arm_trajectory_topic(s), 10)
                         for s in topics.SIDES}
        self.qty_pub = self.create_publisher(QuantityEstimate, topics.QUANTITY, RELIABLE)
        self.anomaly_pub = self.create_publisher(Anomaly, topics.ANOMALIES, RELIABLE)
        self.msg_pub = self.create_publisher(AgentMessage, topics.MESSAGES, RELIABLE)
        # Its own state and drop interval, for the audio supervisor and the recorder (nobody derives them).
        self.state_pub = self.create_publisher(DispenserState, topics.DISPENSER_STATE, FSM)
        self.create_subscription(ChemicalReading, topics.BALANCE_READING, self.on_balance, READINGS)
        self.create_subscription(ChemicalReading, topics.PH_READING, self.on_reading, READINGS)
        self.create_subscription(JointState, topics.JOINT_STATES, self.on_joints, 10)
        self.create_subscription(AudioEvent, topics.AUDIO_EVENTS, self.on_audio_event, RELIABLE)
        self.create_subscription(AgentMessage, topics.MESSAGES, self.on_message, RELIABLE)
        self.server = ActionServer(self, Dispense, topics.DISPENSE, execute_callback=self.execute,
                                   goal_callback=lambda g: GoalResponse.ACCEPT,
                                   # feedback goes out on every controller transition (the supervisor
                                   # tells the audio supervisor when drops are due) and periodically
                                   cancel_callback=lambda h: CancelResponse.ACCEPT,
                                   callback_group=self.rgroup)
        self.timer = self.create_timer(self.period, self.step, callback_group=MutuallyExclusiveCallbackGroup())
        self.calibrate_srv = self.create_service(Calibrate, topics.CALIBRATE, self.calibrate,
                                                 callback_group=self.rgroup)
        _respond_when_done(self, self.calibrate_srv)

    # ------------------------------------------------------------------ inputs
    def on_reading(self, msg):
        if msg.quantity != "pH":
            return
        with self.lock:
            self.last_ph = msg.value
            if self.controller is None:
                return
            try:
                noise = msg.noise if math.isfinite(msg.noise) and msg.noise >= 0.0 else None
                self.controller.on_ph(to_sec(msg.header.stamp), msg.value, noise)
            except ReadingError as exc:
                self.report("bad_reading", "warn", f"pH reading refused: {exc}")

    def on_joints(self, msg):
        names = list(msg.name)
        name = f"{self.side}_gripper"
        if name in names:
            value = msg.position[names.index(name)] * 1000.0
            if math.isfinite(value):
                self.measured_mm = value
        for side in topics.SIDES:
            joints = [f"{side}_joint{i}" for i in range(1, 7)]
            if all(j in names for j in joints):
                values = tuple(float(msg.position[names.index(j)]) for j in joints)
                if all(math.isfinite(v) for v in values):
                    self.arm_positions[side] = values

    def on_audio_event(self, msg):
        if msg.kind != "droplet":
            return
        with self.lock:
            if self.procedure is not None and msg.classification != "timeout":
                # Calibrating: nothing else dispenses, so every droplet heard is ours.
                self.procedure.on_drop(to_sec(msg.start))
            elif self.controller is not None and msg.classification == "expected":
                self.controller.on_drop(to_sec(msg.start))

    def on_balance(self, msg):
        if msg.quantity != "mass" or msg.unit != "g":
            return
        with self.lock:
            if self.pour is not None:
                try:
                    if not msg.self_check_ok:
                        raise ReadingError(f"balance reading {msg.value:.3f} g failed the balance's self-check "
                                           f"(overloaded or unsettled pan)")
                    self.pour.on_mass(to_sec(msg.header.stamp), msg.value)
                except ReadingError as exc:
                    self.report("bad_reading", "warn", f"balance reading refused: {exc}")
                return
            if self.procedure is None:
                return
            try:
                self.procedure.on_mass(to_sec(msg.header.stamp), msg.value)
            except CalibrationError as exc:
                self.report("bad_reading", "warn", f"balance reading refused: {exc}")

    def on_message(self, msg):
        if msg.receiver != self.get_name():
            return
        if msg.symbol == "resume":
            with self.lock:
                if self.controller is not None:
                    self.controller.request_resume()
        elif msg.symbol in ("hold", "release"):
            try:
                reason = str(json.loads(msg.payload_json or "{}").get("reason", "")) or "supervisor"
            except (json.JSONDecodeError, AttributeError):
                reason = "supervisor"
            with self.lock:
                if msg.experiment_id != self.holds_experiment:
                    self.holds, self.holds_experiment = set(), msg.experiment_id
                if msg.symbol == "hold":
                    self.holds.add(reason)
                else:
                    self.holds.discard(reason)
                if self.controller is not None:
                    (self.controller.hold if msg.symbol == "hold" else self.controller.release)(reason)
                if self.pour is not None:
                    (self.pour.hold if msg.symbol == "hold" else self.pour.release)(reason)
            self.get_logger().info(f"{msg.symbol} ({reason}); holds in force: {sorted(self.holds) or 'none'}")

    # ------------------------------------------------------------------ control loop
    def step(self):
        if self.procedure is not None:
            self.step_calibration()
            return
        if self.pour is not None:
            self.step_pour()
            return
        with self.lock:
            c = self.controller
            if c is None or self.measured_mm is None:
                return
            now = node_now(self)
            if self._goal_handle is not None and self._goal_handle.is_cancel_requested:
                c.cancel()
            out = c.update(now, self.measured_mm)
        self.cmd_pub.publish(Float64MultiArray(data=[out.command_opening_mm / 1000.0]))
        meta = self.goal_meta
        for est in out.estimates:
            # titrant_volume is the experiment's cumulative volume: a goal after a hold or an unconfirmed
            # stop starts its own count at zero, on top of what the earlier goals dispensed.
            value = meta.get("volume_offset_ml", 0.0) + est.value_ml
            self.experiment_volume = (meta["experiment_id"], value)
            self.qty_pub.publish(QuantityEstimate(
                stamp=to_msg(est.stamp), experiment_id=meta["experiment_id"], quantity="titrant_volume", unit="mL",
                channel="statistical", value=value, delta=est.delta_ml, confidence=est.confidence,
                fsm_state=meta.get("fsm_state", ""), subtask_id=meta["subtask_id"], event_id=""))
        for a in out.anomalies:
            self.report(a.kind, a.severity, a.description, response=a.response, resolved=a.resolved)
        for src, cond, dst in out.transitions:
            self.get_logger().debug(f"{src.value} --{cond}--> {dst.value}")
            if dst.value != "DONE":  # the goal's end is published when its result goes out
                self.publish_state(meta, "drops", dst.value, src.value, cond, interval=c.drop_interval_s,
                                   dispensed_ml=c.q_stat, drops=c.drops)
        if self._goal_handle is not None and (now - self._last_feedback >= self.feedback_period or out.done
                                              or out.transitions):
            self._last_feedback = now
            self._goal_handle.publish_feedback(Dispense.Feedback(
                controller_state=out.state.value, dispensed_ml=c.q_stat, drops=c.drops,
                gripper_position_mm=self.measured_mm, ph=self.last_ph if self.last_ph is not None else float("nan")))
        if out.done is not None and self.done_future is not None and not self.done_future.done():
            self.done_future.set_result(out.done)

    def step_pour(self):
        with self.lock:
            c = self.pour
            if c is None:
                return
            side, joints, tilt_of = self.pour_arm
            now = node_now(self)
            if self._goal_handle is not None and self._goal_handle.is_cancel_requested:
                c.cancel()
            positions = self.arm_positions.get(side)
            measured = tilt_of(positions) if positions is not None else None
            out = c.update(now, measured)
        # Far from the pour pose (APPROACH) the arm is given time to get there; at it, each command is a
        # small step the wrist follows within the control period.
        self.send_arm(side, joints(out.command_tilt_deg), self.period if measured is not None else self.approach_time)
        meta = self.goal_meta
        for pulse in out.pulses:
            payload = {"index": pulse.index, "kind": pulse.kind, "duration_s": round(pulse.duration_s, 3),
                       "planned_g": None if math.isnan(pulse.planned_g) else round(pulse.planned_g, 4),
                       "tilt_deg": round(pulse.tilt_deg, 2)}
            self.msg_pub.publish(AgentMessage(
                stamp=to_msg(pulse.stamp), experiment_id=meta["experiment_id"], sender=self.get_name(),
                receiver="vision_supervisor", subtask_id=meta["subtask_id"], symbol="tap",
                payload_json=json.dumps(payload)))
        for a in out.anomalies:
            self.report(a.kind, a.severity, a.description, response=a.response or "abort")
        phase_changed = out.phase.value != self._last_phase
        if phase_changed:
            self.publish_state(meta, "solid_pour", out.phase.value, self._last_phase, "", drops=c.pulse_count)
        self._last_phase = out.phase.value
        if self._goal_handle is not None and (now - self._last_feedback >= self.feedback_period or out.done
                                              or phase_changed):
            self._last_feedback = now
            mass = c.latest_mass
            self._goal_handle.publish_feedback(Dispense.Feedback(
                controller_state=out.phase.value, drops=c.pulse_count,
                mass_g=mass if mass is not None else float("nan"), ph=float("nan")))
        if out.done is not None and self.done_future is not None and not self.done_future.done():
            self.done_future.set_result(out.done)

    _last_phase = ""

    def send_arm(self, side, positions, duration_s):
        point = JointTrajectoryPoint(positions=[float(v) for v in positions],
                                     time_from_start=Duration(sec=int(duration_s),
                                                              nanosec=int(round((duration_s % 1) * 1e9)) % 1000000000))
        self.arm_pubs[side].publish(JointTrajectory(joint_names=[f"{side}_joint{i}" for i in range(1, 7)],
                                                    points=[point]))

    def step_calibration(self):
        with self.lock:
            proc = self.procedure
            if proc is None or self.measured_mm is None:
                return
            step = proc.update(node_now(self), self.measured_mm)
        self.cmd_pub.publish(Float64MultiArray(data=[step.command_opening_mm / 1000.0]))
        for a in step.anomalies:
            self.report(a.kind, a.severity, f"calibration: {a.description}", response="abort")
        if step.finished and self.calibration_future is not None and not self.calibration_future.done():
            self.calibration_future.set_result(step)

    _goal_handle = None

    async def calibrate(self, request, response):
        """Calibrate service: see the module docstring. Returns when the procedure has finished."""
        response.success = False
        if self.measured_mm is None:
            response.message = f"calibration refused: no joint state for {self.side}_gripper yet"
            return response
        try:
            config = CalibrationProcedureConfig(**({"samples": int(request.samples)} if request.samples else {}))
            proc = CalibrationProcedure(config, self.config, start_opening_mm=self.measured_mm, now=node_now(self),
                                        liquid=request.liquid, pipette_id=request.pipette_id)
        except (CalibrationError, GoalError) as exc:
            response.message = f"calibration refused: {exc}"
            self.get_logger().error(response.message)
            return response
        with self.lock:  # check and claim the gripper in one step
            busy = self._busy()
            if not busy:
                self.calibration_future = Future()
                self.procedure = proc
                # a calibration belongs to no experiment: its anomalies must not carry the last goal's ids
                self.goal_meta = {"experiment_id": "", "subtask_id": "calibration"}
        if busy:
            response.message = f"calibration refused: {busy}"
            self.get_logger().error(response.message)
            return response
        calibration = {"experiment_id": "", "subtask_id": "calibration"}
        self.publish_state(calibration, "calibration", "MOTION", "IDLE", "calibrate",
                           interval=self.config.drop_volume_ml / (self.config.k_ml_per_mm * config.rate_mm_s)
                           + config.pause_s)
        self.get_logger().info(f"calibrating {request.pipette_id} with {request.liquid}: {config.samples} samples "
                               f"of {config.drops_per_sample} drops at {config.rate_mm_s} mm/s")
        step = await self.calibration_future
        with self.lock:
            self.procedure = None
            self.goal_meta = None
        self.publish_state(calibration, "calibration", "IDLE", "MOTION", "calibration finished", active=False)
        if step.calibration is None:
            response.message = f"calibration failed: {step.error}"
            self.get_logger().error(response.message)
            self.report("calibration_failed", "warn", response.message, response="none", subtask_id="calibration")
            return response
        cal = step.calibration
        if request.save:
            try:
                path = save_calibration(cal, self.calibration_path or default_calibration_path())
            except OSError as exc:
                response.message = f"calibration fitted but not saved: {exc}"
                return response
            response.saved_path = str(path)
        with self.lock:  # from now on the dispenser counts with the new calibration
            self.config = replace(self.config, k_ml_per_mm=cal.k_ml_per_mm, drop_volume_ml=cal.drop_volume_ml,
                                  calibration_residual_ml=cal.residual_ml)
        response.success = True
        response.k_ml_per_mm = cal.k_ml_per_mm
        response.drop_volume_ml = cal.drop_volume_ml
        response.residual_ml = cal.residual_ml
        response.message = (f"k {cal.k_ml_per_mm:.4f} mL/mm, drop {cal.drop_volume_ml:.5f} mL, residual "
                            f"{cal.residual_ml:.4f} mL from {cal.samples} samples ({proc.drops} drops)"
                            + (f"; saved to {response.saved_path}" if request.save else "; not saved"))
        self.get_logger().info(f"calibration: {response.message}")
        return response

    def publish_state(self, meta, mode, state, previous, reason, *, interval=0.0, active=True, dispensed_ml=0.0,
                      drops=0):
        """DispenserState: what the controller does now, its drop interval while it squeezes, and whether
        the next drop must prime the pipette again (MOTION after a RESET closes back on a bulb of air)."""
        self.state_pub.publish(DispenserState(
            stamp=to_msg(node_now(self)), experiment_id=meta.get("experiment_id", ""),
            subtask_id=meta.get("subtask_id", ""), mode=mode, state=state, previous_state=previous, reason=reason,
            active=active, drop_interval_s=float(interval if state == "MOTION" else 0.0),
            priming=state == "MOTION" and previous == "RESET", dispensed_ml=float(dispensed_ml), drops=int(drops)))

    async def execute(self, goal_handle):
        g = goal_handle.request
        result = Dispense.Result()
        mode = g.mode or "drops"
        if mode == "solid_pour":
            return await self.execute_solid_pour(goal_handle)
        if mode != "drops":
            return self._refuse(goal_handle, result, f"unknown dispensing mode {g.mode!r} (drops | solid_pour)",
                                g.experiment_id, g.subtask_id)
        busy = self._busy()  # checked again when the goal claims the gripper
        if busy:
            return self._refuse(goal_handle, result, busy)
        if self.measured_mm is None:
            return self._refuse(goal_handle, result, f"no joint state for {self.side}_gripper yet: gripper position unknown")
        target_ph = g.target_ph if g.use_target_ph else None
        # The supervisor decides the direction once per experiment and sends it; a client that does not
        # (0) gets it from the latest reading.
        direction = g.ph_direction if g.ph_direction in (-1, 1) else (
            -1 if target_ph is not None and self.last_ph is not None and target_ph < self.last_ph else 1)
        goal = DispenseGoal(target_volume_ml=g.target_volume_ml, target_ph=target_ph, ph_direction=direction,
                            rate_mm_s=g.rate_mm_s, settle_each_drop=g.settle_each_drop, resume_on_command=g.resume_on_command,
                            change_rate_threshold=g.wait_on_change_threshold, stable_window_s=g.stable_window_s,
                            timeout_s=g.timeout_s)
        try:
            controller = DispenserController(self.config, goal, start_opening_mm=self.measured_mm, now=node_now(self))
        except GoalError as exc:
            return self._refuse(goal_handle, result, str(exc), g.experiment_id, g.subtask_id)
        exp, total = self.experiment_volume
        busy = self._claim(goal_handle, controller, {"experiment_id": g.experiment_id, "subtask_id": g.subtask_id,
                                                     "volume_offset_ml": total if exp == g.experiment_id else 0.0},
                           controller=controller)
        if busy:
            return self._refuse(goal_handle, result, busy)
        meta = self.goal_meta
        self.publish_state(meta, "drops", controller.state.value, "IDLE", "goal", interval=controller.drop_interval_s)
        self.get_logger().info(f"dispensing: target {g.target_volume_ml} mL / pH {target_ph} (direction "
                               f"{direction:+d}), settle each drop {g.settle_each_drop}")
        await self.done_future
        with self.lock:
            self.controller = None
            self._goal_handle = None
        stop = controller.result
        result.success = bool(stop and stop.success)
        result.stop_reason = stop.reason if stop else "aborted"
        result.dispensed_ml = controller.q_stat
        result.drops = controller.drops
        result.final_ph = stop.final_ph if stop else float("nan")
        result.message = stop.message if stop else "node shut down"
        self.publish_state(meta, "drops", "IDLE", controller.state.value, result.stop_reason, active=False,
                           dispensed_ml=controller.q_stat, drops=controller.drops)
        return self._end_goal(goal_handle, result)

    async def execute_solid_pour(self, goal_handle):
        """The solid_pour mode: see the module docstring and agentchemist.control.solid_pour."""
        g = goal_handle.request
        result = Dispense.Result(final_ph=float("nan"), dispensed_g=float("nan"), final_mass_g=float("nan"))
        side = g.side or self.pour_side
        if side not in topics.SIDES:
            return self._refuse(goal_handle, result, f"side {g.side!r} is not left or right",
                                g.experiment_id, g.subtask_id)
        try:
            arm = (side, *pour_kinematics(side))
            arm[1](self.pour_config.max_tilt_deg)  # the search's furthest tilt must be within the wrist's reach
            controller = SolidPourController(
                self.pour_config,
                SolidPourGoal(target_mass_g=g.target_mass_g, mass_tolerance_g=g.mass_tolerance_g,
                              tilt_rate_deg_s=g.tilt_rate_deg_s, settle_each_drop=g.settle_each_drop,
                              stable_window_s=g.stable_window_s, change_rate_threshold=g.wait_on_change_threshold,
                              timeout_s=g.timeout_s),
                now=node_now(self))
        except (GoalError, PrimitiveError, OSError) as exc:
            return self._refuse(goal_handle, result, str(exc), g.experiment_id, g.subtask_id)
        busy = self._claim(goal_handle, controller, {"experiment_id": g.experiment_id, "subtask_id": g.subtask_id},
                           pour=controller, pour_arm=arm, _last_phase="")
        if busy:
            return self._refuse(goal_handle, result, busy)
        self.get_logger().info(f"pouring {g.target_mass_g} g of solid (tolerance {controller.tolerance} g) "
                               f"from the bottle in the {side} gripper")
        await self.done_future
        with self.lock:
            self.pour = None
            self._goal_handle = None
        stop = controller.result
        result.success = bool(stop and stop.success)
        result.stop_reason = stop.reason if stop else "aborted"
        result.dispensed_g = stop.dispensed_g if stop else float("nan")
        result.final_mass_g = stop.final_mass_g if stop else float("nan")
        result.drops = controller.pulse_count
        result.message = stop.message if stop else "node shut down"
        self.publish_state(self.goal_meta or {}, "solid_pour", "IDLE", self._last_phase, result.stop_reason,
                           active=False, drops=controller.pulse_count)
        text = f"solid pour: {result.stop_reason}: {result.message}"
        if result.success:  # (rclpy ties a severity to its call site: one call per severity)
            self.get_logger().info(text)
        elif result.stop_reason == "canceled":
            self.get_logger().warn(text)
        else:
            self.get_logger().error(text)
        return self._end_goal(goal_handle, result)

    @staticmethod
    def _end_goal(goal_handle, result):
        """The goal's terminal status: canceled when asked to, else as the controller's stop says."""
        if goal_handle.is_cancel_requested:
            goal_handle.canceled()
        elif result.success:
            goal_handle.succeed()
        else:
            goal_handle.abort()
        return result

    def _busy(self) -> str:
        """Why the gripper cannot take a new goal or calibration now ("" when it can). Call under the lock
        to claim it (see _claim)."""
        if self.controller is not None:
            return "a dispensing goal is running"
        if self.pour is not None:
            return "a solid pour is running"
        if self.procedure is not None:
            return "a pipette calibration is running"
        return ""

    def _claim(self, goal_handle, new, meta: dict, **running) -> str:
        """Check and claim the gripper for a goal in one step; returns why not ("" when claimed).

        ``new``: the goal's controller. ``running``: the node attributes that make the goal the running one (controller=..., or pour=...
        with its arm), set only when the claim succeeds. The experiment's standing holds apply to the new
        controller; they are dropped when a new experiment starts."""
        with self.lock:
            busy = self._busy()
            if busy:
                return busy
            experiment_id = meta.get("experiment_id", "")
            if experiment_id != self.holds_experiment:
                self.holds, self.holds_experiment = set(), experiment_id
            for reason in self.holds:
                new.hold(reason)
            self.done_future = Future()
            self.goal_meta = meta
            self._goal_handle = goal_handle
            for name, value in running.items():
                setattr(self, name, value)
        return ""

    def _refuse(self, goal_handle, result, reason, experiment_id="", subtask_id=""):
        self.get_logger().error(f"dispense goal refused: {reason}")
        self.report("bad_goal", "warn", f"dispense goal refused: {reason}", experiment_id=experiment_id,
                    subtask_id=subtask_id, response="none")
        result.success = False
        result.stop_reason = "rejected"
        result.message = reason
        goal_handle.abort()
        return result

    def report(self, kind, severity, description, response="", experiment_id=None, subtask_id=None, resolved=False):
        meta = self.goal_meta or {}
        self.anomaly_pub.publish(make_anomaly(
            now=node_now(self), experiment_id=experiment_id if experiment_id is not None else meta.get("experiment_id", ""),
            source=self.get_name(), kind=kind, severity=severity, description=description,
            subtask_id=subtask_id if subtask_id is not None else meta.get("subtask_id", ""), response=response,
            resolved=resolved))


POUR_POSE = "pour_over_beaker"


def pour_kinematics(side):
    """(joints(tilt_deg) -> 6 joint targets, tilt(positions) -> deg or None) for a bottle held by `side`
    at the `pour_over_beaker` pose (the contract's tilt convention: tilt = joint6 - the pose's joint6,
    with joints 1..5 at the pose within tolerance_rad; elsewhere None). Raises PrimitiveError naming the
    known poses when config/poses.yaml has no such pose."""
    poses = load_poses()
    pose = poses.pose(side, POUR_POSE)
    if side == "left":
        try:  # the shared helpers (agentchemist.policy.primitives), where they exist
            from agentchemist.policy.primitives import bottle_tilt_deg, bottle_tilt_joints
        except ImportError:
            pass
        else:
            return (lambda tilt: tuple(bottle_tilt_joints(poses, tilt)),
                    lambda positions: bottle_tilt_deg(poses, positions))

    def joints(tilt_deg):
        return (*pose[:5], pose[5] + math.radians(tilt_deg))

    def tilt(positions):
        if len(positions) != 6 or any(abs(q - p) > poses.tolerance_rad for q, p in zip(positions[:5], pose[:5])):
            return None
        return max(0.0, math.degrees(positions[5] - pose[5]))
    return joints, tilt


def _respond_when_done(node, service):
    """Serve a coroutine service callback on any executor. The Python executors await it; rclpy's
    EventsExecutor (Jazzy) hands the coroutine object to send_response instead (ros2/rclpy#1473), so
    it is run as an executor task here and the response sent when it completes."""
    send = service.send_response

    def send_response(response, header):
        if not inspect.iscoroutine(response):
            send(response, header)
            return

        async def finish():
            send(await response, header)
        node.executor.create_task(finish)
    service.send_response = send_response


def main(args=None):
    spin_node(DispenserControllerNode, args)


if __name__ == "__main__":
    main()
