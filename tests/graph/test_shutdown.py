"""Ctrl-C on the twin's launch: every node exits cleanly within launch's 5 s (issue 39, defect 4).

The twin's nodes are started as `ros2 launch twin.launch.py` starts them (each console script in its own
process, the params file, sim time; lab_sim on the wall clock publishing /clock) and once all are on the
graph each gets what Ctrl-C in a terminal gives it: the terminal's SIGINT to the process group and then
launch's own SIGINT. launch escalates to SIGTERM after 5 s (sigterm_timeout); before the fix
action_policy outlived that in every run (it imported torch and transformers for the scripted backend)
and the second SIGINT interrupted nodes while they closed (exit -2, KeyboardInterrupt tracebacks)."""
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

rclpy = pytest.importorskip("rclpy")

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "ros2_ws" / "install" / "lib" / "agentchemist_ros"
PARAMS = REPO / "config" / "agentchemist_params.yaml"
SCENARIO = REPO / "config" / "scenarios" / "hcl_naoh.yaml"
AGENTS = ("planner", "vision_supervisor", "audio_supervisor", "action_policy", "dispenser_controller",
          "recorder", "summarizer")
LAUNCH_SIGTERM_TIMEOUT_S = 5.0


def start(name: str, runs: Path, *extra: str) -> subprocess.Popen:
    # launch starts a child with SIGINT at its default even when launch itself was started in the background
    return subprocess.Popen(
        [str(SCRIPTS / name), "--ros-args", "-r", f"__node:={name}", "--params-file", str(PARAMS), *extra],
        stdout=open(runs / f"{name}.log", "w"), stderr=subprocess.STDOUT, start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def test_every_twin_node_exits_cleanly_within_launchs_5_s_of_ctrl_c(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    procs = {"lab_sim": start("lab_sim", runs, "-p", f"scenario:={SCENARIO}", "-p", "use_sim_time:=false")}
    for name in AGENTS:
        extra = ["-p", f"runs_dir:={runs}"] if name in ("vision_supervisor", "recorder", "summarizer") else []
        procs[name] = start(name, runs, "-p", "use_sim_time:=true", *extra)
    rclpy.init()
    probe = rclpy.create_node("shutdown_probe")
    try:
        deadline = time.monotonic() + 180.0
        while not set(procs) <= set(probe.get_node_names()):
            dead = {n: p.returncode for n, p in procs.items() if p.poll() is not None}
            assert not dead, f"nodes ended before Ctrl-C: {dead}"
            assert time.monotonic() < deadline, f"not all up: {set(procs) - set(probe.get_node_names())}"
            rclpy.spin_once(probe, timeout_sec=0.2)
        time.sleep(3.0)  # running, timers and the twin's clock going
        t0 = time.monotonic()
        for p in procs.values():            # the terminal: SIGINT to each process group
            os.killpg(p.pid, signal.SIGINT)
        time.sleep(0.05)
        for p in procs.values():            # launch's SIGINT to each process
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
        took, codes = {}, {}
        for name, p in procs.items():
            try:
                codes[name] = p.wait(timeout=max(0.0, t0 + LAUNCH_SIGTERM_TIMEOUT_S - time.monotonic()))
                took[name] = round(time.monotonic() - t0, 2)
            except subprocess.TimeoutExpired:
                codes[name] = None
        late = {n: c for n, c in codes.items() if c is None}
        assert not late, f"still running {LAUNCH_SIGTERM_TIMEOUT_S} s after Ctrl-C: {sorted(late)} (exited: {took})"
        assert all(c == 0 for c in codes.values()), f"exit codes {codes}; logs in {runs}"
        tracebacks = [n for n in procs if "Traceback" in (runs / f"{n}.log").read_text()]
        assert tracebacks == [], f"tracebacks on shutdown: {tracebacks}; logs in {runs}"
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()
        probe.destroy_node()
        rclpy.try_shutdown()
