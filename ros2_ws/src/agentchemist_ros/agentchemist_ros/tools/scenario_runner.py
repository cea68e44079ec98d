"""`agentchemist scenario run FILE... [--seeds N] [--jobs J] [--json OUT]`: the scenario library through
the full node graph in the twin, scored like the paper's Table 4.

Each (scenario, seed) runs in its own worker process on its own ROS_DOMAIN_ID: a crash, a hang or a leak
in one run cannot touch the next, parallel jobs cannot hear each other, and the worker's process memory
is the run's memory. The worker composes the graph (twin + every agent), sends the scenario's instruction
as a chemist would (a RunExperiment goal; `repeat` goals back to back on fresh samples for long runs),
listens to /agentchemist/anomalies, and afterwards reads what a chemist would: the report's results and
the record store. Grading is agentchemist.scoring (ROS-free), against the scenario and the twin's truth.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path

from agentchemist_ros.tools.agents_apart import DEFAULT_APART

__all__ = ["main", "run_scenarios", "worker_main"]

# Each running job holds one ROS_DOMAIN_ID from this range (DDS allows 0..232; the tests use 1..100),
# claimed with an exclusive lock file, so runners started side by side on one machine never share a
# domain (a shared domain means one runner's goal reaches the other's planner).
DOMAIN_RANGE = range(101, 233)
DOMAIN_LOCKS = Path(tempfile.gettempdir()) / "agentchemist-ros-domains"


def claim_domain():
    """(domain id, open lock file) for the first free domain; the lock lasts until the file is closed."""
    import fcntl

    DOMAIN_LOCKS.mkdir(parents=True, exist_ok=True)
    for domain in DOMAIN_RANGE:
        f = open(DOMAIN_LOCKS / f"{domain}.lock", "w")
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            f.close()
            continue
        return domain, f
    raise OSError(f"no free ROS domain in {DOMAIN_RANGE.start}..{DOMAIN_RANGE.stop - 1} (see {DOMAIN_LOCKS})")


# =========================================================================================== worker
def _rss_mb() -> float:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return math.nan


def _seeded_scenario(src: Path, seed: int, out_dir: Path, arm_backend: str = "") -> Path:
    """The scenario with its seed (and, when given, its ``arm_backend`` key) as the run's own file."""
    from agentchemist.sim.scenario import read_scenario_yaml, scenario_from_dict
    import yaml

    data = read_scenario_yaml(src)
    data["seed"] = int(seed)
    if arm_backend:
        data["arm_backend"] = arm_backend
    scenario_from_dict(data, source=str(src))  # refuse a bad file here, with its own name in the error
    out = out_dir / f"{src.stem}.seed{seed}.yaml"
    out.write_text(yaml.safe_dump(data, sort_keys=False))
    return out


#: The twin's pace (sim s per wall s) with the VLA backend: the one-process graph at the scenarios' 50x
#: left the policy's 10 Hz loop 1.8 ticks per sim second (28 ticks in a 15 s grasp, the executor busy with
#: the twin's ticks); at 2x (as tests/graph/test_vla_policy_graph.py) it keeps its rate, as it would on the
#: robot (1x). The reports in the log say the rate each subtask ran at (ticks / duration_s).
POLICY_REAL_TIME_FACTOR = 2.0


def policy_overrides(checkpoint: str, real_time_factor: float = POLICY_REAL_TIME_FACTOR) -> dict:
    """Per-node parameter overrides that put the action policy on the VLA backend with ``checkpoint``
    (docs/vla.md); empty: the scripted backend, the default. The twin then renders the three cameras the
    policy reads, at the policy's control rate (its demonstrations had a fresh image every tick; the
    runner's economical 1 Hz would hand it images up to a second old while the arm moves), and runs at
    ``real_time_factor``. A missing or unusable checkpoint is not refused here: the node refuses every
    goal with the reason, as it would on the robot."""
    from agentchemist_ros.common.topics import CAMERAS

    if not checkpoint:
        return {}
    path = Path(checkpoint).expanduser().resolve()
    try:
        rate = float(json.loads((path / "config.json").read_text())["control_rate_hz"])
    except (OSError, ValueError, KeyError, TypeError):
        rate = 10.0  # the tiny config's; the node says what is wrong with the checkpoint
    return {"action_policy": {"backend": "vla", "checkpoint": str(path)},
            "lab_sim": {"cameras": list(CAMERAS), "camera_rate_hz": rate, "real_time_factor": float(real_time_factor)}}


