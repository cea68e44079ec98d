"""pH electrode calibration: two- or three-point buffer calibration, its acceptance and its store.

Model. A glass electrode gives E = E0 - s * S(T) * (pH - 7) mV, with S(T) = ln(10) R T / F the Nernst
slope (59.16 mV per pH at 25 degC), s the electrode's slope as a fraction of Nernst and E0 its offset (the
potential at pH 7; ideally 0 mV). Calibration fits E0 and s by least squares to the electrode's potential
in buffers whose pH is taken *at the measured temperature* from the buffer's table (a 10.01 buffer is
10.06 at 20 degC); every later reading is pH = 7 - (E - E0) / (s S(T)) at its own temperature.

A meter that reports only pH computed with the ideal electrode (s = 1, E0 = 0) is turned back into
potential with `mv_from_ideal_ph`; the twin's probe offset (pH) and drift then appear as an offset here.

Acceptance. Mettler Toledo's electrode guidance rates a slope of 95-105 % with an offset within
+-15 mV as good and accepts down to about 90 % / +-35 mV after cleaning; the default window here is
95-105 % and +-30 mV, and a calibration older than 24 h (daily calibration, the usual practice for
titrations) is stale. A calibration outside the window is refused (not stored); a stale one is refused
at use: readings are then flagged, not corrected.

Store. One JSON file per user (not in the repository): $AGENTCHEMIST_CALIBRATION_FILE, else electrodes.json
in the user's one calibration store beside the pipette's (agentchemist.paths.user_calibration_dir:
$AGENTCHEMIST_CALIBRATION_DIR or ~/.local/share/agentchemist/calibration); a store only at the former
place (~/.local/state/agentchemist/electrodes.json) is still read until the one store holds electrodes. Entries are per probe id with the
calibration's date (epoch seconds, given by the caller: the core reads no clock).
"""
from __future__ import annotations

import json
import math
import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from agentchemist.params import param
from agentchemist.paths import user_calibration_dir

R, F = 8.314462618, 96485.33212
KELVIN = 273.15

# Buffer pH against temperature (degC) for the 4.01 / 7.00 / 10.01 technical buffers (the "MT US" group
# as tabulated in Mettler Toledo meter manuals); linear between the 5 degC steps.
BUFFER_TEMPS_C = (0.0, 5.0, 10.0, 15.0, 20.0, 25.0, 30.0, 35.0, 40.0, 45.0, 50.0)
BUFFER_TABLES = {
    4.01: (4.01, 4.00, 4.00, 4.00, 4.00, 4.01, 4.01, 4.02, 4.03, 4.04, 4.06),
    7.00: (7.12, 7.09, 7.06, 7.04, 7.02, 7.00, 6.99, 6.98, 6.97, 6.97, 6.97),
    10.01: (10.32, 10.25, 10.18, 10.12, 10.06, 10.01, 9.97, 9.93, 9.89, 9.86, 9.83),
}


class CalibrationError(ValueError):
    """A calibration that cannot be made or is refused; the message says why."""


def nernst_mv(temperature_c: float) -> float:
    """The Nernst slope at `temperature_c` (mV per pH unit)."""
    return math.log(10.0) * R * (temperature_c + KELVIN) / F * 1000.0


def buffer_ph(nominal: float, temperature_c: float) -> float:
    """The pH of buffer `nominal` (4.01, 7.00 or 10.01) at `temperature_c` (0..50 degC)."""
    table = BUFFER_TABLES.get(round(nominal, 2))
    if table is None:
        raise CalibrationError(f"unknown buffer {nominal}: known {sorted(BUFFER_TABLES)}")
    if not BUFFER_TEMPS_C[0] <= temperature_c <= BUFFER_TEMPS_C[-1]:
        raise CalibrationError(f"buffer temperature {temperature_c:g} degC outside the table's 0..50 degC")
    return float(np.interp(temperature_c, BUFFER_TEMPS_C, table))


def mv_from_ideal_ph(ph: float, temperature_c: float) -> float:
    """The potential behind a pH the meter computed with an ideal electrode (s = 1, E0 = 0)."""
    return -nernst_mv(temperature_c) * (ph - 7.0)


@dataclass(frozen=True)
class BufferPoint:
    nominal: float          # the buffer's name: 4.01, 7.00, 10.01
    mv: float               # the electrode's stable potential in it
    temperature_c: float    # measured at the same time


@dataclass(frozen=True)
class Acceptance:
    """The window a calibration must lie in to be used (also the pH meter node's parameters)."""
    slope_low_pct: float = param(95.0, unit="%", low=50.0, high=100.0, description="Lowest accepted slope")
    slope_high_pct: float = param(105.0, unit="%", low=100.0, high=150.0, description="Highest accepted slope")
    offset_max_mv: float = param(30.0, unit="mV", low=0.0, high=200.0, description="Largest accepted offset")
    max_age_h: float = param(24.0, unit="h", low=0.01, high=8760.0, description="A calibration older is stale")


