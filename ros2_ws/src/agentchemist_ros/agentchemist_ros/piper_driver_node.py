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
from agentchemist_ros.common.guarded import GuardedNode
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import JointState
from std_msgs.msg import Header

from agentchemist.hardware.piper import DriverConfig, PiperDriver
from agentchemist.hardware.piper.codec import FEEDBACK_IDS
from agentchemist_interfaces.msg import Anomaly
from agentchemist_ros.common import topics
from agentchemist_ros.common.anomaly import make_anomaly
from agentchemist_ros.common.params import declare, declare_config
from agentchemist_ros.common.qos import RELIABLE
from agentchemist_ros.common.runner import spin_node
from agentchemist_ros.common.timeconv import node_now, to_msg


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
        rate_hz = declare(self, "rate_hz", 200.0, "Driver cycle and joint_states rate (Hz); the Piper's feedback "
                                                  "is ~200 Hz", low=10.0, high=1000.0)
        if self.get_name() != f"{side}_piper_driver":
            self.get_logger().warn(f"node name {self.get_name()} is not {side}_piper_driver "
                                   "(remap it with -r __node:=<side>_piper_driver)")
        try:
            # Only the feedback frames reach us: on SocketCAN the kernel filters, elsewhere python-can does.
            self.bus = can.Bus(interface=bustype, channel=channel,
                               can_filters=[{"can_id": i, "can_mask": 0x7FF, "extended": False} for i in FEEDBACK_IDS])
        except (can.CanError, OSError, ValueError, ImportError) as exc:
            raise RuntimeError(f"piper_driver: cannot open CAN bus {bustype}:{channel}: {exc}") from None
        self.driver = PiperDriver(self.bus, config)
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
