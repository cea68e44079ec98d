"""lab_sim: the lab digital twin on the ROS graph.

Publishes /clock (sim time, faster than real time), instrument readings, contact audio, camera images,
joint states and ground truth; follows gripper and arm commands. The twin itself is
agentchemist.sim.LabTwin; this node only paces it and translates messages.

Bench effects of the arms (agentchemist.sim.bench_effects, fed every tick with the measured joints):
the right gripper closing on the beaker at `beaker_at_<X>` and opening at `beaker_at_<Y>` moves it onto
station Y; the left gripper closing at `solid_bottle` grasps the bottle, whose tilt then follows the
left wrist at the pour pose (twin.tilt_bottle); reaching `stirrer_button` switches the stirrer on.
Service /lab/balance/tare (std_srvs/Trigger) tares the balance.

For rviz: the bench as visualization_msgs/MarkerArray on /lab/bench_markers (agentchemist.sim.bench_view:
the front-image layout mapped onto a bench top in front of the robot), in base_link (no bench TF is
published: tf2_msgs has no PyPI wheel), at marker_rate_hz of wall time.
"""
import json
import time

from rclpy.node import Node
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, Header, String
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory
from visualization_msgs.msg import Marker, MarkerArray

from agentchemist.policy.primitives import load_poses
from agentchemist.sim.bench_effects import TwinBench
from agentchemist.sim.bench_view import twin_markers
from agentchemist.sim.draw_trigger import DrawTrigger, DrawTriggerConfig
from agentchemist.sim.lab import LabTwin
from agentchemist.sim.scenario import load_scenario
from agentchemist_interfaces.msg import AudioChunk, ChemicalReading
from agentchemist_interfaces.srv import InjectFault
from agentchemist_ros.common import images, topics
from agentchemist_ros.common.params import declare
from agentchemist_ros.common.runner import spin_node
from agentchemist_ros.common.qos import AUDIO, LATCHED, READINGS, SENSOR
from agentchemist_ros.common.timeconv import node_now, to_msg

SAMPLE_RATE = 48000


