"""The twin's pH meter: the electrode's buffer calibration before the run, and every reading corrected with it.

A real meter (agentchemist.hardware.instruments.meters.PhMeterLogic, the ph_meter node) corrects each pH it
computed with the ideal electrode by the probe's calibration from the user's store, and flags readings
when that calibration is missing, stale or out of its window. The twin's meter does the same with the same
code (`ElectrodeCalibration.usable` / `correct`), so that the twin's titrations carry the electrode's
offset, slope and drift exactly as far as a calibrated meter on the robot would: not at all at the
calibration's moment, and the drift since then.

Where the calibration comes from (lab_sim's `ph_calibration` parameter):

* ``scenario``: the scenario's `electrode_calibration` (fresh by default, as a lab calibrates daily): the
  twin's probe is put in each buffer (4.01 / 7.00 / 10.01 at the probe's temperature) and read
  `BUFFER_READINGS` times (10 s at 5 readings/s, the stable window of `procedure.read_stable`), with its
  offset, slope, drift (at t = 0, before the run) and noise; the mean of each is the buffer's point, and
  `electrode.calibrate` fits slope and offset. A stale one is the same fit dated `age_h` ago; missing is none.
* ``store``: the user's calibration store, as the ph_meter node reads it (probe id: the scenario's probe).
* ``none``: readings uncorrected and never flagged (the twin before electrode calibration existed).

`status()` is what the meter publishes for the supervisor (latched): probe, whether readings are corrected,
why not, and the calibration's slope, offset and date.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from agentchemist.hardware.instruments.electrode import (Acceptance, BufferPoint, CalibrationError,
                                                         CalibrationStore, ElectrodeCalibration, buffer_ph,
                                                         calibrate, mv_from_ideal_ph)
from agentchemist.sim.instruments import PhProbe
from agentchemist.sim.scenario import Scenario
from agentchemist.sim.types import Reading

MODES = ("scenario", "store", "none")
BUFFER_READINGS = 50     #: readings averaged per buffer (10 s at 5 Hz)
CALIBRATION_STREAM = 0xCA1   #: the calibration's own noise stream: the run's readings draw the same noise


def buffer_points(scenario: Scenario, buffers=None, readings: int = BUFFER_READINGS) -> list[BufferPoint]:
    """The twin's electrode in each buffer: the mean of `readings` noisy meter readings, as mV."""
    spec = scenario.probe
    rng = np.random.default_rng([scenario.seed, CALIBRATION_STREAM])
    probe = PhProbe(spec, 7.0, rng)
    t_c = spec.temperature_c
    points = []
    for nominal in buffers or scenario.electrode_calibration.buffers:
        true_ph = buffer_ph(nominal, t_c)
        shown = [round(probe.in_buffer(true_ph, 0.0) + probe.sample_noise(), 3) for _ in range(readings)]
        points.append(BufferPoint(nominal, mv_from_ideal_ph(float(np.mean(shown)), t_c), t_c))
    return points


def scenario_calibration(scenario: Scenario, wall_now: float) -> ElectrodeCalibration | None:
    """The scenario's electrode calibration (None when it has none); CalibrationError when out of window."""
    spec = scenario.electrode_calibration
    if spec.state == "missing":
        return None
    age_s = spec.age_h * 3600.0 if spec.state == "stale" else 0.0
    return calibrate(scenario.probe.id, buffer_points(scenario), wall_now - age_s)


class TwinPhMeter:
    def __init__(self, scenario: Scenario, mode: str, wall_now: float, acceptance: Acceptance = Acceptance(),
                 store: CalibrationStore | None = None) -> None:
        if mode not in MODES:
            raise ValueError(f"ph_calibration must be one of {MODES}, got {mode!r}")
        self.mode = mode
        self.probe = scenario.probe.id
        self.acceptance = acceptance
        self.calibration: ElectrodeCalibration | None = None
        self.load_problem = ""
        try:
            if mode == "scenario":
                self.calibration = scenario_calibration(scenario, wall_now)
            elif mode == "store":
                self.calibration = (store or CalibrationStore()).get(self.probe)
        except CalibrationError as exc:
            self.load_problem = str(exc)
        if mode != "none" and self.calibration is None and not self.load_problem:
            self.load_problem = f"no calibration for probe {self.probe}"

    def problem(self, wall_now: float) -> str:
        """'' when readings are corrected at `wall_now`, else why not."""
        if self.mode == "none":
            return ""
        cal = self.calibration
        return self.load_problem or (cal.usable(wall_now, self.acceptance) if cal else "")

    def read(self, reading: Reading | None, wall_now: float) -> Reading | None:
        """The meter's pH: corrected with the calibration, or flagged (self_check_ok false) without a usable one."""
        if reading is None or self.mode == "none":
            return reading
        if self.problem(wall_now):
            return dataclasses.replace(reading, self_check_ok=False)
        value = self.calibration.correct(reading.value, reading.temperature_c)
        return dataclasses.replace(reading, value=round(value, 3))

    def status(self, wall_now: float) -> dict[str, Any]:
        cal, problem = self.calibration, self.problem(wall_now)
        out: dict[str, Any] = {"probe": self.probe, "source": self.mode, "required": self.mode != "none",
                               "corrected": self.mode != "none" and not problem, "problem": problem}
        if cal is not None:
            out.update(slope_pct=round(cal.slope_pct, 2), offset_mv=round(cal.offset_mv, 2), date=cal.date,
                       age_h=round(cal.age_h(wall_now), 3))
        return out
