"""`agentchemist policy eval`: a VLA checkpoint over randomised twin episodes per subtask, scored by the
twin's truth (the measured arm and gripper where the subtask must leave them), with the success rate's
Wilson 95 % interval, the scene seeds, a front-camera frame of each failure and a JSON result (commit,
machine, load). It drives the twin, so it lives with the twin (a tool, not robot code).
"""
from __future__ import annotations

import math
import os
import platform
import subprocess
from pathlib import Path

import cv2
import numpy as np

from agentchemist.sim.vla_demos import GOALS, SUBTASKS, random_scene, run_policy_in_twin, start_episode, \
    subtask_succeeded

Z95 = 1.959964


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion (the usual one for success rates of a few dozen
    episodes: it stays inside 0..1 and is not degenerate at 0 or n successes)."""
    if n <= 0:
        return (0.0, 1.0)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def git_commit() -> str:
    root = Path(__file__).resolve().parents[3]
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True,
                             timeout=10)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def evaluate(checkpoint: str | Path, episodes: int, seed: int = 0, subtasks=SUBTASKS, out_dir=None,
             max_duration_s: float = 20.0, log=None) -> dict:
    """Run ``episodes`` randomised episodes of each subtask with the checkpoint's policy; return the result
    (also written to OUT/eval.json with failure frames under OUT/failures/ when ``out_dir`` is given)."""
    import torch

    from agentchemist.policy.vla.serve import VLARunner, VLAServeConfig
    unknown = [s for s in subtasks if s not in GOALS]
    if unknown:
        raise ValueError(f"no success condition in the twin for {', '.join(unknown)} (known: {', '.join(GOALS)})")
    if episodes < 1:
        raise ValueError("episodes must be >= 1")
    runner = VLARunner(VLAServeConfig(checkpoint=str(checkpoint), max_duration_s=max_duration_s))
    out = Path(out_dir) if out_dir else None
    if out:
        (out / "failures").mkdir(parents=True, exist_ok=True)
    result = {"checkpoint": str(checkpoint), "commit": git_commit(),
              "machine": f"{platform.machine()} {os.cpu_count()} cores, torch {torch.__version__}, "
                         f"{'GPU ' + torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'no GPU'}",
              "load_average": [round(x, 2) for x in os.getloadavg()], "episodes_per_subtask": episodes,
              "seed": seed, "max_duration_s": max_duration_s, "subtasks": {}}
    for subtask in subtasks:
        text = runner.instruction(subtask, {})
        ok, seeds, failures, durations = 0, [], [], []
        for n in range(episodes):
            scene_seed = seed * 1000 + n
            scene = random_scene(np.random.default_rng(scene_seed), seed=scene_seed)
            expert = start_episode(scene, subtask)
            report = run_policy_in_twin(runner.episode(text, expert.t), expert)
            success = bool(report["success"] and subtask_succeeded(expert, subtask))
            seeds.append(scene_seed)
            durations.append(report["duration_s"])
            if success:
                ok += 1
            else:
                reason = report.get("error") or "completed away from the subtask's goal"
                failure = {"seed": scene_seed, "reason": reason}
                if out:
                    frame = out / "failures" / f"{subtask}-seed{scene_seed}.png"
                    img = expert.observe()["observation.images.front"]
                    cv2.imwrite(str(frame), cv2.cvtColor(img, cv2.COLOR_RGB2BGR))
                    failure["frame"] = str(frame)
                failures.append(failure)
            if log:
                log(f"{subtask} seed {scene_seed}: {'ok' if success else 'failed'}")
        lo, hi = wilson(ok, episodes)
        result["subtasks"][subtask] = {"instruction": text, "successes": ok, "episodes": episodes,
                                       "rate": ok / episodes, "wilson95": [round(lo, 4), round(hi, 4)],
                                       "seeds": seeds, "mean_duration_s": round(float(np.mean(durations)), 3),
                                       "failures": failures}
    result["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    return result
