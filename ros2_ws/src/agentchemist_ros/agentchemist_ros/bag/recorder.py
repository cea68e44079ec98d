"""BagRecorder: rclpy raw subscriptions -> agentchemist.bag.BagWriter (what `ros2 bag record` does).

Topics are discovered on the graph every `discovery_period_s` (wall time, so discovery runs even before
a simulated /clock starts) and matched against a TopicSelection (names, patterns, presets). Each topic
is subscribed with a QoS every one of its publishers can serve (see agentchemist.bag.qos), and the
publishers' offered QoS is stored with it. Messages are stamped with this node's clock at arrival
(sim time with use_sim_time) and written as serialized bytes: nothing is deserialized.
"""
import threading
from pathlib import Path

from rclpy.clock import Clock, ClockType
from rclpy.node import Node

from agentchemist.bag.errors import BagProblem, UnknownMessageTypeError
from agentchemist.bag.presets import TopicSelection
from agentchemist.bag.qos import subscription_profile
from agentchemist.bag.typesys import MessageTypes
from agentchemist.bag.writer import BagWriter, WriterOptions
from agentchemist_ros.bag.ros_types import from_rclpy, message_class, to_rclpy


class BagRecorder(Node):
    """Record the selected topics into the bag at `output` until `close()`."""

    def __init__(self, output, selection: TopicSelection, options: WriterOptions | None = None, *,
                 depth: int = 1000, discovery_period_s: float = 0.5, node_name: str = "agentchemist_bag_recorder",
                 **node_kwargs):
        super().__init__(node_name, **node_kwargs)
        self.output = Path(output)
        self.selection = selection
        self.depth = depth
        self.lock = threading.Lock()
        self.writer = BagWriter(self.output, options or WriterOptions(), types=MessageTypes(origin=self.output))
        self.subscriptions_by_topic = {}
        self.skipped: dict[str, str] = {}
        self.problems: list[BagProblem] = []
        self.closed = False
        self.discover()
        self.discovery_timer = self.create_timer(discovery_period_s, self.discover,
                                                 clock=Clock(clock_type=ClockType.STEADY_TIME))

    def discover(self) -> None:
        """Subscribe to every selected topic that has appeared (and has a publisher) since the last look."""
        if self.closed:
            return
        for topic, types in self.get_topic_names_and_types():
            if topic in self.subscriptions_by_topic or topic in self.skipped or not self.selection.matches(topic):
                continue
            if len(types) != 1:
                self._skip(topic, f"published with several types ({', '.join(types)}); not recorded")
                continue
            publishers = [p for p in self.get_publishers_info_by_topic(topic)]
            if not publishers:
                continue  # only subscribers so far: the offered QoS is not known yet
            msgtype = types[0]
            try:
                cls = message_class(msgtype, origin=self.output, topic=topic)
                offered = [from_rclpy(p.qos_profile) for p in publishers]
                with self.lock:
                    self.writer.add_topic(topic, msgtype, offered)
            except UnknownMessageTypeError as exc:
                self._skip(topic, exc.problem + "; not recorded")
                continue
            qos = to_rclpy(subscription_profile(offered, self.depth))
            self.subscriptions_by_topic[topic] = self.create_subscription(
                cls, topic, lambda data, t=topic: self.on_message(t, data), qos, raw=True)
            self.get_logger().info(f"recording {topic} ({msgtype})")

    def _skip(self, topic: str, why: str) -> None:
        self.skipped[topic] = why
        self.problems.append(BagProblem(self.output, f"topic {topic}: {why}"))
        self.get_logger().warn(f"{topic}: {why}")

    def on_message(self, topic: str, data: bytes) -> None:
        stamp = self.get_clock().now().nanoseconds
        with self.lock:
            if not self.closed:
                self.writer.write(topic, stamp, data)

    def stats(self):
        """A snapshot of the writer's progress (messages, bytes, per topic, files)."""
        with self.lock:
            s = self.writer.stats
            return type(s)(s.messages, s.bytes, s.file_index, s.file_bytes, dict(s.per_topic), list(s.files))

    def close(self) -> Path:
        """Stop recording and write metadata.yaml. Returns the bag folder."""
        with self.lock:
            if not self.closed:
                self.closed = True  # callbacks still queued find the bag closed and drop their message
                self.writer.close()
        return self.output

    def destroy_node(self):
        self.close()
        super().destroy_node()
