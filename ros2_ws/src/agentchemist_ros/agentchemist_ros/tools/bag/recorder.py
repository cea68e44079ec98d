"""BagRecorder: rclpy raw subscriptions -> agentchemist.bag.BagWriter (what `ros2 bag record` does).

Topics are discovered on the graph every `discovery_period_s` (wall time, so discovery runs even before
a simulated /clock starts) and matched against a TopicSelection (names, patterns, presets). Each topic
is subscribed with a QoS every one of its publishers can serve (see agentchemist.bag.qos), and the
publishers' offered QoS is stored with it. Messages are stamped with this node's clock at arrival
(sim time with use_sim_time) and stay serialized: nothing is deserialized.

Callbacks only put (topic, stamp, bytes) on a queue; one writer thread owns the bag (as rosbag2's write
cache does): subscription callbacks never wait for the disk, and the storage (SQLite objects are bound
to the thread that made them) is used from one thread whatever executor spins the node.
"""
import queue
import threading
from pathlib import Path

from rclpy.clock import Clock, ClockType
from rclpy.node import Node

from agentchemist.bag.errors import BagProblem, UnknownMessageTypeError
from agentchemist.bag.presets import TopicSelection
from agentchemist.bag.qos import subscription_profile
from agentchemist.bag.typesys import MessageTypes
from agentchemist.bag.writer import BagWriter, WriterOptions, WriterStats
from agentchemist_ros.tools.bag.ros_types import from_rclpy, message_class, to_rclpy

_CLOSE = object()


class BagRecorder(Node):
    """Record the selected topics into the bag at `output` until `close()`."""

    def __init__(self, output, selection: TopicSelection, options: WriterOptions | None = None, *,
                 depth: int = 1000, discovery_period_s: float = 0.5, node_name: str = "agentchemist_bag_recorder",
                 **node_kwargs):
        super().__init__(node_name, **node_kwargs)
        self.output = Path(output)
        self.selection = selection
        self.depth = depth
        self.types = MessageTypes(origin=self.output)
        self.writer = BagWriter(self.output, options or WriterOptions(), types=self.types)
        self.subscriptions_by_topic = {}
        self.skipped: dict[str, str] = {}
        self.problems: list[BagProblem] = []
        self.closed = False
        self.error: BaseException | None = None
        self._queue: queue.Queue = queue.Queue()
        self._received = 0  # messages only: the queue also carries topic registrations
        self._thread = threading.Thread(target=self._write_loop, name="bag_writer", daemon=True)
        self._thread.start()
        self.discover()
        self.discovery_timer = self.create_timer(discovery_period_s, self.discover,
                                                 clock=Clock(clock_type=ClockType.STEADY_TIME))

    # ------------------------------------------------------------------ discovery
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
            publishers = self.get_publishers_info_by_topic(topic)
            if not publishers:
                continue  # only subscribers so far: the offered QoS is not known yet
            msgtype = types[0]
            try:
                cls = message_class(msgtype, origin=self.output, topic=topic)
                msgdef, type_hash = self.types.definition(msgtype)
            except UnknownMessageTypeError as exc:
                self._skip(topic, exc.problem + "; not recorded")
                continue
            offered = [from_rclpy(p.qos_profile) for p in publishers]
            self._queue.put(("topic", topic, msgtype, offered, msgdef, type_hash))
            qos = to_rclpy(subscription_profile(offered, self.depth))
            self.subscriptions_by_topic[topic] = self.create_subscription(
                cls, topic, lambda data, t=topic: self.on_message(t, data), qos, raw=True)
            self.get_logger().info(f"recording {topic} ({msgtype})")

    def _skip(self, topic: str, why: str) -> None:
        self.skipped[topic] = why
        self.problems.append(BagProblem(self.output, f"topic {topic}: {why}"))
        self.get_logger().warn(f"{topic}: {why}")

    # ------------------------------------------------------------------ messages
    def on_message(self, topic: str, data: bytes) -> None:
        if not self.closed:
            self._received += 1
            self._queue.put(("msg", topic, self.get_clock().now().nanoseconds, data))

    def _write_loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is _CLOSE:
                break
            if self.error is not None:
                continue  # keep draining; the error is raised by close()
            try:
                if item[0] == "msg":
                    self.writer.write(item[1], item[2], item[3])
                else:
                    _kind, topic, msgtype, offered, msgdef, type_hash = item
                    self.writer.add_topic(topic, msgtype, offered, msgdef=msgdef, type_hash=type_hash)
            except Exception as exc:  # noqa: BLE001 - reported by close(); recording stops cleanly
                self.error = exc
                self.get_logger().error(f"writing {self.output} failed: {exc}")
        try:
            self.writer.close()
        except Exception as exc:  # noqa: BLE001
            self.error = self.error or exc

    def stats(self) -> WriterStats:
        """A snapshot of the writer's progress (messages, bytes, per topic, files)."""
        s = self.writer.stats
        return WriterStats(s.messages, s.bytes, s.file_index, s.file_bytes, dict(s.per_topic), list(s.files))

    def pending(self) -> int:
        """Messages received but not yet written (topic registrations waiting in the queue are not counted)."""
        return self._received - self.writer.stats.messages

    def close(self) -> Path:
        """Stop recording, write what is queued and metadata.yaml. Returns the bag folder."""
        if not self.closed:
            self.closed = True  # callbacks still in flight find the recorder closed and drop their message
            self._queue.put(_CLOSE)
        self._thread.join()
        if self.error is not None:
            raise self.error
        return self.output

    def destroy_node(self):
        if not self.closed:
            try:
                self.close()
            except Exception as exc:  # noqa: BLE001 - destroying must not raise; the error was logged
                self.get_logger().error(f"closing {self.output}: {exc}")
        super().destroy_node()
