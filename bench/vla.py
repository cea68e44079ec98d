"""Benchmark of the VLA action policy (issue 17): inference latency per action chunk on CPU (tiny and paper
configs, one thread, batch 1, the config's Euler steps), and the coarse subtasks' success over randomised
twin episodes: a tiny policy trained on twin demonstrations vs the scripted backend.

Run:  . scripts/env.sh && python bench/vla.py [--paper] [--checkpoint DIR --episodes N] [--out bench/results/vla.json]
No GPU here: every number is CPU. The machine's load average is recorded beside them (it was shared).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
from bench.provenance import commit  # noqa: E402  (the repository on the path: run as a script)


def batch_for(config, seed=0):
    """One observation of the config's shapes (random images and audio, a 12-token instruction)."""
    g = torch.Generator().manual_seed(seed)
    c = config
    return {
        "observation.images.main": torch.randn(1, 3, c.image_size, c.image_size, generator=g),
        "observation.images.wrist": torch.randn(1, c.n_wrist_views, 3, c.wrist_image_size, c.wrist_image_size,
                                                generator=g),
        "observation.wrist_mask": torch.ones(1, c.n_wrist_views, dtype=torch.bool),
        "observation.audio": torch.rand(1, 1, c.audio_frames, c.n_mels, generator=g),
        "observation.audio_mask": torch.ones(1, dtype=torch.bool),
        "observation.state": torch.randn(1, 14, generator=g),
        "text.input_ids": torch.randint(0, 256, (1, 12), generator=g),
        "text.attention_mask": torch.ones(1, 12, dtype=torch.long),
        "embodiment": torch.zeros(1, dtype=torch.long),
    }


def latency(config, reps: int) -> dict:
    from agentchemist.policy.vla.modeling_vla import VLAPolicy, count_parameters
    torch.manual_seed(0)
    model = VLAPolicy(config).eval()
    batch = batch_for(config)
    with torch.inference_mode():
        model.sample_actions(batch)  # warm-up
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            model.sample_actions(batch)
            times.append(time.perf_counter() - t0)
    med = float(np.median(times))
    return {"parameters": count_parameters(model), "ode_steps": config.ode_steps, "chunk_size": config.chunk_size,
            "reps": reps, "median_s_per_chunk": med, "chunks_per_s": 1.0 / med, "min_s": float(min(times))}


def success(checkpoint: str, episodes: int, seed: int) -> dict:
    from agentchemist.policy.vla.serve import VLARunner, VLAServeConfig
    from agentchemist.sim.vla_demos import SUBTASKS, random_scene, run_policy_in_twin, start_episode, subtask_succeeded
    runner = VLARunner(VLAServeConfig(checkpoint=checkpoint, max_duration_s=20.0))
    rng = np.random.default_rng(seed)
    out = {"scripted": {}, "vla": {}}
    for subtask in SUBTASKS:
        ok_s = ok_v = 0
        for n in range(episodes):
            scene = random_scene(rng, seed=seed * 1000 + n)
            expert = start_episode(scene, subtask)
            ok_s += bool(expert.run(subtask) and subtask_succeeded(expert, subtask))
            expert = start_episode(scene, subtask)
            report = run_policy_in_twin(runner.episode(runner.instruction(subtask, {}), expert.t), expert)
            ok_v += bool(report["success"] and subtask_succeeded(expert, subtask))
        out["scripted"][subtask] = ok_s / episodes
        out["vla"][subtask] = ok_v / episodes
    out["episodes_per_subtask"] = episodes
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--paper", action="store_true", help="also time the paper config (minutes on one core)")
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--checkpoint", help="a trained tiny checkpoint: also measure success in the twin")
    ap.add_argument("--train-summary", help="train_summary.json of that checkpoint (N demos, training time)")
    ap.add_argument("--episodes", type=int, default=20, help="randomised episodes per subtask")
    ap.add_argument("--seed", type=int, default=100)
    ap.add_argument("--no-latency", action="store_true", help="keep the latency numbers already in --out")
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "vla.json"))
    args = ap.parse_args()
    from agentchemist.policy.vla.configuration_vla import paper_config, tiny_config
    torch.set_num_threads(1)
    result = {"commit": commit(),
              "machine": f"{platform.machine()} {os.cpu_count()} cores, torch {torch.__version__}, no GPU",
              "load_average_before": os.getloadavg(), "threads": 1}
    if args.no_latency and Path(args.out).exists():
        old = json.loads(Path(args.out).read_text())
        result.update({k: old[k] for k in ("tiny", "paper", "latency_commit", "latency_load") if k in old})
    else:
        result["tiny"] = latency(tiny_config(), args.reps)
        result["latency_commit"], result["latency_load"] = result["commit"], os.getloadavg()
        print(json.dumps(result["tiny"]), flush=True)
    if args.paper and not args.no_latency:
        result["paper"] = latency(paper_config(), 3)
        print(json.dumps(result["paper"]), flush=True)
    if args.checkpoint:
        result["success"] = success(args.checkpoint, args.episodes, args.seed)
        if args.train_summary:
            result["success"]["training"] = json.loads(Path(args.train_summary).read_text())
        print(json.dumps(result["success"]), flush=True)
    result["load_average_after"] = os.getloadavg()
    Path(args.out).write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
