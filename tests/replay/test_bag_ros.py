"""The recorder and player on real rclpy (Fast DDS, in one process): the reference bags written by the real
rosbag2 play exactly their 7 messages with their original timing; what we record plays back with its
QoS (a latched topic reaches a late joiner); remapping, topic filter, start offset, loop, /clock; damaged
and unknown-type bags play what can be played and say what could not."""
import threading
import time

import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy  # noqa: E402
from rosgraph_msgs.msg import Clock  # noqa: E402
from std_msgs.msg import String  # noqa: E402

from agentchemist.bag import (BagReader, BagWriter, PlaybackOptions, UnknownMessageTypeError,  # noqa: E402
                              select_topics, timing_errors)
from agentchemist.bag.presets import AGENTS, SENSORS  # noqa: E402
from agentchemist_ros.tools.bag.player import BagPlayer  # noqa: E402
from agentchemist_ros.tools.bag.recorder import BagRecorder  # noqa: E402
from agentchemist_ros.common import topics  # noqa: E402
from tests.replay.bagdata import REFERENCE, REFERENCE_START, index_of, string_cdr, write_strings  # noqa: E402
from tests.replay.harness import drain, ensure_rclpy  # noqa: E402

LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
# The behaviour asserted: playback is paced by the recorded stamps. The reference messages span 151 ms
# (gaps of 1 to 49 ms), so played as fast as possible they would be off by up to ~150 ms; 25 ms tells the
# two apart even on 2 cores shared with other work (5 ms failed there). The precision itself (median
# 0.5 ms, p95 3-5 ms) is measured by bench/bag_timing.py, not asserted here.
TIMING_TOL_S = 0.025


@pytest.fixture(autouse=True)
def _rclpy():
    ensure_rclpy()
    yield


class Spinner:
    """Spin some nodes in a background thread (what a separate subscriber process would do)."""

    def __init__(self, *nodes):
        self.executor = SingleThreadedExecutor()
        for node in nodes:
            self.executor.add_node(node)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stop.is_set():
            self.executor.spin_once(0.02)

    def close(self):
        self.stop.set()
        self.thread.join(timeout=5)
        self.executor.shutdown(timeout_sec=1.0)


def _reference_probe():
    test_msgs = pytest.importorskip("test_msgs.msg")
    node = Node("reference_probe")
    got = []
    for cls, name in ((test_msgs.BasicTypes, "/test_topic"), (test_msgs.Arrays, "/array_topic")):
        node.create_subscription(cls, name, lambda m, n=name: got.append((n, time.monotonic(), m)), 10)
    return node, got


@pytest.mark.skipif(not REFERENCE.is_dir(), reason=f"reference bags not found at {REFERENCE}")
@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_reference_bags_play_their_7_messages_with_original_timing(storage):
    bag = REFERENCE / storage / "cdr_test"
    with BagReader(bag) as reader:
        recorded = [(m.topic, m.timestamp) for m in reader.messages()]
    worst = []
    for _attempt in range(3):  # a shared 2-core machine can stall any process for a few ms: best of three
        node, got = _reference_probe()
        spinner = Spinner(node)
        player = BagPlayer(bag, PlaybackOptions(rate=1.0))
        try:
            assert player.wait_for_subscribers(5.0)
            player.play()
            end = time.monotonic() + 2.0
            while len(got) < 7 and time.monotonic() < end:
                time.sleep(0.01)
        finally:
            spinner.close()
            player.destroy_node()
            node.destroy_node()
        assert [t for t, _w, _m in got] == [t for t, _ts in recorded]  # exactly these 7, in order
        basic = [m for t, _w, m in got if t == "/test_topic"]
        arrays = [m for t, _w, m in got if t == "/array_topic"]
        assert [b.int32_value for b in basic] == [123] * 3
        assert all(list(a.bool_values) == [True, False, True] for a in arrays)
        assert all(list(a.string_values) == ["Complex Hello1", "Complex Hello2", "Complex Hello3"] for a in arrays)
        errors = timing_errors([ts for _t, ts in recorded], [w for _t, w, _m in got])
        worst.append(max(abs(e) for e in errors))
        if worst[-1] <= TIMING_TOL_S:
            break
    assert min(worst) <= TIMING_TOL_S, f"relative timing off by {[round(w * 1e3, 2) for w in worst]} ms"
    assert recorded[0][1] == REFERENCE_START


