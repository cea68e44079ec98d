"""Benchmark of the MuJoCo arm backend (issue 23).

1. Render rate: the three cameras at 320 x 240, colour + depth each, with the physics advanced 1/15 s
   (the frame period at the 15 fps goal) between frame sets, on ONE core (the process is pinned to one CPU
   and Mesa's software rasteriser to one thread: LP_NUM_THREADS=1). Reported as frame sets per second, i.e.
   the rate each camera can be published at.
   The front camera alone at the robot's 640 x 480 (what the backend renders for the scene check) and at
   320 x 240: ``scene_camera``.
2. Real-time factor of a titration session in the twin, with arm_backend kinematic and mujoco in the same
   run: the pipette squeezed at 0.1 mm/s (as sim/workload.py does), commands every 0.05 s, pH read at
   10 Hz, /joint_states at 10 Hz and the three cameras at the scenario's 2 Hz, through the backend the node
   uses (sim/arm_backends.py). Twin level, no ROS graph (the scenario library's whole-graph run takes
   minutes per scenario and was not repeated here).

Run:  . scripts/env.sh && python bench/physics.py [--out bench/results/physics.json]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LP_NUM_THREADS", "1")  # Mesa llvmpipe: one rendering thread (before GL loads)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository: bench.provenance
from bench.provenance import commit  # noqa: E402
from agentchemist.paths import config_dir, urdf_file  # noqa: E402
from agentchemist.sim.arm_backends import make_arm_backend  # noqa: E402
from agentchemist.sim.lab import LabTwin  # noqa: E402
from agentchemist.sim.mujoco_arms import MujocoArms  # noqa: E402
from agentchemist.sim.mjcf_scene import CAMERA_SIZE, CAMERAS, mujoco  # noqa: E402
from agentchemist.sim.scenario import load_scenario  # noqa: E402
from agentchemist.sim.scene_model import twin_scene  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SCENARIO = config_dir() / "scenarios" / "hcl_naoh.yaml"


def render_rate(frames: int = 60, fps_goal: float = 15.0) -> dict:
    twin = LabTwin(load_scenario(SCENARIO))
    sim = MujocoArms(twin_scene(twin), urdf_file().read_text(), Path(tempfile.mkdtemp(prefix="bench-scene-")))
    for cam in CAMERAS:  # warm up the GL context and textures
        sim.render(cam)
    render_s = physics_s = 0.0
    start = time.perf_counter()
    for _ in range(frames):
        t0 = time.perf_counter()
        sim.step_to(sim.t + 1.0 / fps_goal)
        t1 = time.perf_counter()
        for cam in CAMERAS:
            sim.render(cam)
        render_s += time.perf_counter() - t1
        physics_s += t1 - t0
    wall = time.perf_counter() - start
    sim.close()
    return {"frame_sets": frames, "cameras": len(CAMERAS), "size": "320x240", "wall_s": wall,
            "fps_each_camera": frames / wall, "render_ms_per_frame_set": 1000 * render_s / frames,
            "physics_ms_per_frame_set": 1000 * physics_s / frames, "goal_fps": fps_goal,
            "gl": os.environ.get("MUJOCO_GL"), "gl_renderer": _gl_renderer()}


def scene_camera_rate(frames: int = 30) -> dict:
    """The front camera alone (colour + depth) at the robot's size (CAMERA_SIZE, what the MuJoCo backend
    renders for the scene check and the colour watch) and at the scenarios' 320 x 240, same process."""
    twin = LabTwin(load_scenario(SCENARIO))
    out = {}
    for w, h in (CAMERA_SIZE, (320, 240)):
        sim = MujocoArms(twin_scene(twin), urdf_file().read_text(), Path(tempfile.mkdtemp(prefix="bench-scene-")), w, h)
        sim.render("front")  # warm up
        start = time.perf_counter()
        for _ in range(frames):
            sim.render("front")
        wall = time.perf_counter() - start
        sim.close()
        out[f"{w}x{h}"] = {"ms_per_frame": 1000 * wall / frames, "fps": frames / wall}
    return out


def titration_rtf(backend: str, sim_s: float = 60.0) -> dict:
    twin = LabTwin(load_scenario(SCENARIO))
    twin.step(1.0)
    arms = make_arm_backend(backend, twin, urdf_file(), Path(tempfile.mkdtemp(prefix="bench-scene-")))
    contact = twin.scenario.pipette.contact_opening_mm
    t, opening = 1.0, contact + 0.5
    arms.command_gripper("right", opening / 1000.0, t)
    t += 1.0
    arms.step(t)
    twin.draw("naoh", 55.0, t)
    opening = contact
    start, end, k = time.perf_counter(), t + sim_s, 0
    frames = 0
    while t < end:
        k += 1
        t = round(t + 0.01, 9)
        arms.step(t)
        if k % 5 == 0:
            opening -= 0.1 * 0.05
            arms.command_gripper("right", opening / 1000.0, t)
        if k % 10 == 0:
            twin.read_ph(t)
            arms.joint_states()
        if k % 50 == 0:
            for cam in CAMERAS:
                arms.render(cam, t)
                frames += 1
    wall = time.perf_counter() - start
    return {"backend": backend, "sim_s": sim_s, "wall_s": wall, "real_time_factor": sim_s / wall,
            "camera_frames": frames, "drops": twin.truth()["drops_landed"]}


def _gl_renderer() -> str:
    try:
        from OpenGL import GL
        value = GL.glGetString(GL.GL_RENDERER)
        return value.decode() if value else ""
    except Exception:  # noqa: BLE001 - informational only
        return ""


def machine() -> str:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"{platform.machine()} {os.cpu_count()} cores (pinned to 1), Python {platform.python_version()}, "
            f"{platform.system()}, load {load:.1f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "physics.json"))
    parser.add_argument("--sim-s", type=float, default=60.0)
    args = parser.parse_args(argv)
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    result = {"render": render_rate(), "scene_camera": scene_camera_rate(),
              "titration": {b: titration_rtf(b, args.sim_s) for b in ("kinematic", "mujoco")},
              "mujoco_version": mujoco.__version__, "commit": commit(), "machine": machine()}
    Path(args.out).write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
