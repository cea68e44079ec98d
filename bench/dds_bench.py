"""Pieces shared by the benchmarks that run real nodes in their own processes over DDS (piper.py, latency.py).

- `percentiles`: p50 / p99 / max of a list of seconds, in ms;
- `cpu_hogs`: one busy Python loop per core at normal priority (the "CPU hog" condition);
- `node_process`: a node of ros2_ws/src/agentchemist_ros started as its own OS process, the way its
  installed entry point runs it (`python -m agentchemist_ros.<module>`, common/runner.spin_node), with
  ROS parameters given on the command line;
- `cpu_seconds`: user + system CPU time a process has used so far (from /proc), for a node's CPU %;
- `Spinner`: a probe node spun on a thread of the bench process;
- `machine`: what a result was measured on (cores, Python, commit, the 1-minute load average).

Importing this module keeps DDS traffic on this machine and in a domain of its own (random, 150..200),
unless ROS_DOMAIN_ID / ROS_AUTOMATIC_DISCOVERY_RANGE are already set: a bench must not talk to a graph
that happens to run beside it.
"""
from __future__ import annotations

import os
import platform
import random
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
os.environ.setdefault("ROS_DOMAIN_ID", str(random.randint(150, 200)))
os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")


def percentiles(values: list[float], scale: float = 1e3, within_s: float | None = None) -> dict:
    """n, p50 / p99 / max of `values` (s) in ms (`scale`); `within_s`: also the fraction at or below it."""
    v = sorted(values)
    if not v:
        return {"n": 0}
    at = lambda q: v[min(len(v) - 1, int(round(q * (len(v) - 1))))] * scale  # noqa: E731
    out = {"n": len(v), "p50_ms": at(0.5), "p99_ms": at(0.99), "max_ms": v[-1] * scale}
    if within_s is not None:
        out[f"within_{within_s * 1e3:g}ms"] = sum(x <= within_s for x in v) / len(v)
    return out


def cpu_hogs(seconds: float, count: int | None = None) -> list[subprocess.Popen]:
    """`count` (default: one per core) busy loops at normal priority, each ending by itself after `seconds`."""
    return [subprocess.Popen([sys.executable, "-c", f"import time\nend=time.monotonic()+{seconds}\n"
                                                    "while time.monotonic()<end: pass"])
            for _ in range(count if count is not None else os.cpu_count() or 1)]


def stop(procs: list[subprocess.Popen], timeout: float = 10.0, signal: int = 2) -> list[int | None]:
    """Interrupt each process (SIGINT: a node's clean shutdown; hogs take SIGKILL), kill it if it does not
    end; their exit codes."""
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal)
    codes = []
    for p in procs:
        try:
            codes.append(p.wait(timeout))
        except subprocess.TimeoutExpired:
            p.kill()
            codes.append(p.wait())
    return codes


def node_process(module: str, params: dict | None = None, log: Path | None = None,
                 script: str | None = None) -> subprocess.Popen:
    """agentchemist_ros.<module> in its own process, with ROS parameters (name -> value) on its command line;
    `script`: run that node file instead (another version of the node, for an A/B comparison)."""
    def text(v):
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (list, tuple)):
            return "[" + ",".join(text(x) if not isinstance(x, str) else f"'{x}'" for x in v) + "]"
        return str(v)
    args = [sys.executable, *((script,) if script else ("-m", f"agentchemist_ros.{module}")), "--ros-args"]
    for name, value in (params or {}).items():
        args += ["-p", f"{name}:={text(value)}"]
    out = open(log, "w") if log is not None else subprocess.DEVNULL  # noqa: SIM115 - the child owns it
    return subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds process `pid` has used (Linux /proc; its threads included)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Spinner:
    """Spins `node` on a thread of this process with a single-threaded executor until `close`
    (tools/graph.background_spin's loop, at a 10 ms period for the probes' timing)."""

    def __init__(self, node):
        from rclpy.executors import SingleThreadedExecutor
        from agentchemist_ros.tools.graph import background_spin
        self.node = node
        self.executor = SingleThreadedExecutor()
        self.executor.add_node(node)
        self._spinning = background_spin(lambda period: self.executor.spin_once(timeout_sec=period), 0.01)
        self._spinning.__enter__()

    def close(self):
        self._spinning.__exit__(None, None, None)
        self.executor.remove_node(self.node)


def wait_until(condition, seconds: float, step: float = 0.002) -> bool:
    """Poll `condition` until it holds (True) or `seconds` pass (False)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(step)
    return bool(condition())


def machine(note: str = "") -> dict:
    """Cores, Python, commit and the 1-minute load average now."""
    sys.path.insert(0, str(REPO))
    from bench.provenance import commit
    return {"cpus": os.cpu_count(), "python": platform.python_version(), "commit": commit(),
            "load_1min": os.getloadavg()[0],
            "note": note or "shared machine: other agents' work runs beside it; see each condition's load_1min"}
