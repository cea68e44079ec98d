"""BagPlayer: agentchemist.bag.BagReader -> rclpy publishers of serialized bytes (`ros2 bag play`).

Each recorded topic is published with the QoS its publishers offered (a latched topic stays latched),
on its remapped name. Timed playback keeps the recorded spacing divided by `rate` (a sleep, then a short
spin for the last 2 ms: sub-millisecond accuracy on an idle machine); `fast` publishes back to back.
/clock carries the bag time: at `clock_hz` in timed mode, and before every message in fast mode (with
intermediate ticks across gaps so sim-time timers fire as they did live).

`steps()` is the whole of one pass as a generator: it publishes one message per step, so a test can
run the subscribers' callbacks between messages (lock-step replay, deterministic across runs).
"""
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

from rclpy.duration import Duration
from rclpy.event_handler import PublisherEventCallbacks
from rclpy.node import Node
from rclpy.qos import QoSProfile
from rosgraph_msgs.msg import Clock

from agentchemist.bag.errors import BagProblem, UnknownMessageTypeError
from agentchemist.bag.migrate import check_topic
from agentchemist.bag.playback import NS, PlaybackOptions, Schedule, clock_steps, window
from agentchemist.bag.qos import playback_profile
from agentchemist.bag.reader import BagReader
from agentchemist.bag.storage import BagMessage
from agentchemist.bag.typesys import MessageTypes
from agentchemist_ros.tools.bag.ros_types import message_class, to_rclpy

SPIN_S = 0.005  # the last stretch before a due time is spun, not slept: sleep wakes up late under load


@dataclass
class Played:
    """One published message: where it came from and when it went out (time.monotonic seconds)."""

    topic: str
    published_on: str
    timestamp: int
    wall: float


@dataclass
class PlayStats:
    messages: int = 0
    per_topic: dict = field(default_factory=dict)
    passes: int = 0
    wall_s: float = 0.0
    log: list = field(default_factory=list)


def _time_msg(ns: int):
    msg = Clock()
    msg.clock.sec, msg.clock.nanosec = divmod(ns, NS)
    return msg


