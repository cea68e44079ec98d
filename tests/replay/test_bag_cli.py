"""`agentchemist bag info | record | play` as a person runs them: separate processes, real DDS between them."""
import json
import subprocess
import sys
import threading
import time

import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.node import Node  # noqa: E402
from std_msgs.msg import String  # noqa: E402

from agentchemist.bag import BagReader  # noqa: E402
from tests.replay.bagdata import REFERENCE  # noqa: E402
from tests.replay.harness import ensure_rclpy  # noqa: E402

CLI = [sys.executable, "-m", "agentchemist_ros.tools.bag_cli"]


def run(args, timeout=60):
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout)


@pytest.mark.skipif(not REFERENCE.is_dir(), reason=f"reference bags not found at {REFERENCE}")
def test_info_like_ros2_bag_info():
    out = run(CLI + ["info", str(REFERENCE / "sqlite3" / "cdr_test")])
    assert out.returncode == 0, out.stderr
    assert "Messages:          7" in out.stdout and "Storage id:        sqlite3" in out.stdout
    assert "Topic: /array_topic | Type: test_msgs/msg/Arrays | Count: 4" in out.stdout
    assert "Duration:          0.151137181s" in out.stdout
    as_json = json.loads(run(CLI + ["info", "--json", str(REFERENCE / "mcap" / "cdr_test")]).stdout)
    assert as_json["messages"] == 7 and {t["name"]: t["count"] for t in as_json["topics"]} == \
        {"/array_topic": 4, "/test_topic": 3}
    via_main = run([sys.executable, "-m", "agentchemist.cli", "bag", "info", str(REFERENCE / "mcap" / "cdr_test")])
    assert via_main.returncode == 0 and "Messages:          7" in via_main.stdout


def test_errors_name_the_file(tmp_path):
    out = run(CLI + ["info", str(tmp_path / "missing_bag")])
    assert out.returncode == 2
    assert str(tmp_path / "missing_bag") in out.stdout and "no such bag" in out.stdout
    out = run(CLI + ["play", str(tmp_path / "missing_bag"), "--rate", "0"])
    assert out.returncode == 2 and "rate" in out.stdout


def test_record_and_play_across_processes(tmp_path):
    ensure_rclpy()
    node = Node("cli_test_talker")
    pub = node.create_publisher(String, "/cli_talk", 10)
    echoed = []
    node.create_subscription(String, "/cli_echo", lambda m: echoed.append(m.data), 1000)
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    stop = threading.Event()

    def talk():
        i = 0
        while not stop.is_set():
            pub.publish(String(data=f"i:{i}:"))
            i += 1
            executor.spin_once(0.02)

    talker = threading.Thread(target=talk, daemon=True)
    talker.start()
    bag = tmp_path / "cli_bag"
    try:
        out = run(CLI + ["record", "/cli_talk", "-o", str(bag), "--storage", "sqlite3", "--duration", "5",
                         "--no-progress"])
        assert out.returncode == 0, out.stdout + out.stderr
        stop.set()
        talker.join(timeout=5)
        with BagReader(bag) as reader:
            info = reader.info()
            recorded = [int(reader.decode(m).data.split(":")[1]) for m in reader.messages()]
        assert info.storage == "sqlite3" and info.topic("/cli_talk").count == len(recorded) >= 20
        assert recorded == list(range(recorded[0], recorded[0] + len(recorded)))  # none lost, in order

        player = subprocess.Popen(CLI + ["play", str(bag), "--fast", "--remap", "/cli_talk:=/cli_echo",
                                         "--wait-for-subscribers", "20", "--no-progress"],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        end = time.monotonic() + 60
        while player.poll() is None and time.monotonic() < end:
            executor.spin_once(0.02)
        output = player.stdout.read()
        # the player waited for our reader's acknowledgements before it exited: all of it is in our queue
        end = time.monotonic() + 30
        while len(echoed) < len(recorded) and time.monotonic() < end:
            executor.spin_once(0.02)
        assert player.returncode == 0, output
        assert f"played {len(recorded)} messages" in output
        assert [int(d.split(":")[1]) for d in echoed] == recorded
    finally:
        stop.set()
        executor.shutdown(timeout_sec=1.0)
        node.destroy_node()


def test_damage_is_a_nonzero_exit_that_says_how_much_was_kept(tmp_path):
    """`bag info` reads every chunk (a flipped byte mid-file fails its CRC: exit 3, the intact count said);
    `bag play` of a bag with nothing readable exits 3 instead of 0 having played nothing."""
    import zlib

    from tests.replay.bagdata import write_strings
    from tests.replay.test_bag_damage import CHUNK_DATA, _chunk_offsets

    bag = write_strings(tmp_path / "c", 200, size=20_000, noise=True)
    assert run(CLI + ["info", str(bag)]).returncode == 0  # intact: verified, exit 0
    mcap = bag / "c_0.mcap"
    data = bytearray(mcap.read_bytes())
    start = _chunk_offsets(data)[1]
    body, records = start + 9, start + CHUNK_DATA - 4
    size = int.from_bytes(data[body + 16:body + 24], "little")
    data[body + 24:body + 28] = zlib.crc32(bytes(data[records:records + size])).to_bytes(4, "little")
    data[records + size // 2] ^= 0xFF  # mid-file: the summary and footer are intact, the chunk is not
    mcap.write_bytes(bytes(data))
    out = run(CLI + ["info", str(bag)])
    assert out.returncode == 3, out.stdout
    assert "CRC" in out.stdout and "damaged" in out.stdout and "messages readable" in out.stdout
    as_json = run(CLI + ["info", "--json", str(bag)])
    report = json.loads(as_json.stdout)
    assert as_json.returncode == 3 and 100 <= report["readable_messages"] < 200 and report["problems"]
    assert run(CLI + ["info", "--no-verify", str(bag)]).returncode == 0  # the quick look trusts the index

    cut = tmp_path / "cut.mcap"
    cut.write_bytes(b"\x89MCAP0\r\n")  # a recording killed right after its first bytes
    out = run(CLI + ["play", str(cut), "--no-progress"])
    assert out.returncode == 2 and str(cut) in out.stdout and "Traceback" not in out.stdout + out.stderr
    empty = write_strings(tmp_path / "empty", 0)
    out = run(CLI + ["play", str(empty), "--no-progress"])
    assert out.returncode == 3 and "nothing was played" in out.stdout, out.stdout + out.stderr
