"""Benchmark of the lab twin (issue 3): real-time factor of the twin alone, of the twin with its
audio/camera rendering, and of the whole node graph on the twin (the HCl/NaOH demo); cost of the
equilibrium solver per titration point (scalar and vectorised).

Run:  . scripts/env.sh && python bench/twin.py [--graph] [--out bench/results/twin.json]
The graph measurement runs the full demo (about two minutes); without --graph it is skipped.
"""
from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from agentchemist.chemistry.equilibrium import ph_of_mixture, titration_curve
from agentchemist.paths import config_dir
from agentchemist.sim.lab import LabTwin
from agentchemist.sim.scenario import load_scenario
from agentchemist.sim.workload import run_titration_session

REPO = Path(__file__).resolve().parents[1]


def twin_alone(sim_s: float = 300.0) -> dict:
    twin = LabTwin(load_scenario(config_dir() / "scenarios" / "hcl_naoh.yaml"))
    start = time.perf_counter()
    run_titration_session(twin, sim_s)
    wall = time.perf_counter() - start
    return {"sim_s": sim_s, "wall_s": wall, "real_time_factor": sim_s / wall,
            "drops": twin.truth()["drops_landed"]}


def twin_with_streams(sim_s: float = 60.0) -> dict:
    """The node's per-sim-second rendering: one microphone at 48 kHz in 0.1 s chunks, the front camera
    at 1 Hz, pH at 5 Hz, on top of the physics."""
    twin = LabTwin(load_scenario(config_dir() / "scenarios" / "hcl_naoh.yaml"))
    twin.command_gripper("right", 0.060, 0.0)
    twin.step(1.0)
    twin.draw("naoh", 55.0, 1.0)
    now, audio_t, opening = 1.0, 1.0, 60.0
    start = time.perf_counter()
    while now < 1.0 + sim_s:
        now = round(now + 0.05, 9)
        opening -= 0.1 * 0.05
        twin.command_gripper("right", opening / 1000.0, now)
        twin.step(now)
        if round(now * 20) % 4 == 0:
            twin.read_ph(now)
        while audio_t + 0.1 <= now:
            twin.audio("right", audio_t, 4800)
            audio_t = round(audio_t + 0.1, 9)
        if round(now * 20) % 20 == 0:
            twin.render_camera("front", now)
    wall = time.perf_counter() - start
    return {"sim_s": sim_s, "wall_s": wall, "real_time_factor": sim_s / wall}


def solver_cost() -> dict:
    amounts = {"hcl": 0.0025, "naoh": 0.0012}
    n = 2000
    start = time.perf_counter()
    for i in range(n):
        ph_of_mixture({"hcl": 0.0025, "naoh": 0.0012 + i * 1e-9}, 0.037, 25.0, activity=True)
    scalar = (time.perf_counter() - start) / n
    volumes = np.linspace(0.0, 50.0, 10_000)
    start = time.perf_counter()
    titration_curve({"hcl": 0.1}, 25.0, {"naoh": 0.1}, volumes)
    vector = (time.perf_counter() - start) / len(volumes)
    start = time.perf_counter()
    titration_curve({"maleic_acid": 0.1}, 25.0, {"naoh": 0.1}, volumes, activity=True)
    vector_activity = (time.perf_counter() - start) / len(volumes)
    del amounts
    return {"scalar_activity_s_per_point": scalar, "vectorised_s_per_point": vector,
            "vectorised_activity_diprotic_s_per_point": vector_activity}


def graph_demo() -> dict:
    """Run `make demo`'s runner and read the real-time factor it reached from its output."""
    runs = REPO / "runs" / "bench"
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "agentchemist_ros.tools.demo", "--runs", str(runs)],
                          capture_output=True, text=True, timeout=900)
    wall = time.perf_counter() - start
    sim = None
    for line in proc.stdout.splitlines():
        cells = [c.strip() for c in line.replace("│", "|").split("|") if c.strip()]
        if len(cells) == 7 and cells[-1].endswith("x"):
            sim = float(cells[4])
    return {"exit_code": proc.returncode, "wall_s": wall, "sim_s": sim,
            "real_time_factor": (sim / wall) if sim else None,
            "note": "wall includes start-up and the report; the run's own speed is in the demo's table"}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graph", action="store_true", help="also time the full demo graph")
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "twin.json"))
    args = parser.parse_args(argv)
    result = {"machine": {"platform": platform.platform(), "python": platform.python_version(),
                          "cpus": __import__("os").cpu_count()},
              "twin_alone": twin_alone(), "twin_with_streams": twin_with_streams(), "solver": solver_cost()}
    if args.graph:
        result["graph_demo"] = graph_demo()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