class LabSimNode(Node):
    def __init__(self, **kwargs):
        super().__init__("lab_sim", **kwargs)
        scenario_path = declare(self, "scenario", "", "Scenario YAML (config/scenarios/*.yaml)")
        self.rtf = declare(self, "real_time_factor", 0.0,
                           "Sim seconds per wall second; 0 = the scenario's value (capped at max_real_time_factor)",
                           low=0.0, high=1000.0)
        self.max_rtf = declare(self, "max_real_time_factor", 50.0, "Upper bound of the pace", low=0.1, high=1000.0)
        self.period = declare(self, "clock_period", 0.05, "Sim seconds per /clock tick", low=0.001, high=0.5)
        self.ph_period = 1.0 / declare(self, "ph_rate_hz", 5.0, "pH meter publish rate", low=0.1, high=100.0)
        self.balance_period = 1.0 / declare(self, "balance_rate_hz", 5.0,
                                              "Balance publish rate (the solid pour reads it between pulses)",
                                              low=0.1, high=50.0)
        self.joint_period = 1.0 / declare(self, "joint_state_rate_hz", 10.0, "Joint state rate", low=1.0, high=500.0)
        self.audio_chunk = declare(self, "audio_chunk_s", 0.1, "Audio chunk length (s)", low=0.01, high=1.0)
        camera_rate = declare(self, "camera_rate_hz", 0.5, "Camera rate (Hz); 0 = the scenario's", low=0.0, high=30.0)
        # Rendering audio and images nobody listens to is most of the twin's cost at 50x.
        self.lazy = declare(self, "publish_only_with_subscribers", True,
                            "Skip rendering audio/camera streams that have no subscriber")
        self.cameras = list(declare(self, "cameras", ["front"], "Cameras to render (front, left_wrist, right_wrist)"))
        self.truth_period = declare(self, "ground_truth_period", 1.0, "Ground truth publish period (sim s)",
                                    low=0.05, high=60.0)
        self.start_time = declare(self, "start_time", 1.0, "Sim time of the first tick (s)", low=0.0, high=1e9)
        # Wall-clock rate, not sim time: the markers are for a person watching rviz, and at 50x a sim-time
        # rate would flood it with 100 arrays a second.
        marker_rate = declare(self, "marker_rate_hz", 2.0,
                              "Bench markers for rviz (/lab/bench_markers), wall-clock Hz; 0 = off",
                              low=0.0, high=30.0)
        self.marker_period = 1.0 / marker_rate if marker_rate > 0.0 else 0.0
        self.next_marker_wall = 0.0
        # Lock-step with the gripper controller: while a controller streams gripper commands (a dispense
        # is running), the next tick waits until it has answered the last one (up to a wall timeout), so
        # the squeeze does not depend on how loaded the graph is. Drop size depends on the squeeze.
        self.lockstep_timeout = declare(self, "lockstep_timeout_s", 0.25,
                                        "Wall seconds a tick waits for the gripper controller's answer while it "
                                        "streams commands (0 = no lock-step)", low=0.0, high=5.0)
        self.streak = 0          # consecutive ticks answered by a gripper command (a streaming controller)
        self.answered = True
        self.waiting_since: float | None = None
        # Beside Gazebo, Gazebo owns /clock and the arms' joint states: the twin then supplies only chemistry.
        self.publish_clock = declare(self, "publish_clock", True,
                                     "Publish /clock; false beside Gazebo: the twin then follows the ROS clock "
                                     "(use_sim_time true) instead of pacing itself")
        self.publish_joints = declare(self, "publish_joint_states", True,
                                      "Publish /joint_states (false when ros2_control publishes them)")
        if not scenario_path:
            raise ValueError("lab_sim needs the 'scenario' parameter (a config/scenarios/*.yaml file)")
        if not self.publish_clock and not self.get_parameter("use_sim_time").value:
            raise ValueError("lab_sim with publish_clock false follows an external /clock: set use_sim_time true")
        self.scenario = load_scenario(scenario_path)
        self.twin = LabTwin(self.scenario)
        self.rtf = min(self.rtf or self.scenario.real_time_factor, self.max_rtf)
        self.camera_period = 1.0 / (camera_rate or self.scenario.cameras.rate_hz)
        poses = load_poses()
        side = self.scenario.pipette.held_by
        self.pipette_side = side
        self.draw_trigger = DrawTrigger(DrawTriggerConfig(poses.pose(side, "titrant_bottle"), poses.tolerance_rad))
        self.bench = TwinBench(self.twin, poses)

        self.t = self.start_time
        self.twin.step(self.t)
        self.next = {"ph": self.t, "balance": self.t, "joint": self.t, "camera": self.t, "truth": self.t,
                     "audio": self.t}
        self.clock_pub = self.create_publisher(Clock, "/clock", 10)
        self.ph_pub = self.create_publisher(ChemicalReading, topics.PH_READING, READINGS)
        self.balance_pub = self.create_publisher(ChemicalReading, topics.BALANCE_READING, READINGS)
        self.joint_pub = self.create_publisher(JointState, topics.JOINT_STATES, 10)
        self.audio_pubs = {s: self.create_publisher(AudioChunk, topics.audio_topic(s), AUDIO) for s in topics.SIDES}
        self.camera_pubs = {c: self.create_publisher(type(images.to_msg(_blank())), topics.camera_topic(c), SENSOR)
                            for c in self.cameras}
        self.truth_pub = self.create_publisher(String, topics.GROUND_TRUTH, LATCHED)
        # Latched: rviz started after the twin gets the whole bench at once (every message is complete).
        self.marker_pub = (self.create_publisher(MarkerArray, topics.BENCH_MARKERS, LATCHED)
                           if self.marker_period else None)
        for s in topics.SIDES:
            self.create_subscription(Float64MultiArray, topics.gripper_command_topic(s),
                                     lambda m, s=s: self.on_gripper(s, m), 10)
            self.create_subscription(JointTrajectory, topics.arm_trajectory_topic(s),
                                     lambda m, s=s: self.on_arm(s, m), 10)
        self.create_service(InjectFault, "/lab_sim/inject_fault", self.on_inject_fault)
        self.create_service(Trigger, "/lab_sim/new_sample", self.on_new_sample)
        self.create_service(Trigger, topics.BALANCE_TARE, self.on_tare)
        self.wall_started = time.monotonic()
        self.sim_started = self.t
        self.timer = self.create_timer(self.period / self.rtf, self.tick)
        self.get_logger().info(f"twin '{self.scenario.name}' at up to {self.rtf:.0f}x real time")

    # ------------------------------------------------------------------ commands
    def on_gripper(self, side, msg):
        if not msg.data:
            self.get_logger().warn(f"empty gripper command for {side}")
            return
        if side == self.pipette_side and not self.answered:
            self.answered = True
            self.streak += 1
        result = self.twin.command_gripper(side, float(msg.data[0]), self.t)
        if result.clamped:
            self.get_logger().warn(f"{side} gripper command clamped: {result.reason}")

    def on_arm(self, side, msg):
        if not msg.points:
            return
        names = [n for n in msg.joint_names]
        target = list(msg.points[-1].positions)
        if names and len(names) != len(target):
            self.get_logger().warn("trajectory with mismatched joint names and positions ignored")
            return
        result = self.twin.command_arm(side, target, self.t)
        if result.clamped:
            self.get_logger().warn(f"{side} arm command clamped: {result.reason}")

    def on_inject_fault(self, request, response):
        try:
            params = json.loads(request.params_json or "{}")
            if not isinstance(params, dict):
                raise ValueError("params_json must be a JSON object")
            self.twin.inject_fault(request.kind, self.t, request.duration_s, **params)
        except (ValueError, TypeError) as exc:  # unknown kind, bad parameters: refused with the reason
            response.success, response.message = False, f"fault refused: {exc}"
            return response
        response.success, response.message = True, f"{request.kind} injected at {self.t:.2f} s"
        self.get_logger().warn(response.message)
        return response

    def on_new_sample(self, request, response):
        """A fresh beaker of the scenario's sample (long runs: experiments back to back on one bench)."""
        result = self.twin.new_sample(self.t)
        if result.accepted:  # the bench is set up again: nothing is carried or held any more
            self.bench.reset()
        response.success = result.accepted
        response.message = (f"sample {self.twin.samples} on the bench at {self.t:.2f} s" if result.accepted
                            else f"no new sample: {result.reason}")
        self.get_logger().info(response.message)
        return response

    def on_tare(self, request, response):
        result = self.twin.tare_balance(self.t)
        response.success = result.accepted
        response.message = (f"balance tared on {result.accepted_value:.3f} g at {self.t:.2f} s" if result.accepted
                            else f"tare refused: {result.reason}")
        self.get_logger().info(response.message)
        return response

    # ------------------------------------------------------------------ pacing
    def _held_for_controller(self) -> bool:
        """True while the streaming gripper controller has not yet answered the last tick."""
        # One-off commands (the action policy's grasp) are not a stream: wait only for a controller that
        # has answered the last few ticks in a row.
        streaming = self.streak >= 3
        if not (self.lockstep_timeout and streaming) or self.answered:
            self.waiting_since = None
            return False
        now = time.monotonic()
        if self.waiting_since is None:
            self.waiting_since = now
        if now - self.waiting_since > self.lockstep_timeout:
            self.waiting_since = None  # the controller stopped or is stuck: do not stall the world
            self.streak = 0
            return False
        return True

    def tick(self):
        if self.publish_clock and self._held_for_controller():
            return
        if not self.answered:
            self.streak = 0  # a tick went by without a command: not (or no longer) streaming
        self.answered = False
        if self.publish_clock:
            self.t = round(self.t + self.period, 9)
        else:
            ros_now = node_now(self)  # Gazebo's /clock: step the chemistry up to it, never backwards
            if ros_now <= self.t:
                return
            self.t = ros_now
        self.twin.step(self.t)
        if self.publish_clock:
            self.clock_pub.publish(Clock(clock=to_msg(self.t)))
        self._check_draw()
        self._check_bench()
        if self.marker_pub is not None:
            wall = time.monotonic()
            if wall >= self.next_marker_wall:
                self.next_marker_wall = wall + self.marker_period
                if not (self.lazy and self.marker_pub.get_subscription_count() == 0):
                    self.publish_markers()
        if self.t >= self.next["ph"]:
            self.next["ph"] += self.ph_period
            self._publish_ph()
        if self.t >= self.next["balance"]:
            self.next["balance"] += self.balance_period
            self._publish_reading(self.balance_pub, self.twin.read_balance(self.t), "balance", "mass", "g")
        if self.publish_joints and self.t >= self.next["joint"]:
            self.next["joint"] += self.joint_period
            names, positions = self.twin.joint_states()
            self.joint_pub.publish(JointState(header=Header(stamp=to_msg(self.t)), name=names,
                                              position=[float(p) for p in positions]))
        while self.t >= self.next["audio"] + self.audio_chunk:
            t0 = self.next["audio"]
            n = int(round(self.audio_chunk * SAMPLE_RATE))
            for side, pub in self.audio_pubs.items():
                if self.lazy and pub.get_subscription_count() == 0:
                    continue
                samples = self.twin.audio(side, t0, n)
                msg = AudioChunk(header=Header(stamp=to_msg(t0), frame_id=f"{side}_gripper_mic"),
                                 sample_rate=SAMPLE_RATE, channels=1)
                msg.data = _as_array(samples)
                pub.publish(msg)
            self.next["audio"] = round(t0 + self.audio_chunk, 9)
        if self.t >= self.next["camera"]:
            self.next["camera"] += self.camera_period
            for name, pub in self.camera_pubs.items():
                if self.lazy and pub.get_subscription_count() == 0:
                    continue
                frame = self.twin.render_camera(name, self.t)
                pub.publish(images.to_msg(frame, "rgb8", Header(stamp=to_msg(self.t), frame_id=f"{name}_camera")))
        if self.t >= self.next["truth"]:
            self.next["truth"] += self.truth_period
            self.publish_truth()

    def _check_draw(self):
        names, positions = self.twin.joint_states()
        side = self.pipette_side
        arm = [p for n, p in zip(names, positions) if n.startswith(f"{side}_joint")]
        opening_mm = self.twin.gripper_opening_m(side) * 1000.0
        if self.draw_trigger.update(arm, opening_mm):
            titrant = next(iter(self.scenario.titrant))
            result = self.twin.draw(titrant, self.scenario.pipette.capacity_ml, self.t)
            level = "info" if result.accepted else "warn"
            getattr(self.get_logger(), level)(f"draw {titrant}: {result.accepted_value} mL {result.reason}")

    def _check_bench(self):
        """Turn this tick's arm and gripper state into bench effects (see the module docstring)."""
        for level, message in self.bench.tick(self.t):
            getattr(self.get_logger(), level)(message)

    def _publish_ph(self):
        reading = self.twin.read_ph(self.t)
        self._publish_reading(self.ph_pub, reading, "ph_meter", "pH", "pH")
        temp = self.twin.read_temperature(self.t)
        self._publish_reading(self.ph_pub, temp, "ph_meter", "temperature", "degC")

    def _publish_reading(self, pub, reading, sensor, quantity, unit):
        if reading is None:  # dropout: the meter is silent, as a real one with a loose cable is
            return
        pub.publish(ChemicalReading(header=Header(stamp=to_msg(self.t), frame_id=sensor), sensor=sensor,
                                    quantity=quantity, value=float(reading.value), unit=unit,
                                    self_check_ok=bool(reading.self_check_ok), noise=float(reading.noise_sd)))

    def publish_truth(self):
        """A compact ground-truth summary (the full record, with every drop, is `twin.truth()`; it grows
        with the run, so publishing it every period would make the twin slower and slower)."""
        summary = self.twin.truth_summary()
        summary["sim_time"] = self.t
        summary["wall_elapsed"] = time.monotonic() - self.wall_started
        self.truth_pub.publish(String(data=json.dumps(summary, default=float)))

    def publish_markers(self):
        """The bench as it is now, one MarkerArray (every item's markers: ADD, or DELETE when gone)."""
        stamp = to_msg(self.t)
        self.marker_pub.publish(MarkerArray(markers=[_marker_msg(s, stamp) for s in twin_markers(self.twin)]))

    def real_time_factor(self) -> float:
        wall = time.monotonic() - self.wall_started
        return (self.t - self.sim_started) / wall if wall > 0 else 0.0


