"""piper_driver: one Piper arm on SocketCAN <-> ros2_control's topic-based system (docs/robot.md).

Publishes the measured joints on `joint_states` (sensor_msgs/JointState: <side>_joint1..6 in rad,
<side>_gripper as the opening in m) at `rate_hz` while the arm's feedback is fresh, and follows
`joint_commands` (the JointStateTopicSystem's commands, same names). robot.launch.py names the node
<side>_piper_driver and remaps both topics to /<side>_piper/...; by hand:

    ros2 run agentchemist_ros piper_driver --ros-args -r __node:=left_piper_driver -p side:=left \\
        -p can_interface:=can_left -r joint_states:=/left_piper/joint_states \\
        -r joint_commands:=/left_piper/joint_commands

The logic (startup hold, clamping, refusing non-finite commands, dead-bus detection) is
agentchemist.hardware.piper.PiperDriver; this node owns the bus, the timer and the messages, and turns
the driver's events into log lines and Anomaly messages.
"""
import can
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import JointState
from std_msgs.msg import Header

from agentchemist.hardware.piper import DriverConfig, PiperDriver
from agentchemist.hardware.piper.codec import FEEDBACK_IDS
from agentchemist_interfaces.msg import Anomaly
from agentchemist_ros.common import topics
from agentchemist_ros.common.anomaly import make_anomaly
from agentchemist_ros.common.params import declare
from agentchemist_ros.common.qos import RELIABLE
from agentchemist_ros.common.runner import spin_node
from agentchemist_ros.common.timeconv import node_now, to_msg

DEFAULTS = DriverConfig()


class PiperDriverNode(Node):
    def __init__(self, **kwargs):
        super().__init__("piper_driver", **kwargs)
        side = declare(self, "side", "left", "Arm this driver runs: left | right (joints <side>_joint1..6, "
                                             "<side>_gripper)")
        channel = declare(self, "can_interface", "can0", "CAN channel: the SocketCAN interface (can_left, can0) "
                                                         "or, with can_bustype virtual, the virtual channel name")
        bustype = declare(self, "can_bustype", "socketcan", "python-can interface type: socketcan on the robot; "
                                                            "virtual (one process) or udp_multicast in tests")
        rate_hz = declare(self, "rate_hz", 200.0, "Driver cycle and joint_states rate (Hz); the Piper's feedback "
                                                  "is ~200 Hz", low=10.0, high=1000.0)
        timeout = declare(self, "feedback_timeout_s", DEFAULTS.feedback_timeout_s,
                          "Feedback older than this (s) is a dead bus: reported, motion frames stop",
                          low=0.01, high=5.0)
        tolerance = declare(self, "hold_tolerance_rad", DEFAULTS.hold_tolerance_rad,
                            "Startup hold: arm commands move the arm only once one is within this of the "
                            "measured position on every joint (rad)", low=0.001, high=0.5)
        speed = declare(self, "speed_percent", DEFAULTS.speed_percent, "MOVE J speed sent to the arm (%)", low=1, high=100)
        effort = declare(self, "gripper_effort_nm", DEFAULTS.gripper_effort_nm,
                         "Gripper force limit sent with each gripper command (N m, Piper range 0..5)",
                         low=0.0, high=5.0)
        retry = declare(self, "mode_retry_s", DEFAULTS.mode_retry_s,
                        "Re-send motor enable + CAN command mode this often (s) until the arm's status confirms it",
                        low=0.05, high=10.0)
        if side not in topics.SIDES:
            raise ValueError(f"piper_driver: side must be left or right, got {side!r}")
        if self.get_name() != f"{side}_piper_driver":
            self.get_logger().warn(f"node name {self.get_name()} is not {side}_piper_driver "
                                   "(remap it with -r __node:=<side>_piper_driver)")
        try:
            # Only the feedback frames reach us: on SocketCAN the kernel filters, elsewhere python-can does.
            self.bus = can.Bus(interface=bustype, channel=channel,
                               can_filters=[{"can_id": i, "can_mask": 0x7FF, "extended": False} for i in FEEDBACK_IDS])
        except (can.CanError, OSError, ValueError, ImportError) as exc:
            raise RuntimeError(f"piper_driver: cannot open CAN bus {bustype}:{channel}: {exc}") from None
        self.driver = PiperDriver(self.bus, DriverConfig(side=side, feedback_timeout_s=timeout,
                                                         hold_tolerance_rad=tolerance, speed_percent=speed,
                                                         gripper_effort_nm=effort, mode_retry_s=retry))
        self.arm_names = self.driver.names[:6]
        self.gripper_name = self.driver.names[6]
        # Reliable publisher: matches reliable and best-effort subscribers. Best-effort subscription: hears
        # either kind of publisher, and a late command is worth less than the next one.
        self.state_pub = self.create_publisher(JointState, "joint_states", 10)
        self.anomaly_pub = self.create_publisher(Anomaly, topics.ANOMALIES, RELIABLE)
        self.create_subscription(JointState, "joint_commands", self.on_command, qos_profile_sensor_data)
        self.driver.start(node_now(self))
        self.timer = self.create_timer(1.0 / rate_hz, self.tick)
        self.get_logger().info(f"{side} Piper on {bustype}:{channel} at {rate_hz:.0f} Hz; holding until "
                               "commands match the arm")

    def on_command(self, msg: JointState):
        now = node_now(self)
        values = dict(zip(msg.name, msg.position))
        missing = [n for n in self.arm_names if n not in values]
        if len(msg.name) != len(msg.position):
            self.driver.refuse(f"joint_commands with {len(msg.name)} names and {len(msg.position)} positions "
                               "refused; nothing sent")
        elif missing:
            self.driver.refuse(f"joint_commands without {', '.join(missing)} refused; nothing sent")
        else:
            self.driver.command([values[n] for n in self.arm_names], values.get(self.gripper_name), now)
        self.report()

    def tick(self):
        now = node_now(self)
        state = self.driver.step(now)
        if state is not None:
            self.state_pub.publish(JointState(header=Header(stamp=to_msg(state.stamp)), name=list(state.names),
                                              position=list(state.positions)))
        self.report()

    def report(self):
        """Log every driver event; problems (warn, halt) and their resolutions also go on the anomaly topic.
        State news (holding, tracking) stays in the log: every anomaly is recorded and listed in the report."""
        for event in self.driver.drain_events():
            text = f"{event.kind}: {event.description}"
            # One call site per severity: rclpy's logger refuses a call site whose severity changes.
            if event.severity == "info":
                self.get_logger().info(text)
            elif event.severity == "warn":
                self.get_logger().warn(text)
            else:
                self.get_logger().error(text)
            if event.kind in ("holding", "tracking"):
                continue
            self.anomaly_pub.publish(make_anomaly(
                now=node_now(self), experiment_id="", source=self.get_name(), kind=f"piper_{event.kind}",
                severity=event.severity, description=event.description,
                response="motion frames stopped" if event.kind == "feedback_timeout" and not event.resolved else "",
                resolved=event.resolved))

    def destroy_node(self):
        # No disable frame: unpowered joints would let the arm drop. The arm holds its last target.
        self.bus.shutdown()
        super().destroy_node()


def main(args=None):
    spin_node(PiperDriverNode, args)


if __name__ == "__main__":
    main()
