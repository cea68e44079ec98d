"""The piper_driver node (real rclpy) against the simulated Piper firmware on the same python-can `virtual`
channel in this process, named and remapped as robot.launch.py does. A test node plays ros2_control's
topic-based system: it publishes joint_commands and reads joint_states and the anomalies.

The firmware runs on its own thread on the wall clock, as an arm would. Waits are for conditions, with
generous deadlines; nothing asserts how long anything took."""
import math
import threading
import time
import uuid

import pytest

rclpy = pytest.importorskip("rclpy")

import can  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

from agentchemist.hardware.piper import PiperFirmwareSim, codec  # noqa: E402
from agentchemist_interfaces.msg import Anomaly  # noqa: E402
from agentchemist_ros.common import topics  # noqa: E402
from agentchemist_ros.common.qos import RELIABLE  # noqa: E402
from agentchemist_ros.piper_driver_node import PiperDriverNode  # noqa: E402
from tests.graph.harness import before_marker, spinning  # noqa: E402

START = (0.1, 0.5, -0.5, 0.2, 0.3, -1.0)
ARM = [f"right_joint{i}" for i in range(1, 7)]
NAMES = ARM + ["right_gripper"]


class FirmwareThread:
    """The simulated arm, stepped at about 400 Hz of wall time until stopped."""

    def __init__(self, channel: str):
        self.bus = can.Bus(interface="virtual", channel=channel)
        self.fw = PiperFirmwareSim(self.bus, joints_rad=START, gripper_m=0.03)
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        while not self.stop.is_set():
            with self.lock:
                self.fw.step(time.monotonic())
            time.sleep(0.0025)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(timeout=5)
        self.bus.shutdown()


