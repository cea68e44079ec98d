"""One full titration driven by the VLA backend, end to end (issue 17's benchmark): hcl_short through the
whole node graph in the twin (`agentchemist scenario run --policy-checkpoint DIR`), the action policy on
the tiny VLA policy for every subtask the plan sends it (grasp the pipette, draw the titrant, position
over the beaker); the dispenser, supervisors, recorder and summarizer as always.

The policy is trained on twin demonstrations of exactly those subtasks, recorded under the instruction
texts the plan's subtasks map to (agentchemist.policy.vla.serve.subtask_instruction): the server refuses
any other text. Whatever happens is the measurement: a run that aborts at a grasp is a row that says so,
with the reason the node gave. Nothing falls back to the scripted backend.

Run:  . scripts/env.sh && python bench/vla_titration.py --train [--episodes 10 --steps 2000] [--seeds 3]
      . scripts/env.sh && python bench/vla_titration.py --checkpoint DIR/checkpoints/last [--seeds 3]
No GPU here: training and inference are on the shared CPU; the load average is recorded.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# Run as a script, bench/ is first on the path, and bench/coverage.py would stand in for the coverage
# package that numba (under librosa's log-mel) imports: the repository root instead.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != REPO / "bench"]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
from bench.provenance import commit  # noqa: E402  (the repository on the path: run as a script)
from agentchemist_ros.tools.scenario_runner import POLICY_REAL_TIME_FACTOR, run_scenarios  # noqa: E402

SCENARIO = REPO / "tests" / "data" / "scenarios" / "hcl_short.yaml"
#: What hcl_short's plan sends the action policy on the graph (primitive, parameters), in order: read from
#: the experiment's stored plan (records.db, experiments.metadata) of a run of this scenario.
PLAN_SUBTASKS = {"grasp_pipette": ("grasp", {"location": "beaker_main", "object": "pipette"}),
                 "draw_titrant": ("draw", {"container": "titrant_bottle", "reagent": "naoh", "volume_ml": 6.5}),
                 "position_over_beaker": ("move_to", {"target": "beaker_main"})}
DONE = re.compile(r"\[action_policy\]: (.+?) done: (\{.*\})")
DRAWN = re.compile(r"\[lab_sim\]: draw (\w+): ([0-9.]+) mL")


def train_policy(out: Path, episodes: int, steps: int, seed: int) -> Path:
    """Record the plan's subtasks in the twin and train the tiny config with the CLI's functions."""
    from agentchemist.policy.vla.serve import subtask_instruction
    from agentchemist.policy.vla.train import TrainOptions, train
    from agentchemist.sim.vla_demos import TITRATION_SUBTASKS, record_twin_demos

    texts = {k: subtask_instruction(*PLAN_SUBTASKS[k]) for k in TITRATION_SUBTASKS}
    t0 = time.perf_counter()
    demos = record_twin_demos(out / "demos", episodes, seed=seed, subtasks=TITRATION_SUBTASKS, instructions=texts)
    record_s = time.perf_counter() - t0
    summary = train(demos, out / "train", "tiny", TrainOptions(steps=steps, batch_size=16, lr=1e-3, save_every=500,
                                                                progress=False, threads=1))
    summary["record_s"] = round(record_s, 1)
    (out / "train" / "train_summary.json").write_text(json.dumps(summary, indent=2))
    return out / "train" / "checkpoints" / "last"


def training_facts(checkpoint: Path) -> dict:
    """The checkpoint's training summary (train_summary.json two levels up) and what it was trained on."""
    facts: dict = {}
    summary = checkpoint.parent.parent / "train_summary.json"
    if summary.is_file():
        facts.update(json.loads(summary.read_text()))
    config = json.loads((checkpoint / "config.json").read_text())
    facts["tasks"] = config.get("tasks", [])
    facts["control_rate_hz"] = config.get("control_rate_hz")
    return facts


