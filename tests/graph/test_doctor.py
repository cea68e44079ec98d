"""`agentchemist doctor` against a real twin graph: the lab_sim node publishes on /clock; the doctor's
probe listens, finds the twin's streams alive, reports the topic the twin does not publish (a driver's
stability flag) as missing and a stale electrode calibration as failed, and exits 1."""
import subprocess
import sys
import time

import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.node import Node  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from std_msgs.msg import Empty  # noqa: E402

from agentchemist.hardware import readiness  # noqa: E402
from agentchemist.hardware.instruments.electrode import (BufferPoint, CalibrationStore, buffer_ph,  # noqa: E402
                                                         calibrate, mv_from_ideal_ph)
from agentchemist_ros.common.runner import make_executor  # noqa: E402
from agentchemist_ros.lab_sim_node import LabSimNode  # noqa: E402
from agentchemist_ros.tools.doctor import observe  # noqa: E402
from agentchemist_ros.tools.graph import background_spin  # noqa: E402
from tests.conftest import REPO  # noqa: E402

SCENARIO = str(REPO / "config" / "scenarios" / "hcl_naoh.yaml")


def test_doctor_on_the_twin_reports_a_missing_topic_and_a_stale_calibration(tmp_path):
    store = CalibrationStore(tmp_path / "cal.json")
    store.save(calibrate("ph_probe_1", [BufferPoint(n, mv_from_ideal_ph(buffer_ph(n, 25.0), 25.0), 25.0)
                                        for n in (4.01, 7.00)], now=time.time() - 40 * 3600))
    twin = readiness.load_profile("twin")
    profile = readiness.Profile(
        name="test", topics=twin.topics + (readiness.TopicExpectation("/lab/ph_meter/stable", "std_msgs/msg/Bool",
                                                                      0.2),),
        probes=("ph_probe_1",), max_skew_s=twin.max_skew_s, sim_time=True)
    rclpy.init()
    sim = LabSimNode(parameter_overrides=[Parameter("scenario", value=SCENARIO),
                                          Parameter("real_time_factor", value=5.0)])
    # A pH meter driver whose serial port is not there: its /diagnostics ERROR must reach the table.
    from agentchemist_ros.ph_meter_node import PhMeterNode
    meter = PhMeterNode(parameter_overrides=[Parameter("port", value=str(tmp_path / "no_such_tty")),
                                             Parameter("calibration_file", value=str(tmp_path / "cal.json"))])
    executor = make_executor(threads=4, default="multi")
    executor.add_node(sim)
    executor.add_node(meter)
    try:
        with background_spin(lambda t: executor.spin_once(timeout_sec=t)):
            checks = observe(profile, seconds=4.0, executor=executor)
    finally:
        executor.shutdown(timeout_sec=2.0)
        sim.destroy_node()
        meter.destroy_node()
        rclpy.try_shutdown()
    checks += readiness.calibration_checks(profile.probes, store, time.time(), profile.acceptance)
    got = {c.name: c for c in checks}
    assert got["/lab/ph_meter/stable"].status == readiness.FAIL and "missing" in got["/lab/ph_meter/stable"].detail
    assert got["ph_probe_1"].status == readiness.FAIL and "h old" in got["ph_probe_1"].detail
    for topic in ("/lab/ph_meter/reading", "/joint_states"):
        assert got[topic].status == readiness.OK, got[topic]
    # This titration bench has no balance: the twin publishes no mass, and the doctor says so.
    assert got["/lab/balance/reading"].status == readiness.FAIL
    assert got["/clock"].status == readiness.OK
    assert got["ph_meter: serial instrument"].status == readiness.FAIL
    assert got["ph_meter: serial instrument"].detail == "port closed"
    assert readiness.exit_code(checks) == 1


def test_doctor_cli_exits_1_and_names_what_failed(tmp_path):
    """The command a person runs: no graph here, so the twin profile's topics are missing; exit code 1."""
    out = subprocess.run([sys.executable, "-m", "agentchemist.cli", "doctor", "--profile", "twin", "--seconds", "1",
                          "--calibration-file", str(tmp_path / "none.json")],
                         capture_output=True, text=True, timeout=120, env=None)
    assert out.returncode == 1, out.stderr
    assert "missing" in out.stdout and "/lab/ph_meter/reading" in out.stdout and "not ready" in out.stdout


def test_observing_beside_a_spinning_executor_leaves_it_spinning():
    """observe() on an executor another thread spins: its probe, added then destroyed each time, must never
    be in a wait set being built (rclpy raises InvalidHandle in the spinning thread and it stops)."""
    profile = readiness.load_profile("twin")
    rclpy.init()
    executor = make_executor(threads=4, default="multi")
    errors = []

    def spin_once(timeout_s):
        try:
            executor.spin_once(timeout_sec=timeout_s)
        except Exception as e:  # noqa: BLE001 - what the test is about
            errors.append(repr(e))
            raise

    # a node with many entities: the spinner spends its time gathering them, where the race is
    busy = Node("doctor_busy_neighbour")
    for k in range(150):
        busy.create_subscription(Empty, f"/doctor_test/busy_{k}", lambda _m: None, 1)
    executor.add_node(busy)
    try:
        with background_spin(spin_once, period_s=0.01):
            for _ in range(40):
                observe(profile, seconds=0.01, executor=executor)
                assert not errors, errors
    finally:
        executor.shutdown(timeout_sec=2.0)
        busy.destroy_node()
        rclpy.try_shutdown()
