"""What the pH meter and balance nodes do with parsed frames: the node-independent part of the drivers.

`PhMeterLogic` turns a frame's readings into the published pH and temperature: the electrode
calibration from the user store applied to every pH (or the reading flagged when the calibration is
missing, stale or out of its window and calibration is required), and a stability flag judged from the
drift when the dialect carries none (pH spread within `stability_band_ph` over `stability_window_s`, the
kind of criterion meters use for their own "stable" sign). `BalanceLogic` keeps the balance's own
stability flag and turns tare/zero answers into results.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, replace

from agentchemist.hardware.instruments.balance_dialects import BALANCE_DIALECTS
from agentchemist.hardware.instruments.electrode import (Acceptance, CalibrationError, CalibrationStore,
                                                         ElectrodeCalibration)
from agentchemist.hardware.instruments.link import InstrumentLink
from agentchemist.hardware.instruments.ph_dialects import PH_DIALECTS
from agentchemist.hardware.instruments.port import SerialLine
from agentchemist.hardware.instruments.readings import Parsed, Reading
from agentchemist.params import nested, param


@dataclass(frozen=True)
class SerialConfig:
    port: str = param("/dev/ttyUSB0", description="Serial device (a /dev/serial/by-id/... link on the robot)")
    baud: int = param(9600, low=300, high=115200, description="Baud rate (8N1)")
    deadline_s: float = param(3.0, unit="s", low=0.1, high=600.0,
                              description="A reading older than this raises sensor_timeout")
    poll_period_s: float = param(0.5, unit="s", low=0.05, high=60.0,
                                 description="Request period for request/response dialects")
    answer_timeout_s: float = param(1.0, unit="s", low=0.05, high=30.0,
                                    description="A request unanswered this long is sent again")
    reconnect_period_s: float = param(1.0, unit="s", low=0.05, high=60.0,
                                      description="Time between attempts to reopen a lost port")

    def open_line(self, dialect, name: str) -> SerialLine:
        """The instrument's serial line: ``dialect`` spoken on ``port`` with this config's timing (the
        port itself is opened by the line's first service)."""
        link = InstrumentLink(dialect, name=name, deadline_s=self.deadline_s, poll_period_s=self.poll_period_s,
                              answer_timeout_s=self.answer_timeout_s)
        return SerialLine(link, self.port, baud=self.baud, reconnect_period_s=self.reconnect_period_s)


@dataclass(frozen=True)
class PhMeterConfig(SerialConfig):
    dialect: str = param("tps_continuous", choices=tuple(PH_DIALECTS),
                         description="Meter protocol: tps_continuous (continuous lines) or hanna_ras "
                                     "(request/response)")
    probe_id: str = param("ph_probe_1", description="Electrode id: the key of its calibration in the store")
    require_calibration: bool = param(True, description="Flag readings (self_check_ok false) when the probe "
                                                        "has no valid, fresh calibration")
    calibration_file: str = param("", description="Calibration store; '' = $AGENTCHEMIST_CALIBRATION_FILE "
                                                  "or electrodes.json in the user's calibration store")
    acceptance: Acceptance = nested(Acceptance)
    stability_window_s: float = param(5.0, unit="s", low=0.5, high=120.0,
                                      description="Window of the drift stability judgement")
    stability_band_ph: float = param(0.02, unit="pH", low=0.001, high=1.0,
                                     description="Largest pH spread over the window that is stable")


@dataclass(frozen=True)
class BalanceConfig(SerialConfig):
    port: str = param("/dev/ttyUSB1", description="Serial device (a /dev/serial/by-id/... link on the robot)")
    poll_period_s: float = param(0.2, unit="s", low=0.05, high=60.0,
                                 description="Request period for request/response dialects (SI)")
    dialect: str = param("mt_sics", choices=tuple(BALANCE_DIALECTS),
                         description="Balance protocol: mt_sics (request/response) or sartorius_sbi (continuous)")
    capacity_g: float = param(220.0, unit="g", low=0.1, high=100000.0, description="Balance capacity")
    negative_tolerance_g: float = param(0.5, unit="g", low=0.0, high=1000.0,
                                        description="A net mass below minus this is flagged")


class PhMeterLogic:
    def __init__(self, config: PhMeterConfig, store: CalibrationStore | None = None) -> None:
        self.config = config
        self.store = store or CalibrationStore(config.calibration_file or None)
        self.calibration: ElectrodeCalibration | None = None
        self.calibration_problem = ""
        self._window: deque = deque()
        self.reload()

    def reload(self) -> None:
        try:
            self.calibration = self.store.get(self.config.probe_id)
            self.calibration_problem = "" if self.calibration else \
                f"no calibration for probe {self.config.probe_id} in {self.store.path}"
        except CalibrationError as exc:
            self.calibration, self.calibration_problem = None, str(exc)

    def status(self, wall_now: float) -> dict:
        """The calibration's state as the supervisor reads it (agentchemist.fsm.calibration)."""
        cal = self.calibration
        problem = self.calibration_problem or (cal.usable(wall_now, self.config.acceptance) if cal else "")
        out = {"probe": self.config.probe_id, "source": "store", "required": self.config.require_calibration,
               "corrected": not problem, "problem": problem}
        if cal is not None:
            out.update(slope_pct=round(cal.slope_pct, 2), offset_mv=round(cal.offset_mv, 2), date=cal.date,
                       age_h=round(cal.age_h(wall_now), 3))
        return out

    def process(self, parsed: Parsed, now: float, wall_now: float) -> list[Reading]:
        """pH (calibrated, with stability) and temperature from one frame. `now` is the node's clock, for
        the stability window; `wall_now` (epoch s) dates the calibration."""
        by_quantity = {r.quantity: r for r in parsed.readings}
        temp = by_quantity.get("temperature")
        t_c = temp.value if temp is not None and temp.self_check_ok else 25.0
        raw = by_quantity.get("pH")
        mv = by_quantity.get("mV")
        out = []
        if raw is not None or mv is not None:
            out.append(self._ph(raw, mv, t_c, now, wall_now))
        if temp is not None:
            out.append(temp)
        return out

    def _ph(self, raw: Reading | None, mv: Reading | None, t_c: float, now: float, wall_now: float) -> Reading:
        cal = self.calibration
        problem = self.calibration_problem or (cal.usable(wall_now, self.config.acceptance) if cal else "")
        base = raw if raw is not None else Reading("pH", float("nan"), "pH", self_check_ok=mv.self_check_ok,
                                                   problem=mv.problem)
        if cal is not None and not problem:
            if mv is not None and mv.self_check_ok:
                value = cal.ph(mv.value, t_c)
            elif raw is not None:
                value = cal.correct(raw.value, t_c)
            else:
                value = float("nan")
            reading = replace(base, value=round(value, 3))
        else:
            reading = base
            if raw is None:     # mV only, nothing to convert it with
                reading = reading.flagged("no usable calibration to convert mV to pH")
            if self.config.require_calibration and problem:
                reading = reading.flagged(f"calibration refused: {problem}")
        if reading.stable is None:
            reading = replace(reading, stable=self._stable(reading.value, now))
        return reading

    def _stable(self, value: float, now: float) -> bool:
        w = self._window
        w.append((now, value))
        while w and now - w[0][0] > self.config.stability_window_s:
            w.popleft()
        covered = now - w[0][0] >= 0.8 * self.config.stability_window_s if len(w) > 1 else False
        values = [v for _, v in w]
        return covered and max(values) - min(values) <= self.config.stability_band_ph


class BalanceLogic:
    def __init__(self, config: BalanceConfig) -> None:
        self.config = config
        self.dialect = BALANCE_DIALECTS[config.dialect](negative_tolerance_g=config.negative_tolerance_g,
                                                        capacity_g=config.capacity_g)
        self.pending: str | None = None      # "tare" | "zero" waiting for its answer
        self.last_mass: Reading | None = None

    def command(self, which: str) -> bytes:
        self.pending = which
        return self.dialect.tare_command if which == "tare" else self.dialect.zero_command

    def process(self, parsed: Parsed) -> tuple[list[Reading], tuple[bool, str] | None]:
        """Mass readings of a frame, and the result (success, message) of a pending tare/zero it answers."""
        result = None
        if self.pending and parsed.reply and parsed.reply[0] in "TZ":
            ok = parsed.reply in ("T S", "Z A")
            result = (ok, {"T S": "tared", "Z A": "zeroed", "T I": "tare not executable (balance busy or "
                           "not stable)", "Z I": "zero not executable (balance busy or not stable)"}
                      .get(parsed.reply, parsed.problem or f"balance answered {parsed.reply}"))
            self.pending = None
        elif self.pending and parsed.reply in ("ES", "EL", "ET"):
            result = (False, parsed.problem)
            self.pending = None
        masses = [r for r in parsed.readings if r.quantity == "mass"]
        if masses:
            self.last_mass = masses[-1]
        return masses, result
