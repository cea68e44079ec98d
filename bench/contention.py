"""Contention changes wall time, never outcomes (issue 20 item 1), measured on the scenario library.

Three conditions, back to back in one invocation, on the same commit and the same seeds:
`alone`       the library once (one scenario runner, `--jobs` runs at a time);
`concurrent`  the library twice at once (two runners started together, each `--jobs` at a time: twice the
              graphs on the same cores, as when two people share the machine);
`hog`         the library once beside a busy loop per core (bench/dds_bench.cpu_hogs).
Every run claims its own ROS domain (the runner does), so the copies do not hear each other.

Per scenario and seed the verdict is the state machine's decisions: the outcome (completed / refused /
question / aborted) and the set of anomaly kinds raised; they must be identical to `alone`'s. The chemistry's
numbers (equivalence error in drops, pH deviation at the endpoint) are reported beside as the largest
difference: the twin's randomness is seeded, but when a drop falls relative to a reading can move by a
tick when the graph is starved, so they may differ by a fraction of a drop without any decision changing.

Run:  . scripts/env.sh && python bench/contention.py [--seeds 1] [--jobs 2] [--only a,b] [--conditions ...]
      (about 10 min per library copy at 1 seed, 2 jobs, on 2 cores; concurrent doubles it)
Writes bench/results/contention.json with the commit and the load average before and after each condition.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench import dds_bench  # noqa: E402
from bench.provenance import REPO, commit  # noqa: E402
from bench.scenarios import library, runner_argv  # noqa: E402

CONDITIONS = ("alone", "concurrent", "hog")


def run_copies(copies: int, files: list[Path], seeds: int, jobs: int, work: Path, tag: str) -> list[dict]:
    """`copies` scenario runners started together; the runs of each (its --json rows)."""
    procs, outs = [], []
    for i in range(copies):
        out = work / f"{tag}-{i}.json"
        procs.append(subprocess.Popen(runner_argv(files, out, work / f"{tag}-{i}", seeds, jobs, 1800.0), cwd=REPO,
                                      stdout=subprocess.DEVNULL, stderr=(work / f"{tag}-{i}.log").open("w")))
        outs.append(out)
    for p in procs:
        p.wait()
    return [json.loads(o.read_text())["runs"] if o.exists() else [] for o in outs]


def condition(name: str, files: list[Path], seeds: int, jobs: int, work: Path) -> dict:
    load_before, start = os.getloadavg()[0], time.monotonic()
    hogs = dds_bench.cpu_hogs(4 * 3600) if name == "hog" else []
    try:
        copies = run_copies(2 if name == "concurrent" else 1, files, seeds, jobs, work, name)
    finally:
        dds_bench.stop(hogs, signal=9)
    return {"copies": copies, "wall_s": time.monotonic() - start, "load_1min_before": load_before,
            "load_1min_after": os.getloadavg()[0], "cpu_hog_processes": len(hogs)}


def decision(run: dict) -> dict:
    """What the graph decided in one run: compared exactly between conditions."""
    return {"outcome": run.get("outcome"), "alarm_kinds": sorted(set(run.get("alarm_kinds") or []))}


def numbers(run: dict) -> dict:
    return {"equivalence_error_drops": run.get("equivalence_error_drops") or [],
            "ph_deviation": run.get("ph_deviation"), "wall_s": run.get("wall_s")}


def largest_gap(a: list, b: list) -> float | None:
    pairs = [(x, y) for x, y in zip(a, b) if x is not None and y is not None]
    return max((abs(x - y) for x, y in pairs), default=None) if len(a) == len(b) else math.inf


def compare(reference: list[dict], other: list[dict]) -> dict:
    """Each run of `other` against the run of the same scenario and seed in `reference`."""
    ref = {(r["scenario"], r["seed"]): r for r in reference}
    rows, same = [], 0
    for r in other:
        key = (r["scenario"], r["seed"])
        base = ref.get(key)
        if base is None:
            rows.append({"scenario": key[0], "seed": key[1], "same_decisions": False, "why": "not run alone"})
            continue
        ok = decision(base) == decision(r)
        same += ok
        eq = largest_gap(numbers(base)["equivalence_error_drops"], numbers(r)["equivalence_error_drops"])
        dev = (None if base.get("ph_deviation") is None or r.get("ph_deviation") is None
               else abs(base["ph_deviation"] - r["ph_deviation"]))
        rows.append({"scenario": key[0], "seed": key[1], "same_decisions": ok, "alone": decision(base),
                     "here": decision(r), "equivalence_gap_drops": eq, "ph_deviation_gap": dev,
                     "wall_ratio": (r.get("wall_s") or 0) / base["wall_s"] if base.get("wall_s") else None})
    missing = sorted(set(ref) - {(r["scenario"], r["seed"]) for r in other})
    gaps = [x["equivalence_gap_drops"] for x in rows if x.get("equivalence_gap_drops") is not None]
    return {"runs": len(other), "same_decisions": same, "missing": [list(m) for m in missing],
            "largest_equivalence_gap_drops": max(gaps, default=None),
            "different": [x for x in rows if not x["same_decisions"]], "rows": rows}


def first_seeds(runs: list[dict], scenarios: set[str], seeds: int) -> list[dict]:
    """The runs of `scenarios` at each one's first `seeds` seeds (a runner starts at the scenario's seed)."""
    first = {}
    for r in runs:
        if r["scenario"] in scenarios:
            first[r["scenario"]] = min(first.get(r["scenario"], r["seed"]), r["seed"])
    return [r for r in runs if r["scenario"] in first and 0 <= r["seed"] - first[r["scenario"]] < seeds]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=1)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--only", default="", help="comma-separated scenario names (default: the library, no long run)")
    p.add_argument("--conditions", default=",".join(CONDITIONS))
    p.add_argument("--out", default=str(REPO / "bench" / "results" / "contention.json"))
    p.add_argument("--work", default="", help="where the runs go (default: a temporary folder under runs/)")
    p.add_argument("--alone-from", default="", metavar="JSON",
                   help="take `alone` from a scenario runner JSON of the same commit (bench/scenarios.py's, with "
                        "more seeds: each scenario's first --seeds seeds are used) instead of running it")
    args = p.parse_args(argv)
    files = library()
    if args.only:
        wanted = set(args.only.split(","))
        files = [f for f in files if f.stem in wanted]
    conditions = [c for c in args.conditions.split(",") if c]
    if ("alone" not in conditions and not args.alone_from) or any(c not in CONDITIONS for c in conditions):
        p.error(f"--conditions must include 'alone' (the reference, or --alone-from) and name only "
                f"{', '.join(CONDITIONS)}")
    (REPO / "runs").mkdir(exist_ok=True)
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="contention-", dir=REPO / "runs"))
    work.mkdir(parents=True, exist_ok=True)
    result = {"what": __doc__.split("\n\n")[0], "commit": commit(), "machine": f"{os.cpu_count()} cores, shared",
              "scenarios": [f.stem for f in files], "seeds": args.seeds, "jobs": args.jobs, "work": str(work),
              "conditions": {}}
    if args.alone_from and "alone" not in conditions:
        doc = json.loads(Path(args.alone_from).read_text())
        result["conditions"]["alone"] = {"copies": [first_seeds(doc["runs"], {f.stem for f in files}, args.seeds)],
                                         "from": args.alone_from, "commit": doc.get("commit")}  # None: say it
    for name in conditions:
        print(f"[contention] {name}: {len(files)} scenarios x {args.seeds} seeds", flush=True)
        result["conditions"][name] = condition(name, files, args.seeds, args.jobs, work)
    alone = result["conditions"]["alone"]["copies"][0]
    result["verdict"] = {f"{name} copy {i}": compare(alone, copy) for name, c in result["conditions"].items()
                         if name != "alone" for i, copy in enumerate(c["copies"])}
    for c in result["conditions"].values():  # the rows stay in the runs' own json files
        c["runs"] = [len(copy) for copy in c.pop("copies")]
    Path(args.out).write_text(json.dumps(result, indent=1, default=float))
    for name, v in result["verdict"].items():
        print(f"[contention] {name}: same decisions {v['same_decisions']}/{v['runs']}, largest equivalence gap "
              f"{v['largest_equivalence_gap_drops']} drops, different: "
              f"{[(d['scenario'], d['seed']) for d in v['different']]}", flush=True)
    return 0 if all(not v["different"] and not v["missing"] for v in result["verdict"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
