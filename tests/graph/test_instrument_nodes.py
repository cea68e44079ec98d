"""The ph_meter and balance nodes (real rclpy) reading simulated instruments on a pseudo-terminal: the
published readings equal what the device sent, the calibration from the store is applied, a bad value
is flagged (self_check_ok false) not dropped, tare goes through the balance's answer, and a pulled cable
gives sensor_timeout and a reconnect. Waits are for conditions with generous deadlines."""
import time

import pytest

rclpy = pytest.importorskip("rclpy")

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from std_msgs.msg import Bool  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402

from agentchemist.hardware.instruments.electrode import (BufferPoint, CalibrationStore, buffer_ph,  # noqa: E402
                                                         calibrate, mv_from_ideal_ph)
from agentchemist.sim.serial_instruments import MassValues, MtSicsBalance, PhValues, TpsPhMeter  # noqa: E402
from agentchemist_interfaces.msg import Anomaly, ChemicalReading  # noqa: E402
from agentchemist_ros.balance_node import BalanceNode  # noqa: E402
from agentchemist_ros.common import topics  # noqa: E402
from agentchemist_ros.common.qos import READINGS, RELIABLE  # noqa: E402
from agentchemist_ros.ph_meter_node import PhMeterNode  # noqa: E402
from tests.graph.harness import spinning  # noqa: E402


