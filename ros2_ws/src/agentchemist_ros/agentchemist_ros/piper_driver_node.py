"""piper_driver: one Piper arm on SocketCAN <-> ros2_control's topic-based system (docs/robot.md).

Publishes the measured joints on `joint_states` (sensor_msgs/JointState: <side>_joint1..6 in rad,
<side>_gripper as the opening in m; velocity and effort once the drivers' high-speed feedback is heard)
after every exchange with the arm while its feedback is fresh, and follows `joint_commands` (the
JointStateTopicSystem's commands, same names). The motor drivers' voltage, temperatures, currents and
status go on /diagnostics (diagnostic_msgs/DiagnosticArray, one status per joint, every second).
Services `~/emergency_stop` and `~/resume` (std_srvs/Trigger) send the Piper's quick stop and resume.
robot.launch.py names the node <side>_piper_driver and remaps the topics to /<side>_piper/...; by hand:

    ros2 run agentchemist_ros piper_driver --ros-args -r __node:=left_piper_driver -p side:=left \\
        -p can_interface:=can_left -r joint_states:=/left_piper/joint_states \\
        -r joint_commands:=/left_piper/joint_commands

The 200 Hz CAN exchange runs on its own thread on a monotonic-clock schedule
(agentchemist.hardware.piper.rt_loop.DriverLoop), not on an rclpy timer; this node hands it commands
through a bounded queue. After each cycle the loop sets an event that wakes this node's publisher thread,
which publishes the newest state and the driver's events (log lines and Anomaly messages): a slow DDS
write never delays the CAN exchange, and no executor callback stands between feedback and JointState
(rclpy's EventsExecutor, used for the one-process graph, has no guard conditions). The logic (startup
hold, clamping, faults and the hold that answers them) is agentchemist.hardware.piper.PiperDriver.
"""
import sys
import threading
import time

import can
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import JointState
from std_msgs.msg import Header
from std_srvs.srv import Trigger

from agentchemist.hardware.piper import DriverConfig, PiperDriver
from agentchemist.hardware.piper.codec import FEEDBACK_IDS
from agentchemist.hardware.piper.rt_loop import DriverLoop
from agentchemist_interfaces.msg import Anomaly
from agentchemist_ros.common import topics
from agentchemist_ros.common.guarded import GuardedNode
from agentchemist_ros.common.anomaly import make_anomaly
from agentchemist_ros.common.params import declare, declare_config
from agentchemist_ros.common.qos import RELIABLE
from agentchemist_ros.common.runner import spin_node
from agentchemist_ros.common.timeconv import node_now, to_msg

# events whose safe state is "hold" get that response on the anomaly
HOLD_KINDS = {"joint_limit", "joint_communication", "over_temperature", "driver_fault", "arm_status",
              "gripper_error", "gripper_stuck"}


