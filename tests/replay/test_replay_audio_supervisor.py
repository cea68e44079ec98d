"""Replay the recorded microphone, FSM state and agent messages into the audio supervisor alone (no twin):
it hears the same drops, classifies them the same way and reports the same volumes as in the live run,
and does so identically on every replay. (The bag was recorded before drops were told 30 ms into their
ring: the replay tells them then, so their ends and confidences are not the live run's; see _heard.)"""
import pytest

rclpy = pytest.importorskip("rclpy")

from agentchemist.bag import BagReader  # noqa: E402
from agentchemist_interfaces.msg import AgentMessage, AudioEvent, QuantityEstimate  # noqa: E402
from agentchemist_ros.audio_supervisor_node import AudioSupervisorNode  # noqa: E402
from agentchemist_ros.common import topics  # noqa: E402
from agentchemist_ros.common.qos import RELIABLE  # noqa: E402
from agentchemist_ros.common.timeconv import to_sec  # noqa: E402
from tests.replay.legacy import DispenserStateFromMessages  # noqa: E402
from tests.replay.harness import FIXTURES, NODE_KW, ensure_rclpy, live_summary, recorded, replay  # noqa: E402

BAG = FIXTURES / "hcl_short_audio"
MIC = topics.audio_topic("right")
INPUTS = [MIC, topics.FSM_STATE, topics.MESSAGES]
OUTPUTS = {topics.AUDIO_EVENTS: (AudioEvent, RELIABLE), topics.QUANTITY: (QuantityEstimate, RELIABLE),
           topics.MESSAGES: (AgentMessage, RELIABLE)}
MARGIN_S = 0.5  # events this close to the cut at the window's end may have been published after it live


def _replay():
    ensure_rclpy()
    node = AudioSupervisorNode(**NODE_KW)
    # the bag predates DispenserState: its expect_drops / stop_expecting messages are translated
    result = replay(BAG, [DispenserStateFromMessages(), node], INPUTS, OUTPUTS, senders={"audio_supervisor"})
    events = result.probe.on(topics.AUDIO_EVENTS)
    estimates = [m for m in result.probe.on(topics.QUANTITY) if m.channel == "audio"]
    drops = [m for m in result.probe.on(topics.MESSAGES) if m.sender == "audio_supervisor" and m.symbol == "drop"]
    return result, events, estimates, drops


def _key(e):
    return (e.event_id, e.kind, e.classification, e.symbol, round(to_sec(e.start), 6), round(to_sec(e.end), 6),
            round(e.quantity, 9), round(e.confidence, 9))


def _heard(e):
    """What the bag's live run (recorded before drops were told 30 ms into their ring, DetectorConfig.
    decide_after_s) and the replay agree on: which sounds, heard as what, from when, counting how much. A
    drop told early ends 30 ms after its onset and is judged on those 30 ms (its confidence differs)."""
    return (e.event_id, e.kind, e.classification, e.symbol, round(to_sec(e.start), 6), round(e.quantity, 9))


@pytest.fixture(scope="module")
def replays():
    return _replay(), _replay()


def test_fixture_is_present_and_covers_drops():
    assert BAG.is_dir(), f"{BAG} is missing: run tests/replay/make_fixtures.py"
    live = [e for e in recorded(BAG, topics.AUDIO_EVENTS, AudioEvent) if e.classification == "expected"]
    assert len(live) >= 10


def test_replay_publishes_every_recorded_input(replays):
    (result, *_), _ = replays
    with BagReader(BAG) as reader:
        counts = {t.name: t.count for t in reader.info().topics}
    assert result.per_topic[MIC] == counts[MIC] > 200  # 0.1 s chunks over the ~30-40 s window
    assert result.per_topic[topics.FSM_STATE] == counts[topics.FSM_STATE] > 5


def test_same_drop_events_as_live(replays):
    (_, events, _, _), _ = replays
    window_end = live_summary()["audio_window_ns"][1] * 1e-9
    live = [e for e in recorded(BAG, topics.AUDIO_EVENTS, AudioEvent) if to_sec(e.end) < window_end - MARGIN_S]
    replayed = [e for e in events if to_sec(e.start) < to_sec(live[-1].start) + 0.01]
    assert [_heard(e) for e in replayed] == [_heard(e) for e in live]
    expected = [e for e in replayed if e.kind == "droplet" and e.classification == "expected"]
    assert len(expected) >= 10
    # told while they ring (the squeezing dispenser expects them), never later than on the whole sound: with
    # the bag's 0.1 s chunks a short ring may end inside the chunk that holds its first 30 ms
    ends = [(to_sec(r.end), to_sec(v.end)) for r, v in zip(replayed, live)]
    assert all(r <= v + 1e-9 for r, v in ends)
    assert sum(r < v - 0.01 for r, v in ends) >= len(expected) // 2


def test_same_audio_volume_estimates_and_drop_symbols(replays):
    (_, events, estimates, drops), _ = replays
    window_end = live_summary()["audio_window_ns"][1] * 1e-9
    live_estimates = [m for m in recorded(BAG, topics.QUANTITY, QuantityEstimate)
                      if m.channel == "audio" and to_sec(m.stamp) < window_end - MARGIN_S]
    expected = [e for e in events if e.classification == "expected" and e.symbol == "drop"]
    assert len(estimates) == len(expected) == len(drops)
    # Cumulative volume is the sum of the per-drop quantities, event by event.
    total = 0.0
    for estimate, event in zip(estimates, expected):
        total += event.quantity
        assert estimate.event_id == event.event_id
        assert estimate.value == pytest.approx(total, abs=1e-9)
    live_drops = [m for m in recorded(BAG, topics.MESSAGES, AgentMessage)
                  if m.sender == "audio_supervisor" and m.symbol == "drop" and to_sec(m.stamp) < window_end - MARGIN_S]
    assert len(live_drops) >= 10
    assert [m.payload_json for m in drops[:len(live_drops)]] == [m.payload_json for m in live_drops]
    assert len(live_estimates) == len(live_drops)
    assert [(m.event_id, m.value, m.delta, m.fsm_state, m.subtask_id) for m in estimates[:len(live_estimates)]] == \
        [(m.event_id, m.value, m.delta, m.fsm_state, m.subtask_id) for m in live_estimates]


def test_deterministic_across_replays(replays):
    (_, events_a, estimates_a, _), (_, events_b, estimates_b, _) = replays
    assert [_key(e) for e in events_a] == [_key(e) for e in events_b]
    assert [(m.value, m.confidence, m.event_id) for m in estimates_a] == \
        [(m.value, m.confidence, m.event_id) for m in estimates_b]
