"""lab_sim: the lab digital twin on the ROS graph.

Publishes /clock (sim time, faster than real time), instrument readings, contact audio, camera images,
joint states and ground truth; follows gripper and arm commands. The twin itself is
agentchemist.sim.LabTwin; this node only paces it and translates messages.

Bench effects of the arms (agentchemist.sim.workcell_effects, fed every tick with the measured joints):
the right gripper closing on the beaker at `beaker_at_<X>` and opening at `beaker_at_<Y>` moves it onto
station Y; the left gripper closing at `solid_bottle` grasps the bottle, whose tilt then follows the
left wrist at the pour pose (twin.tilt_bottle); reaching `stirrer_button` switches the stirrer on.
Service /lab/balance/tare (std_srvs/Trigger) tares the balance. The pipette draws titrant when its arm
squeezes and releases the bulb at the titrant bottle (agentchemist.sim.pipette_draw).

Arms and cameras (arm_backend, agentchemist.sim.arm_backends): the twin's kinematics and drawings, or
MuJoCo (physics, joint states, RGB-D renders with depth on depth_topic and CameraInfo on camera_info_topic).

Pacing (agentchemist.sim.lab_sim_config.LabSimConfig): a tick advances sim time by clock_period, streams go
out when due (agentchemist.sim.streams); a timer at the pace ticks, or with free_run each tick queues the next
behind its messages; while a gripper controller streams commands a tick waits for its answer (sim.lockstep).

For rviz: the bench as visualization_msgs/MarkerArray on /lab/bench_markers (agentchemist.sim.workcell_view:
the front-image layout mapped onto a bench top in front of the robot), in base_link (no bench TF is
published: tf2_msgs has no PyPI wheel), at marker_rate_hz of wall time.
"""
import time

from agentchemist_ros.common.guarded import GuardedNode
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import CameraInfo, Image, JointState
from std_msgs.msg import Float64MultiArray, Header, String
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory
from visualization_msgs.msg import MarkerArray

from agentchemist.paths import scene_asset_dir, urdf_file
from agentchemist.policy.primitives import load_poses
from agentchemist.sim.arm_backends import make_arm_backend
from agentchemist.sim.workcell_effects import TwinBench
from agentchemist.sim.workcell_view import twin_markers
from agentchemist.sim.lab import LabTwin
from agentchemist.sim.lab_sim_config import LabSimConfig
from agentchemist.sim.lockstep import STREAMING_TICKS, Lockstep
from agentchemist.workcell.robot import camera_optical_frame
from agentchemist.sim.pipette_draw import PipetteDraw
from agentchemist.sim.scenario import load_scenario
from agentchemist.sim.streams import StreamSchedule
from agentchemist.sim.twin_ph_meter import TwinPhMeter
from agentchemist_interfaces.msg import AudioChunk, ChemicalReading, ClockAck, PeerWait
from agentchemist_interfaces.srv import InjectFault
from agentchemist_ros.common import images, topics
from agentchemist_ros.common.codec import decode_fault_params, encode_calibration, encode_truth
from agentchemist_ros.common.markers import marker_msg
from agentchemist_ros.common.params import declare_config
from agentchemist_ros.common.runner import spin_node
from agentchemist_ros.common.qos import AUDIO, LATCHED, PEER_WAITS, READINGS, SENSOR
from agentchemist_ros.common.queued_call import QueuedCall
from agentchemist_ros.common.timeconv import node_now, to_msg, to_sec

SAMPLE_RATE = 48000


