"""Training the VLA policy on a v3 demonstration dataset (``agentchemist policy train``).

Normalisation statistics come from the dataset (meta/stats.json) and travel in the checkpoint. AdamW with
weight decay 0.01 and a cosine learning rate; bf16 autocast where a CUDA GPU exists (not tried here: no GPU);
checkpoints are directories (config.json + model.safetensors, the LeRobot / transformers layout) with the
optimiser and step beside them in training_state.pt, so a run resumes where it stopped (``resume=True``).

The learning rate is a closed-form cosine over the run's total steps, recomputed from the step on resume: a
resume with a larger ``--steps`` continues down the longer cosine from where it stands instead of keeping the
first run's length (with the saved T_max the cosine came back up towards its peak past it). Whole episodes
are held out for validation (``val_fraction``); train_log.jsonl beside the checkpoints has one line every
``log_every`` steps with the mean training loss and learning rate, and the validation loss (fixed noise and
flow times, so successive values compare). ``augment`` shifts and colour-jitters the images (augment.py).
"""
from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from agentchemist.policy.vla.augment import augment_batch
from agentchemist.policy.vla.card import hardware, write_card
from agentchemist.policy.vla.configuration_vla import VLAConfig, preset
from agentchemist.policy.vla.dataset import ACTION, AUDIO, IMAGE_KEYS, STATE, Dataset
from agentchemist.policy.vla.modeling_vla import VLAPolicy
from agentchemist.policy.vla.processor_vla import VLAProcessor, collate

LAST = "last"
LOG_NAME = "train_log.jsonl"


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
    #: Share of the episodes held out for the validation loss (at least one when there are two or more).
    val_fraction: float = 0.1
    #: Steps between lines of train_log.jsonl (and validation losses).
    log_every: int = 50
    #: At most this many held-out frames per validation loss (a fixed, seeded subset).
    val_frames: int = 64
    #: Random image shifts (pixels, each way) and colour jitter while training; off unless asked.
    augment: bool = False
    augment_shift_px: int = 2
    augment_colour: float = 0.1


def episode_samples(ds: Dataset, config: VLAConfig, processor: VLAProcessor,
                    episodes: list[dict] | None = None) -> list[dict]:
    """One training sample per frame: the observation at the frame, the next ``chunk_size`` actions (padded
    with the episode's last action, flagged in action_is_pad) and the audio window ending at the frame."""
    out = []
    for ep in ds.episodes if episodes is None else episodes:
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


def split_episodes(episodes: list[dict], fraction: float, seed: int) -> tuple[list[dict], list[dict]]:
    """(train, validation): whole episodes, a seeded choice, so frames of one episode never sit on both sides."""
    n = len(episodes)
    k = 0 if n < 2 or fraction <= 0 else min(n - 1, max(1, int(round(n * fraction))))
    held = set(np.random.default_rng(seed).permutation(n)[:k].tolist())
    return [e for i, e in enumerate(episodes) if i not in held], [e for i, e in enumerate(episodes) if i in held]


def cosine_factor(step: int, total: int) -> float:
    """The learning rate's share of its peak at ``step`` of ``total`` (cosine to zero)."""
    return 0.5 * (1.0 + math.cos(math.pi * min(step, total) / max(total, 1)))


