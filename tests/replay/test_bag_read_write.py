"""Writing and reading bags without ROS: both storages, splitting, compression, definitions, the reference
bags written by the real rosbag2, and cutting a window out of a bag."""
import pytest
import yaml
from rosbags.rosbag2 import Reader as RosbagsReader

from agentchemist.bag import (BagExistsError, BagOptionError, BagReader, BagWriter, WriterOptions, copy_bag,
                              format_info)
from tests.replay.bagdata import (REFERENCE, REFERENCE_DURATION, REFERENCE_START, decode_string, index_of,
                                  write_strings)


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_round_trip(tmp_path, storage, compression):
    bag = write_strings(tmp_path / "b", 40, storage=storage, compression=compression, topics=("/a", "/b"),
                        latched=("/b",))
    with BagReader(bag) as reader:
        info = reader.info()
        messages = list(reader.messages())
        assert [index_of(m.data) for m in messages] == list(range(40))
        assert reader.decode(messages[3]).data.startswith("i:3:")
    assert info.count == 40 and info.storage == storage and info.version == 9
    assert {t.name: t.count for t in info.topics} == {"/a": 20, "/b": 20}
    assert info.topic("/b").latched and not info.topic("/a").latched
    assert info.topic("/a").type_hash.startswith("RIHS01_") and "string data" in info.topic("/a").msgdef
    assert info.start_ns == 1_000_000_000 and info.duration_ns == 39 * 10_000_000
    assert info.problems == ()
    text = format_info(info, verbose=True)
    assert "Messages:          40" in text and "transient_local" in text


@pytest.mark.parametrize("storage, ext", [("mcap", ".mcap"), ("sqlite3", ".db3")])
def test_split_by_size_and_the_rosbags_library_reads_it(tmp_path, storage, ext):
    bag = write_strings(tmp_path / "split", 60, storage=storage, size=1000, max_bytes=12_000)
    files = sorted(p.name for p in bag.iterdir() if p.suffix == ext)
    assert len(files) >= 5 and files[0] == f"split_0{ext}"
    meta = yaml.safe_load((bag / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert meta["relative_file_paths"] == [f["path"] for f in meta["files"]]
    assert sorted(meta["relative_file_paths"]) == files
    assert sum(f["message_count"] for f in meta["files"]) == meta["message_count"] == 60
    # every file starts after the previous one ends: splits are sequential in time
    starts = [f["starting_time"]["nanoseconds_since_epoch"] for f in meta["files"]]
    assert starts == sorted(starts)
    with BagReader(bag) as reader:
        assert [index_of(m.data) for m in reader.messages()] == list(range(60))
        assert len(reader.info().files) == len(files)
    with RosbagsReader(bag) as other:  # an independent reader agrees
        assert other.message_count == 60
        assert [index_of(bytes(d)) for _c, _t, d in other.messages()] == list(range(60))


def test_strictly_increasing_keeps_arrival_order_of_equal_stamps(tmp_path):
    with BagWriter(tmp_path / "ties", WriterOptions(storage="sqlite3", strictly_increasing=True)) as w:
        w.add_topic("/a", "std_msgs/msg/String")
        w.add_topic("/b", "std_msgs/msg/String")
        stored = [w.write("/a" if i % 2 else "/b", 5_000, write_bytes(i)) for i in range(6)]
    assert stored == [5_000 + i for i in range(6)]
    with BagReader(tmp_path / "ties") as reader:
        assert [decode_string(m.data) for m in reader.messages()] == [str(i) for i in range(6)]


def write_bytes(i):
    from tests.replay.bagdata import string_cdr
    return string_cdr(str(i))


def test_writer_refuses_to_overwrite_and_checks_options(tmp_path):
    write_strings(tmp_path / "x", 1)
    with pytest.raises(BagExistsError, match="already exists"):
        BagWriter(tmp_path / "x")
    for bad in ({"storage": "rosbag1"}, {"compression": "lz4"}, {"max_bytes": 100}, {"version": 7}):
        with pytest.raises(BagOptionError):
            WriterOptions(**bad)
    with BagWriter(tmp_path / "y") as w:
        with pytest.raises(BagOptionError, match="not added"):
            w.write("/nope", 1, b"")


def test_custom_types_get_definitions_from_the_installed_package(tmp_path):
    pytest.importorskip("agentchemist_interfaces", reason="needs the built interfaces (scripts/env.sh)")
    with BagWriter(tmp_path / "c") as w:
        w.add_topic("/audio/right_gripper/raw", "agentchemist_interfaces/msg/AudioChunk")
    with BagReader(tmp_path / "c") as reader:
        topic = reader.info().topic("/audio/right_gripper/raw")
    assert "int16[] data" in topic.msgdef and "MSG: std_msgs/Header" in topic.msgdef
    assert topic.type_hash == "RIHS01_" + topic.type_hash.split("_", 1)[1] and len(topic.type_hash) == 71


@pytest.mark.skipif(not REFERENCE.is_dir(), reason=f"reference bags not found at {REFERENCE}")
@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_reads_the_real_rosbag2_reference_bags(storage):
    with BagReader(REFERENCE / storage / "cdr_test") as reader:
        info = reader.info()
        messages = list(reader.messages())
        decoded = [reader.decode(m) for m in messages]
    assert info.count == 7 and len(messages) == 7 and info.version == 7 and info.storage == storage
    assert info.start_ns == REFERENCE_START and info.duration_ns == REFERENCE_DURATION
    assert {t.name: (t.msgtype, t.count) for t in info.topics} == {
        "/test_topic": ("test_msgs/msg/BasicTypes", 3), "/array_topic": ("test_msgs/msg/Arrays", 4)}
    assert messages[0].timestamp == REFERENCE_START and messages[-1].timestamp == REFERENCE_START + REFERENCE_DURATION
    basic = [d for m, d in zip(messages, decoded) if m.topic == "/test_topic"]
    arrays = [d for m, d in zip(messages, decoded) if m.topic == "/array_topic"]
    assert [b.int32_value for b in basic] == [123, 123, 123]
    assert all(list(a.bool_values) == [True, False, True] for a in arrays)
    assert all(list(a.string_values) == ["Complex Hello1", "Complex Hello2", "Complex Hello3"] for a in arrays)
    assert all(t.latched for t in info.topics)


def test_copy_bag_cuts_a_window_and_carries_latched_topics(tmp_path):
    src = write_strings(tmp_path / "src", 30, topics=("/data", "/state"), latched=("/state",))
    dst = copy_bag(src, tmp_path / "cut", topics=["/data", "/state"], start_ns=1_100_000_000,
                   stop_ns=1_200_000_000, options=WriterOptions(storage="sqlite3"))
    with BagReader(dst) as reader:
        got = [(m.topic, index_of(m.data)) for m in reader.messages()]
        assert reader.info().topic("/state").latched
    # /state's last message before the window (index 9) comes first, then the window 10..19
    assert got[0] == ("/state", 9)
    assert [i for _t, i in got[1:]] == list(range(10, 20))
    with pytest.raises(BagOptionError, match="no topic"):
        copy_bag(src, tmp_path / "bad", topics=["/missing"])