def wait_for(condition, what: str, timeout: float = 15.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if condition():
            return
        time.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


def stamp(msg) -> float:
    t = msg.header.stamp if hasattr(msg, "header") else msg.stamp
    return t.sec + t.nanosec * 1e-9


def command(pub, arm, gripper):
    pub.publish(JointState(name=NAMES, position=[*map(float, arm), float(gripper)]))


def test_piper_driver_node_follows_commands_only_when_trustworthy():
    rclpy.init()
    channel = f"piper-graph-{uuid.uuid4().hex}"
    with FirmwareThread(channel) as arm:
        driver = PiperDriverNode(
            cli_args=["--ros-args", "-r", "__node:=right_piper_driver",
                      "-r", "joint_states:=/right_piper/joint_states",
                      "-r", "joint_commands:=/right_piper/joint_commands"],
            parameter_overrides=[Parameter("side", value="right"), Parameter("can_interface", value=channel),
                                 Parameter("can_bustype", value="virtual"),
                                 Parameter("feedback_timeout_s", value=0.25)])
        # every cycle's joint state (None: nothing published), recorded on the executor thread: the
        # test counts the driver's own cycles instead of sleeping
        ticks, step = [], driver.driver.step
        driver.driver.step = lambda now: ticks.append(step(now)) or ticks[-1]
        probe = Node("piper_probe")
        states, anomalies = [], []
        probe.create_subscription(JointState, "/right_piper/joint_states", states.append, 10)
        probe.create_subscription(Anomaly, topics.ANOMALIES, anomalies.append, RELIABLE)
        pub = probe.create_publisher(JointState, "/right_piper/joint_commands", 10)
        with spinning([driver, probe]):
            assert driver.get_name() == "right_piper_driver"
            wait_for(lambda: states, "joint_states from the driver")
            first = states[-1]
            assert list(first.name) == NAMES
            assert list(first.position[:6]) == pytest.approx(START, abs=2e-5)
            assert first.position[6] == pytest.approx(0.03, abs=1e-9)

            # ros2_control's startup commands (URDF initial values) are held: no motion frame reaches the arm
            command(pub, [0.0] * 6, 0.07)
            wait_for(lambda: driver.driver.arm_target is not None, "the driver to take the startup command")
            seen = len(states)
            wait_for(lambda: len(states) > seen + 20, "more joint_states after the startup command")
            with arm.lock:
                moved = [m for m in arm.fw.received if m.arbitration_id in (*codec.JOINT_CTRL_IDS, 0x159)]
                assert moved == [] and arm.fw.joints == pytest.approx(START, abs=1e-9)
            assert arm.fw.ctrl_mode == codec.CTRL_CAN and arm.fw.enabled      # enabled, in CAN mode, still

            # the trajectory controller activates at the measured position, then moves; the gripper too
            command(pub, START, 0.07)
            target = (-0.3, 1.0, -0.8, 0.0, 0.1, 0.5)
            wait_for(lambda: driver.driver.arm_armed, "the driver to follow the arm commands")
            command(pub, target, 0.012)
            wait_for(lambda: states and all(abs(a - b) < 1e-3 for a, b in zip(states[-1].position,
                                                                                 (*target, 0.012))),
                     "joint_states at the commanded target")

            # a NaN command is refused on the anomaly topic and moves nothing
            command(pub, (math.nan, *target[1:]), 0.012)
            wait_for(lambda: any(a.kind == "piper_command_rejected" for a in anomalies), "the rejection anomaly")
            rejected = next(a for a in anomalies if a.kind == "piper_command_rejected")
            assert rejected.source == "right_piper_driver" and "right_joint1" in rejected.description
            with arm.lock:
                assert arm.fw.joint_targets == pytest.approx(target, abs=2e-5)

            # the arm goes quiet: a halt anomaly, and joint_states stop
            with arm.lock:
                arm.fw.silent = True
            wait_for(lambda: any(a.kind == "piper_feedback_timeout" for a in anomalies), "the dead-bus anomaly")
            dead = next(a for a in anomalies if a.kind == "piper_feedback_timeout")
            assert dead.severity == "halt" and not dead.resolved
            dead_at, first_dead_tick = stamp(dead), len(ticks)
            frames = driver.driver.frames_sent
            wait_for(lambda: len(ticks) >= first_dead_tick + 20, "20 driver cycles on the dead bus")
            assert driver.driver.frames_sent == frames          # no motion frames to a dead arm
            seen = len(states)
            # the marker: the arm comes back, and the first joint state it brings (stamped after the
            # anomaly) follows, on the same publisher, whatever the driver published while it was dead
            with arm.lock:
                arm.fw.silent = False
            before_marker(states, lambda: None, lambda m: stamp(m) > dead_at, since=seen)
            back = next(i for i in range(first_dead_tick, len(ticks)) if ticks[i] is not None)
            assert back >= first_dead_tick + 20                 # no joint state in any dead cycle


def test_piper_driver_node_faults_diagnostics_and_estop_over_ros():
    """Velocity and effort in joint_states, one DiagnosticStatus per joint on /diagnostics, an over-temperature
    anomaly with the hold response and its resolution, and the e-stop / resume services end to end."""
    from diagnostic_msgs.msg import DiagnosticArray
    from std_srvs.srv import Trigger

    rclpy.init()
    channel = f"piper-graph-{uuid.uuid4().hex}"
    with FirmwareThread(channel) as arm:
        driver = PiperDriverNode(
            cli_args=["--ros-args", "-r", "__node:=right_piper_driver",
                      "-r", "joint_states:=/right_piper/joint_states",
                      "-r", "joint_commands:=/right_piper/joint_commands"],
            parameter_overrides=[Parameter("side", value="right"), Parameter("can_interface", value=channel),
                                 Parameter("can_bustype", value="virtual"),
                                 Parameter("feedback_timeout_s", value=0.25)])
        probe = Node("piper_probe_faults")
        states, anomalies, diagnostics = [], [], []
        probe.create_subscription(JointState, "/right_piper/joint_states", states.append, 10)
        probe.create_subscription(Anomaly, topics.ANOMALIES, anomalies.append, RELIABLE)
        probe.create_subscription(DiagnosticArray, "/diagnostics", diagnostics.append, 10)
        estop = probe.create_client(Trigger, "/right_piper_driver/emergency_stop")
        resume = probe.create_client(Trigger, "/right_piper_driver/resume")
        with spinning([driver, probe]):
            # the first arrays may predate the first high-speed feedback (effort still 0): wait for the effort
            wait_for(lambda: states and len(states[-1].velocity) == 7 and any(states[-1].effort),
                     "joint_states with velocity and effort")
            s = states[-1]
            assert len(s.effort) == 7 and s.effort[1] == pytest.approx(0.9 * 1.18125, rel=1e-6)
            # the first array may predate the first low-speed frames (STALE): wait for one with every driver OK
            wait_for(lambda: diagnostics and all(st.level == b"\x00" for st in diagnostics[-1].status),
                     "a DiagnosticArray with every joint driver OK")
            statuses = diagnostics[-1].status
            assert [st.hardware_id for st in statuses] == [f"piper_right_joint{j}" for j in range(1, 7)]
            assert {kv.key for kv in statuses[0].values} >= {"voltage_v", "motor_temp_c", "driver_temp_c"}

            with arm.lock:
                arm.fw.motor_temp_c[2] = 85
            wait_for(lambda: any(a.kind == "piper_over_temperature" for a in anomalies), "over-temperature")
            hot = next(a for a in anomalies if a.kind == "piper_over_temperature")
            assert hot.severity == "warn" and hot.response == "holding position, motors enabled"
            assert "joint 3: motor 85 C" in hot.description and not hot.resolved
            with arm.lock:
                arm.fw.motor_temp_c[2] = 40
            wait_for(lambda: any(a.kind == "piper_over_temperature" and a.resolved for a in anomalies),
                     "the over-temperature resolution")
            with arm.lock:
                assert arm.fw.enabled                     # never disabled

            assert estop.wait_for_service(timeout_sec=10)
            future = estop.call_async(Trigger.Request())
            wait_for(future.done, "the e-stop service reply")
            assert future.result().success
            wait_for(lambda: any(a.kind == "piper_emergency_stop" for a in anomalies), "the e-stop anomaly")
            assert next(a for a in anomalies if a.kind == "piper_emergency_stop").severity == "halt"
            wait_for(lambda: arm.fw.arm_status == codec.ARM_EMERGENCY_STOP, "the arm in e-stop")
            future = resume.call_async(Trigger.Request())
            wait_for(future.done, "the resume service reply")
            wait_for(lambda: any(a.kind == "piper_emergency_stop" and a.resolved for a in anomalies),
                     "the e-stop resolution")
            wait_for(lambda: arm.fw.arm_status == codec.ARM_NORMAL and arm.fw.ctrl_mode == codec.CTRL_CAN,
                     "the arm back in CAN mode")