def vla_reports(log: Path) -> list[dict]:
    """The completion reports of the subtasks the VLA backend finished (the node logs them)."""
    if not log.is_file():
        return []
    reports = [{"subtask": m.group(1), **json.loads(m.group(2))} for m in DONE.finditer(log.read_text())]
    for r in reports:  # the control rate the loop kept on the twin's clock (the policy's is control_rate_hz)
        r["ticks_per_s"] = round(r["ticks"] / r["duration_s"], 2) if r.get("duration_s") else None
    return reports


def draw_in_twin(checkpoint: Path, episodes: int, seed: int = 5, **serve) -> dict:
    """The draw alone in the kinematic twin (agentchemist.sim.vla_demos, no ROS), policy vs the scripted
    expert on the same randomised scenes: does the squeeze-release at the bottle fill the pipette, how close
    the right arm came to the bottle pose (the twin's draw needs every joint within tolerance_rad of it),
    and how far the gripper closed (squeezed below 20 mm, then released above 59.5 mm)."""
    import numpy as np

    from agentchemist.policy.vla.serve import VLARunner, VLAServeConfig
    from agentchemist.sim.vla_demos import TITRATION_SUBTASKS, random_scene, run_policy_in_twin, start_episode

    runner = VLARunner(VLAServeConfig(checkpoint=str(checkpoint), **serve))  # serve: other serving settings
    text = runner.instruction(*PLAN_SUBTASKS["draw_titrant"])
    rng = np.random.default_rng(seed)
    out: dict = {"episodes": episodes, "instruction": text, "tolerance_rad": None}
    for who in ("scripted", "vla"):
        out[who] = {"filled": 0, "done": 0, "closest_rad": [], "min_opening_mm": []}
    for n in range(episodes):
        scene = random_scene(rng, seed=seed * 1000 + n)
        for who in ("scripted", "vla"):
            expert = start_episode(scene, "draw_titrant", chain=TITRATION_SUBTASKS)
            bottle = np.asarray(expert.poses.pose("right", "titrant_bottle"))
            out["tolerance_rad"] = expert.poses.tolerance_rad
            seen = {"closest": np.inf, "opening": np.inf}

            def watch(_command=None, e=expert, seen=seen, bottle=bottle):
                arm = np.asarray(e.twin.arms["right"].position)
                seen["closest"] = min(seen["closest"], float(np.abs(arm - bottle).max()))
                seen["opening"] = min(seen["opening"], 1000.0 * e.twin.gripper_opening_m("right"))

            if who == "scripted":
                expert_tick = expert.tick
                expert.tick = lambda frames, f=expert_tick, w=watch: (f(frames), w())
                done = expert.run("draw_titrant", [])
            else:
                done = run_policy_in_twin(runner.episode(text, expert.t), expert, on_command=watch)["success"]
            r = out[who]
            r["done"] += bool(done)
            r["filled"] += bool(expert.twin.truth()["pipette"]["content_ml"] > 0)
            r["closest_rad"].append(round(seen["closest"], 4))
            r["min_opening_mm"].append(round(seen["opening"], 1))
    return out


def first_alarm_subtask(run_dir: Path) -> str | None:
    """The subtask the first warn/halt anomaly was raised in, as the record store has it."""
    import sqlite3

    for db in run_dir.glob("exp-*/records.db"):
        with sqlite3.connect(db) as con:
            hit = con.execute("SELECT subtask_id FROM anomalies WHERE severity IN ('warn', 'halt') AND subtask_id != '' "
                              "ORDER BY stamp LIMIT 1").fetchone()
        if hit:
            return hit[0]
    return None


