"""What the ph_meter node publishes for a parsed frame: the calibration applied (from mV or from the
meter's own pH), refused when stale or missing, and the drift stability flag."""
import math

import pytest

from agentchemist.hardware.instruments.electrode import (BufferPoint, CalibrationStore, buffer_ph, calibrate,
                                                         nernst_mv)
from agentchemist.hardware.instruments.meters import PhMeterConfig, PhMeterLogic
from agentchemist.hardware.instruments.ph_dialects import HannaRas, TpsContinuous, hanna_checksum

T0 = 1_800_000_000.0


def electrode_mv(ph, t_c, slope_pct=97.0, offset_mv=10.0):
    return offset_mv - slope_pct / 100.0 * nernst_mv(t_c) * (ph - 7.0)


@pytest.fixture
def store(tmp_path):
    s = CalibrationStore(tmp_path / "cal.json")
    s.save(calibrate("p", [BufferPoint(n, electrode_mv(buffer_ph(n, 22.0), 22.0), 22.0) for n in (4.01, 7.0, 10.01)],
                     now=T0))
    return s


def ras(ph_shown, mv, t_c):
    body = f"0110RR{ph_shown:+7.2f}{mv:+7.1f}{t_c:+8.2f}"
    return HannaRas().parse(body + hanna_checksum(body))


def test_hanna_mv_is_converted_with_the_calibration(store, tmp_path):
    logic = PhMeterLogic(PhMeterConfig(probe_id="p", calibration_file=str(store.path)), store)
    ph, temp = logic.process(ras(7.0, electrode_mv(5.25, 30.0), 30.0), now=0.0, wall_now=T0 + 600)
    assert ph.self_check_ok and abs(ph.value - 5.25) < 0.01 and temp.value == 30.0


def test_stale_or_missing_calibration_flags_the_reading(store, tmp_path):
    logic = PhMeterLogic(PhMeterConfig(probe_id="p", calibration_file=str(store.path)), store)
    (ph, _) = logic.process(TpsContinuous().parse("  6.40pH    25.0oC"), now=0.0, wall_now=T0 + 30 * 3600)
    assert not ph.self_check_ok and "h old" in ph.problem and ph.value == 6.40
    other = PhMeterLogic(PhMeterConfig(probe_id="unknown", calibration_file=str(store.path)), store)
    (ph, _) = other.process(TpsContinuous().parse("  6.40pH    25.0oC"), now=0.0, wall_now=T0)
    assert not ph.self_check_ok and "no calibration for probe unknown" in ph.problem
    relaxed = PhMeterLogic(PhMeterConfig(probe_id="unknown", require_calibration=False,
                                         calibration_file=str(store.path)), store)
    (ph, _) = relaxed.process(TpsContinuous().parse("  6.40pH    25.0oC"), now=0.0, wall_now=T0)
    assert ph.self_check_ok and ph.value == 6.40


def test_mv_without_calibration_gives_no_ph_value(tmp_path):
    logic = PhMeterLogic(PhMeterConfig(probe_id="p", calibration_file=str(tmp_path / "none.json")))
    body = "0310RR  +0.00 -100.0  +25.00"        # mode 03: mV range, no pH
    (ph, _) = logic.process(HannaRas().parse(body + hanna_checksum(body)), now=0.0, wall_now=T0)
    assert math.isnan(ph.value) and not ph.self_check_ok and "convert mV" in ph.problem


def test_drift_stability(tmp_path):
    logic = PhMeterLogic(PhMeterConfig(calibration_file=str(tmp_path / "none.json"), require_calibration=False,
                                       stability_window_s=2.0, stability_band_ph=0.02))
    flags = []
    for i in range(30):
        value = 7.0 + (0.05 * i if i < 10 else 0.5 + 0.005 * (i % 2))    # drifting, then settled
        (ph, _) = logic.process(TpsContinuous().parse(f"{value:6.2f}pH    25.0oC"), now=i * 0.2, wall_now=T0)
        flags.append(ph.stable)
    assert not any(flags[:10]) and not flags[10] and all(flags[-5:])