_SHAPES = {"cube": Marker.CUBE, "cylinder": Marker.CYLINDER, "sphere": Marker.SPHERE,
           "text": Marker.TEXT_VIEW_FACING}


def _marker_msg(spec, stamp) -> Marker:
    """visualization_msgs/Marker of a bench_view.MarkerSpec (lifetime 0: it stays until replaced)."""
    msg = Marker(header=Header(stamp=stamp, frame_id=spec.frame), ns=spec.ns, id=spec.id)
    if spec.action == "delete":
        msg.action = Marker.DELETE
        return msg
    msg.action, msg.type, msg.text = Marker.ADD, _SHAPES[spec.shape], spec.text
    p, q = msg.pose.position, msg.pose.orientation
    p.x, p.y, p.z = (float(v) for v in spec.position)
    q.x, q.y, q.z, q.w = (float(v) for v in spec.orientation)
    msg.scale.x, msg.scale.y, msg.scale.z = (float(v) for v in spec.scale)
    msg.color.r, msg.color.g, msg.color.b, msg.color.a = (float(v) for v in spec.rgba)
    return msg


def _blank():
    import numpy as np
    return np.zeros((1, 1, 3), dtype="uint8")


def _as_array(samples):
    import array
    out = array.array("h")
    out.frombytes(samples.astype("int16").tobytes())
    return out


def main(args=None):
    spin_node(LabSimNode, args)


if __name__ == "__main__":
    main()
