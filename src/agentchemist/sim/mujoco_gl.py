"""Pick MuJoCo's headless OpenGL before mujoco is imported: EGL, else OSMesa (MUJOCO_GL, if set, wins).

MuJoCo reads MUJOCO_GL once, at import; without it, it tries GLFW, which needs a display. Import this
module before ``import mujoco`` in every module that renders.
"""
from __future__ import annotations

import ctypes.util
import os

__all__ = ["NO_GL_REASON", "select_gl"]

NO_GL_REASON = "no EGL or OSMesa library for headless MuJoCo rendering (apt: libegl1 or libosmesa6)"


def select_gl() -> str:
    """Set MUJOCO_GL to egl or osmesa (whichever library is present) unless it is set; returns the choice."""
    if not os.environ.get("MUJOCO_GL"):
        if ctypes.util.find_library("EGL"):
            os.environ["MUJOCO_GL"] = "egl"
        elif ctypes.util.find_library("OSMesa"):
            os.environ["MUJOCO_GL"] = "osmesa"
            os.environ.setdefault("PYOPENGL_PLATFORM", "osmesa")
    return os.environ.get("MUJOCO_GL", "")


select_gl()