def wait_for(condition, what, timeout=30.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if condition():
            return
        time.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


def test_ph_meter_node_calibrated_readings_flags_and_reconnect(tmp_path):
    # The meter shows the electrode's pH + 0.12 (an offset like the twin probe's); a 3-point calibration
    # made an hour ago is in the store and must remove it.
    offset, t_c = 0.12, 24.0
    store = CalibrationStore(tmp_path / "cal.json")
    store.save(calibrate("probe_x", [BufferPoint(n, mv_from_ideal_ph(buffer_ph(n, t_c) + offset, t_c), t_c)
                                     for n in (4.01, 7.00, 10.01)], now=time.time() - 3600))
    state = {"ph": 5.00 + offset}
    dev = TpsPhMeter(tmp_path / "ph", lambda: PhValues(state["ph"], t_c), period_s=0.05)
    rclpy.init()
    node = PhMeterNode(parameter_overrides=[
        Parameter("port", value=str(tmp_path / "ph")), Parameter("probe_id", value="probe_x"),
        Parameter("calibration_file", value=str(tmp_path / "cal.json")), Parameter("deadline_s", value=1.0),
        Parameter("reconnect_period_s", value=0.1), Parameter("stability_window_s", value=1.0)])
    probe = Node("ph_probe_listener")
    readings, stable, anomalies, diagnostics = [], [], [], []
    probe.create_subscription(ChemicalReading, topics.PH_READING, readings.append, READINGS)
    probe.create_subscription(Bool, topics.PH_STABLE, stable.append, READINGS)
    probe.create_subscription(DiagnosticArray, "/diagnostics", diagnostics.append, 10)
    probe.create_subscription(Anomaly, topics.ANOMALIES, anomalies.append, RELIABLE)
    try:
        with spinning([node, probe]):
            ph = lambda: [r for r in readings if r.quantity == "pH"]  # noqa: E731
            wait_for(lambda: len(ph()) >= 3, "pH readings")
            r = ph()[-1]
            assert r.sensor == "ph_meter" and r.unit == "pH" and r.self_check_ok
            assert abs(r.value - 5.00) < 0.01                      # the offset is calibrated out
            temps = [x for x in readings if x.quantity == "temperature"]
            assert temps and temps[-1].value == pytest.approx(t_c) and temps[-1].unit == "degC"
            wait_for(lambda: stable and stable[-1].data, "the stability flag once the window is steady")
            wait_for(lambda: any(s.level == DiagnosticStatus.OK and s.name.startswith("ph_meter")
                                 for d in diagnostics for s in d.status), "an OK status on /diagnostics")
            # pH 17 from the meter: published, flagged, reported once
            state["ph"] = 17.0
            wait_for(lambda: ph()[-1].value > 16 and not ph()[-1].self_check_ok, "a flagged pH 17")
            wait_for(lambda: any(a.kind == "reading_flagged" for a in anomalies), "the flag on the anomaly topic")
            state["ph"] = 5.00 + offset
            dev.pull_cable()
            wait_for(lambda: any(a.kind == "sensor_timeout" and not a.resolved for a in anomalies), "sensor_timeout")
            wait_for(lambda: any(s.level == DiagnosticStatus.ERROR for d in diagnostics for s in d.status),
                     "an ERROR status while the cable is out")
            dev.plug_in()
            wait_for(lambda: any(a.kind == "sensor_timeout" and a.resolved for a in anomalies), "readings again")
            assert abs(ph()[-1].value - 5.00) < 0.01 and ph()[-1].self_check_ok
    finally:
        dev.close()


def test_ph_meter_node_refuses_a_stale_calibration(tmp_path):
    store = CalibrationStore(tmp_path / "cal.json")
    store.save(calibrate("probe_x", [BufferPoint(n, mv_from_ideal_ph(buffer_ph(n, 25.0), 25.0), 25.0)
                                     for n in (4.01, 7.00)], now=time.time() - 48 * 3600))
    dev = TpsPhMeter(tmp_path / "ph", lambda: PhValues(6.5, 25.0), period_s=0.05)
    rclpy.init()
    node = PhMeterNode(parameter_overrides=[
        Parameter("port", value=str(tmp_path / "ph")), Parameter("probe_id", value="probe_x"),
        Parameter("calibration_file", value=str(tmp_path / "cal.json"))])
    probe = Node("ph_probe_listener")
    readings, anomalies = [], []
    probe.create_subscription(ChemicalReading, topics.PH_READING, readings.append, READINGS)
    probe.create_subscription(Anomaly, topics.ANOMALIES, anomalies.append, RELIABLE)
    try:
        with spinning([node, probe]):
            wait_for(lambda: any(r.quantity == "pH" for r in readings), "a pH reading")
            r = [r for r in readings if r.quantity == "pH"][-1]
            assert not r.self_check_ok and r.value == 6.5
            wait_for(lambda: any("h old" in a.description for a in anomalies), "the stale calibration reported")
    finally:
        dev.close()


def test_balance_node_mass_stability_and_tare(tmp_path):
    state = {"load": 42.17, "tare": 0.0, "stable": True}

    def tare():
        state["tare"] = state["load"]
        return state["tare"]

    dev = MtSicsBalance(tmp_path / "bal", lambda: MassValues(round(state["load"] - state["tare"], 2),
                                                             state["stable"]), tare=tare, zero=tare)
    rclpy.init()
    node = BalanceNode(parameter_overrides=[Parameter("port", value=str(tmp_path / "bal")),
                                            Parameter("poll_period_s", value=0.05)])
    probe = Node("balance_listener")
    readings, stable = [], []
    probe.create_subscription(ChemicalReading, topics.BALANCE_READING, readings.append, READINGS)
    probe.create_subscription(Bool, topics.BALANCE_STABLE, stable.append, READINGS)
    client = probe.create_client(Trigger, topics.BALANCE_TARE)
    try:
        with spinning([node, probe]):
            wait_for(lambda: len(readings) >= 3, "mass readings")
            assert (readings[-1].value, readings[-1].unit, readings[-1].self_check_ok) == (42.17, "g", True)
            assert stable[-1].data
            state["stable"] = False
            wait_for(lambda: stable and not stable[-1].data, "the balance's dynamic flag (S D)")
            future = client.call_async(Trigger.Request())
            wait_for(future.done, "the refused tare")
            assert not future.result().success and "not executable" in future.result().message
            state["stable"] = True
            wait_for(lambda: stable[-1].data, "stable again")
            future = client.call_async(Trigger.Request())
            wait_for(future.done, "the tare")
            assert future.result().success, future.result().message
            wait_for(lambda: readings[-1].value == 0.0, "zero after tare")
    finally:
        dev.close()


@pytest.mark.parametrize("scenario", ["hcl_naoh", "nacl_weighing"])
def test_twin_with_instruments_serial_feeds_the_drivers(tmp_path, scenario):
    """lab_sim instruments:=serial: the twin's pH (titration bench) and mass (weighing bench) reach
    /lab/*/reading only through the ptys and the driver nodes, each published value is one the simulated
    instrument sent, and a tare through the balance driver tares the twin's balance."""
    from agentchemist_ros.lab_sim_node import LabSimNode
    from tests.conftest import REPO
    folder = tmp_path / "instruments"
    rclpy.init()
    sim = LabSimNode(parameter_overrides=[
        Parameter("scenario", value=str(REPO / "config" / "scenarios" / f"{scenario}.yaml")),
        Parameter("real_time_factor", value=2.0), Parameter("instruments", value="serial"),
        Parameter("instrument_dir", value=str(folder))])
    ph_node = PhMeterNode(parameter_overrides=[Parameter("port", value=str(folder / "ph_meter")),
                                               Parameter("require_calibration", value=False)])
    bal_node = BalanceNode(parameter_overrides=[Parameter("port", value=str(folder / "balance")),
                                                Parameter("poll_period_s", value=0.05)])
    probe = Node("twin_serial_listener")
    ph, mass = [], []
    probe.create_subscription(ChemicalReading, topics.PH_READING, ph.append, READINGS)
    probe.create_subscription(ChemicalReading, topics.BALANCE_READING, mass.append, READINGS)
    client = probe.create_client(Trigger, topics.BALANCE_TARE)
    with spinning([sim, ph_node, bal_node, probe], threads=4):
        if scenario == "hcl_naoh":
            wait_for(lambda: len([m for m in ph if m.quantity == "pH"]) >= 5, "pH through the meter driver")
            assert {m.sensor for m in ph} == {"ph_meter"}
            sent_ph = {float(line[:6]) for line in map(bytes.decode, list(sim.serial.ph_device.sent_lines))}
            assert {m.value for m in ph if m.quantity == "pH"} <= sent_ph
            assert 1.0 < ph[-1].value < 2.0 if ph[-1].quantity == "pH" else True     # 0.05 M HCl
            return
        wait_for(lambda: len(mass) >= 5, "mass through the balance driver")
        assert {m.sensor for m in mass} == {"balance"}
        sent_mass = {float(line.split()[2]) for line in map(bytes.decode, list(sim.serial.balance_device.sent_lines))
                     if line.startswith("S ")}
        assert {m.value for m in mass} <= sent_mass and mass[-1].value > 10.0       # a beaker of water
        future = client.call_async(Trigger.Request())
        wait_for(future.done, "the tare answer")
        assert future.result().success, future.result().message
        wait_for(lambda: sim.twin.balance.tare_g > 10.0, "the twin's balance tared on the beaker")
        wait_for(lambda: abs(mass[-1].value) < 0.05, "zero on the display after the tare")


@pytest.mark.slow  # reason: a whole weighing experiment at a low real-time factor (the instruments run on wall time)
def test_weighing_experiment_through_the_serial_instruments(tmp_path):
    """The NaCl weighing with instruments:=serial: every mass the supervisor sees and the tare it asks for go
    through the simulated MT-SICS balance on a pty and the balance driver; the run completes with the
    twin's weighed mass."""
    from agentchemist_interfaces.msg import Anomaly as AnomalyMsg
    from tests.conftest import REPO
    from tests.graph.harness import run_experiment

    class Probe(Node):
        def __init__(self):
            super().__init__("serial_weighing_probe")
            self.anomalies, self.mass = [], []
            self.create_subscription(AnomalyMsg, topics.ANOMALIES, self.anomalies.append, RELIABLE)
            self.create_subscription(ChemicalReading, topics.BALANCE_READING, self.mass.append, READINGS)

    run = run_experiment(REPO / "config" / "scenarios" / "nacl_weighing.yaml", tmp_path / "runs", probe=Probe,
                         wall_limit_s=400.0,
                         overrides={"lab_sim": {"camera_rate_hz": 1.0, "instruments": "serial",
                                                "instrument_dir": str(tmp_path / "instruments"),
                                                "real_time_factor": 3.0}})
    problems = [f"{a.source}: {a.kind}: {a.description}" for a in run.probe.anomalies if a.severity != "info"]
    assert run.result.success and run.result.outcome == "completed", f"{run.result.message}; {problems}"
    assert run.probe.mass and {m.sensor for m in run.probe.mass} == {"balance"}
    assert abs(run.truth["weighing"]["poured_g"] - 2.5) <= 0.1
