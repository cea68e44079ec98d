"""Scenarios of the library through the whole graph with ``arm_backend: mujoco`` (issue 23: "the scenario
library runs with mujoco and keeps its completion and anomaly figures"), against the kinematic twin's
figures for the same scenarios (bench/results/scenarios.json). Writes bench/results/mujoco_library.json.

Each scenario runs as the scenario runner runs it (agentchemist_ros.tools.scenario_runner, one worker process
per run), with ``--arm-backend mujoco`` overriding the scenario's key: MuJoCo arms under position actuators,
the front camera rendered at the robot's 640 x 480 for the scene check and the colour watch.

Usage: python bench/mujoco_library.py [--seeds N] [SCENARIO...]        # default: the five below, 1 seed
       python bench/mujoco_library.py --from-json RUNNER_JSON ...      # tabulate runner results already run
       ... --keep    # keep the --out file's rows of scenarios not in this run (each row names its commit)
       ... --kinematic-json RUNNER_JSON ...  # runs with --arm-backend kinematic: the kinematic_unchanged block
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the repository: bench.provenance
from bench.provenance import commit  # noqa: E402

RESULTS = REPO / "bench" / "results"
#: the paper's example, a weak acid, a diprotic acid and two injected faults (a stuck pH reading, a
#: pipette that gives no drop): each is a figure the kinematic library has (bench/results/scenarios.json)
DEFAULT = ("hcl_naoh", "acetic_naoh", "maleic_naoh", "fault_ph_stuck", "fault_drop_fails")
FIGURES = ("expected_behaviour", "completion", "ph_deviation", "faults_detected", "faults_injected",
           "clean_runs_with_false_alarm", "wall_s", "task_s")


def run(names: list[str], seeds: int, jobs: int, runs: Path, timeout: float) -> dict:
    out = runs / "runner.json"
    argv = [sys.executable, "-m", "agentchemist_ros.tools.scenario_runner",
            *(str(REPO / "config" / "scenarios" / f"{n}.yaml") for n in names), "--arm-backend", "mujoco",
            "--seeds", str(seeds), "--jobs", str(jobs), "--runs", str(runs), "--json", str(out),
            "--timeout", str(timeout)]
    print("[bench] " + " ".join(argv), flush=True)
    subprocess.run(argv, cwd=REPO)
    return json.loads(out.read_text())


def _figures(block: dict | None) -> dict | None:
    if block is None:
        return None
    out = {}
    for k in FIGURES:
        v = block.get(k)
        out[k] = v.get("mean", v.get("mean_abs")) if isinstance(v, dict) else v
    return out


def table(runner: dict, kinematic: dict) -> dict:
    """Per scenario: the mujoco run(s) and the kinematic library's figures for the same scenario."""
    rows = {}
    for name, block in runner["summary"]["scenarios"].items():
        runs = [r for r in runner["runs"] if r["scenario"] == name]
        rows[name] = {
            "mujoco": _figures(block),
            "kinematic": _figures(kinematic.get(name)),
            "runs": [{k: r.get(k) for k in ("seed", "outcome", "outcome_ok", "message", "wall_s", "sim_s", "task_s",
                                           "ph_deviation", "equivalence_error_drops", "detections", "false_alarms",
                                           "alarm_kinds")} for r in runs],
        }
    return rows


def kinematic_block(paths: list[str], on: str) -> dict:
    """The kinematic twin's runs of the same code (that nothing changed there), from runner JSONs."""
    runs = []
    for path in paths:
        for r in json.loads(Path(path).read_text())["runs"]:
            runs.append({k: r.get(k) for k in ("scenario", "seed", "outcome", "outcome_ok", "ph_deviation",
                                               "equivalence_error_drops", "detections", "false_alarms", "wall_s",
                                               "task_s")})
    return {"how": f"scenario_runner --arm-backend kinematic --seeds 1 on {on}", "runs": runs}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("scenarios", nargs="*", default=list(DEFAULT))
    p.add_argument("--seeds", type=int, default=1)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--timeout", type=float, default=3600.0,
                   help="wall s per run (a full HCl/NaOH titration took over 900 s with mujoco at load 16 on 2 cores)")
    p.add_argument("--from-json", nargs="+", metavar="JSON", help="runner JSONs of mujoco runs: no new runs")
    p.add_argument("--out", default=str(RESULTS / "mujoco_library.json"))
    p.add_argument("--keep", action="store_true",
                   help="keep the rows of the --out file for scenarios this run does not have, with their commit")
    p.add_argument("--commit", help="the commit the runs were made on (default: HEAD at the start)")
    p.add_argument("--kinematic-json", nargs="+", metavar="JSON",
                   help="runner JSONs of kinematic-twin runs of the same code: written as kinematic_unchanged "
                        "(else --keep keeps the earlier block)")
    args = p.parse_args(argv)
    load, started_on = os.getloadavg()[0], commit()  # the code that runs is the commit at the start
    if args.from_json:
        runner = {"runs": [], "summary": {"scenarios": {}}}
        for path in args.from_json:
            data = json.loads(Path(path).read_text())
            runner["runs"] += data["runs"]
            runner["summary"]["scenarios"].update(data["summary"]["scenarios"])
        how = "runner JSONs " + ", ".join(args.from_json)
    else:
        runs = Path(tempfile.mkdtemp(prefix="mujoco-library-"))
        runner = run(args.scenarios, args.seeds, args.jobs, runs, args.timeout)
        how = f"scenario_runner --arm-backend mujoco --seeds {args.seeds} --jobs {args.jobs}"
    kinematic = json.loads((RESULTS / "scenarios.json").read_text())["summary"]["scenarios"]
    started_on = args.commit or started_on
    rows = {name: {**row, "commit": started_on} for name, row in table(runner, kinematic).items()}
    result = {"how": how, "commit": started_on, "load_at_start": round(load, 1),
              "load_at_end": round(os.getloadavg()[0], 1), "machine": f"{os.cpu_count()} cores, shared",
              "kinematic_source": "bench/results/scenarios.json (5 seeds)", "scenarios": rows}
    if args.keep and Path(args.out).exists():
        earlier = json.loads(Path(args.out).read_text())
        kept = {name: {**row, "commit": row.get("commit", earlier.get("commit"))}
                for name, row in earlier["scenarios"].items() if name not in rows}
        result["scenarios"] = {**kept, **rows}
        result["how"] = f"{how} on {started_on}; rows of {', '.join(kept)} kept from before: {earlier.get('how')}"
        result["commit"] = " / ".join(dict.fromkeys([started_on, *(str(r["commit"]) for r in kept.values())]))
        for key, value in earlier.items():  # blocks this run does not write (kinematic_unchanged)
            result.setdefault(key, value)
    if args.kinematic_json:
        result["kinematic_unchanged"] = kinematic_block(args.kinematic_json, started_on)
    result["not_as_expected"] = [n for n, r in result["scenarios"].items()
                                 if (r.get("mujoco") or {}).get("expected_behaviour") != 1.0]
    Path(args.out).write_text(json.dumps(result, indent=1, default=float))
    for name, row in result["scenarios"].items():
        print(f"{name:24s} mujoco {row['mujoco']}  kinematic {row['kinematic']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