def test_record_then_play_keeps_latched_topics_latched(tmp_path):
    talker = Node("talker")
    latched_pub = talker.create_publisher(String, "/status", LATCHED)
    stream_pub = talker.create_publisher(String, "/stream", 10)
    latched_pub.publish(String(data="ready"))  # before the recorder exists: only durability can deliver it
    recorder = BagRecorder(tmp_path / "rec", select_topics(["/status", "/stream"]), node_name="test_recorder")
    executor = SingleThreadedExecutor()
    for node in (talker, recorder):
        executor.add_node(node)
    end = time.monotonic() + 5
    while len(recorder.subscriptions_by_topic) < 2 and time.monotonic() < end:
        executor.spin_once(0.05)
        recorder.discover()
    for i in range(20):
        stream_pub.publish(String(data=f"i:{i}:"))
        executor.spin_once(0.01)
    end = time.monotonic() + 5
    while recorder.stats().messages + recorder.pending() < 21 and time.monotonic() < end:
        executor.spin_once(0.02)
    recorder.close()
    executor.shutdown(timeout_sec=1.0)
    recorder.destroy_node()
    talker.destroy_node()

    with BagReader(tmp_path / "rec") as reader:
        info = reader.info()
        stream = [index_of(m.data) for m in reader.messages(["/stream"])]
    assert info.topic("/status").count == 1 and info.topic("/status").latched
    assert not info.topic("/stream").latched
    assert stream == list(range(20))

    # Play it; a subscriber that joins after playback ended still gets the latched status, not the stream.
    player = BagPlayer(tmp_path / "rec", PlaybackOptions(fast=True), node_name="late_player")
    player.play()
    late = Node("late_joiner")
    got_status, got_stream = [], []
    late.create_subscription(String, "/status", lambda m: got_status.append(m.data), LATCHED)
    late.create_subscription(String, "/stream", lambda m: got_stream.append(m.data), 10)
    executor = SingleThreadedExecutor()
    executor.add_node(late)
    end = time.monotonic() + 5
    while not got_status and time.monotonic() < end:
        executor.spin_once(0.05)
    executor.shutdown(timeout_sec=1.0)
    player.destroy_node()
    late.destroy_node()
    assert got_status == ["ready"] and got_stream == []


def _capture(topic_cls, *names):
    node = Node("capture")
    got = []
    for name in names:
        node.create_subscription(topic_cls, name, lambda m, n=name: got.append((n, m)), QoSProfile(depth=1000))
    return node, got


def _play_lockstep(player, *nodes):
    executor = SingleThreadedExecutor()
    for node in (player, *nodes):
        executor.add_node(node)
    drain(executor)
    for _ in player.steps():
        drain(executor)
    executor.shutdown(timeout_sec=1.0)


def test_topic_filter_remap_start_offset_and_clock(tmp_path):
    bag = write_strings(tmp_path / "b", 30, topics=("/data", "/state", "/noise"), latched=("/state",))
    node, got = _capture(String, "/renamed", "/state", "/noise")
    clock_node, clocks = _capture(Clock, "/clock")
    player = BagPlayer(bag, PlaybackOptions(fast=True, topics=("/data", "/state"), remap=(("/data", "/renamed"),),
                                            start_offset_s=0.15, clock_step_s=0.0))
    _play_lockstep(player, node, clock_node)
    for n in (player, node, clock_node):
        n.destroy_node()
    # /state (latched; indexes 1, 4, 7, ...) first gets its last value from before the offset (15): 13
    assert got[0][0] == "/state" and index_of(string_cdr(got[0][1].data)) == 13
    indexes = [(name, index_of(string_cdr(m.data))) for name, m in got[1:]]
    assert [i for _n, i in indexes] == [i for i in range(15, 30) if i % 3 != 2]
    assert {n for n, _i in indexes} == {"/renamed", "/state"}  # /noise filtered out, /data remapped
    stamps = [c.clock.sec * 10**9 + c.clock.nanosec for _n, c in clocks]
    assert stamps == sorted(stamps) and stamps[-1] == 1_000_000_000 + 28 * 10_000_000


