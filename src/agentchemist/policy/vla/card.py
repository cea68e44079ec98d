"""The policy card beside a checkpoint: what it was trained on, how long, on what, and how it scored.

``policy_card.json`` (machine-readable, merged section by section: training writes ``training``, each
``policy eval`` writes ``evaluation``) and ``POLICY_CARD.md`` rendered from it, in the checkpoint directory,
so the numbers travel with the weights they describe.
"""
from __future__ import annotations

import json
import os
import platform
from pathlib import Path

CARD_JSON = "policy_card.json"
CARD_MD = "POLICY_CARD.md"


def hardware() -> dict:
    """What this process runs on (CPU, cores, torch and its threads, a CUDA device if any, the load)."""
    import torch
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    return {"machine": platform.machine(), "cpu_count": os.cpu_count(), "platform": platform.platform(),
            "python": platform.python_version(), "torch": torch.__version__, "torch_threads": torch.get_num_threads(),
            "gpu": gpu, "load_average": [round(x, 2) for x in os.getloadavg()]}


def read_card(directory: str | Path) -> dict:
    path = Path(directory) / CARD_JSON
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return {}


def write_card(directory: str | Path, **sections) -> Path:
    """Merge ``sections`` (training=..., evaluation=...) into the card in ``directory``; render the markdown."""
    directory = Path(directory)
    card = read_card(directory)
    card.update({k: v for k, v in sections.items() if v is not None})
    (directory / CARD_JSON).write_text(json.dumps(card, indent=2) + "\n")
    (directory / CARD_MD).write_text(render(card))
    return directory / CARD_MD


def render(card: dict) -> str:
    lines = ["# VLA policy card", ""]
    t = card.get("training")
    if t:
        hw = t.get("hardware", {})
        lines += ["## Training", "",
                  f"- config: {t.get('config')}; steps {t.get('steps')} (resumed from {t.get('resumed_from')}), "
                  f"batch {t.get('batch_size')}, peak lr {t.get('lr')}, augmentation {'on' if t.get('augment') else 'off'}",
                  f"- data: {t.get('dataset')}: {t.get('episodes')} episodes, {t.get('frames')} training frames, "
                  f"validation episodes {t.get('val_episodes')}",
                  f"- tasks: {', '.join(t.get('tasks', [])) or '-'}",
                  f"- loss: first {t.get('first_loss')}, last {t.get('last_loss')}, last validation {t.get('last_val_loss')}",
                  f"- wall time: {t.get('seconds')} s on {t.get('device')} (bf16 {t.get('bf16')})",
                  f"- hardware: {hw.get('machine')} {hw.get('cpu_count')} cores, torch {hw.get('torch')} "
                  f"({hw.get('torch_threads')} threads), GPU {hw.get('gpu') or 'none'}, load {hw.get('load_average')}",
                  ""]
    e = card.get("evaluation")
    if e:
        lines += ["## Evaluation", "",
                  f"{e.get('episodes_per_subtask')} randomised twin episodes per subtask, seeds from {e.get('seed')}, "
                  f"commit {e.get('commit')}, {e.get('machine')}, load {e.get('load_average')}", "",
                  "| subtask | successes | rate | Wilson 95 % |", "|---|---|---|---|"]
        for name, r in e.get("subtasks", {}).items():
            lo, hi = r["wilson95"]
            lines.append(f"| {name} | {r['successes']}/{r['episodes']} | {r['rate']:.2f} | {lo:.2f}..{hi:.2f} |")
        lines.append("")
    return "\n".join(lines)
