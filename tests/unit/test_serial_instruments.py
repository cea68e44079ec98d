"""The drivers' serial path end to end through a real pseudo-terminal: each dialect, garbage bytes,
partial lines, a pulled cable, a device that stops answering, and readings equal to what the simulated
instrument sent. The simulated instruments (agentchemist.sim.serial_instruments) write their lines with
their own formatting code; the drivers parse them with theirs."""
import threading
import time

import pytest

from agentchemist.hardware.instruments.link import InstrumentLink
from agentchemist.hardware.instruments.meters import BalanceConfig, BalanceLogic, PhMeterConfig, PhMeterLogic
from agentchemist.hardware.instruments.ph_dialects import PH_DIALECTS
from agentchemist.hardware.instruments.port import SerialLine
from agentchemist.sim.serial_instruments import (HannaPhMeter, MassValues, MtSicsBalance, PhValues, SbiBalance,
                                                 TpsPhMeter)

WAIT_S = 20.0       # generous: a loaded 2-core machine; every wait ends on a condition


class Values:
    """A settable value the simulated device reads (thread-safe enough for floats)."""
    def __init__(self, v):
        self.v = v
        self.lock = threading.Lock()

    def __call__(self):
        with self.lock:
            return self.v

    def set(self, v):
        with self.lock:
            self.v = v


class Driver:
    """What the node does each timer tick, without ROS: service the line, keep what was parsed."""
    def __init__(self, link, path, logic=None):
        self.line = SerialLine(link, str(path), reconnect_period_s=0.1)
        self.link, self.logic = link, logic
        self.parsed, self.events = [], []

    def run_until(self, cond, timeout=WAIT_S):
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            now = time.monotonic()
            self.parsed += self.line.service(now)
            self.events += self.link.drain_events()
            if cond():
                return True
            time.sleep(0.01)
        return False

    def readings(self, quantity):
        return [r for p in self.parsed for r in p.readings if r.quantity == quantity]


@pytest.fixture
def ph_cfg(tmp_path):
    return PhMeterConfig(calibration_file=str(tmp_path / "cal.json"), require_calibration=False)


@pytest.mark.parametrize("dialect, device_cls", [("tps_continuous", TpsPhMeter), ("hanna_ras", HannaPhMeter)])
def test_ph_dialect_end_to_end_with_faults(tmp_path, ph_cfg, dialect, device_cls):
    values = Values(PhValues(6.83, 24.6))
    dev = device_cls(tmp_path / "ph", values, **({"period_s": 0.05} if dialect == "tps_continuous" else {}))
    link = InstrumentLink(PH_DIALECTS[dialect](), name="ph_meter", deadline_s=1.0, poll_period_s=0.05,
                          answer_timeout_s=0.3)
    drv = Driver(link, tmp_path / "ph")
    logic = PhMeterLogic(ph_cfg)
    try:
        assert drv.run_until(lambda: len(drv.readings("pH")) >= 3)
        ph = drv.readings("pH")[-1]
        assert (ph.value, ph.self_check_ok) == (6.83, True)
        assert drv.readings("temperature")[-1].value == pytest.approx(24.6)
        out = logic.process(drv.parsed[-1], now=0.0, wall_now=0.0)
        assert out[0].value == pytest.approx(6.83, abs=1e-9) and out[0].self_check_ok   # no calibration stored
        # Garbage bytes and a split line: readings go on, the damaged frame is counted, nothing raises.
        n = len(drv.readings("pH"))
        dev.inject(b"\xff\xfe\x00garbage\x02\x03\r\n")
        dev.split_next()
        values.set(PhValues(7.41, 25.0))
        assert drv.run_until(lambda: drv.readings("pH")[-1].value == 7.41 and len(drv.readings("pH")) > n + 2)
        assert link.stats.malformed >= 1
        assert all(r.value in (6.83, 7.41) for r in drv.readings("pH"))
        # Out-of-range value from the meter: flagged, published, not dropped.
        values.set(PhValues(17.0, 25.0))
        assert drv.run_until(lambda: drv.readings("pH")[-1].value == 17.0)
        assert not drv.readings("pH")[-1].self_check_ok
        values.set(PhValues(7.41, 25.0))
        # Pulled cable: one disconnect event, a sensor_timeout after the deadline, then a reconnect.
        dev.pull_cable()
        assert drv.run_until(lambda: any(e.kind == "sensor_timeout" and not e.resolved for e in drv.events))
        assert [e.kind for e in drv.events if not e.resolved].count("instrument_disconnected") == 1
        dev.plug_in()
        assert drv.run_until(lambda: any(e.kind == "sensor_timeout" and e.resolved for e in drv.events))
        assert any(e.kind == "instrument_disconnected" and e.resolved for e in drv.events)
        assert drv.readings("pH")[-1].value == 7.41
        # A device that stops answering while the line stays up: sensor_timeout, no disconnect.
        dev.mute()
        before = len([e for e in drv.events if e.kind == "sensor_timeout"])
        assert drv.run_until(lambda: len([e for e in drv.events if e.kind == "sensor_timeout"]) > before)
        assert link.connected
        dev.mute(False)
        assert drv.run_until(lambda: drv.events[-1].kind == "sensor_timeout" and drv.events[-1].resolved)
    finally:
        drv.line.close()
        dev.close()