def test_loop_and_rate(tmp_path):
    bag = write_strings(tmp_path / "l", 5, step_ns=100_000_000)  # 0.4 s of bag time
    player = BagPlayer(bag, PlaybackOptions(rate=4.0, loop=True), keep_log=True)

    def stop_after_three_passes():  # on a condition, not a wall time: a loaded machine plays fewer passes
        deadline = time.monotonic() + 60.0
        while player.stats.passes < 4 and time.monotonic() < deadline:
            time.sleep(0.01)
        player.stop_event.set()

    stopper = threading.Thread(target=stop_after_three_passes)
    stopper.start()
    stats = player.play()
    stopper.join()
    player.destroy_node()
    assert stats.passes >= 3 and stats.messages >= 15
    first_pass = stats.log[:5]
    errors = timing_errors([p.timestamp for p in first_pass], [p.wall for p in first_pass], rate=4.0)
    # At 4x the messages are due 25 ms apart: one played early would show the rate was not applied, so
    # none may be. How late they come is the scheduler's (bench/bag_timing.py measures it: p95 3-5 ms).
    assert min(errors) > -0.002, errors
    # Played at 1x, the fifth would be 0.3 s late: 0.25 s leaves the scheduler a loaded machine's pauses.
    assert max(errors) < 0.25, errors


def test_unknown_type_and_damaged_bag_play_what_they_can(tmp_path):
    bag = tmp_path / "mixed"
    with BagWriter(bag) as writer:
        writer.add_topic("/mystery", "mystery_msgs/msg/Thing", msgdef="int32 x\n", type_hash="RIHS01_" + "0" * 64)
        writer.add_topic("/chatter", "std_msgs/msg/String")
        for i in range(3):
            writer.write("/mystery", 10 + 2 * i, b"\x00\x01\x00\x00\x07\x00\x00\x00")
            writer.write("/chatter", 11 + 2 * i, string_cdr(f"i:{i}:"))
    node, got = _capture(String, "/chatter")
    player = BagPlayer(bag, PlaybackOptions(fast=True))
    _play_lockstep(player, node)
    problems = [str(p) for p in player.all_problems()]
    player.destroy_node()
    node.destroy_node()
    assert [m.data for _n, m in got] == ["i:0:", "i:1:", "i:2:"]
    assert any(str(bag) in p and "mystery_msgs/msg/Thing" in p and "skipped" in p for p in problems), problems

    only_unknown = tmp_path / "only_unknown"
    with BagWriter(only_unknown) as writer:
        writer.add_topic("/mystery", "mystery_msgs/msg/Thing", msgdef="int32 x\n", type_hash="RIHS01_" + "0" * 64)
    with pytest.raises(UnknownMessageTypeError, match="no topic of the bag can be published"):
        BagPlayer(only_unknown)

    truncated = write_strings(tmp_path / "t", 200, size=20_000, noise=True)
    mcap = truncated / "t_0.mcap"
    mcap.write_bytes(mcap.read_bytes()[:1_500_000])
    node, got = _capture(String, "/chatter")
    player = BagPlayer(truncated, PlaybackOptions(fast=True))
    _play_lockstep(player, node)
    problems = [str(p) for p in player.all_problems()]
    player.destroy_node()
    node.destroy_node()
    assert 40 <= len(got) < 200
    assert [index_of(string_cdr(m.data)) for _n, m in got] == list(range(len(got)))
    assert any(str(mcap) in p and "truncated" in p for p in problems)


def test_presets_name_the_topics_the_nodes_use():
    assert set(AGENTS) == {topics.PLAN, topics.MESSAGES, topics.FSM_STATE, topics.QUANTITY, topics.ANOMALIES,
                           topics.RECORDS, topics.AUDIO_EVENTS}
    sensors = select_topics(["sensors"])
    for name in [topics.PH_READING, topics.BALANCE_READING, topics.JOINT_STATES,
                 *(topics.camera_topic(c) for c in topics.CAMERAS), *(topics.audio_topic(s) for s in topics.SIDES)]:
        assert sensors.matches(name), name
    assert len(SENSORS) == 5
