"""Training the VLA policy on a v3 demonstration dataset (``agentchemist policy train``).

Normalisation statistics come from the dataset (meta/stats.json) and travel in the checkpoint. AdamW with
weight decay 0.01 and a cosine learning rate; bf16 autocast where a CUDA GPU exists (not tried here: no GPU);
checkpoints are directories (config.json + model.safetensors, the LeRobot / transformers layout) with the
optimiser and step beside them in training_state.pt, so a run resumes where it stopped (``resume=True``).
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from agentchemist.policy.vla.configuration_vla import VLAConfig, preset
from agentchemist.policy.vla.dataset import ACTION, AUDIO, IMAGE_KEYS, STATE, Dataset
from agentchemist.policy.vla.modeling_vla import VLAPolicy
from agentchemist.policy.vla.processor_vla import VLAProcessor, collate

LAST = "last"


@dataclass
class TrainOptions:
    steps: int = 2000
    batch_size: int = 16
    lr: float = 1e-3
    weight_decay: float = 0.01
    save_every: int = 500
    seed: int = 0
    device: str = "auto"
    progress: bool = True
    #: CPU threads for torch (0: torch's default). One is fastest on a shared, loaded machine.
    threads: int = 0


def episode_samples(ds: Dataset, config: VLAConfig, processor: VLAProcessor) -> list[dict]:
    """One training sample per frame: the observation at the frame, the next ``chunk_size`` actions (padded
    with the episode's last action, flagged in action_is_pad) and the audio window ending at the frame."""
    out = []
    for ep in ds.episodes:
        lo, hi = ep["dataset_from_index"], ep["dataset_to_index"]
        frames = [ds.frame(i) for i in range(lo, hi)]
        actions = np.stack([f[ACTION] for f in frames])
        audio = np.concatenate([f[AUDIO] for f in frames])
        per = frames[0][AUDIO].size
        for k, f in enumerate(frames):
            window = audio[max(0, (k + 1) * per - config.audio_samples):(k + 1) * per]
            item = processor.observation(f[IMAGE_KEYS[0]], [f[IMAGE_KEYS[1]], f[IMAGE_KEYS[2]]], window,
                                         f[STATE], f["task"])
            idx = np.arange(k, k + config.chunk_size)
            item["action"] = torch.from_numpy(actions[np.minimum(idx, len(frames) - 1)])[None]
            item["action_is_pad"] = torch.from_numpy(idx >= len(frames))[None]
            out.append(item)
    return out


def _device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def train(dataset_dir: str | Path, out_dir: str | Path, config: VLAConfig | str = "tiny",
          options: TrainOptions | None = None, resume: bool = False, log=print) -> dict:
    """Train (or resume) and return a summary: steps, first/last loss, seconds, checkpoint path."""
    opt = options or TrainOptions()
    out = Path(out_dir)
    last = out / "checkpoints" / LAST
    torch.manual_seed(opt.seed)
    if opt.threads:
        torch.set_num_threads(opt.threads)
    if resume and (last / "training_state.pt").is_file():
        model = VLAPolicy.from_pretrained(last)
        config = model.config
        state = torch.load(last / "training_state.pt", weights_only=True)
    else:
        config = preset(config) if isinstance(config, str) else config
        model, state = None, None
    ds = Dataset(dataset_dir)
    if model is None:
        config.tasks = tuple(sorted(set(config.tasks) | set(ds.tasks.values())))
        model = VLAPolicy(config)
    if state is None:
        model.set_stats(ds.stats)
    processor = VLAProcessor(config)
    samples = episode_samples(ds, config, processor)
    device = _device(opt.device)
    model.to(device).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=opt.lr, weight_decay=opt.weight_decay)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, max(opt.steps, 1))
    start = 0
    if state is not None:
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        start = int(state["step"])
        torch.set_rng_state(state["rng"])
    bf16 = device.type == "cuda" and torch.cuda.is_bf16_supported()
    gen = np.random.default_rng(opt.seed + start)
    losses, t0 = [], time.perf_counter()

    def save(step: int) -> Path:
        for target in (out / "checkpoints" / f"step-{step:06d}", last):
            model.save_pretrained(target)
            torch.save({"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(), "step": step,
                        "rng": torch.get_rng_state()}, target / "training_state.pt")
        return last

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
    columns = (TextColumn("training"), BarColumn(), MofNCompleteColumn(), TextColumn("loss {task.fields[loss]}"),
               TimeRemainingColumn())
    with Progress(*columns, disable=not opt.progress, transient=False) as bar:
        task = bar.add_task("train", total=opt.steps, completed=start, loss="-")
        for step in range(start, opt.steps):
            pick = gen.choice(len(samples), size=min(opt.batch_size, len(samples)), replace=False)
            batch = {k: v.to(device) for k, v in collate([samples[i] for i in pick]).items()}
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
                loss = model(batch)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            losses.append(float(loss.detach()))
            bar.update(task, advance=1, loss=f"{np.mean(losses[-20:]):.4f}")
            if (step + 1) % opt.save_every == 0 and step + 1 < opt.steps:
                save(step + 1)
    path = save(opt.steps)
    summary = {"steps": opt.steps, "resumed_from": start, "frames": len(samples), "episodes": len(ds.episodes),
               "first_loss": losses[0] if losses else None, "last_loss": float(np.mean(losses[-20:])) if losses else None,
               "seconds": round(time.perf_counter() - t0, 1), "device": str(device), "bf16": bf16,
               "checkpoint": str(path), "config": config.name}
    (out / "train_summary.json").write_text(json.dumps(summary, indent=2))
    return summary
