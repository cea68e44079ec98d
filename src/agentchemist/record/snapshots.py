"""Front-camera snapshots in a run folder (runs/<experiment_id>/snapshots/<label>_<sim s>.png)."""
from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np

from agentchemist.record.store import run_folder


def save_snapshot(runs_dir: Path, experiment_id: str, label: str, now: float, frame_rgb: np.ndarray) -> Path:
    """Write the RGB frame as a PNG named for its label and sim time; the absolute path.
    RecordInputError for an experiment id that cannot name a run folder."""
    folder = run_folder(runs_dir, experiment_id) / "snapshots"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{label}_{now:.1f}.png"
    cv2.imwrite(str(path), cv2.cvtColor(frame_rgb, cv2.COLOR_RGB2BGR))
    return path.resolve()
