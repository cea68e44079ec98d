"""The scenario library through the whole graph in the twin, 5 seeds each, scored like the paper's Table 4
(bench/results/scenarios.json), and the 8-hour long run once (bench/results/long_run.json).

Usage: python bench/scenarios.py [--seeds N] [--jobs J] [--skip-long] [--only-long]
       python bench/scenarios.py --rescore [JSON...]   # score stored runs again with the current scoring
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"
sys.path.insert(0, str(REPO))
from bench.provenance import commit  # noqa: E402

NOT_EXPERIMENTS = {"calibration_naoh"}  # a calibration bench for `agentchemist calibrate`, not an instruction


def library() -> list[Path]:
    return [p for p in sorted((REPO / "config" / "scenarios").glob("*.yaml")) if p.stem not in NOT_EXPERIMENTS]


def runner_argv(files: list[Path], out: Path, runs: Path, seeds: int, jobs: int, timeout: float) -> list[str]:
    """The scenario runner's command line for these files (bench/contention.py starts several at once)."""
    return [sys.executable, "-m", "agentchemist_ros.tools.scenario_runner", *map(str, files), "--seeds", str(seeds),
            "--jobs", str(jobs), "--json", str(out), "--runs", str(runs), "--timeout", str(timeout)]


def runner(files: list[Path], out: Path, runs: Path, seeds: int, jobs: int, timeout: float) -> int:
    argv = runner_argv(files, out, runs, seeds, jobs, timeout)
    print("[bench] " + " ".join(argv), flush=True)
    stamp = {"commit": commit(), "machine": f"{os.cpu_count()} cores, shared", "load_1min_before": os.getloadavg()[0]}
    code = subprocess.run(argv, cwd=REPO).returncode
    if out.exists():  # the runner writes runs and summary; where they come from is written beside them
        data = json.loads(out.read_text())
        data.update(stamp, load_1min_after=os.getloadavg()[0])
        out.write_text(json.dumps(data, indent=1, default=float))
    return code


def rescore(path: Path) -> None:
    """Summarise a results file again with the current scoring code, filling what older runners did not
    record from the runs they left: task_s, each experiment's own duration from its record store."""
    from agentchemist.scoring import experiment_seconds, load_run, summarise

    data = json.loads(path.read_text())
    for row in data["runs"]:
        if row.get("task_s") is None and row.get("run_dir"):
            durations = [experiment_seconds(load_run(d, d.name))
                         for d in sorted(Path(row["run_dir"]).glob("exp-*")) if (d / "records.db").exists()]
            if durations and all(x is not None for x in durations):
                row["task_s"] = sum(durations)
    data["summary"] = summarise(data["runs"])
    path.write_text(json.dumps(data, indent=1, default=float))
    print(f"[bench] rescored {path}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--skip-long", action="store_true")
    p.add_argument("--only-long", action="store_true")
    p.add_argument("--rescore", nargs="*", metavar="JSON", default=None,
                   help="no runs: score the stored runs of these results files again (default: both)")
    args = p.parse_args(argv)
    if args.rescore is not None:
        for path in args.rescore or [RESULTS / "scenarios.json", RESULTS / "long_run.json"]:
            rescore(Path(path))
        return 0
    RESULTS.mkdir(parents=True, exist_ok=True)
    code = 0
    if not args.only_long:
        # exit 1 = some run not as expected: the JSON says which; that is a result, not a bench failure
        code |= runner(library(), RESULTS / "scenarios.json", REPO / "runs" / "bench" / "scenarios", args.seeds,
                       args.jobs, 1200) > 1
    if not args.skip_long:
        code |= runner([REPO / "config" / "scenarios" / "long" / "long_run.yaml"], RESULTS / "long_run.json",
                       REPO / "runs" / "bench" / "long_run", 1, 1, 3 * 3600) > 1
    return int(code)


if __name__ == "__main__":
    sys.exit(main())