def worker_main(argv: list[str] | None = None) -> int:
    """One scenario, one seed, one process: writes a RunRecord JSON to --out."""
    import rclpy
    from rclpy.action import ActionClient
    from rclpy.node import Node
    from std_srvs.srv import Trigger

    from agentchemist.sim.scenario import load_scenario
    from agentchemist.scoring import RunRecord
    from agentchemist.scoring.runs import (experiment_seconds, load_run, report_results, settled_ph,
                                           store_counts)
    from agentchemist_interfaces.action import RunExperiment
    from agentchemist_interfaces.msg import Anomaly
    from agentchemist_ros.common import memory_trace, topics
    from agentchemist_ros.common.qos import RELIABLE
    from agentchemist_ros.common.timeconv import to_sec
    from agentchemist_ros.tools.agents_apart import LEAD_S, agents_apart
    from agentchemist_ros.tools.graph import Graph, ensure_init

    p = argparse.ArgumentParser(prog="scenario_runner --worker")
    p.add_argument("--scenario", required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--runs", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--timeout", type=float, default=900.0, help="wall seconds for the whole run")
    p.add_argument("--arm-backend", default="", choices=("", "kinematic", "mujoco"))
    p.add_argument("--policy-checkpoint", default="", help="action_policy on the VLA backend with this checkpoint")
    p.add_argument("--apart", default="",
                   help="agents run in a second process (tools/agents_apart.py); empty: all in one process")
    p.add_argument("--trace-memory", type=int, default=None, metavar="FRAMES",
                   help="memory checkpoints after each experiment to memory_trace.json beside --out (see "
                        "common/memory_trace.py); FRAMES > 0 also runs tracemalloc with that many frames to say "
                        "which node holds the Python memory (several times slower)")
    args = p.parse_args(argv)
    tracing = args.trace_memory is not None
    if args.trace_memory:
        import tracemalloc
        tracemalloc.start(args.trace_memory)
    src = Path(args.scenario)
    runs = Path(args.runs)
    runs.mkdir(parents=True, exist_ok=True)
    scenario_file = _seeded_scenario(src, args.seed, runs, args.arm_backend)
    sc = load_scenario(scenario_file)
    record = RunRecord(scenario=sc.name, file=str(src), seed=args.seed, outcome="crashed", success=False,
                       message="", experiments=sc.repeat)
    memory = [_rss_mb()]
    ensure_init()
    # Cameras at 1 Hz (as the graph tests): the node's economical default (0.5 Hz) is too slow for the
    # colour endpoint to settle between drops, and the scenarios' 2 Hz costs a quarter more wall time
    # on 2 cores for nothing the supervisors need.
    # Memory tracing reads this process: every node in it, so the trace says which one holds what.
    apart = () if tracing else tuple(a for a in args.apart.split(",") if a)
    # Free run: a batch run goes as fast as the graph keeps up (lab_sim_config.free_run).
    sim = {"camera_rate_hz": min(1.0, sc.cameras.rate_hz), "free_run": True,
           **({"max_lead_s": LEAD_S} if apart else {})}
    overrides = policy_overrides(args.policy_checkpoint)
    overrides["lab_sim"] = {**sim, **overrides.get("lab_sim", {})}
    graph = Graph(scenario_file, runs, overrides=overrides, without=apart)
    probe = Node("scenario_probe")
    anomalies: list[dict] = []
    probe.create_subscription(Anomaly, topics.ANOMALIES, lambda m: anomalies.append({
        "stamp": to_sec(m.stamp), "source": m.source, "kind": m.kind, "severity": m.severity,
        "response": m.response, "description": m.description, "experiment_id": m.experiment_id}), RELIABLE)
    client = ActionClient(probe, RunExperiment, topics.RUN_EXPERIMENT)
    new_sample = probe.create_client(Trigger, "/lab_sim/new_sample")
    graph.executor.add_node(probe)
    stop = threading.Event()

    crashed: list[str] = []
    checkpoints: list = []  # --trace-memory: one after the graph is up, one after each experiment
    failure = ""  # what broke the run after some experiments had completed

    def spin():
        last_sample = time.monotonic()
        while not stop.is_set():
            try:
                graph.spin_once(0.05)
            except Exception as exc:  # noqa: BLE001 - a node's callback raised: the graph is broken
                crashed.append(f"{type(exc).__name__} in a node callback: {exc}")
                return
            if time.monotonic() - last_sample > 5.0:
                memory.append(_rss_mb())
                last_sample = time.monotonic()

    thread = threading.Thread(target=spin, daemon=True)
    thread.start()
    start = time.monotonic()
    deadline = start + args.timeout
    results: list = []
    task_wall = 0.0
    apart_process = ExitStack()
    try:
        apart_process.enter_context(agents_apart(scenario_file, runs, apart, probe))
        if not client.wait_for_server(timeout_sec=60):
            raise RuntimeError("the planner's RunExperiment server did not come up")
        if tracing:
            checkpoints.append(memory_trace.take("graph up", _rss_mb()))
        for i in range(sc.repeat):
            if i > 0:  # a fresh sample on the bench, same twin, same nodes, same clock
                fut = new_sample.call_async(Trigger.Request())
                while not fut.done() and time.monotonic() < deadline:
                    time.sleep(0.05)
                if not fut.done() or not fut.result().success:
                    raise RuntimeError("the twin did not put a fresh sample on the bench")
            goal_wall = time.monotonic()
            sent = client.send_goal_async(RunExperiment.Goal(instruction=sc.instruction))
            while not sent.done() and time.monotonic() < deadline:
                time.sleep(0.05)
            if not sent.done() or not sent.result().accepted:
                raise RuntimeError("the RunExperiment goal was not accepted")
            res_future = sent.result().get_result_async()
            while not res_future.done() and time.monotonic() < deadline and not crashed:
                time.sleep(0.1)
            if crashed:
                raise RuntimeError(crashed[0])
            if not res_future.done():
                record.outcome, record.message = "timeout", f"no result within {args.timeout:.0f} s (experiment {i + 1})"
                break
            results.append(res_future.result().result)
            task_wall += time.monotonic() - goal_wall  # wall time of the experiments alone (bench/rtf.py)
            record.memory_per_experiment_mb.append(_rss_mb())
            if tracing:
                checkpoints.append(memory_trace.take(f"after experiment {i + 1}", _rss_mb()))
            if not results[-1].success:
                break
        time.sleep(0.3)  # the last anomalies and records reach the probe and the store
        twin = graph.nodes["lab_sim"].twin
        truth = twin.truth()
        record.sim_s = float(twin.t)
        keep = ("t", "drops_landed", "dispensed_ml", "expelled_ml", "beaker_volume_ml", "overflow_ml", "true_ph",
                "probe_ph", "faults", "weighing", "balance_load_g", "samples", "pipette")
        record.truth = {k: truth[k] for k in keep if k in truth}
    except Exception as exc:  # noqa: BLE001 - a crashed run is graded as such, with its reason
        record.message = f"{type(exc).__name__}: {exc}"
        failure = f"{record.message} (during experiment {len(results) + 1} of {sc.repeat})"
    finally:
        record.wall_s = time.monotonic() - start
        memory.append(_rss_mb())
        apart_process.close()
        stop.set()
        thread.join(timeout=10)
        graph.shutdown()
        probe.destroy_node()
        rclpy.try_shutdown()
    if results:
        last = results[-1]
        if failure:  # experiments went well before it: the run still crashed, and says where
            record.message = failure
        elif record.outcome != "timeout":
            record.outcome = last.outcome
            record.message = last.message
        record.success = all(r.success for r in results) and len(results) == sc.repeat
        record.experiment_id, record.report_path = last.experiment_id, last.report_path
        record.results = report_results(last.report_path)
        counts: dict[str, int] = {}
        durations = []
        for r in results:
            if r.experiment_id:
                run = load_run(runs / r.experiment_id, r.experiment_id)
                for k, v in store_counts(run).items():
                    counts[k] = counts.get(k, 0) + v
                record.settled_ph_tail = settled_ph(run)[-2:]
                durations.append(experiment_seconds(run))
        record.records = counts
        if durations and all(d is not None for d in durations):
            record.task_s = sum(durations)
    record.anomalies = anomalies
    record.memory_mb = memory
    record.task_wall_s = task_wall  # not a RunRecord field: read from run_record.json by bench/rtf.py
    record.processes = 2 if apart else 1
    record.policy_checkpoint = args.policy_checkpoint  # not a RunRecord field: read from run_record.json
    if checkpoints:
        _write_memory_trace(Path(args.out).with_name("memory_trace.json"), checkpoints)
    Path(args.out).write_text(json.dumps(record.__dict__, default=float, indent=1))
    return 0


