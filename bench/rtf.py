"""Real-time factor of a full HCl/NaOH titration through the whole node graph (issue 20 item 2).

Runs the scenario runner (config/scenarios/hcl_naoh.yaml, seed 1) once per configuration, back to back:
`one`  the whole graph in one process (one core: Python's GIL), and
`two`  the agents that only listen during a titration in a second process (tools/agents_apart.py), the
       twin's clock held within their acknowledged progress (agentchemist.sim.lockstep).
Per run: the experiment's twin time (task_s: start to terminal state on the twin's clock) over the wall time
of the experiment alone (from the goal sent to its result: process start-up and graph construction left
out), the whole run's sim/wall too, CPU seconds of the runner and its children, and what the run did
(outcome, drops the twin landed, anomalies, equivalence error), so that a faster run that did something
else shows. The machine's load average is written before and after each run: this machine is shared, and
the factor scales with the CPU the graph gets.

Run:  . scripts/env.sh && python bench/rtf.py [--configs one,two] [--out bench/results/rtf.json]
(about 4-6 min per configuration on 2 shared cores).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.provenance import REPO, commit  # noqa: E402

#: None: the runner's default second process (tools/agents_apart.py); "*": every agent (tools/graph.py AGENTS)
#: in a process apart from the twin's
CONFIGS = {"one": "", "two": None, "twin_apart": "*"}
GOAL = 40.0


def run_one(name: str, scenario: Path, runs: Path) -> dict:
    from agentchemist_ros.tools.agents_apart import DEFAULT_APART
    from agentchemist_ros.tools.graph import AGENTS

    apart = {None: ",".join(DEFAULT_APART), "*": ",".join(AGENTS)}.get(CONFIGS[name], CONFIGS[name])
    out = runs / name
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load0 = os.getloadavg()
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "agentchemist_ros.tools.scenario_runner", str(scenario),
                           "--runs", str(out), "--json", str(out / "scores.json"), "--apart", apart],
                          capture_output=True, text=True)
    wall_total = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    records = list(out.glob("*/run_record.json"))
    if not records:
        return {"config": name, "error": f"no run record (exit {proc.returncode}): {proc.stdout[-400:]}"}
    rec = json.loads(records[0].read_text())
    row = json.loads((out / "scores.json").read_text())["runs"][0]
    task_wall = rec.get("task_wall_s") or float("nan")
    return {
        "config": name, "agents_apart": apart.split(",") if apart else [], "processes": rec.get("processes"),
        "outcome": rec["outcome"], "task_s": rec["task_s"], "task_wall_s": task_wall,
        "real_time_factor": rec["task_s"] / task_wall,
        "sim_s": rec["sim_s"], "wall_s": rec["wall_s"], "run_real_time_factor": rec["sim_s"] / rec["wall_s"],
        "wall_with_startup_s": wall_total,
        "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
        "load_before": load0, "load_after": os.getloadavg(),
        "drops_landed": rec["truth"].get("drops_landed"), "final_ph": row.get("final_ph"),
        "equivalence_error_drops": row.get("equivalence_error_drops"),
        "anomalies": [f"{a['source']}:{a['kind']}" for a in rec["anomalies"]],
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--configs", default="one,two", help="comma-separated, run in this order: one, two")
    p.add_argument("--scenario", default=str(REPO / "config" / "scenarios" / "hcl_naoh.yaml"))
    p.add_argument("--out", default=str(REPO / "bench" / "results" / "rtf.json"))
    args = p.parse_args()
    runs = Path(tempfile.mkdtemp(prefix="rtf-"))
    results = []
    for name in args.configs.split(","):
        results.append(run_one(name, Path(args.scenario), runs))
        print(json.dumps(results[-1], default=float))
    best = max((r["real_time_factor"] for r in results if "real_time_factor" in r), default=None)
    doc = {"commit": commit(), "cpus": os.cpu_count(), "scenario": Path(args.scenario).name,
           "goal_real_time_factor": GOAL, "best_real_time_factor": best,
           "note": "real_time_factor = task_s (twin clock) / task_wall_s (wall, goal sent to result); "
                   "the machine is shared (load average beside each run)", "runs": results}
    Path(args.out).write_text(json.dumps(doc, indent=1, default=float))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