class BagPlayer(Node):
    """Play the bag at `path` with `options`. `message_filter(msg) -> bool` may drop messages (tests);
    `keep_log` records a Played entry per message (timing measurements)."""

    def __init__(self, path, options: PlaybackOptions | None = None, *,
                 message_filter: Callable[[BagMessage], bool] | None = None, keep_log: bool = False,
                 node_name: str = "agentchemist_bag_player", **node_kwargs):
        super().__init__(node_name, **node_kwargs)
        self.path = Path(path)
        self.options = options or PlaybackOptions()
        self.message_filter = message_filter
        self.keep_log = keep_log
        self.reader = BagReader(self.path)
        self.problems: list[BagProblem] = []
        self.stats = PlayStats()
        self.stop_event = threading.Event()
        info = self.reader.info()
        self.info = info
        wanted = set(self.options.topics) if self.options.topics else None
        if wanted:
            missing = sorted(wanted - {t.name for t in info.topics})
            for name in missing:
                self.problems.append(BagProblem(self.path, f"topic {name} is not in the bag; nothing to play for it"))
        self.publishers_by_topic = {}
        self.converters = {}
        self.latched: set[str] = set()
        installed = MessageTypes(origin=self.path)
        for topic in info.topics:
            if wanted is not None and topic.name not in wanted:
                continue
            try:
                cls = message_class(topic.msgtype, origin=self.path, topic=topic.name)
                check, converter = check_topic(topic, installed, origin=self.path)
            except UnknownMessageTypeError as exc:
                self.problems.append(BagProblem(self.path, exc.problem + "; this topic is skipped, the rest plays"))
                continue
            if converter is not None:
                self.converters[topic.name] = converter
                self.problems.append(BagProblem(self.path, check.describe()))
            profile = playback_profile(topic.offered_qos)
            if profile.latched:
                self.latched.add(topic.name)
            # No QoS event handlers: the player is not spun by the CLI (they would never run), and in a
            # lock-step replay every handler is one more entity in each executor wait.
            self.publishers_by_topic[topic.name] = self.create_publisher(
                cls, self.options.target(topic.name), to_rclpy(profile),
                event_callbacks=PublisherEventCallbacks(use_default_callbacks=False))
        if not self.publishers_by_topic:
            self.reader.close()
            super().destroy_node()
            raise UnknownMessageTypeError(self.path, ", ".join(sorted({t.msgtype for t in info.topics})) or "-",
                                          "", "no topic of the bag can be published: "
                                          + "; ".join(p.problem for p in self.problems))
        self.clock_pub = self.create_publisher(Clock, "/clock", QoSProfile(depth=10),
                                               event_callbacks=PublisherEventCallbacks(use_default_callbacks=False)) \
            if (self.options.fast or self.options.clock_hz > 0) else None
        self.clock_ns = None

    # ------------------------------------------------------------------ matching
    def wait_for_subscribers(self, timeout_s: float, topics=None) -> bool:
        """Wait (wall time) until each topic's publisher has a subscriber. False on timeout."""
        names = [t for t in (topics or self.publishers_by_topic) if t in self.publishers_by_topic]
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            if all(self.publishers_by_topic[t].get_subscription_count() > 0 for t in names):
                return True
            time.sleep(0.01)
        return False

    # ------------------------------------------------------------------ one pass
    def _messages(self) -> Iterator[BagMessage]:
        """The messages of one pass: latched last values from before the start offset, then the window."""
        first, stop = window(self.info.start_ns, self.options)
        topics = list(self.publishers_by_topic)
        if self.options.start_offset_s > 0 and self.latched:
            last = {}
            for msg in self.reader.messages([t for t in topics if t in self.latched], None, first):
                last[msg.topic] = msg
            yield from sorted(last.values(), key=lambda m: m.timestamp)
        yield from self.reader.messages(topics, first, stop)

    def publish_clock(self, ns: int) -> None:
        if self.clock_pub is not None:
            self.clock_pub.publish(_time_msg(ns))
            self.clock_ns = ns

    def publish(self, msg: BagMessage) -> Played | None:
        data = msg.data
        converter = self.converters.get(msg.topic)
        if converter is not None:
            try:
                data = converter.convert(data)
            except Exception as exc:  # noqa: BLE001 - one bad message must not stop the rest
                self.problems.append(BagProblem(self.path, f"a {msg.msgtype} message on {msg.topic} at "
                                                f"{msg.timestamp} ns could not be converted ({exc}); skipped"))
                return None
        self.publishers_by_topic[msg.topic].publish(data)
        played = Played(msg.topic, self.options.target(msg.topic), msg.timestamp, time.monotonic())
        self.stats.messages += 1
        self.stats.per_topic[msg.topic] = self.stats.per_topic.get(msg.topic, 0) + 1
        if self.keep_log:
            self.stats.log.append(played)
        return played

    def steps(self) -> Iterator[Played | None]:
        """One pass as fast as the caller iterates: /clock steps up to each message, then the message."""
        for msg in self._messages():
            if self.stop_event.is_set():
                return
            if self.message_filter is not None and not self.message_filter(msg):
                continue
            for ns in clock_steps(self.clock_ns, msg.timestamp, self.options.clock_step_s,
                                  self.options.clock_resolution_s):
                self.publish_clock(ns)
                yield None  # a clock step: let sim-time timers run before the message
            played = self.publish(msg)
            if played is not None:
                yield played

    # ------------------------------------------------------------------ whole playback
    def play(self) -> PlayStats:
        """Play (all passes when looping) in the calling thread; stop early with `stop_event`."""
        if self.options.delay_s:
            self.stop_event.wait(self.options.delay_s)
        started = time.monotonic()
        while not self.stop_event.is_set():
            self.stats.passes += 1
            self.clock_ns = None
            if self.options.fast:
                for _ in self.steps():
                    pass
            else:
                self._timed_pass()
            if not self.options.loop:
                break
        self.stats.wall_s = time.monotonic() - started
        return self.stats

    def _timed_pass(self) -> None:
        # Python hands the interpreter between threads every 5 ms by default: a subscriber thread in this
        # process could hold the player back that long past a due time. Switch more often while timing.
        interval = sys.getswitchinterval()
        sys.setswitchinterval(min(interval, 0.0005))
        try:
            self._timed_messages()
        finally:
            sys.setswitchinterval(interval)

    def _timed_messages(self) -> None:
        first, _stop = window(self.info.start_ns, self.options)
        schedule = Schedule(first, self.options.rate)
        start = None
        clock_period = 1.0 / self.options.clock_hz if self.options.clock_hz > 0 else None
        next_clock = 0.0
        for msg in self._messages():
            if self.message_filter is not None and not self.message_filter(msg):
                continue
            due = schedule.due(msg.timestamp)
            if start is None:  # the clock starts once the first message is in hand (opening costs time)
                start = time.monotonic() - due
            while clock_period is not None and next_clock < due:
                if not self._sleep_until(start + next_clock):
                    return
                self.publish_clock(schedule.bag_time(next_clock))
                next_clock += clock_period
            if not self._sleep_until(start + due):
                return
            self.publish(msg)

    def _sleep_until(self, target: float) -> bool:
        """Wait until monotonic time `target`; False if stopped meanwhile."""
        while True:
            remaining = target - time.monotonic()
            if self.stop_event.is_set():
                return False
            if remaining <= 0:
                return True
            if remaining > SPIN_S:
                time.sleep(min(remaining - SPIN_S, 0.1))
            else:
                time.sleep(0)  # spin, but let other threads (a subscriber in this process) run

    def flush(self, timeout_s: float) -> list[str]:
        """Wait until every reliable subscriber has acknowledged what was published (a process that exits
        first takes the messages still in its writers with it: a fast play lost its last 100 of 216 to a
        loaded subscriber); the topics still unacknowledged after `timeout_s` wall seconds."""
        deadline = time.monotonic() + timeout_s
        late = []
        for topic, pub in self.publishers_by_topic.items():
            left = max(0.0, deadline - time.monotonic())
            if not pub.wait_for_all_acked(Duration(nanoseconds=int(left * 1e9))):
                late.append(topic)
        return late

    def all_problems(self) -> list[BagProblem]:
        out = list(self.problems)
        out += [p for p in self.reader.all_problems() if p not in out]
        return out

    def destroy_node(self):
        self.stop_event.set()
        self.reader.close()
        super().destroy_node()