class PiperDriverNode(GuardedNode):
    def __init__(self, **kwargs):
        super().__init__("piper_driver", **kwargs)
        config = declare_config(self, DriverConfig)
        side = config.side
        # The bus and the cycle are the node's, not the driver logic's: plain parameters.
        channel = declare(self, "can_interface", "can0", "CAN channel: the SocketCAN interface (can_left, can0) "
                                                         "or, with can_bustype virtual, the virtual channel name")
        bustype = declare(self, "can_bustype", "socketcan", "python-can interface type: socketcan on the robot; "
                                                            "virtual (one process) or udp_multicast in tests")
        rate_hz = declare(self, "rate_hz", 200.0, "CAN exchange and joint_states rate (Hz, its own thread); the "
                                                  "Piper's feedback is ~200 Hz", low=10.0, high=1000.0)
        rt_priority = declare(self, "rt_priority", 0, "SCHED_FIFO priority of the CAN loop thread (0: normal "
                                                      "scheduling; needs an rtprio limit)", low=0, high=98)
        # JointStateTopicSystem lists every joint of its ros2_control block in joint_commands but a position
        # only for joints with a position command interface: names of state-only joints are dropped first.
        state_only = declare(self, "state_only_joints", "", "Comma-separated joints that joint_commands names "
                                                            "without a position (state-only joints)")
        self.state_only = {n.strip() for n in state_only.split(",") if n.strip()}
        if self.get_name() != f"{side}_piper_driver":
            self.get_logger().warn(f"node name {self.get_name()} is not {side}_piper_driver "
                                   "(remap it with -r __node:=<side>_piper_driver)")
        try:
            # Only the feedback frames reach us: on SocketCAN the kernel filters, elsewhere python-can does.
            self.bus = can.Bus(interface=bustype, channel=channel,
                               can_filters=[{"can_id": i, "can_mask": 0x7FF, "extended": False} for i in FEEDBACK_IDS])
        except (can.CanError, OSError, ValueError, ImportError) as exc:
            raise RuntimeError(f"piper_driver: cannot open CAN bus {bustype}:{channel}: {exc}") from None
        self.close_with_node(self.bus.shutdown)
        self.driver = PiperDriver(self.bus, config)
        self.arm_names = self.driver.names[:6]
        self.gripper_name = self.driver.names[6]
        # Reliable publisher: matches reliable and best-effort subscribers. Best-effort subscription: hears
        # either kind of publisher, and a late command is worth less than the next one.
        self.state_pub = self.create_publisher(JointState, "joint_states", 10)
        self.anomaly_pub = self.create_publisher(Anomaly, topics.ANOMALIES, RELIABLE)
        self.diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.create_subscription(JointState, "joint_commands", self.on_command, qos_profile_sensor_data)
        self.create_service(Trigger, "~/emergency_stop", self.on_estop)
        self.create_service(Trigger, "~/resume", self.on_resume)
        self._state_seq = self._diag_seq = 0
        # The loop thread sets this after every cycle; the publisher thread wakes and publishes.
        self.wake, self.stopping = threading.Event(), threading.Event()
        # A thread woken for its cycle waits for the GIL up to the switch interval (5 ms by default, a whole
        # period) while the executor or publisher thread runs: 0.5 ms bounds that wait (bench/piper.py).
        sys.setswitchinterval(min(sys.getswitchinterval(), 0.0005))
        self.loop = DriverLoop(self.driver, rate_hz, notify=self.wake.set, rt_priority=rt_priority)
        self.publisher = threading.Thread(target=self.publish_forever, name=f"piper-{side}-publish", daemon=True)
        self.loop.start()
        self.publisher.start()
        self.close_with_node(self.stop_threads)
        self.get_logger().info(f"{side} Piper on {bustype}:{channel} at {rate_hz:.0f} Hz on its own thread "
                               f"{self.loop.rt_note}; holding until commands match the arm")

    def on_command(self, msg: JointState):
        names = [n for n in msg.name if n not in self.state_only]
        values = dict(zip(names, msg.position))
        missing = [n for n in self.arm_names if n not in values]
        if len(names) != len(msg.position):
            self.loop.refuse(f"joint_commands with {len(names)} names and {len(msg.position)} positions "
                             "refused; nothing sent")
        elif missing:
            self.loop.refuse(f"joint_commands without {', '.join(missing)} refused; nothing sent")
        else:
            self.loop.command([values[n] for n in self.arm_names], values.get(self.gripper_name))

    def on_estop(self, request, response):
        self.loop.request("emergency_stop")
        response.success, response.message = True, "quick stop (0x150 0x01) queued for the next CAN cycle"
        return response

    def on_resume(self, request, response):
        self.loop.request("resume")
        response.success, response.message = True, ("resume (0x150 0x02), enable and CAN mode queued; the arm "
                                                     "holds until commands match it")
        return response

    def stop_threads(self):
        # No disable frame: unpowered joints would let the arm drop. The arm holds its last target.
        self.loop.stop()
        self.stopping.set()
        self.wake.set()
        self.publisher.join(2.0)

    def publish_forever(self):
        while not self.stopping.is_set():
            self.wake.wait(0.5)
            self.wake.clear()
            self.publish_latest()

    def publish_latest(self):
        cycle, seq = self.loop.latest.get()
        if seq != self._state_seq and cycle is not None and cycle.state is not None:
            self._state_seq = seq
            s = cycle.state
            # the loop's monotonic stamp -> this node's clock: the state is as old as the feedback in it
            stamp = node_now(self) - max(0.0, time.monotonic() - s.stamp)
            self.state_pub.publish(JointState(header=Header(stamp=to_msg(stamp)), name=list(s.names),
                                              position=list(s.positions), velocity=list(s.velocities),
                                              effort=list(s.efforts)))
        reports, dseq = self.loop.diagnostics.get()
        if dseq != self._diag_seq and reports is not None:
            self._diag_seq = dseq
            self.publish_diagnostics(reports)
        self.report()

    def publish_diagnostics(self, reports):
        array = DiagnosticArray(header=Header(stamp=to_msg(node_now(self))))
        for r in reports:
            array.status.append(DiagnosticStatus(
                level=bytes([r.level]), name=f"{self.get_name()}: joint{r.joint} driver", message=r.message,
                hardware_id=f"piper_{self.driver.config.side}_joint{r.joint}",
                values=[KeyValue(key=k, value=v) for k, v in r.values]))
        self.diag_pub.publish(array)

    def report(self):
        """Log every driver event; problems (warn, halt) and their resolutions also go on the anomaly topic.
        State news (holding, tracking) stays in the log: every anomaly is recorded and listed in the report."""
        for event in self.loop.drain_events():
            text = f"{event.kind}: {event.description}"
            # One call site per severity: rclpy's logger refuses a call site whose severity changes.
            if event.severity == "info":
                self.get_logger().info(text)
            elif event.severity == "warn":
                self.get_logger().warn(text)
            else:
                self.get_logger().error(text)
            if event.kind in ("holding", "tracking", "gripper_uncommanded"):
                continue
            response = ""
            if not event.resolved:
                if event.kind == "feedback_timeout":
                    response = "motion frames stopped"
                elif event.kind in HOLD_KINDS:
                    response = "holding position, motors enabled"
            self.anomaly_pub.publish(make_anomaly(
                now=node_now(self), experiment_id="", source=self.get_name(), kind=f"piper_{event.kind}",
                severity=event.severity, description=event.description, response=response,
                resolved=event.resolved))


def main(args=None):
    spin_node(PiperDriverNode, args)


if __name__ == "__main__":
    main()