@pytest.mark.parametrize("dialect", ["mt_sics", "sartorius_sbi"])
def test_balance_dialect_end_to_end(tmp_path, dialect):
    state = {"load": 25.37, "tare": 0.0, "stable": True}

    def source():
        return MassValues(round(state["load"] - state["tare"], 2), state["stable"])

    def tare():
        state["tare"] = state["load"]
        return state["tare"]

    cfg = BalanceConfig(dialect=dialect, capacity_g=220.0)
    logic = BalanceLogic(cfg)
    if dialect == "mt_sics":
        dev = MtSicsBalance(tmp_path / "bal", source, tare=tare, zero=tare)
    else:
        dev = SbiBalance(tmp_path / "bal", source, tare=tare, period_s=0.05)
    link = InstrumentLink(logic.dialect, name="balance", deadline_s=1.0, poll_period_s=0.05, answer_timeout_s=0.3)
    drv = Driver(link, tmp_path / "bal")
    results = []

    def masses():
        out = []
        for p in drv.parsed:
            m, result = logic.process(p)
            out += m
            if result:
                results.append(result)
        drv.parsed.clear()
        return out

    got = []
    try:
        assert drv.run_until(lambda: bool(got.extend(masses())) or len(got) >= 3)
        assert (got[-1].value, got[-1].stable, got[-1].self_check_ok) == (25.37, True, True)
        state["stable"] = False
        assert drv.run_until(lambda: bool(got.extend(masses())) or got[-1].stable is False)
        assert got[-1].value == 25.37
        state["stable"] = True
        assert drv.line.write(logic.command("tare"), time.monotonic())
        if dialect == "mt_sics":
            assert drv.run_until(lambda: bool(got.extend(masses())) or bool(results))
            assert results == [(True, "tared")]
        assert drv.run_until(lambda: bool(got.extend(masses())) or got[-1].value == 0.0)
        state["load"] = -5.0 + state["tare"]        # something left the pan: negative net mass
        assert drv.run_until(lambda: bool(got.extend(masses())) or got[-1].value == -5.0)
        assert not got[-1].self_check_ok and "negative" in got[-1].problem
        dev.pull_cable()
        assert drv.run_until(lambda: any(e.kind == "sensor_timeout" for e in drv.events))
        dev.plug_in()
        assert drv.run_until(lambda: any(e.kind == "instrument_disconnected" and e.resolved for e in drv.events))
        state["load"] = state["tare"] + 1.5
        assert drv.run_until(lambda: bool(got.extend(masses())) or got[-1].value == 1.5)
    finally:
        drv.line.close()
        dev.close()


