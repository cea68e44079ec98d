"""Crash safety of the recorder node: SIGKILL it in the middle of a burst; the database opens cleanly and
holds every record that was acknowledged (published as a FusedRecord) before the kill."""
import os
import signal
import sqlite3
import subprocess
import sys
import time
import uuid

import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.node import Node  # noqa: E402
from std_msgs.msg import Header  # noqa: E402

from agentchemist_interfaces.msg import ChemicalReading, ExperimentPlan, FusedRecord  # noqa: E402
from agentchemist_ros.common import topics  # noqa: E402
from agentchemist_ros.common.qos import LATCHED, READINGS, RELIABLE  # noqa: E402
from agentchemist_ros.common.timeconv import to_msg  # noqa: E402
from tests.conftest import REPO  # noqa: E402


IN_FLIGHT = 20  # readings the driver lets go unacknowledged
KILL_AFTER = 50  # acknowledged records before the SIGKILL


def test_sigkill_mid_burst_loses_no_acknowledged_record(tmp_path):
    experiment = f"crash-{uuid.uuid4().hex[:8]}"  # unique: nothing another test sees can match it
    proc = subprocess.Popen([sys.executable, "-m", "tests.graph.recorder_process", str(tmp_path)], cwd=REPO)
    rclpy.init()
    node = None
    try:
        node = Node("crash_driver")
        acks = []
        node.create_subscription(FusedRecord, topics.RECORDS, acks.append, RELIABLE)
        plan_pub = node.create_publisher(ExperimentPlan, topics.PLAN, LATCHED)
        reading_pub = node.create_publisher(ChemicalReading, topics.PH_READING, READINGS)
        plan_pub.publish(ExperimentPlan(stamp=to_msg(1.0), experiment_id=experiment, plan_json="{}"))
        end = time.monotonic() + 60
        # The recorder process is up and has opened the experiment's store (on the latched plan): only
        # then do readings have somewhere to go. Waited for, not slept on: a loaded machine takes longer.
        while (reading_pub.get_subscription_count() == 0 or node.count_publishers(topics.RECORDS) == 0
               or not (tmp_path / experiment / "records.db").exists()):
            rclpy.spin_once(node, timeout_sec=0.05)
            assert time.monotonic() < end, "the recorder process did not come up and open its store"
            assert proc.poll() is None, f"the recorder process exited with {proc.returncode}"
        sent, killed_after = 0, None
        end = time.monotonic() + 120
        while time.monotonic() < end:
            # A burst, but one the recorder can keep up with on a loaded machine (each record is fsynced):
            # at most IN_FLIGHT readings unacknowledged, so the kill always finds some in flight.
            if sent - len(acks) < IN_FLIGHT:
                sent += 1
                stamp = 1.0 + 0.1 * sent
                reading_pub.publish(ChemicalReading(header=Header(stamp=to_msg(stamp), frame_id="ph_meter"),
                                                    sensor="ph_meter", quantity="pH", value=3.0 + 0.001 * sent,
                                                    unit="pH", self_check_ok=True, noise=0.005))
            rclpy.spin_once(node, timeout_sec=0.002)
            if len(acks) >= KILL_AFTER and killed_after is None:
                os.kill(proc.pid, signal.SIGKILL)  # in the middle of the burst
                killed_after = len(acks)
                break
        assert killed_after is not None, f"only {len(acks)} acknowledgements for {sent} readings"
        try:  # SIGKILL cannot be caught; on a loaded machine the reaping may still take a while
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the recorder process (pid {proc.pid}) was still alive 60 s after SIGKILL")
        for _ in range(20):
            rclpy.spin_once(node, timeout_sec=0.01)
    finally:
        # Whatever happened, nothing of this test may outlive it: its latched plan would start an
        # experiment in the next test's graph (same process, same domain).
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
        if proc.poll() is None:
            proc.kill()
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                pass  # reported above; never let cleanup raise over the test's own failure
    db = tmp_path / experiment / "records.db"
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    stored = {seq for (seq,) in con.execute("SELECT seq FROM fused_records")}
    acked = {m.seq for m in acks}
    assert acked and acked <= stored, f"acknowledged but lost: {sorted(acked - stored)[:10]}"
    raw = con.execute("SELECT COUNT(*) FROM raw_observations").fetchone()[0]
    assert raw >= len(acked)  # every acknowledged record's raw reading is there too