def row_of(score: dict) -> dict:
    """The per-run row: outcome, which subtask failed and why, drops, equivalence error, wall time."""
    run_dir = Path(score["run_dir"])
    record = json.loads((run_dir / "run_record.json").read_text())
    failed = [a for a in record.get("anomalies", []) if a.get("kind") == "subtask_failed"]
    alarms = [a for a in record.get("anomalies", []) if a.get("severity") in ("warn", "halt")]
    log = (run_dir / "worker.log").read_text() if (run_dir / "worker.log").is_file() else ""
    truth = record.get("truth", {})
    return {
        "seed": score["seed"], "outcome": score["outcome"], "completed": score["completed"],
        "message": score["message"],
        "failed_subtask": first_alarm_subtask(run_dir),
        "failure_reason": failed[0]["description"] if failed else None,
        "first_alarm": f"{alarms[0]['source']}: {alarms[0]['kind']}: {alarms[0]['description']}" if alarms else None,
        "vla_subtasks_done": vla_reports(run_dir / "worker.log"),
        # lab_sim logs each squeeze-release at the titrant bottle that filled the pipette
        "draws_ml": [float(m.group(2)) for m in DRAWN.finditer(log)],
        "pipette_at_end": truth.get("pipette"),
        "drops_landed": truth.get("drops_landed"), "dispensed_ml": truth.get("dispensed_ml"),
        "final_ph": score.get("final_ph"), "equivalence_error_drops": score.get("equivalence_error_drops"),
        "alarm_kinds": score.get("alarm_kinds"), "wall_s": round(score["wall_s"], 1), "sim_s": score.get("sim_s"),
        "task_s": score.get("task_s"), "run_dir": str(run_dir.relative_to(REPO)) if run_dir.is_relative_to(REPO)
        else str(run_dir),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--checkpoint", help="a trained checkpoint (DIR/checkpoints/last); else --train")
    p.add_argument("--train", action="store_true", help="record demonstrations and train first (under --work)")
    p.add_argument("--episodes", type=int, default=10, help="demonstrations per subtask (--train)")
    p.add_argument("--steps", type=int, default=2000, help="training steps (--train)")
    p.add_argument("--seeds", type=int, default=3, help="scenario seeds 1..N")
    p.add_argument("--timeout", type=float, default=900.0, help="wall seconds per run")
    p.add_argument("--draw-episodes", type=int, default=5, help="the draw alone in the twin, policy vs scripted")
    p.add_argument("--work", default=str(REPO / "runs" / "vla_titration"), help="demos, checkpoint and runs")
    p.add_argument("--out", default=str(REPO / "bench" / "results" / "vla_titration.json"))
    args = p.parse_args(argv)
    if not args.checkpoint and not args.train:
        p.error("give --checkpoint DIR or --train")
    work = Path(args.work)
    load_before = os.getloadavg()
    checkpoint = train_policy(work, args.episodes, args.steps, seed=11) if args.train else Path(args.checkpoint)
    checkpoint = checkpoint.resolve()
    started = time.perf_counter()
    scores = run_scenarios([SCENARIO], seeds=args.seeds, jobs=1, runs_dir=work / f"runs-{int(time.time())}",
                           timeout=args.timeout, policy_checkpoint=str(checkpoint),
                           progress=lambda r, i, n: print(f"[{i}/{n}] seed {r['seed']}: {r['outcome']} "
                                                          f"({r['wall_s']:.0f} s wall) {r['message'][:200]}",
                                                          flush=True))
    rows = [row_of(s) for s in scores]
    draw = draw_in_twin(checkpoint, args.draw_episodes) if args.draw_episodes else None
    result = {
        "commit": commit(), "scenario": str(SCENARIO.relative_to(REPO)), "checkpoint": str(checkpoint),
        "training": training_facts(checkpoint), "plan_subtasks": {k: list(v) for k, v in PLAN_SUBTASKS.items()},
        "real_time_factor": POLICY_REAL_TIME_FACTOR, "runs": rows, "draw_in_twin": draw,
        "completed": sum(r["completed"] for r in rows),
        "seeds": len(rows),
        "wall_s": round(time.perf_counter() - started, 1),
        "load_average_before": load_before, "load_average_after": os.getloadavg(), "cpus": os.cpu_count(),
        "gpu": False,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1, default=float))
    print(json.dumps({k: result[k] for k in ("commit", "completed", "seeds", "wall_s")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
