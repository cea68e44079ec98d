"""Where the configuration and the run folders are: one rule for every module and node.

config/: $AGENTCHEMIST_CONFIG_DIR, else the repository's config/ next to src/ (editable install), else
the installed ROS package's share/agentchemist_ros/config found through $AMENT_PREFIX_PATH.
"""
from __future__ import annotations

import os
from pathlib import Path

_REPO = Path(__file__).resolve().parents[2]


def config_dir() -> Path:
    env = os.environ.get("AGENTCHEMIST_CONFIG_DIR")
    if env:
        return Path(env)
    if (_REPO / "config").is_dir():
        return _REPO / "config"
    for prefix in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep):
        candidate = Path(prefix) / "share" / "agentchemist_ros" / "config"
        if prefix and candidate.is_dir():
            return candidate
    raise FileNotFoundError("cannot find the agentchemist config/ folder: set AGENTCHEMIST_CONFIG_DIR")


def default_runs_dir() -> Path:
    """runs/ beside config/ in a checkout, else ./runs."""
    root = os.environ.get("AGENTCHEMIST_ROOT")
    if root:
        return Path(root) / "runs"
    return _REPO / "runs" if (_REPO / "config").is_dir() else Path.cwd() / "runs"


def user_calibration_dir() -> Path:
    """The user's one calibration store, pipette and pH electrodes alike (never the checkout):
    $AGENTCHEMIST_CALIBRATION_DIR, else $XDG_DATA_HOME (~/.local/share)/agentchemist/calibration."""
    env = os.environ.get("AGENTCHEMIST_CALIBRATION_DIR")
    if env:
        return Path(env)
    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data_home) / "agentchemist" / "calibration"


def urdf_file() -> Path:
    """The plain robot model (urdf/agentchemist_aloha.urdf, xacro's output): beside config/ in a checkout and
    in the installed package's share/ alike."""
    path = config_dir().parent / "urdf" / "agentchemist_aloha.urdf"
    if not path.is_file():
        raise FileNotFoundError(f"robot model {path} not found (it sits in urdf/ beside config/)")
    return path


def scene_asset_dir(name: str) -> Path:
    """A folder for a generated scene's files (tag textures), under the user's cache."""
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "agentchemist" / "scenes"
    return base / "".join(c if c.isalnum() or c in "-_" else "_" for c in name)
