"""MCAP bags as the project writes them (issue 38): every chunk carries its CRC, so a flipped byte is found
on read and by `verify`; a killed recording loses at most its last commit interval; a metadata count that
is not the files' is reported."""
import time

import yaml

from agentchemist.bag import BagReader, BagWriter, WriterOptions
from agentchemist.bag.mcap_crc import chunk_crcs
from tests.replay.bagdata import index_of, string_cdr, write_strings

BIG = 20_000  # bytes per message: 200 messages fill several 1 MiB chunks


def chunk_records(data: bytes) -> list[tuple[int, int]]:
    """(start of the uncompressed records, their size) of each chunk of an uncompressed MCAP file."""
    pos, found = 8, []
    while pos + 9 <= len(data) and data[pos] not in (0x0F, 0x02):
        if data[pos] == 0x06:
            body = pos + 9
            size = int.from_bytes(data[body + 16:body + 24], "little")
            found.append((body + 24 + 4 + 4 + 8, size))  # crc, empty compression name, records length
        pos += 9 + int.from_bytes(data[pos + 1:pos + 9], "little")
    return found


def test_every_chunk_of_a_closed_mcap_carries_its_crc(tmp_path):
    for compression in ("none", "zstd"):
        bag = write_strings(tmp_path / f"b_{compression}", 200, size=BIG, compression=compression, noise=True)
        crcs = chunk_crcs(bag / f"b_{compression}_0.mcap")
        assert len(crcs) >= 3 and all(crcs), crcs
        with BagReader(bag) as reader:
            readable, problems = reader.verify()
            assert readable == 200 and problems == [], problems
            assert [index_of(m.data) for m in reader.messages()] == list(range(200))


def test_a_flipped_byte_is_found_on_read_and_by_verify(tmp_path):
    bag = write_strings(tmp_path / "f", 200, size=BIG, noise=True)
    mcap = bag / "f_0.mcap"
    data = bytearray(mcap.read_bytes())
    start, size = chunk_records(bytes(data))[1]
    data[start + size // 2] ^= 0x01
    mcap.write_bytes(bytes(data))
    with BagReader(bag) as reader:
        indexes = [index_of(m.data) for m in reader.messages()]
        problems = [str(p) for p in reader.all_problems()]
    assert 100 <= len(indexes) < 200 and indexes[-1] == 199
    assert any("CRC" in p for p in problems), problems
    with BagReader(bag) as reader:
        readable, problems = reader.verify()
    assert readable < 200 and any("CRC" in str(p) for p in problems)


def test_a_killed_recording_loses_at_most_its_last_interval(tmp_path):
    writer = BagWriter(tmp_path / "killed", WriterOptions(storage="mcap", commit_interval_s=0.2))
    writer.add_topic("/chatter", "std_msgs/msg/String")
    written = []
    start = time.monotonic()
    i = 0
    while time.monotonic() - start < 2.0:  # small messages: a 1 MiB chunk would never fill
        writer.write("/chatter", 10**9 + i, string_cdr(f"i:{i}:".ljust(200, "x")))
        written.append(time.monotonic())
        i += 1
        time.sleep(0.01)
    writer.abort()  # what a SIGKILL leaves: no metadata, the open file, its pending chunk lost
    with BagReader(tmp_path / "killed") as reader:
        indexes = [index_of(m.data) for m in reader.messages()]
    kept_before = sum(1 for t in written if t < written[-1] - 0.2 - 0.05)
    assert indexes == list(range(len(indexes))) and len(indexes) >= kept_before > 0.8 * len(written)


def test_a_metadata_count_that_is_not_the_files_is_reported(tmp_path):
    bag = write_strings(tmp_path / "m", 40, size=1000)
    meta_path = bag / "metadata.yaml"
    meta = yaml.safe_load(meta_path.read_text())
    meta["rosbag2_bagfile_information"]["message_count"] = 99999999999
    meta_path.write_text(yaml.safe_dump(meta, sort_keys=False))
    with BagReader(bag) as reader:
        readable, problems = reader.verify()
    assert readable == 40
    assert any("99999999999" in str(p) and "hold 40" in str(p) for p in problems), problems
