"""Training-time image augmentation for the VLA policy (``policy train --augment``).

Small random shifts (replicate-padded, then cropped back: the labware moves by a few pixels, as it does
between scenes) and per-image colour jitter (brightness and contrast), applied to the processor's already
normalised image tensors, so the same code serves every encoder's normalisation. Twin renders are otherwise
pixel-identical from one episode to the next; without this a policy can key on exact pixel values.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

IMAGE_KEYS = ("observation.images.main", "observation.images.wrist")


def shift_images(x: Tensor, max_shift: int, gen: torch.Generator) -> Tensor:
    """Each image (N, C, H, W) moved by up to ``max_shift`` pixels in x and y, edges replicated."""
    if max_shift <= 0:
        return x
    n, _, h, w = x.shape
    padded = F.pad(x, (max_shift,) * 4, mode="replicate")
    dx = torch.randint(0, 2 * max_shift + 1, (n,), generator=gen).tolist()
    dy = torch.randint(0, 2 * max_shift + 1, (n,), generator=gen).tolist()
    return torch.stack([padded[i, :, dy[i]:dy[i] + h, dx[i]:dx[i] + w] for i in range(n)])


def jitter_colour(x: Tensor, strength: float, gen: torch.Generator) -> Tensor:
    """Brightness (an offset) and contrast (a gain about the image's mean) of each image (N, C, H, W), drawn
    uniformly within +-strength. In normalised units: about strength x the encoder's std of a pixel."""
    if strength <= 0:
        return x
    n = x.shape[0]
    gain = 1.0 + (torch.rand(n, 1, 1, 1, generator=gen) * 2 - 1) * strength
    offset = (torch.rand(n, 1, 1, 1, generator=gen) * 2 - 1) * strength
    mean = x.mean(dim=(1, 2, 3), keepdim=True)
    return (x - mean) * gain.to(x) + mean + offset.to(x)


def augment_batch(batch: dict, gen: torch.Generator, max_shift: int = 2, colour: float = 0.1) -> dict:
    """A copy of ``batch`` with its main and wrist images shifted and colour-jittered (masks, state and
    actions untouched)."""
    out = dict(batch)
    for key in IMAGE_KEYS:
        x = batch[key]
        flat = x.reshape(-1, *x.shape[-3:])
        out[key] = jitter_colour(shift_images(flat, max_shift, gen), colour, gen).reshape(x.shape)
    return out