def _write_memory_trace(path: Path, checkpoints: list) -> None:
    from agentchemist_ros.common import memory_trace

    path.write_text(json.dumps({
        "checkpoints": [memory_trace.as_dict(c) for c in checkpoints],
        "growth": [memory_trace.growth(a, b) for a, b in zip(checkpoints, checkpoints[1:])],
        "agents_bytes": [memory_trace.agents_bytes(c) for c in checkpoints],
    }, indent=1, default=float))


# =========================================================================================== parent
def _job_argv(scenario: Path, seed: int, runs: Path, out: Path, timeout: float, arm_backend: str = "",
              apart: tuple[str, ...] = (), policy_checkpoint: str = "") -> list[str]:
    return [sys.executable, "-m", "agentchemist_ros.tools.scenario_runner", "--worker", "--scenario", str(scenario),
            "--seed", str(seed), "--runs", str(runs), "--out", str(out), "--timeout", str(timeout),
            *(["--arm-backend", arm_backend] if arm_backend else []), "--apart", ",".join(apart),
            *(["--policy-checkpoint", policy_checkpoint] if policy_checkpoint else [])]


def run_scenarios(files: list[Path], *, seeds: int = 1, jobs: int = 1, runs_dir: Path, timeout: float = 900.0,
                  progress=None, arm_backend: str = "", apart: tuple[str, ...] = (),
                  policy_checkpoint: str = "") -> list[dict]:
    """Run every (scenario, seed) in worker processes, `jobs` at a time; returns the scored rows.
    ``arm_backend`` (kinematic | mujoco) overrides every scenario's ``arm_backend`` key; empty keeps it.
    ``apart``: agents in a second process (tools/agents_apart.py); empty: the whole graph in one process.
    ``policy_checkpoint``: the action policy on the VLA backend with this checkpoint; empty: scripted."""
    if policy_checkpoint and "action_policy" in apart:
        raise ValueError("--policy-checkpoint sets the in-process action_policy; do not run it --apart")
    from agentchemist.sim.scenario import load_scenario
    from agentchemist.scoring import RunRecord, score_run

    plan = []
    for f in files:
        sc = load_scenario(f)  # fail on a bad file before starting anything
        plan += [(Path(f), sc, sc.seed + k) for k in range(seeds)]
    runs_dir.mkdir(parents=True, exist_ok=True)
    pending = list(plan)
    running: dict[int, tuple] = {}
    rows: list[dict] = []
    while pending or running:
        for slot in range(jobs):
            if slot not in running and pending:
                f, sc, seed = pending.pop(0)
                job_dir = runs_dir / f"{sc.name}-seed{seed}"
                out = job_dir / "run_record.json"
                job_dir.mkdir(parents=True, exist_ok=True)
                domain, lock = claim_domain()
                # Twin runs stay on this machine: never on the robot's network.
                env = dict(os.environ, ROS_DOMAIN_ID=str(domain), ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST")
                log = open(job_dir / "worker.log", "w")
                argv = _job_argv(f, seed, job_dir, out, timeout, arm_backend, apart, policy_checkpoint)
                proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
                running[slot] = (proc, f, sc, seed, out, log, time.monotonic(), lock)
        time.sleep(0.2)
        for slot, (proc, f, sc, seed, out, log, t0, lock) in list(running.items()):
            if proc.poll() is None and time.monotonic() - t0 < timeout + 120:
                continue
            if proc.poll() is None:  # the worker's own timeout failed: the process is stuck
                proc.kill()
                proc.wait()
            log.close()
            lock.close()
            del running[slot]
            if out.exists():
                rec = RunRecord.from_dict(json.loads(out.read_text()))
            else:
                rec = RunRecord(scenario=sc.name, file=str(f), seed=seed, outcome="crashed", success=False,
                                message=f"worker exited with code {proc.returncode}; see {log.name}",
                                wall_s=time.monotonic() - t0)
            row = score_run(sc, rec)
            row["run_dir"] = str(out.parent)
            row["arm_backend"] = arm_backend or sc.arm_backend
            row["policy"] = f"vla:{policy_checkpoint}" if policy_checkpoint else "scripted"
            row["report_path"] = rec.report_path or ""
            rows.append(row)
            if progress:
                progress(row, len(rows), len(plan))
    rows.sort(key=lambda r: (r["scenario"], r["seed"]))
    return rows


def _fmt(x, spec=".3f"):
    return "-" if x is None else format(x, spec)


def _print_summary(summary: dict, console) -> None:
    from rich.table import Table

    t = Table(title="Scenario library (per scenario; times: wall s here, twin s = the task on the twin's clock)")
    # Scenario names in full: the column never shrinks below the longest (no "acetic_na...").
    t.add_column("scenario", justify="left", no_wrap=True, min_width=max([len(n) for n in summary["scenarios"]] + [8]))
    for col in ("runs", "behaviour", "completion", "pH dev", "end <=1 drop", "eq err (drops)", "pKa err",
                "conc err", "weigh err (g)", "faults det.", "false alarms", "wall s", "twin s"):
        t.add_column(col, justify="right")
    for name, b in summary["scenarios"].items():
        t.add_row(name, str(b["runs"]), _fmt(b["expected_behaviour"], ".0%"), _fmt(b["completion"], ".0%"),
                  _fmt((b["ph_deviation"] or {}).get("mean_abs")), _fmt(b["endpoint_within_one_drop"], ".0%"),
                  _fmt((b["equivalence_error_drops"] or {}).get("max_abs"), ".2f"),
                  _fmt((b["pka_error"] or {}).get("max_abs")),
                  _fmt((b["concentration_error_rel"] or {}).get("max_abs"), ".2%"),
                  _fmt((b["weighing_error_g"] or {}).get("mean_abs")),
                  f"{b['faults_detected']}/{b['faults_injected']}" if b["faults_injected"] else "-",
                  str(b["clean_runs_with_false_alarm"]) if b["clean_runs"] else "-",
                  _fmt((b["wall_s"] or {}).get("mean"), ".0f"), _fmt((b["task_s"] or {}).get("mean"), ".0f"))
    console.print(t)
    p = Table(title="Against the paper's Table 4 (the paper's time is on the real robot; ours is twin time, "
                    "and the wall time it took here)")
    for col in ("system", "completion", "pH deviation", "anomaly accuracy", "time per task (s)"):
        p.add_column(col, justify="right")
    for name, row in summary["paper_table4"].items():
        p.add_row(name, _fmt(row["completion"], ".0%"), _fmt(row["ph_deviation"], ".2f"),
                  _fmt(row["anomaly_accuracy"], ".0%"), _fmt(row["time_s"], ".0f"))
    ours = summary["ours"]
    p.add_row("AgentChemist ROS, embedded non-LLM (twin)", _fmt(ours["completion"], ".0%"),
              _fmt(ours["ph_deviation"], ".2f"), _fmt(ours["anomaly_accuracy"], ".0%"),
              f"{_fmt(ours['task_time_s'], '.0f')} twin / {_fmt(ours['wall_time_s'], '.0f')} wall")
    console.print(p)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--worker"]:
        return worker_main(argv[1:])
    from rich.console import Console
    from rich.markup import escape

    from agentchemist.paths import default_runs_dir
    from agentchemist.scoring import summarise

    p = argparse.ArgumentParser(prog="agentchemist scenario run",
                                description="Run scenarios through the node graph in the twin and score them.")
    p.add_argument("files", nargs="+", help="scenario YAML files (config/scenarios/*.yaml)")
    p.add_argument("--seeds", type=int, default=1, help="seeds per scenario: seed, seed+1, ... (default 1)")
    p.add_argument("--jobs", type=int, default=1, help="runs in parallel (each is one process; default 1)")
    p.add_argument("--json", help="write every run's scores and the summary here")
    p.add_argument("--runs", help="where the runs go (default: a new folder under the runs directory)")
    p.add_argument("--timeout", type=float, default=900.0, help="wall seconds per run before it is a timeout")
    p.add_argument("--arm-backend", default="", choices=("kinematic", "mujoco"),
                   help="run every scenario with this arm backend (overrides the scenario's arm_backend key)")
    p.add_argument("--apart", default="", metavar="AGENTS",
                   help="agents in a second process beside the twin's (both cores; tools/agents_apart.py, e.g. "
                        f"{','.join(DEFAULT_APART)}); default: the whole graph in one process")
    p.add_argument("--policy-checkpoint", default="", metavar="DIR",
                   help="action_policy on the VLA backend with this checkpoint (docs/vla.md); default: scripted")
    args = p.parse_args(argv)
    if args.seeds < 1 or not 1 <= args.jobs <= 10:
        p.error("--seeds must be >= 1 and --jobs between 1 and 10")
    console = Console(soft_wrap=True)
    if not console.is_terminal:  # a log file or CI: no terminal width to respect, keep the tables readable
        console = Console(width=200, soft_wrap=True)
    runs = Path(args.runs) if args.runs else Path(tempfile.mkdtemp(prefix="scenarios-", dir=_ensure(default_runs_dir())))

    def progress(row, done, total):
        ok = "[green]ok[/green]" if row["outcome_ok"] else "[red]NOT AS EXPECTED[/red]"
        det = "".join(" [green]detected[/green]" if d["detected"] else f" [red]missed {d['fault']}[/red]"
                      for d in row.get("detections", []))
        fa = f" [red]false alarm {row['false_alarms']}[/red]" if row.get("false_alarms") else ""
        twin = f", twin {row['task_s']:.0f} s" if row.get("task_s") is not None else ""
        console.print(f"[{done}/{total}] {row['scenario']} seed {row['seed']}: {row['outcome']} {ok}{det}{fa} "
                      f"(wall {row['wall_s']:.0f} s{twin})  {escape(row['message'])}")
        if row.get("report_path"):
            console.print(f"    report: {row['report_path']}")

    total = len(args.files) * args.seeds  # said first: a graph's start-up and a run take minutes in silence
    console.print(f"running {total} run(s) ({len(args.files)} scenario file(s) x {args.seeds} seed(s)), {args.jobs} at a "
                  f"time, each through the whole graph in its own process; a line as each ends; folders in {runs}")
    try:
        rows = run_scenarios([Path(f) for f in args.files], seeds=args.seeds, jobs=args.jobs, runs_dir=runs,
                             timeout=args.timeout, progress=progress, arm_backend=args.arm_backend,
                             apart=tuple(a for a in args.apart.split(",") if a),
                             policy_checkpoint=args.policy_checkpoint)
    except (ValueError, OSError) as exc:
        console.print(f"[red]error:[/red] {escape(str(exc))}")
        return 2
    summary = summarise(rows)
    _print_summary(summary, console)
    console.print(f"runs: {runs}")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({"runs": rows, "summary": summary}, indent=1, default=float))
        console.print(f"scores: {args.json}")
    return 0 if all(r["outcome_ok"] for r in rows) else 1


def _ensure(path: Path) -> Path:
    Path(path).mkdir(parents=True, exist_ok=True)
    return Path(path)


if __name__ == "__main__":
    sys.exit(main())
