"""Bad input: truncated, corrupt and incomplete bags give a clear error naming the file and the problem,
and whatever is intact is still read."""
import zlib

import pytest

from agentchemist.bag import (BagCorruptError, BagMetadataError, BagNotFoundError, BagReader, BagWriter,
                              MessageTypes, UnknownMessageTypeError, WriterOptions)
from agentchemist.bag.migrate import check_topic
from tests.replay.bagdata import index_of, string_cdr, write_strings

BIG = 20_000  # bytes per message: 200 messages fill several 1 MiB MCAP chunks


def _problems(reader):
    return [str(p) for p in reader.all_problems()]


def test_missing_path_and_non_bag_folder(tmp_path):
    with pytest.raises(BagNotFoundError, match="no such bag"):
        BagReader(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(BagNotFoundError, match=r"metadata.yaml: missing, and the folder holds no \.mcap or \.db3"):
        BagReader(tmp_path / "empty")


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_missing_metadata_yaml_reads_the_storage_files(tmp_path, storage):
    bag = write_strings(tmp_path / "nometa", 30, storage=storage, max_bytes=5000, latched=("/chatter",))
    (bag / "metadata.yaml").unlink()
    with BagReader(bag) as reader:
        info = reader.info()
        assert [index_of(m.data) for m in reader.messages()] == list(range(30))
        problems = _problems(reader)
    assert not info.from_metadata and info.count == 30 and info.topic("/chatter").count == 30
    assert info.topic("/chatter").latched  # QoS comes from the storage files themselves
    assert any(str(bag / "metadata.yaml") in p and "missing" in p for p in problems)


def test_truncated_mcap_recovers_every_complete_chunk(tmp_path):
    bag = write_strings(tmp_path / "t", 200, size=BIG, noise=True)
    mcap = bag / "t_0.mcap"
    data = mcap.read_bytes()
    mcap.write_bytes(data[: int(len(data) * 0.6)])
    with BagReader(bag) as reader:
        indexes = [index_of(m.data) for m in reader.messages()]
        problems = _problems(reader)
    assert 50 <= len(indexes) < 200
    assert indexes == list(range(len(indexes)))  # the intact prefix, in order
    assert any(str(mcap) in p and "truncated" in p for p in problems), problems


def test_killed_recording_leaves_a_readable_bag(tmp_path):
    # What a recorder killed mid-run leaves: no metadata.yaml, the open file in its staging folder,
    # its last chunk never written.
    writer = BagWriter(tmp_path / "killed", WriterOptions(storage="mcap"))
    writer.add_topic("/chatter", "std_msgs/msg/String")
    for i in range(200):
        writer.write("/chatter", 10**9 + i, string_cdr(f"i:{i}:".ljust(BIG, "x")))
    writer.abort()
    with BagReader(tmp_path / "killed") as reader:
        indexes = [index_of(m.data) for m in reader.messages()]
        problems = _problems(reader)
    assert len(indexes) >= 100 and indexes == list(range(len(indexes)))
    assert any("metadata.yaml" in p for p in problems) and any("without a footer" in p for p in problems)


def _chunk_offsets(data: bytes) -> list[int]:
    """Byte offsets of the chunk records of an MCAP data section (walking the length-prefixed records)."""
    pos, found = 8, []
    while pos + 9 <= len(data) and data[pos] not in (0x0F, 0x02):
        if data[pos] == 0x06:
            found.append(pos)
        pos += 9 + int.from_bytes(data[pos + 1:pos + 9], "little")
    return found


CHUNK_DATA = 9 + 8 + 8 + 8 + 4 + (4 + 4) + 8  # record prefix + chunk fields up to the records ('zstd' or '')


@pytest.mark.parametrize("mode, which", [("zstd", 0), ("crc", 1)])
def test_corrupt_mcap_chunk_is_skipped_and_the_rest_is_read(tmp_path, mode, which):
    """zstd: chunk 0's compressed frame is damaged (chunk 0 also holds the only in-data copy of the channel
    definitions; the summary rescues them). crc: chunk 1 carries a CRC, as rosbag2's writer stores it
    (rosbags writes none), and one of its bytes flips."""
    bag = write_strings(tmp_path / "c", 200, size=BIG, compression="zstd" if mode == "zstd" else "none", noise=True)
    mcap = bag / "c_0.mcap"
    data = bytearray(mcap.read_bytes())
    chunks = _chunk_offsets(data)
    assert len(chunks) >= 3
    start = chunks[which]
    if mode == "zstd":
        data[start + CHUNK_DATA:start + CHUNK_DATA + 4] = b"\x00\x00\x00\x00"  # the zstd frame magic
    else:
        body = start + 9
        size = int.from_bytes(data[body + 16:body + 24], "little")
        records = start + CHUNK_DATA - 4  # no compression name: 4 bytes shorter
        data[body + 24:body + 28] = zlib.crc32(bytes(data[records:records + size])).to_bytes(4, "little")
        data[records + size // 2] ^= 0xFF
    mcap.write_bytes(bytes(data))
    with BagReader(bag) as reader:
        indexes = [index_of(m.data) for m in reader.messages()]
        problems = _problems(reader)
    assert 100 <= len(indexes) < 200, len(indexes)
    assert indexes == sorted(indexes) and indexes[-1] == 199  # later chunks still read, in order
    expected = "CRC" if mode == "crc" else "corrupt"
    assert any(str(mcap) in p and expected in p for p in problems), problems


def test_truncated_sqlite_is_a_clear_error_and_other_split_files_still_play(tmp_path):
    bag = write_strings(tmp_path / "s", 60, storage="sqlite3", size=1000, max_bytes=20_000)
    files = sorted(bag.glob("*.db3"))
    assert len(files) >= 3
    damaged = files[-1]
    damaged.write_bytes(damaged.read_bytes()[: damaged.stat().st_size // 2])
    with BagReader(bag) as reader:
        indexes = [index_of(m.data) for m in reader.messages()]
        problems = _problems(reader)
    assert indexes == list(range(len(indexes))) and len(indexes) >= 30
    assert any(str(damaged) in p and ("malformed" in p or "nothing could be recovered" in p) for p in problems), \
        problems


def test_corrupt_sqlite_page_loses_only_its_rows(tmp_path):
    bag = write_strings(tmp_path / "p", 300, storage="sqlite3", size=2000)
    db = bag / "p_0.db3"
    data = bytearray(db.read_bytes())
    middle = len(data) // 2 - (len(data) // 2) % 4096  # a whole page in the middle of the message table
    data[middle:middle + 4096] = bytes(4096)
    db.write_bytes(bytes(data))
    with BagReader(bag) as reader:
        indexes = [index_of(m.data) for m in reader.messages()]
        problems = _problems(reader)
    assert 200 <= len(indexes) < 300 and indexes == sorted(indexes) and indexes[-1] == 299
    assert any(str(db) in p for p in problems), problems


def test_storage_file_listed_but_missing(tmp_path):
    bag = write_strings(tmp_path / "m", 40, size=1000, max_bytes=12_000)
    gone = sorted(bag.glob("*.mcap"))[1]
    gone.unlink()
    with BagReader(bag) as reader:
        indexes = [index_of(m.data) for m in reader.messages()]
        problems = _problems(reader)
    assert 0 < len(indexes) < 40
    assert any(str(gone) in p and "missing" in p for p in problems)


@pytest.mark.parametrize("text, match", [
    ("not: [valid", "not valid YAML"),
    ("something_else: {}", "rosbag2_bagfile_information"),
    ("rosbag2_bagfile_information: {version: 42, storage_identifier: mcap, relative_file_paths: [],"
     " topics_with_message_count: []}", "version 42"),
    ("rosbag2_bagfile_information: {version: 9, storage_identifier: rosbag_v1, relative_file_paths: [],"
     " topics_with_message_count: []}", "storage plugin"),
    ("rosbag2_bagfile_information: {version: 9, storage_identifier: mcap}", "relative_file_paths"),
])
def test_bad_metadata_names_the_file(tmp_path, text, match):
    bag = write_strings(tmp_path / "bm", 3)
    (bag / "metadata.yaml").write_text(text)
    with pytest.raises(BagMetadataError, match=match) as err:
        BagReader(bag)
    assert str(bag / "metadata.yaml") in str(err.value)


def test_not_an_mcap_file(tmp_path):
    bogus = tmp_path / "bogus.mcap"
    bogus.write_bytes(b"hello, this is not a bag" * 10)
    with pytest.raises(BagCorruptError, match="bogus.mcap: is not an MCAP file"):
        BagReader(bogus)
    (tmp_path / "empty.db3").write_bytes(b"")
    with pytest.raises(BagCorruptError, match="empty.db3: is empty"):
        BagReader(tmp_path / "empty.db3")


def test_unknown_message_type_names_bag_topic_and_type(tmp_path):
    with BagWriter(tmp_path / "u") as writer:
        writer.add_topic("/mystery", "mystery_msgs/msg/Thing", msgdef="", type_hash="RIHS01_" + "0" * 64)
        writer.add_topic("/chatter", "std_msgs/msg/String")
        writer.write("/mystery", 1, b"\x00\x01\x00\x00\x07\x00\x00\x00")
        writer.write("/chatter", 2, string_cdr("i:1:"))
    with BagReader(tmp_path / "u") as reader:
        mystery, chatter = list(reader.messages())
        assert reader.decode(chatter).data == "i:1:"  # the valid part still decodes
        with pytest.raises(UnknownMessageTypeError, match="mystery_msgs/msg/Thing") as err:
            reader.decode(mystery)
    assert "/mystery" in str(err.value) and str(tmp_path / "u") in str(err.value)
    with pytest.raises(UnknownMessageTypeError, match="not of the form"):
        MessageTypes(share_dirs=[]).ensure("justaname")


def test_recorded_with_an_older_definition_is_converted_by_field_name(tmp_path):
    pytest.importorskip("agentchemist_interfaces", reason="needs the built interfaces (scripts/env.sh)")
    installed = MessageTypes()
    msgtype = "agentchemist_interfaces/msg/ExperimentPlan"
    old_def = "builtin_interfaces/Time stamp\nstring experiment_id\nstring plan_json\nstring retired_field\n" \
              "================================================================================\n" \
              "MSG: builtin_interfaces/Time\nint32 sec\nuint32 nanosec\n"
    old = MessageTypes(share_dirs=[])
    old.add_embedded(msgtype, old_def)
    cls = old.store.types[msgtype]
    time_cls = old.store.types["builtin_interfaces/msg/Time"]
    data = bytes(old.store.serialize_cdr(cls(stamp=time_cls(sec=3, nanosec=4), experiment_id="exp-1",
                                             plan_json="{}", retired_field="gone"), msgtype))
    with BagWriter(tmp_path / "old") as writer:
        writer.add_topic("/agentchemist/plan", msgtype, msgdef=old_def, type_hash=old.store.hash_rihs01(msgtype))
        writer.write("/agentchemist/plan", 1, data)
    with BagReader(tmp_path / "old") as reader:
        topic = reader.info().topic("/agentchemist/plan")
        (message,) = list(reader.messages())
    check, converter = check_topic(topic, installed)
    assert not check.same and "retired_field" in check.removed
    assert set(check.added) == set(installed.store.fielddefs[msgtype][1][i][0]
                                   for i in range(len(installed.store.fielddefs[msgtype][1]))) - \
        {"stamp", "experiment_id", "plan_json"}
    new = installed.decode(converter.convert(message.data), msgtype)
    assert (new.experiment_id, new.plan_json, new.stamp.sec, new.stamp.nanosec) == ("exp-1", "{}", 3, 4)
    assert "converting by field name" in check.describe()


def test_retyped_field_cannot_be_converted(tmp_path):
    pytest.importorskip("agentchemist_interfaces", reason="needs the built interfaces (scripts/env.sh)")
    msgtype = "agentchemist_interfaces/msg/ExperimentPlan"
    old_def = "builtin_interfaces/Time stamp\nfloat64 experiment_id\nstring plan_json\n" \
              "================================================================================\n" \
              "MSG: builtin_interfaces/Time\nint32 sec\nuint32 nanosec\n"
    old = MessageTypes(share_dirs=[])
    old.add_embedded(msgtype, old_def)
    cls, time_cls = old.store.types[msgtype], old.store.types["builtin_interfaces/msg/Time"]
    data = bytes(old.store.serialize_cdr(cls(stamp=time_cls(sec=0, nanosec=0), experiment_id=1.5, plan_json=""),
                                         msgtype))
    with BagWriter(tmp_path / "retyped") as writer:
        writer.add_topic("/agentchemist/plan", msgtype, msgdef=old_def, type_hash=old.store.hash_rihs01(msgtype))
        writer.write("/agentchemist/plan", 1, data)
    with BagReader(tmp_path / "retyped") as reader:
        _check, converter = check_topic(reader.info().topic("/agentchemist/plan"), MessageTypes())
        (message,) = list(reader.messages())
    with pytest.raises(UnknownMessageTypeError, match="experiment_id"):
        converter.convert(message.data)


KILLED_WRITER = """
import sys, time
from agentchemist.bag import BagWriter, WriterOptions
from tests.replay.bagdata import string_cdr
writer = BagWriter(sys.argv[1], WriterOptions(storage="sqlite3", commit_interval_s=0.05))
writer.add_topic("/chatter", "std_msgs/msg/String")
i = 0
while True:
    writer.write("/chatter", 10**9 + i, string_cdr(f"i:{i}:".ljust(2000, "x")))
    i += 1
    if i % 50 == 0:
        writer.commit()
        print(i, flush=True)  # everything up to i is committed
    time.sleep(0.0005)
"""


def test_a_killed_sqlite3_recording_keeps_all_but_its_last_interval(tmp_path):
    """A recording SIGKILLed mid-run: before the bounded commits a sqlite3 bag kept nothing (0 of 40 MB)."""
    import signal
    import subprocess
    import sys

    from tests.conftest import REPO

    proc = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(tmp_path / "killed")], cwd=REPO,
                            stdout=subprocess.PIPE, text=True)
    try:
        committed = 0
        while committed < 400:
            line = proc.stdout.readline()
            assert line, f"the writer stopped after {committed} messages (exit {proc.poll()})"
            committed = int(line)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    with BagReader(tmp_path / "killed") as reader:
        indexes = [index_of(m.data) for m in reader.messages()]
        problems = _problems(reader)
    assert len(indexes) >= committed and indexes == list(range(len(indexes)))
    assert any("metadata.yaml" in p for p in problems)


def test_commit_interval_is_validated():
    with pytest.raises(Exception, match="commit_interval_s"):
        WriterOptions(storage="sqlite3", commit_interval_s=0.0)


@pytest.mark.parametrize("size", [1000, 9000])  # 9000 bytes: every message has an overflow chain
def test_a_half_truncated_sqlite3_file_gives_back_its_intact_pages(tmp_path, size):
    """SQLite refuses a .db3 cut in half (the header names pages that are gone); its intact pages are read
    row by row instead (bag/sqlite_pages.py), as the sqlite3 shell's .recover would."""
    bag = write_strings(tmp_path / "t", 300, storage="sqlite3", size=size)
    (db,) = bag.glob("*.db3")
    db.write_bytes(db.read_bytes()[: db.stat().st_size // 2])
    with BagReader(bag) as reader:
        messages = list(reader.messages())
        problems = _problems(reader)
    indexes = [index_of(m.data) for m in messages]
    assert 100 <= len(indexes) < 300, len(indexes)
    assert indexes == sorted(indexes) and len(set(indexes)) == len(indexes)
    assert all(m.topic == "/chatter" and m.timestamp == 1_000_000_000 + 10_000_000 * i
               for m, i in zip(messages, indexes))
    assert any(str(db) in p and f"{len(indexes)} messages on 1 topics recovered" in p for p in problems), problems
