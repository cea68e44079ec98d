"""pH electrode calibration: a known slope and offset are recovered within 0.01 pH; out-of-window and
stale calibrations are refused; the store is a user file, not a tracked one."""
import math

import pytest

from agentchemist.hardware.instruments.electrode import (Acceptance, BufferPoint, CalibrationError,
                                                         CalibrationStore, buffer_ph, calibrate, nernst_mv)

T0 = 1_800_000_000.0


def electrode_mv(ph, t_c, slope_pct, offset_mv):
    return offset_mv - slope_pct / 100.0 * nernst_mv(t_c) * (ph - 7.0)


def test_buffer_tables_at_temperature():
    assert nernst_mv(25.0) == pytest.approx(59.16, abs=0.01)
    assert buffer_ph(10.01, 25.0) == 10.01 and buffer_ph(10.01, 20.0) == pytest.approx(10.06)
    assert buffer_ph(7.00, 22.5) == pytest.approx(7.01)
    with pytest.raises(CalibrationError):
        buffer_ph(9.0, 25.0)


@pytest.mark.parametrize("nominals", [(4.01, 7.00, 10.01), (4.01, 7.00), (7.00, 10.01)])
@pytest.mark.parametrize("slope_pct, offset_mv, t_c", [(97.0, 12.0, 20.0), (103.5, -25.0, 31.0)])
def test_recovers_offset_and_slope(nominals, slope_pct, offset_mv, t_c):
    points = [BufferPoint(n, electrode_mv(buffer_ph(n, t_c), t_c, slope_pct, offset_mv), t_c) for n in nominals]
    cal = calibrate("probe_a", points, now=T0)
    assert cal.slope_pct == pytest.approx(slope_pct, abs=1e-6) and cal.offset_mv == pytest.approx(offset_mv, abs=1e-6)
    for true_ph in (2.0, 4.5, 7.3, 9.0, 12.0):
        for t in (15.0, 25.0, 35.0):
            assert abs(cal.ph(electrode_mv(true_ph, t, slope_pct, offset_mv), t) - true_ph) < 0.01


def test_corrects_the_twins_offset_through_ideal_ph():
    # The twin's meter shows the electrode pH + an offset (pH); a 3-point calibration removes it.
    offset_ph, t_c = 0.12, 25.0
    from agentchemist.hardware.instruments.electrode import mv_from_ideal_ph
    points = [BufferPoint(n, mv_from_ideal_ph(buffer_ph(n, t_c) + offset_ph, t_c), t_c) for n in (4.01, 7.0, 10.01)]
    cal = calibrate("twin", points, now=T0)
    assert cal.slope_pct == pytest.approx(100.0, abs=1e-6)
    assert abs(cal.correct(5.0 + offset_ph, t_c) - 5.0) < 0.01


def test_refuses_out_of_window_and_stale():
    t_c = 25.0
    bad = [BufferPoint(n, electrode_mv(buffer_ph(n, t_c), t_c, 88.0, 0.0), t_c) for n in (4.01, 7.0)]
    with pytest.raises(CalibrationError, match="slope 88.0 %"):
        calibrate("p", bad, now=T0)
    off = [BufferPoint(n, electrode_mv(buffer_ph(n, t_c), t_c, 100.0, 45.0), t_c) for n in (4.01, 7.0)]
    with pytest.raises(CalibrationError, match="offset"):
        calibrate("p", off, now=T0)
    with pytest.raises(CalibrationError):
        calibrate("p", bad[:1], now=T0)
    with pytest.raises(CalibrationError):
        calibrate("p", [BufferPoint(4.01, math.nan, 25.0), BufferPoint(7.0, 0.0, 25.0)], now=T0)
    good = calibrate("p", [BufferPoint(n, electrode_mv(buffer_ph(n, t_c), t_c, 99.0, 3.0), t_c)
                           for n in (4.01, 7.0)], now=T0)
    assert good.usable(T0 + 3600, Acceptance()) == ""
    assert "h old" in good.usable(T0 + 25 * 3600, Acceptance())


