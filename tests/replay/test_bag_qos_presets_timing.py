"""Pure core of the bag tools: rosbag2's QoS format and adaptation rules, topic presets, playback timing."""
import pytest

from agentchemist.bag import (BagOptionError, PlaybackOptions, QosError, QosProfile, Schedule, clock_steps,
                              dump_offered_qos, parse_offered_qos, parse_remaps, playback_profile, select_topics,
                              subscription_profile, timing_errors, window)
from agentchemist.bag.presets import AGENTS, SENSORS

# What the real rosbag2 wrote into the reference bags (metadata version 7: rmw enum integers).
V7 = ("- history: 3\n  depth: 4\n  reliability: 1\n  durability: 1\n  deadline:\n    sec: 0\n    nsec: 0\n"
      "  lifespan:\n    sec: 0\n    nsec: 0\n  liveliness: 1\n  liveliness_lease_duration:\n    sec: 0\n    nsec: 0\n"
      "  avoid_ros_namespace_conventions: false")


def test_parses_rosbag2_v7_enum_integers():
    (p,) = parse_offered_qos(V7)
    assert (p.history, p.depth, p.reliability, p.durability, p.liveliness) == \
        ("unknown", 4, "reliable", "transient_local", "automatic")
    assert p.latched


def test_v9_names_round_trip_and_v8_integers():
    profiles = (QosProfile(depth=1, durability="transient_local"), QosProfile(reliability="best_effort", depth=5))
    assert parse_offered_qos(dump_offered_qos(profiles, version=9)) == profiles
    assert parse_offered_qos(dump_offered_qos(profiles, version=8)) == profiles
    assert "transient_local" in dump_offered_qos(profiles, 9) and "durability: 1" in dump_offered_qos(profiles, 8)
    assert parse_offered_qos("") == () and parse_offered_qos(None) == ()


@pytest.mark.parametrize("text, words", [
    ("- history: keep_last\n  depth: 1\n  reliability: sometimes\n  durability: volatile", "reliability"),
    ("- history: 9\n  depth: 1\n  reliability: 1\n  durability: 1", "history"),
    ("- history: keep_last\n  reliability: reliable\n  durability: volatile", "depth"),
    ("- history: keep_last\n  depth: -2\n  reliability: reliable\n  durability: volatile", "depth"),
    ("history: keep_last", "list"),
    ("- [unclosed", "YAML"),
])
def test_bad_qos_is_a_typed_error_naming_the_field(text, words):
    with pytest.raises(QosError, match=words):
        parse_offered_qos(text)


def test_recorder_subscribes_so_every_publisher_matches():
    latched, volatile = QosProfile(depth=1, durability="transient_local"), QosProfile(depth=10)
    best_effort = QosProfile(reliability="best_effort")
    sub = subscription_profile([latched, latched])
    assert sub.durability == "transient_local" and sub.reliability == "reliable" and sub.depth == 1000
    assert subscription_profile([latched, volatile]).durability == "volatile"
    assert subscription_profile([volatile, best_effort]).reliability == "best_effort"
    assert subscription_profile([]).reliability == "reliable"
    with pytest.raises(QosError):
        subscription_profile([volatile], depth=0)


def test_player_publishes_what_was_offered():
    (ref,) = parse_offered_qos(V7)
    play = playback_profile([ref])
    assert play.latched and play.reliability == "reliable" and play.depth == 4
    assert playback_profile([QosProfile(reliability="best_effort", depth=5)]).reliability == "best_effort"
    assert not playback_profile([QosProfile(depth=1, durability="transient_local"), QosProfile()]).latched
    assert playback_profile([QosProfile(history="unknown", depth=0, durability="transient_local")]).depth == 1
    assert playback_profile([QosProfile(history="unknown", depth=0)]).depth == 1000  # fast playback: deep


def test_presets_and_patterns():
    sel = select_topics(["sensors", "/agentchemist/plan"])
    assert sel.matches("/camera/front/color/image_raw") and sel.matches("/audio/right_gripper/raw")
    assert sel.matches("/lab/ph_meter/reading") and sel.matches("/agentchemist/plan")
    assert not sel.matches("/agentchemist/records")
    every = select_topics(["all"], exclude=["/camera/*"])
    assert every.matches("/anything/at/all") and not every.matches("/camera/front/color/image_raw")
    assert not every.matches("/clock") and not every.matches("/rosout")
    assert select_topics(["/clock"]).matches("/clock")  # named exactly: recorded
    assert all(select_topics(["agents"]).matches(t) for t in AGENTS)
    assert len(SENSORS) == 5


@pytest.mark.parametrize("words, message", [(["sensorz"], "unknown preset"), (["chatter"], "unknown preset"),
                                            ([], "no topic")])
def test_bad_topic_words(words, message):
    with pytest.raises(BagOptionError, match=message):
        select_topics(words)


def test_schedule_divides_recorded_spacing_by_rate():
    s = Schedule(first_ns=10**9, rate=2.0)
    assert s.due(10**9) == 0.0 and s.due(3 * 10**9) == pytest.approx(1.0)
    assert s.due(0) == 0.0  # before the start (a latched carry-over): at once
    assert s.bag_time(1.0) == 3 * 10**9
    with pytest.raises(BagOptionError):
        Schedule(0, rate=0.0)


def test_clock_steps_fill_gaps_and_skip_sub_resolution_advances():
    assert clock_steps(None, 5, 0.05) == [5]
    assert clock_steps(0, 120_000_000, 0.05) == [50_000_000, 100_000_000, 120_000_000]
    assert clock_steps(0, 120_000_000, 0.0) == [120_000_000]
    assert clock_steps(10, 10, 0.05) == [] and clock_steps(10, 5, 0.05) == []
    assert clock_steps(1_000, 1_001, 0.05, resolution_s=0.001) == []


def test_window_and_timing_errors():
    opts = PlaybackOptions(start_offset_s=1.5, until_s=2.0)
    assert window(10**9, opts) == (10**9 + 1_500_000_000, 3 * 10**9 + 1)
    assert timing_errors([0, 10**9], [5.0, 6.002]) == pytest.approx([0.0, 0.002])
    with pytest.raises(BagOptionError):
        timing_errors([0], [])


@pytest.mark.parametrize("kwargs", [{"rate": 0}, {"rate": float("nan")}, {"start_offset_s": -1},
                                    {"until_s": 1.0, "start_offset_s": 2.0}, {"remap": (("rel", "/x"),)},
                                    {"remap": (("/a", "/b"), ("/a", "/c"))}, {"clock_hz": -1}])
def test_bad_playback_options(kwargs):
    with pytest.raises(BagOptionError):
        PlaybackOptions(**kwargs)


def test_remap_syntax():
    assert parse_remaps(["/a:=/b", " /c := /d "]) == (("/a", "/b"), ("/c", "/d"))
    assert PlaybackOptions(remap=parse_remaps(["/a:=/b"])).target("/a") == "/b"
    with pytest.raises(BagOptionError, match="form"):
        parse_remaps(["/a=/b"])