def validation_loss(model: VLAPolicy, samples: list[dict], device: torch.device, batch_size: int) -> float:
    """Mean flow-matching loss over ``samples`` with noise and flow times fixed by a seed (the same draw every
    call), so the value moves only with the weights."""
    gen = torch.Generator().manual_seed(1234)
    model.eval()
    total, n = 0.0, 0
    with torch.no_grad():
        for i in range(0, len(samples), batch_size):
            batch = {k: v.to(device) for k, v in collate(samples[i:i + batch_size]).items()}
            b = batch["action"].shape[0]
            noise = torch.randn(batch["action"].shape, generator=gen).to(device)
            t = (torch.rand(b, generator=gen) * 0.999 + 0.001).to(device)
            total += float(model(batch, noise=noise, t=t)) * b
            n += b
    model.train()
    return total / max(n, 1)


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
    train_eps, val_eps = split_episodes(ds.episodes, opt.val_fraction, opt.seed)
    samples = episode_samples(ds, config, processor, train_eps)
    val_all = episode_samples(ds, config, processor, val_eps) if val_eps else []
    pick_val = np.random.default_rng(opt.seed).permutation(len(val_all))[:opt.val_frames]
    val_samples = [val_all[i] for i in sorted(pick_val)]
    device = _device(opt.device)
    model.to(device).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=opt.lr, weight_decay=opt.weight_decay)
    start = 0
    if state is not None:
        optimizer.load_state_dict(state["optimizer"])
        start = int(state["step"])
        torch.set_rng_state(state["rng"])
    for group in optimizer.param_groups:  # the peak is this run's --lr (LambdaLR scales initial_lr)
        group["initial_lr"] = opt.lr
    total = max(opt.steps, 1)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: cosine_factor(s, total), last_epoch=start - 1)
    bf16 = device.type == "cuda" and torch.cuda.is_bf16_supported()
    gen = np.random.default_rng(opt.seed + start)
    aug_gen = torch.Generator().manual_seed(opt.seed + start)
    losses, t0 = [], time.perf_counter()
    log_path = out / LOG_NAME
    out.mkdir(parents=True, exist_ok=True)
    if not resume and log_path.exists():
        log_path.unlink()
    window: list[float] = []

    def write_log(record: dict) -> None:
        with log_path.open("a") as fh:
            fh.write(json.dumps(record) + "\n")

    def save(step: int) -> Path:
        for target in (out / "checkpoints" / f"step-{step:06d}", last):
            model.save_pretrained(target)
            torch.save({"optimizer": optimizer.state_dict(), "step": step, "total_steps": total,
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
            if opt.augment:
                batch = augment_batch(batch, aug_gen, opt.augment_shift_px, opt.augment_colour)
            lr = optimizer.param_groups[0]["lr"]
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
                loss = model(batch)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            losses.append(float(loss.detach()))
            window.append(losses[-1])
            if (step + 1) % max(opt.log_every, 1) == 0 or step + 1 == opt.steps:
                write_log({"kind": "train", "step": step + 1, "loss": float(np.mean(window)), "lr": lr,
                           "seconds": round(time.perf_counter() - t0, 2)})
                window = []
                if val_samples:
                    write_log({"kind": "val", "step": step + 1, "frames": len(val_samples),
                               "loss": validation_loss(model, val_samples, device, opt.batch_size)})
            bar.update(task, advance=1, loss=f"{np.mean(losses[-20:]):.4f}")
            if (step + 1) % opt.save_every == 0 and step + 1 < opt.steps:
                save(step + 1)
    path = save(opt.steps)
    vals = [json.loads(line) for line in log_path.read_text().splitlines()] if log_path.exists() else []
    vals = [r["loss"] for r in vals if r["kind"] == "val"]
    summary = {"steps": opt.steps, "resumed_from": start, "frames": len(samples), "episodes": len(ds.episodes),
               "val_episodes": [int(e["episode_index"]) for e in val_eps], "val_frames": len(val_samples),
               "last_val_loss": vals[-1] if vals else None, "augment": opt.augment, "log": str(log_path),
               "first_loss": losses[0] if losses else None, "last_loss": float(np.mean(losses[-20:])) if losses else None,
               "seconds": round(time.perf_counter() - t0, 1), "device": str(device), "bf16": bf16,
               "checkpoint": str(path), "config": config.name}
    (out / "train_summary.json").write_text(json.dumps(summary, indent=2))
    training = {**summary, "dataset": str(dataset_dir), "tasks": list(config.tasks), "batch_size": opt.batch_size,
                "lr": opt.lr, "hardware": hardware()}
    for target in (last, out / "checkpoints" / f"step-{opt.steps:06d}"):
        write_card(target, training=training)
    return summary