def test_mt_sics_busy_and_unknown_command(tmp_path):
    dev = MtSicsBalance(tmp_path / "bal", lambda: MassValues(1.0, False))
    logic = BalanceLogic(BalanceConfig())
    link = InstrumentLink(logic.dialect, name="balance", poll_period_s=0.05)
    drv = Driver(link, tmp_path / "bal")
    results = []

    def collect():
        for p in drv.parsed:
            _, r = logic.process(p)
            if r:
                results.append(r)
        drv.parsed.clear()
        return bool(results)
    try:
        assert drv.run_until(lambda: link.connected)
        drv.line.write(logic.command("tare"), time.monotonic())
        assert drv.run_until(collect)
        assert results[-1][0] is False and "not executable" in results[-1][1]
        results.clear()
        drv.line.write(b"XYZ\r\n", time.monotonic())
        logic.pending = "zero"
        assert drv.run_until(collect)
        assert results[-1][0] is False and "ES" in results[-1][1]
    finally:
        drv.line.close()
        dev.close()


def test_buffer_calibration_at_the_meter_over_the_serial_line(tmp_path):
    """The procedure `agentchemist ph-calibrate --port` runs: a Hanna meter on a pty whose electrode (97 %,
    +12 mV) sits in each buffer in turn at 21 degC; the stable mV readings give the electrode back."""
    from agentchemist.hardware.instruments.electrode import buffer_ph, calibrate, nernst_mv
    from agentchemist.hardware.instruments.procedure import measure_buffers, read_stable
    t_c, slope, offset = 21.0, 97.0, 12.0
    state = {"ph": 7.0}

    def mv():
        return offset - slope / 100.0 * nernst_mv(t_c) * (state["ph"] - 7.0)

    dev = HannaPhMeter(tmp_path / "ph", lambda: PhValues(state["ph"], t_c, mv=round(mv(), 1)))
    link = InstrumentLink(PH_DIALECTS["hanna_ras"](), name="ph-calibrate", poll_period_s=0.05)
    line = SerialLine(link, str(tmp_path / "ph"), reconnect_period_s=0.1)
    try:
        points = measure_buffers(line, [4.01, 7.00, 10.01], lambda b: state.update(ph=buffer_ph(b, t_c)),
                                 time.monotonic, time.sleep, window_s=0.5, band_mv=0.5, timeout_s=WAIT_S)
        cal = calibrate("probe", points, now=0.0)
        assert abs(cal.slope_pct - slope) < 0.2 and abs(cal.offset_mv - offset) < 0.2
        assert abs(cal.ph(offset - slope / 100 * nernst_mv(t_c) * (5.5 - 7.0), t_c) - 5.5) < 0.01
        # An electrode that keeps drifting is refused, not calibrated on.
        start = time.monotonic()
        dev.source = lambda: PhValues(7.0, t_c, mv=round(20.0 * (time.monotonic() - start), 1))
        with pytest.raises(Exception, match="no stable reading"):
            read_stable(line, time.monotonic, time.sleep, window_s=0.5, band_mv=0.5, timeout_s=1.5)
    finally:
        line.close()
        dev.close()


def test_open_line_speaks_the_dialect_with_the_configs_port_and_timing():
    config = BalanceConfig(port="/dev/agentchemist-no-such-port", baud=19200, deadline_s=2.0, poll_period_s=0.3,
                           answer_timeout_s=0.4, reconnect_period_s=0.7)
    dialect = BalanceLogic(config).dialect
    line = config.open_line(dialect, "balance")
    assert (line.port_name, line.baud, line.reconnect_period_s) == ("/dev/agentchemist-no-such-port", 19200, 0.7)
    link = line.link
    assert link.dialect is dialect and link.name == "balance"
    assert (link.deadline_s, link.poll_period_s, link.answer_timeout_s) == (2.0, 0.3, 0.4)
    assert line.port is None  # opened by the first service, not here
