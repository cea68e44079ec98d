"""The doctor's judgements without ROS: CAN links from `ip -details -json` output and from sysfs, topic
rates, calibrations and the exit code."""
import json
import time

from agentchemist.hardware import readiness
from agentchemist.hardware.instruments.electrode import (BufferPoint, CalibrationStore, buffer_ph, calibrate,
                                                         mv_from_ideal_ph)
from agentchemist.hardware.readiness import FAIL, OK, WARN

IP_JSON = json.dumps([
    {"ifname": "can_left", "flags": ["NOARP", "UP", "LOWER_UP"], "operstate": "UNKNOWN",
     "linkinfo": {"info_kind": "can", "info_data": {"state": "ERROR-ACTIVE", "bittiming": {"bitrate": 1000000}}}},
    {"ifname": "can_right", "flags": ["NOARP", "UP", "LOWER_UP"], "operstate": "UNKNOWN",
     "linkinfo": {"info_kind": "can", "info_data": {"bittiming": {"bitrate": 500000}}}},
    {"ifname": "can_spare", "flags": ["NOARP"], "operstate": "DOWN", "linkinfo": {"info_kind": "can"}},
])


def test_can_checks_from_ip_json(tmp_path):
    links = readiness.read_can_links(["can_left", "can_right", "can_spare", "can9"], sys_net=tmp_path,
                                     ip_json=IP_JSON)
    got = {c.name: (c.status, c.detail) for c in readiness.can_checks(links)}
    assert got["can_left"] == (OK, "up at 1 Mbit/s")
    assert got["can_right"][0] == FAIL and "500000" in got["can_right"][1]
    assert got["can_spare"][0] == FAIL and "down" in got["can_spare"][1]
    assert got["can9"] == (FAIL, "not present")
    base = readiness.can_checks(readiness.read_can_links(["can_right"], sys_net=tmp_path, ip_json=IP_JSON),
                                {"can_right": 500000})
    assert base[0].status == OK and base[0].detail == "up at 0.5 Mbit/s"


def test_can_checks_from_sysfs_and_this_machine(tmp_path):
    (tmp_path / "can0").mkdir()
    (tmp_path / "can0" / "operstate").write_text("up\n")
    links = readiness.read_can_links(["can0"], sys_net=tmp_path, ip_json="")
    assert readiness.can_checks(links)[0].status == WARN        # sysfs has no bitrate
    # This machine has no CAN interface: the real probe says so rather than failing to run.
    real = readiness.can_checks(readiness.read_can_links(["can_left"]))
    assert real[0].status in (FAIL, OK, WARN) and real[0].name == "can_left"


def test_topic_rates_missing_and_skew():
    exp = [readiness.TopicExpectation("/a", "std_msgs/msg/Bool", 5.0),
           readiness.TopicExpectation("/b", "std_msgs/msg/Bool", 5.0),
           readiness.TopicExpectation("/c", "std_msgs/msg/Bool", 5.0),
           readiness.TopicExpectation("/d", "std_msgs/msg/Bool", 5.0)]
    fast, slow, skewed = (readiness.TopicObservation() for _ in range(3))
    for i in range(21):
        fast.add(i * 0.1, 0.01)
        skewed.add(i * 0.1, 5.0)
    for i in range(3):
        slow.add(i * 1.0)
    got = {c.name: c for c in readiness.topic_checks(exp, {"/a": fast, "/b": slow, "/c": skewed}, 1.0)}
    assert got["/a"].status == OK and got["/a"].detail == "10.0 Hz"
    assert got["/b"].status == WARN
    assert got["/c"].status == FAIL and got["/c"].group == "clocks"
    assert got["/d"].status == FAIL and "missing" in got["/d"].detail
    assert readiness.exit_code(list(got.values())) == 1
    assert readiness.exit_code([got["/a"], got["/b"]]) == 0 and readiness.exit_code([got["/b"]], strict=True) == 1


def test_calibration_checks(tmp_path):
    store = CalibrationStore(tmp_path / "cal.json")
    now = time.time()
    points = [BufferPoint(n, mv_from_ideal_ph(buffer_ph(n, 25.0), 25.0), 25.0) for n in (4.01, 7.0)]
    store.save(calibrate("fresh", points, now=now - 600))
    store.save(calibrate("stale", points, now=now - 30 * 3600))
    got = {c.name: c for c in readiness.calibration_checks(["fresh", "stale", "absent"], store, now,
                                                           readiness.Acceptance())}
    assert got["fresh"].status == OK and "slope 100.0 %" in got["fresh"].detail
    assert got["stale"].status == FAIL and "h old" in got["stale"].detail
    assert got["absent"].status == FAIL and "none in" in got["absent"].detail


def test_profiles_load_and_render():
    from rich.console import Console
    robot = readiness.load_profile("robot")
    assert robot.can_interfaces == ("can_left", "can_right") and robot.probes
    assert {t.topic for t in robot.topics} >= {"/lab/ph_meter/reading", "/lab/balance/reading",
                                               "/camera/front/color/image_raw", "/audio/left_gripper/raw"}
    console = Console(record=True, width=120)
    readiness.render([readiness.Check("CAN", "can_left", FAIL, "not present")], console)
    text = console.export_text()     # export clears the record: read it once
    assert "not present" in text and "not ready" in text


def test_diagnostic_statuses_become_checks():
    got = {c.name: c.status for c in readiness.diagnostic_checks({"ph_meter: serial instrument": (2, "port closed"),
                                                                  "right_audio_capture": (1, "1 overflow(s)"),
                                                                  "balance: serial instrument": (0, "reading")})}
    assert got == {"ph_meter: serial instrument": FAIL, "right_audio_capture": WARN,
                   "balance: serial instrument": OK}


def test_clock_checks():
    clock = readiness.TopicObservation()
    assert readiness.clock_checks(True, clock, None)[0].status == FAIL                  # sim time, no /clock
    clock.add(0.0)
    clock.add(0.1)
    assert readiness.clock_checks(True, clock, 0.0)[0].status == FAIL                   # /clock frozen
    assert readiness.clock_checks(True, clock, 2.5)[0].status == OK
    assert readiness.clock_checks(False, None, None, ntp=True)[0].status == OK
    assert readiness.clock_checks(False, None, None, ntp=False)[0].status == WARN
    assert readiness.clock_checks(False, None, None, ntp=None)[0].status == WARN