class LabSimNode(GuardedNode):
    def __init__(self, **kwargs):
        super().__init__("lab_sim", **kwargs)
        self.config = cfg = declare_config(self, LabSimConfig)
        if not cfg.scenario:
            raise ValueError("lab_sim needs the 'scenario' parameter (a config/scenarios/*.yaml file)")
        if not cfg.publish_clock and not self.get_parameter("use_sim_time").value:
            raise ValueError("lab_sim with publish_clock false follows an external /clock: set use_sim_time true")
        self.scenario = load_scenario(cfg.scenario)
        self.twin = LabTwin(self.scenario)
        self.ph_meter = TwinPhMeter(self.scenario, cfg.ph_calibration, time.time())  # electrode calibration
        self.rtf = cfg.pace(self.scenario.real_time_factor)
        self.lazy = cfg.publish_only_with_subscribers
        self.next_marker_wall = 0.0
        self.lockstep = Lockstep(cfg.lockstep_timeout_s, cfg.peer_wait_limit_s, cfg.max_lead_s, cfg.ack_dead_s,
                                 streaming_ticks=1 if cfg.free_run else STREAMING_TICKS)
        self.held = False  # the last tick was held by the lockstep
        self.release = QueuedCall(self, self._release_tick, "release tick")  # see released()
        poses = load_poses()
        self.pipette_side = self.scenario.pipette.held_by
        self.draw = PipetteDraw(self.twin, poses)
        self.bench = TwinBench(self.twin, poses)

        self.t = cfg.start_time
        self.twin.step(self.t)
        backend = cfg.arm_backend or self.scenario.arm_backend
        self.arms = make_arm_backend(backend, self.twin, *((urdf_file(), scene_asset_dir(self.scenario.name))
                                                           if backend == "mujoco" else ()))
        self.streams = StreamSchedule(self.t, {
            "ph": 1.0 / cfg.ph_rate_hz, "balance": 1.0 / cfg.balance_rate_hz, "joint": 1.0 / cfg.joint_state_rate_hz,
            "camera": cfg.camera_period(self.scenario.cameras.rate_hz), "truth": cfg.ground_truth_period},
            cfg.audio_chunk_s)
        self.clock_pub = self.create_publisher(Clock, "/clock", 10)
        self.ph_pub = self.create_publisher(ChemicalReading, topics.PH_READING, READINGS)
        self.balance_pub = self.create_publisher(ChemicalReading, topics.BALANCE_READING, READINGS)
        self.joint_pub = self.create_publisher(JointState, topics.JOINT_STATES, 10)
        self.audio_pubs = {s: self.create_publisher(AudioChunk, topics.audio_topic(s), AUDIO) for s in topics.SIDES}
        self.camera_pubs = {c: self.create_publisher(Image, topics.camera_topic(c), SENSOR)
                            for c in cfg.cameras}
        physics = self.arms.name != "kinematic"  # RGB-D renders: depth and intrinsics beside each colour image
        self.depth_pubs = {c: (self.create_publisher(Image, topics.depth_topic(c), SENSOR),
                               self.create_publisher(CameraInfo, topics.camera_info_topic(c), SENSOR))
                           for c in (cfg.cameras if physics else ())}
        self.truth_pub = self.create_publisher(String, topics.GROUND_TRUTH, LATCHED)
        if cfg.instruments == "topics":  # latched, for the supervisor; with serial the ph_meter node states its own
            self.create_publisher(String, topics.PH_CALIBRATION, LATCHED).publish(String(data=encode_calibration(
                self.ph_meter.status(time.time()))))
        # Latched: rviz started after the twin gets the whole bench at once (every message is complete).
        self.marker_pub = (self.create_publisher(MarkerArray, topics.BENCH_MARKERS, LATCHED)
                           if cfg.marker_period else None)
        for s in topics.SIDES:
            self.create_subscription(Float64MultiArray, topics.gripper_command_topic(s),
                                     lambda m, s=s: self.on_gripper(s, m), 10)
            self.create_subscription(JointTrajectory, topics.arm_trajectory_topic(s),
                                     lambda m, s=s: self.on_arm(s, m), 10)
        self.create_subscription(PeerWait, topics.PEER_WAITS, lambda m: self.released(self.lockstep.peer_wait(
            m.node, m.count, time.monotonic())), PEER_WAITS)
        self.create_subscription(ClockAck, topics.CLOCK_ACKS, lambda m: self.released(self.lockstep.acked(
            m.node, to_sec(m.stamp), time.monotonic())), 50)
        self.create_service(InjectFault, "/lab_sim/inject_fault", self.on_inject_fault)
        self.create_service(Trigger, "/lab_sim/new_sample", self.on_new_sample)
        self.serial = cfg.serial_bench(self.context, self.twin, self.streams)  # instruments serial: docs/robot.md
        self.create_service(Trigger, "/lab_sim/tare" if self.serial else topics.BALANCE_TARE, self.on_tare)
        self.wall_started = time.monotonic()
        self.free_run = cfg.free_run and cfg.publish_clock
        self.next_tick = QueuedCall(self, self.tick, "next tick")  # free run: behind this tick's messages
        # Free run: the timer only looks at a held tick; a look that ticked otherwise would jump the queue.
        self.timer = (self.create_timer(cfg.free_run_look_s, self._release_tick) if self.free_run
                      else self.create_timer(cfg.clock_period / self.rtf, self.tick))
        if self.free_run:
            self.next_tick.post()  # the first tick
        pace = "as fast as the graph keeps up" if self.free_run else f"at up to {self.rtf:.0f}x real time"
        self.get_logger().info(f"twin '{self.scenario.name}' {pace}")

    # ------------------------------------------------------------------ commands
    def on_gripper(self, side, msg):
        if not msg.data:
            self.get_logger().warn(f"empty gripper command for {side}")
            return
        if side == self.pipette_side:
            self.lockstep.command()
        result = self.arms.command_gripper(side, float(msg.data[0]), self.t)
        if result.clamped or not result.accepted:
            self.get_logger().warn(f"{side} gripper command clamped or refused: {result.reason}")
        self.released()

    def on_arm(self, side, msg):
        if not msg.points:
            return
        names = [n for n in msg.joint_names]
        target = list(msg.points[-1].positions)
        if names and len(names) != len(target):
            self.get_logger().warn("trajectory with mismatched joint names and positions ignored")
            return
        points = [(to_sec(p.time_from_start), list(p.positions)) for p in msg.points]
        result = self.arms.command_arm(side, names, points, self.t)
        if result.clamped or not result.accepted:
            self.get_logger().warn(f"{side} arm command clamped or refused: {result.reason}")

    def on_inject_fault(self, request, response):
        try:
            params = decode_fault_params(request.params_json)
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
        response.success = (result := self.twin.tare_balance(self.t)).accepted
        response.message = (f"balance tared on {result.accepted_value:.3f} g at {self.t:.2f} s" if result.accepted
                            else f"tare refused: {result.reason}")
        self.get_logger().info(response.message)
        return response

    # ------------------------------------------------------------------ pacing
    def released(self, _=None):
        """A held tick goes out when what it waited for arrives (not at the timer's next period), queued
        behind what has arrived: answers to the last tick's messages act before the next tick."""
        if self.held:
            self.release.post()

    def _release_tick(self):
        if self.held:
            self.tick()

    def tick(self):
        cfg = self.config
        self.held = cfg.publish_clock and self.lockstep.hold(time.monotonic(), self.t)
        if self.held:
            return
        self.lockstep.ticked()
        if cfg.publish_clock:
            self.t = round(self.t + cfg.clock_period, 9)
        else:
            ros_now = node_now(self)  # Gazebo's /clock: step the chemistry up to it, never backwards
            if ros_now <= self.t:
                return
            self.t = ros_now
        self.arms.step(self.t)
        if cfg.publish_clock:
            self.clock_pub.publish(Clock(clock=to_msg(self.t)))
        # Effects of the arms' motions: the pipette's draw, then the bench (see the module docstring).
        for level, message in self.draw.tick(self.t) + self.bench.tick(self.t) + self.serial.tick(self.t):
            getattr(self.get_logger(), level)(message)
        if self.marker_pub is not None:
            wall = time.monotonic()
            if wall >= self.next_marker_wall:
                self.next_marker_wall = wall + cfg.marker_period
                if not (self.lazy and self.marker_pub.get_subscription_count() == 0):
                    self.publish_markers()
        if self.streams.due("ph", self.t):
            self._publish_ph()
        if self.streams.due("balance", self.t):
            self._publish_reading(self.balance_pub, self.twin.read_balance(self.t), "balance", "mass", "g")
        if cfg.publish_joint_states and self.streams.due("joint", self.t):
            names, positions = self.arms.joint_states()
            self.joint_pub.publish(JointState(header=Header(stamp=to_msg(self.t)), name=names,
                                              position=[float(p) for p in positions]))
        for t0 in self.streams.audio_chunks(self.t):
            n = int(round(cfg.audio_chunk_s * SAMPLE_RATE))
            for side, pub in self.audio_pubs.items():
                if self.lazy and pub.get_subscription_count() == 0:
                    continue
                msg = AudioChunk(header=Header(stamp=to_msg(t0), frame_id=f"{side}_gripper_mic"),
                                 sample_rate=SAMPLE_RATE, channels=1)
                msg.data = _as_array(self.twin.audio(side, t0, n))
                pub.publish(msg)
        if self.streams.due("camera", self.t):
            for name, pub in self.camera_pubs.items():
                if self.lazy and pub.get_subscription_count() == 0:
                    continue
                frame, depth, k = self.arms.render(name, self.t)
                header = Header(stamp=to_msg(self.t), frame_id=camera_optical_frame(name))
                pub.publish(images.to_msg(frame, "rgb8", header))
                if depth is not None:  # physics: depth aligned to the colour image, and the intrinsics
                    self.depth_pubs[name][0].publish(images.depth_to_msg(depth, header))
                    self.depth_pubs[name][1].publish(images.camera_info(k, frame.shape[1], frame.shape[0], header))
        if self.streams.due("truth", self.t):
            self.publish_truth()
        if self.free_run:  # the next tick now, or once what would hold it arrives (released())
            self.held = self.lockstep.hold(time.monotonic(), self.t)
            if not self.held:
                self.next_tick.post()

    def _publish_ph(self):
        reading = self.ph_meter.read(self.twin.read_ph(self.t), time.time())  # corrected, or flagged
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
        self.truth_pub.publish(String(data=encode_truth(summary)))

    def publish_markers(self):
        """The bench as it is now, one MarkerArray (every item's markers: ADD, or DELETE when gone)."""
        stamp = to_msg(self.t)
        self.marker_pub.publish(MarkerArray(markers=[marker_msg(s, stamp) for s in twin_markers(self.twin)]))


def _as_array(samples):
    import array
    out = array.array("h")
    out.frombytes(samples.astype("int16").tobytes())
    return out


def main(args=None):
    spin_node(LabSimNode, args)


if __name__ == "__main__":
    main()
