"""The dispenser_controller's Calibrate service on the twin: lab_sim + audio_supervisor + dispenser_controller
composed in one process on the sim clock (as agentchemist_ros.tools.graph does), on the default executor.

It is refused while a Dispense goal runs; while it runs, a Dispense goal is refused at once (the executor
is not blocked by the calibration); it fits k and the drop volume against the twin's truth, saves them,
and the node dispenses with them from then on.
"""
import time

import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.action import ActionClient  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.time_source import TimeSource  # noqa: E402

from agentchemist.control.calibration import load_calibration  # noqa: E402
from agentchemist_interfaces.action import Dispense  # noqa: E402
from agentchemist_interfaces.srv import Calibrate  # noqa: E402
from agentchemist_ros.audio_supervisor_node import AudioSupervisorNode  # noqa: E402
from agentchemist_ros.common import topics  # noqa: E402
from agentchemist_ros.dispenser_controller_node import DispenserControllerNode  # noqa: E402
from agentchemist_ros.tools.graph import ensure_init  # noqa: E402
from agentchemist_ros.lab_sim_node import LabSimNode  # noqa: E402
from tests.conftest import REPO  # noqa: E402
from tests.graph.harness import spinning  # noqa: E402

WALL_LIMIT_S = 90.0


def wait(predicate, timeout):
    end = time.monotonic() + timeout
    while not predicate() and time.monotonic() < end:
        time.sleep(0.02)
    return predicate()


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("calibrate")
    # The calibration bench with the pipette already grasped and filled (as after the draw subtask).
    text = (REPO / "config" / "scenarios" / "calibration_naoh.yaml").read_text()
    for old, new in (("  drawn_ml: 0.0\n", "  drawn_ml: 55.0\n  drawn_reagent: naoh\n"),
                     ("  grasped: false\n", "  grasped: true\n")):
        assert old in text
        text = text.replace(old, new)
    scenario = tmp / "calibration_filled.yaml"
    scenario.write_text(text)
    # Start from a deliberately wrong calibration, in a file the test owns (save=True writes it).
    cal_file = tmp / "pipette.yaml"
    cal_file.write_text((REPO / "config" / "calibration" / "pipette.yaml").read_text()
                        .replace("k_ml_per_mm: 0.9999699106539365", "k_ml_per_mm: 1.3"))
    assert load_calibration(cal_file).k_ml_per_mm == 1.3

    ensure_init()
    lab = LabSimNode(parameter_overrides=[Parameter("scenario", value=str(scenario)),
                                          Parameter("real_time_factor", value=50.0)])
    audio = AudioSupervisorNode(parameter_overrides=[Parameter("calibration_file", value=str(cal_file))])
    dispenser = DispenserControllerNode(parameter_overrides=[Parameter("calibration_file", value=str(cal_file))])
    clock_node = Node("sim_clock", parameter_overrides=[Parameter("use_sim_time", value=True)])
    time_source = TimeSource(node=clock_node)
    time_source.ros_time_is_active = True
    for node in (audio, dispenser):
        time_source.attach_clock(node.get_clock())
    client_node = Node("calibrate_test_client")
    calibrate = client_node.create_client(Calibrate, topics.CALIBRATE)
    dispense = ActionClient(client_node, Dispense, topics.DISPENSE)
    started = time.monotonic()
    out = {"lab": lab, "dispenser": dispenser, "cal_file": cal_file}
    with spinning((client_node, lab, audio, dispenser, clock_node)):
        assert calibrate.wait_for_service(timeout_sec=20) and dispense.wait_for_server(timeout_sec=20)
        assert wait(lambda: dispenser.measured_mm is not None, 20), "no joint states reached the dispenser"

        # 1. Calibrate is refused while a Dispense goal runs.
        sent = dispense.send_goal_async(Dispense.Goal(experiment_id="t", subtask_id="d", target_volume_ml=3.0))
        assert wait(sent.done, 20) and sent.result().accepted
        goal = sent.result()
        assert wait(lambda: dispenser.controller is not None, 20)
        refused = calibrate.call_async(Calibrate.Request(pipette_id="p", liquid="naoh 0.1 M", samples=3))
        assert wait(refused.done, 20)
        out["refused_while_dispensing"] = refused.result()
        cancel = goal.cancel_goal_async()
        assert wait(cancel.done, 20)
        dispensed = goal.get_result_async()
        assert wait(dispensed.done, 20)
        out["canceled"] = dispensed.result()

        # 2. Calibrate; a Dispense goal sent meanwhile is refused at once.
        out["k_before"] = dispenser.config.k_ml_per_mm
        truth_before = lab.twin.truth()
        future = calibrate.call_async(Calibrate.Request(pipette_id="rubber_bulb_60ml", liquid="naoh 0.1 M",
                                                        samples=3, save=True))
        assert wait(lambda: dispenser.procedure is not None, 20), "the calibration did not start"
        sim_start = lab.t
        probe = dispense.send_goal_async(Dispense.Goal(experiment_id="t", subtask_id="d2", target_volume_ml=1.0))
        assert wait(probe.done, 20)
        probe_result = probe.result().get_result_async()
        assert wait(probe_result.done, 20)
        out["dispense_during_calibration"] = probe_result.result().result
        out["calibration_running_then"] = not future.done()
        assert wait(future.done, WALL_LIMIT_S - (time.monotonic() - started)), "the calibration did not finish"
        out["response"] = future.result()
        out["sim_s"] = lab.t - sim_start
        truth_after = lab.twin.truth()
        out["truth_drops"] = truth_after["drops_landed"] - truth_before["drops_landed"]
        out["truth_ml"] = truth_after["dispensed_ml"] - truth_before["dispensed_ml"]
        out["k_after"] = dispenser.config.k_ml_per_mm
        out["wall_s"] = time.monotonic() - started
    return out


def test_refused_while_a_dispense_goal_runs(session):
    response = session["refused_while_dispensing"]
    assert not response.success and "dispensing goal is running" in response.message
    assert session["canceled"].result.stop_reason == "canceled"


def test_dispense_refused_while_calibrating_without_blocking(session):
    result = session["dispense_during_calibration"]
    assert session["calibration_running_then"], "the Dispense refusal had to wait for the calibration"
    assert not result.success and result.stop_reason == "rejected"
    assert "calibration is running" in result.message


def test_fits_the_twin_pipette_and_saves(session):
    response = session["response"]
    assert response.success, response.message
    # The twin's bulb expels 1.000 mL per mm; its drops average what landed over the drops heard.
    assert response.k_ml_per_mm == pytest.approx(1.0, rel=0.03)
    mean_drop = session["truth_ml"] / session["truth_drops"]
    assert response.drop_volume_ml == pytest.approx(mean_drop, rel=0.05)
    assert 0.0 <= response.residual_ml < 0.03
    saved = load_calibration(response.saved_path)
    assert response.saved_path == str(session["cal_file"])
    assert saved.k_ml_per_mm == pytest.approx(response.k_ml_per_mm)
    assert saved.drop_volume_ml == pytest.approx(response.drop_volume_ml)
    assert saved.samples == 3 and saved.pipette_id == "rubber_bulb_60ml" and saved.liquid == "naoh 0.1 M"


def test_the_node_dispenses_with_the_new_calibration(session):
    assert session["k_before"] == pytest.approx(1.3)
    assert session["k_after"] == pytest.approx(session["response"].k_ml_per_mm)