@dataclass(frozen=True)
class ElectrodeCalibration:
    probe: str
    slope_pct: float
    offset_mv: float
    date: float                     # epoch seconds when it was made
    temperature_c: float            # mean buffer temperature
    points: tuple = ()              # ((nominal, mv, temperature_c), ...)

    def ph(self, mv: float, temperature_c: float) -> float:
        return 7.0 - (mv - self.offset_mv) / (self.slope_pct / 100.0 * nernst_mv(temperature_c))

    def correct(self, ideal_ph: float, temperature_c: float) -> float:
        """The true pH behind a pH the meter computed with the ideal electrode."""
        return self.ph(mv_from_ideal_ph(ideal_ph, temperature_c), temperature_c)

    def window_problems(self, acceptance: Acceptance) -> list[str]:
        problems = []
        if not acceptance.slope_low_pct <= self.slope_pct <= acceptance.slope_high_pct:
            problems.append(f"slope {self.slope_pct:.1f} % outside {acceptance.slope_low_pct:g}-"
                            f"{acceptance.slope_high_pct:g} % of Nernst")
        if abs(self.offset_mv) > acceptance.offset_max_mv:
            problems.append(f"offset {self.offset_mv:+.1f} mV outside +-{acceptance.offset_max_mv:g} mV")
        return problems

    def age_h(self, now: float) -> float:
        return (now - self.date) / 3600.0

    def usable(self, now: float, acceptance: Acceptance) -> str:
        """'' when this calibration may correct readings at `now`, else why not."""
        problems = self.window_problems(acceptance)
        if self.age_h(now) > acceptance.max_age_h:
            problems.append(f"calibration of probe {self.probe} is {self.age_h(now):.1f} h old "
                            f"(limit {acceptance.max_age_h:g} h)")
        if self.age_h(now) < -1.0 / 60.0:
            problems.append(f"calibration of probe {self.probe} is dated in the future (clock wrong?)")
        return "; ".join(problems)


def calibrate(probe: str, points: list[BufferPoint], now: float,
              acceptance: Acceptance = Acceptance()) -> ElectrodeCalibration:
    """Fit slope and offset to two or three buffer points; refuse a result outside the window."""
    if len(points) < 2:
        raise CalibrationError(f"a calibration needs 2 or 3 buffers, got {len(points)}")
    nominals = [round(p.nominal, 2) for p in points]
    if len(set(nominals)) != len(nominals):
        raise CalibrationError(f"each buffer once: got {nominals}")
    for p in points:
        if not (math.isfinite(p.mv) and math.isfinite(p.temperature_c)):
            raise CalibrationError(f"buffer {p.nominal}: potential or temperature is not a number")
    ph = np.array([buffer_ph(p.nominal, p.temperature_c) for p in points])
    s_t = np.array([nernst_mv(p.temperature_c) for p in points])
    mv = np.array([p.mv for p in points])
    # E = E0 + s * x with x = -S(T) (pH - 7)
    design = np.column_stack([np.ones_like(ph), -s_t * (ph - 7.0)])
    (offset, slope), *_ = np.linalg.lstsq(design, mv, rcond=None)
    cal = ElectrodeCalibration(probe=probe, slope_pct=float(slope * 100.0), offset_mv=float(offset), date=now,
                               temperature_c=float(np.mean([p.temperature_c for p in points])),
                               points=tuple((p.nominal, p.mv, p.temperature_c) for p in points))
    problems = cal.window_problems(acceptance)
    if problems:
        raise CalibrationError(f"calibration of probe {probe} refused: {'; '.join(problems)}")
    return cal


def default_store_path() -> Path:
    env = os.environ.get("AGENTCHEMIST_CALIBRATION_FILE")
    if env:
        return Path(env)
    return user_calibration_dir() / "electrodes.json"


def former_store_path() -> Path:
    """Where the electrodes' store was before it joined the pipette's (issue 40): read, never written."""
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "agentchemist" / "electrodes.json"


class CalibrationStore:
    """Calibrations per probe id in one JSON file, written atomically (a crash never leaves half a file)."""

    def __init__(self, path: Path | str | None = None) -> None:
        self.path = Path(path) if path else default_store_path()
        # the default store falls back to the former one while it has no file: a probe calibrated before
        # keeps its calibration; the next save writes both old and new entries into the one store
        self.fallback = former_store_path() if path is None and "AGENTCHEMIST_CALIBRATION_FILE" not in os.environ \
            else None

    def load(self) -> dict[str, ElectrodeCalibration]:
        source = self.path
        if not source.exists() and self.fallback is not None and self.fallback.is_file():
            source = self.fallback
        try:
            data = json.loads(source.read_text())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise CalibrationError(f"calibration store {source} unreadable: {exc}") from None
        out = {}
        for probe, entry in data.get("electrodes", {}).items():
            try:
                out[probe] = ElectrodeCalibration(probe=probe, slope_pct=float(entry["slope_pct"]),
                                                  offset_mv=float(entry["offset_mv"]), date=float(entry["date"]),
                                                  temperature_c=float(entry["temperature_c"]),
                                                  points=tuple(tuple(p) for p in entry.get("points", ())))
            except (KeyError, TypeError, ValueError):
                continue   # a damaged entry counts as no calibration for that probe
        return out

    def get(self, probe: str) -> ElectrodeCalibration | None:
        return self.load().get(probe)

    def save(self, cal: ElectrodeCalibration) -> None:
        entries = {p: asdict(c) for p, c in self.load().items()}
        entries[cal.probe] = asdict(cal)
        for entry in entries.values():
            entry.pop("probe", None)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".electrodes")
        with os.fdopen(fd, "w") as fh:
            json.dump({"electrodes": entries}, fh, indent=1, sort_keys=True)
        os.replace(tmp, self.path)
