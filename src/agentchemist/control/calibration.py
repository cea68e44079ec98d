"""Gravimetric calibration of the squeezed pipette: k (mL per mm of gripper closing) and the drop volume.

The paper maps displacement to quantity with an offline linear calibration and names its weakness:
viscosity and the pipette model change it. So calibration is per pipette, liquid and closing rate
(drops grow with the flow while they form), saved as YAML that the dispenser and the audio
supervisor load. Samples are (displacement since priming, balance mass, drops) triples taken while
dispensing onto a balance; both fits are least squares through the origin.
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import yaml

from agentchemist.limits import load_yaml_file
from agentchemist.paths import config_dir, user_calibration_dir


class CalibrationError(ValueError):
    """Too few or inconsistent samples, or a malformed calibration file."""


@dataclass(frozen=True)
class CalibrationSample:
    displacement_mm: float   #: gripper closing since the first drop fell (priming excluded)
    mass_g: float            #: balance reading minus the tare at the first drop
    drops: int               #: drops fallen since (and excluding) the priming drop


@dataclass(frozen=True)
class Calibration:
    k_ml_per_mm: float
    drop_volume_ml: float
    residual_ml: float          #: RMS residual of the displacement fit (mL)
    drop_volume_sd_ml: float    #: standard error of the per-drop fit scaled to one drop (mL)
    samples: int
    rate_mm_s: float
    liquid: str
    density_g_ml: float
    pipette_id: str
    created: str = ""

    def __post_init__(self):
        for name in ("k_ml_per_mm", "drop_volume_ml", "density_g_ml"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise CalibrationError(f"calibration {name} must be a finite number > 0, got {value!r}")
        for name in ("residual_ml", "drop_volume_sd_ml"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise CalibrationError(f"calibration {name} must be a finite number >= 0, got {value!r}")


def fit_calibration(samples: Sequence[CalibrationSample], *, density_g_ml: float, rate_mm_s: float,
                    liquid: str, pipette_id: str = "pipette") -> Calibration:
    """Least-squares k and drop volume from balance samples."""
    if len(samples) < 3:
        raise CalibrationError(f"need at least 3 samples to calibrate, got {len(samples)}")
    if not (math.isfinite(density_g_ml) and density_g_ml > 0):
        raise CalibrationError(f"density must be > 0 g/mL, got {density_g_ml!r}")
    d = np.array([s.displacement_mm for s in samples], dtype=float)
    n = np.array([s.drops for s in samples], dtype=float)
    v = np.array([s.mass_g for s in samples], dtype=float) / density_g_ml
    if not (np.all(np.isfinite(d)) and np.all(np.isfinite(v))):
        raise CalibrationError("calibration samples contain NaN or infinite values")
    if np.ptp(d) <= 0 or np.ptp(n) <= 0:
        raise CalibrationError("calibration samples do not span any displacement or drops")
    k = float(np.dot(d, v) / np.dot(d, d))
    residual = float(np.sqrt(np.mean((v - k * d) ** 2)))
    drop = float(np.dot(n, v) / np.dot(n, n))
    drop_resid = v - drop * n
    # Spread of one drop: the residual per sample scaled by the drops it spans.
    drop_sd = float(np.std(drop_resid / np.sqrt(np.maximum(n, 1.0)), ddof=1)) if len(n) > 2 else 0.0
    return Calibration(k_ml_per_mm=k, drop_volume_ml=drop, residual_ml=residual, drop_volume_sd_ml=drop_sd,
                       samples=len(samples), rate_mm_s=float(rate_mm_s), liquid=liquid,
                       density_g_ml=float(density_g_ml), pipette_id=pipette_id,
                       created=time.strftime("%Y-%m-%dT%H:%M:%S%z"))


# Where `agentchemist calibrate` (and the dispenser's Calibrate service) save when not told where: the
# user's calibration store, never the shipped config/calibration/pipette.yaml, which stays the default
# a fresh clone starts from (a calibration run must not leave a clone modified).
CALIBRATION_DIR_ENV = "AGENTCHEMIST_CALIBRATION_DIR"


def shipped_calibration_path() -> Path:
    """The calibration shipped with the repository (read-only default)."""
    return config_dir() / "calibration" / "pipette.yaml"


def user_calibration_path() -> Path:
    """pipette.yaml in the user's calibration store (agentchemist.paths.user_calibration_dir)."""
    return user_calibration_dir() / "pipette.yaml"


def default_calibration_path() -> Path:
    """The calibration used when none is named: the user's store when it holds one, else the shipped one."""
    user = user_calibration_path()
    return user if user.is_file() else shipped_calibration_path()


def save_calibration(cal: Calibration, path: str | Path | None = None) -> Path:
    """Write ``cal`` to ``path``, by default to the user's calibration store (see above)."""
    path = Path(path) if path else user_calibration_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    header = ("# Pipette calibration written by `agentchemist calibrate` (gravimetric, least squares).\n"
              "# k_ml_per_mm: mL per mm of gripper closing; drop_volume_ml: mean drop at rate_mm_s.\n")
    path.write_text(header + yaml.safe_dump(asdict(cal), sort_keys=False))
    return path


def load_calibration(path: str | Path | None = None) -> Calibration:
    path = Path(path) if path else default_calibration_path()
    try:
        data = load_yaml_file(path)
    except OSError as exc:
        raise CalibrationError(f"{path}: cannot read the calibration: {exc.strerror or exc}") from None
    except (ValueError, yaml.YAMLError) as exc:
        raise CalibrationError(f"{path}: {exc}") from None
    if not isinstance(data, dict):
        raise CalibrationError(f"{path}: a calibration is a mapping of fields")
    fields = set(Calibration.__dataclass_fields__)
    unknown, missing = set(data) - fields, fields - set(data) - {"created"}
    if unknown or missing:
        raise CalibrationError(f"{path}: unknown keys {sorted(unknown)}, missing keys {sorted(missing)}")
    try:
        return Calibration(**data)
    except TypeError as exc:
        raise CalibrationError(f"{path}: {exc}") from None


def load_or_none(path: str | Path | None) -> Calibration | None:
    """The calibration at `path` (or the default file when `path` is empty); None when no file exists,
    so that a node falls back to its parameters and says so."""
    target = Path(path) if path else default_calibration_path()
    if not target.exists():
        if path:
            raise CalibrationError(f"{target}: no such calibration file")
        return None
    return load_calibration(target)