def test_store_round_trip(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTCHEMIST_CALIBRATION_FILE", str(tmp_path / "cal.json"))
    store = CalibrationStore()
    assert store.path == tmp_path / "cal.json" and store.get("p") is None
    cal = calibrate("p", [BufferPoint(n, electrode_mv(buffer_ph(n, 25.0), 25.0, 99.0, 3.0), 25.0)
                          for n in (4.01, 7.0)], now=T0)
    store.save(cal)
    assert store.get("p") == cal
    (tmp_path / "cal.json").write_text("{not json")
    with pytest.raises(CalibrationError):
        store.get("p")


def test_calibration_removes_the_twin_probes_offset_and_drift_within_0_01_ph():
    """The twin's electrode (offset, drift, noise) in the three buffers at 20 degC, calibrated; a sample
    measured ten minutes later reads within 0.01 pH of its true pH."""
    import numpy as np

    from agentchemist.hardware.instruments.electrode import mv_from_ideal_ph
    from agentchemist.sim.instruments import PhProbe
    from agentchemist.sim.scenario import ProbeSpec
    t_c = 20.0
    probe = PhProbe(ProbeSpec(offset=0.15, drift_per_h=0.02, noise_sd=0.003, temperature_c=t_c), 7.0,
                    np.random.default_rng(5))
    t, points = 0.0, []
    for nominal in (4.01, 7.00, 10.01):
        t += 1.0
        probe.advance(t, 1.0)
        probe.set_bulk(buffer_ph(nominal, t_c))
        t += 60.0                      # settle, then average the meter's readings as a person would
        probe.advance(t, 1.0)
        shown = np.mean([probe.indicated(t) + probe.sample_noise() for _ in range(25)])
        points.append(BufferPoint(nominal, mv_from_ideal_ph(shown, t_c), t_c))
    cal = calibrate("twin_probe", points, now=T0)
    assert abs(cal.slope_pct - 100.0) < 0.5 and cal.offset_mv == pytest.approx(-0.15 * nernst_mv(t_c), abs=1.0)
    probe.advance(t + 1.0, 1.0)
    probe.set_bulk(5.30)
    t += 600.0
    probe.advance(t, 1.0)
    assert abs(cal.correct(probe.indicated(t), t_c) - 5.30) < 0.01
    assert abs(probe.indicated(t) - 5.30) > 0.1         # uncorrected, the offset is plainly there


def test_one_calibration_store_beside_the_pipette_s(tmp_path, monkeypatch):
    """Issue 40: the electrodes' store is the pipette's folder; one made at the former place is read until
    the next calibration writes the one store."""
    from agentchemist.control.calibration import user_calibration_path
    monkeypatch.delenv("AGENTCHEMIST_CALIBRATION_FILE", raising=False)
    monkeypatch.setenv("AGENTCHEMIST_CALIBRATION_DIR", str(tmp_path / "cal"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert CalibrationStore().path == tmp_path / "cal" / "electrodes.json"
    assert user_calibration_path().parent == CalibrationStore().path.parent
    old = calibrate("old", [BufferPoint(n, electrode_mv(buffer_ph(n, 25.0), 25.0, 99.0, 3.0), 25.0)
                            for n in (4.01, 7.0)], now=T0)
    CalibrationStore(tmp_path / "state" / "agentchemist" / "electrodes.json").save(old)
    assert CalibrationStore().get("old") == old   # read from the former place
    new = calibrate("new", [BufferPoint(n, electrode_mv(buffer_ph(n, 25.0), 25.0, 98.0, 1.0), 25.0)
                            for n in (4.01, 7.0)], now=T0)
    CalibrationStore().save(new)
    assert (tmp_path / "cal" / "electrodes.json").is_file()
    assert CalibrationStore(tmp_path / "cal" / "electrodes.json").load() == {"old": old, "new": new}
