"""Serving the VLA policy: the action_policy node's `vla` backend, without ROS.

`VLARunner` loads a checkpoint (config.json + model.safetensors) and checks a subtask against what the
policy was trained on; `VLAEpisode` runs one subtask at the control rate: each tick it takes the latest
observations (refusing missing or stale ones), samples an action chunk every ``query_every`` ticks, blends
every chunk that covers the tick with ACT's temporal ensembling (weights exp(-m * i), the oldest chunk
i = 0), and turns the blend into a 14-joint command clamped to the bench's position limits
(agentchemist.workcell.robot) and to the URDF's velocity limits from the previous command. A non-finite chunk,
or one beyond a limit by more than a margin (rad for the arm joints, m for the gripper openings: garbage
model output), aborts the subtask; the caller then holds the arms where they are.

Why a query samples several chunks and keeps the medoid: a flow-matching sampler is a monotone transport
from noise to actions, so zero noise gives the target's *median*, not its mode. Where the demonstrations
are bimodal (at the bottle, a half-closed gripper is followed by "squeeze" in half the frames and "release"
in the other half) the median is a chunk between the two, a gripper that neither squeezes nor releases.
``samples`` chunks from fixed seeded noises land in the modes; the one with the least summed distance to
the others (in the action's normalised units) lies in the most populated mode and is a whole chunk the
flow produced, never an average. The subtask is done when the command has settled and the measured joints
have reached it; it aborts when that does not happen within ``max_duration_s``.
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

import numpy as np
import torch

from agentchemist.workcell.robot import ARM_JOINT_LIMITS_RAD, GRIPPER_RANGE_M, JOINT_NAMES
from agentchemist.policy.vla.serve_config import VLAServeConfig
from agentchemist.paths import config_dir
from agentchemist.policy.primitives import ALIASES, _grasp_object
from agentchemist.policy.vla.configuration_vla import VLAConfigError
from agentchemist.policy.vla.modeling_vla import VLAInputError, VLAPolicy
from agentchemist.policy.vla.processor_vla import ObservationError, VLAProcessor, instruction_text
from agentchemist.policy.vla.success import condition_for

LOWER = np.array([*(lo for lo, _ in ARM_JOINT_LIMITS_RAD), GRIPPER_RANGE_M[0]] * 2)
UPPER = np.array([*(hi for _, hi in ARM_JOINT_LIMITS_RAD), GRIPPER_RANGE_M[1]] * 2)
GRIPPERS = np.array([False] * 6 + [True] + [False] * 6 + [True])
#: Fallback joint speed limits (the checked-in URDF's: 3 rad/s arm joints, 0.05 m/s gripper opening).
DEFAULT_VMAX = ([3.0] * 6 + [0.05]) * 2


class PolicyRefused(ValueError):
    """The subtask cannot start (unknown subtask, no usable checkpoint, missing observations)."""


class PolicyAbort(RuntimeError):
    """The subtask stops: garbage model output, stale observations, no completion in time."""


def urdf_velocity_limits(path=None) -> np.ndarray:
    """Velocity limits of the 14 joints in JOINT_NAMES order, from the URDF (rad/s, m/s for grippers)."""
    path = path or config_dir().parent / "urdf" / "agentchemist_aloha.urdf"
    try:
        root = ET.parse(path).getroot()
        limits = {j.get("name"): float(j.find("limit").get("velocity")) for j in root.iter("joint")
                  if j.find("limit") is not None and j.find("limit").get("velocity")}
        return np.array([limits[n] for n in JOINT_NAMES])
    except (OSError, ET.ParseError, KeyError, TypeError, ValueError):
        return np.array(DEFAULT_VMAX, dtype=float)


@dataclass
class Observation:
    """The latest of each input, with its stamp (s, the caller's clock). None: never received."""
    front: np.ndarray | None = None
    wrists: list = field(default_factory=lambda: [None, None])
    audio: np.ndarray | None = None        #: mono samples, the last audio window or more
    audio_rate: int = 0
    state: np.ndarray | None = None        #: 14 joints, JOINT_NAMES order
    stamps: dict = field(default_factory=dict)


def subtask_instruction(primitive: str, parameters: dict | None) -> str:
    """The plan's primitive as the instruction text the policy reads: the scripted backend's names (the
    plan's "grasp" of a pipette is grasp_pipette, "move_to" without an object is position_over_beaker),
    with the parameters that still say something (not the object or arm)."""
    p = dict(parameters or {})
    name = primitive
    if primitive == "grasp" and p.get("object"):
        name = _grasp_object(str(p["object"])) or primitive
    elif not (primitive in ("place", "move_to") and p.get("object")):
        name = ALIASES.get(primitive, primitive)
    rest = {k: v for k, v in p.items() if k not in ("object", "side")} if name != primitive else p
    return instruction_text(name, rest)


class VLARunner:
    def __init__(self, cfg: VLAServeConfig, vmax: np.ndarray | None = None):
        if not cfg.checkpoint:
            raise PolicyRefused("no VLA checkpoint given (checkpoint:=DIR)")
        try:
            self.model = VLAPolicy.from_pretrained(cfg.checkpoint)
        except VLAConfigError as exc:
            raise PolicyRefused(f"VLA checkpoint refused: {exc}") from None
        self.cfg = cfg
        self.config = self.model.config
        self.processor = VLAProcessor(self.config)
        self.dt = 1.0 / self.config.control_rate_hz
        self.vmax = urdf_velocity_limits() if vmax is None else np.asarray(vmax, float)
        self.tasks = tuple(getattr(self.config, "tasks", ()) or ())
        c = self.config
        k = max(1, int(cfg.samples))
        # Fixed noises (seeded) when deterministic: the same observation gives the same chunk; with one
        # sample that is zero noise (the median; see the module's note).
        self.noise = None
        if cfg.deterministic:
            gen = torch.Generator().manual_seed(0)
            self.noise = torch.zeros(1, c.chunk_size, c.n_joints) if k == 1 else \
                torch.randn(k, c.chunk_size, c.n_joints, generator=gen)

    def sample(self, batch: dict) -> np.ndarray:
        """One action chunk (chunk, 14) for a batch of one: ``samples`` candidates in one batch, the medoid."""
        c = self.config
        noise = self.noise if self.noise is not None else \
            torch.randn(max(1, int(self.cfg.samples)), c.chunk_size, c.n_joints)
        with torch.inference_mode():
            chunks = self.model.sample_actions(batch, steps=self.cfg.ode_steps or None, noise=noise)
        return medoid(chunks.numpy(), self.model.action_std.numpy())

    def instruction(self, primitive: str, parameters: dict | None) -> str:
        """The plan's subtask as its instruction (subtask_instruction), refused unless trained on."""
        text = subtask_instruction(primitive, parameters)
        if self.tasks and text not in self.tasks:
            raise PolicyRefused(f"subtask '{text}' is not one the VLA policy was trained on "
                                f"(known: {', '.join(self.tasks)})")
        return text

    def episode(self, instruction: str, now: float) -> "VLAEpisode":
        return VLAEpisode(self, instruction, now)


def medoid(chunks: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """The candidate (K, chunk, 14) with the least summed distance to the others, distances in units of
    ``scale`` per joint (the action's std: metres of gripper and radians of arm weigh alike)."""
    if len(chunks) == 1:
        return chunks[0]
    flat = (chunks / np.maximum(np.asarray(scale, float), 1e-6)).reshape(len(chunks), -1)
    d = np.sqrt(((flat[:, None] - flat[None]) ** 2).sum(-1))
    return chunks[int(np.argmin(d.sum(1)))]


class VLAEpisode:
    def __init__(self, runner: VLARunner, instruction: str, now: float):
        self.r, self.text, self.start = runner, instruction, now
        self.tick = 0
        self.chunks: list[tuple[int, np.ndarray]] = []
        self.command: np.ndarray | None = None
        self.recent: list[tuple[float, np.ndarray]] = []
        self.queries = 0
        self.max_clamp = 0.0
        self.done = False
        self.condition = condition_for(instruction, runner.cfg)

    def _inputs(self, obs: Observation, now: float) -> dict:
        c = self.r.config
        missing = [k for k, v in (("front camera", obs.front), ("joint states", obs.state),
                                  ("left wrist camera", obs.wrists[0]), ("right wrist camera", obs.wrists[1]),
                                  ("contact audio", obs.audio)) if v is None]
        stale = [k for k, t in obs.stamps.items() if now - t > self.r.cfg.observation_max_age_s]
        if missing or stale:
            raise PolicyAbort("missing observations: " + ", ".join(missing + [f"{k} (stale)" for k in stale]))
        audio = np.asarray(obs.audio, np.float32)
        if obs.audio_rate and obs.audio_rate != c.audio_sample_rate:
            from scipy.signal import resample_poly
            g = math.gcd(int(obs.audio_rate), int(c.audio_sample_rate))
            audio = resample_poly(audio, c.audio_sample_rate // g, int(obs.audio_rate) // g).astype(np.float32)
        try:
            return self.r.processor.observation(obs.front, obs.wrists, audio, obs.state, self.text)
        except ObservationError as exc:
            raise PolicyAbort(f"bad observation: {exc}") from None

    def _check_chunk(self, chunk: np.ndarray) -> None:
        if not np.isfinite(chunk).all():
            raise PolicyAbort("the VLA model's output is not finite (NaN/inf): the arms hold")
        m = np.where(GRIPPERS, self.r.cfg.output_margin_gripper_m, self.r.cfg.output_margin)
        beyond = (chunk < LOWER - m) | (chunk > UPPER + m)
        if beyond.any():
            k, j = np.argwhere(beyond)[0]
            raise PolicyAbort(f"the VLA model's output is out of limits: {JOINT_NAMES[j]} = {chunk[k, j]:.3f} "
                              f"(limits {LOWER[j]:.3f}..{UPPER[j]:.3f}): the arms hold")

    def step(self, obs: Observation, now: float) -> np.ndarray:
        """The 14-joint command for this tick (limits applied); PolicyAbort to stop."""
        if now - self.start > self.r.cfg.max_duration_s:
            raise PolicyAbort(f"the VLA policy did not complete '{self.text}' within {self.r.cfg.max_duration_s:.0f} s")
        state = None if obs.state is None else np.asarray(obs.state, float)
        self.condition.update(state)
        if self.tick % self.r.cfg.query_every == 0 or not self.chunks:
            batch = self._inputs(obs, now)
            try:
                chunk = self.r.sample(batch)
            except VLAInputError as exc:
                raise PolicyAbort(f"bad observation: {exc}") from None
            self._check_chunk(chunk)
            self.chunks.append((self.tick, chunk.astype(float)))
            self.queries += 1
        n = self.r.config.chunk_size
        self.chunks = [(s, ch) for s, ch in self.chunks if self.tick - s < n]
        preds = np.stack([ch[self.tick - s] for s, ch in self.chunks])  # oldest first
        w = np.exp(-self.r.cfg.ensemble_decay * np.arange(len(preds)))
        target = (w[:, None] * preds).sum(0) / w.sum()
        prev = self.command if self.command is not None else state
        clamped = np.clip(target, LOWER, UPPER)
        if prev is not None:
            step = self.r.vmax * self.r.dt
            clamped = prev + np.clip(clamped - prev, -step, step)
        self.max_clamp = max(self.max_clamp, float(np.abs(clamped - target).max()))
        self.command = clamped
        self.tick += 1
        self.recent = [(t, c) for t, c in self.recent if now - t <= self.r.cfg.settle_s + 1e-9] + [(now, clamped)]
        span = now - self.recent[0][0]
        cfg = self.r.cfg
        settle = np.where(GRIPPERS, cfg.settle_m, cfg.settle_rad)
        reached = np.where(GRIPPERS, 2 * cfg.settle_m, cfg.reached_rad)
        still = all(np.all(np.abs(c - clamped) <= settle) for _, c in self.recent)
        if (self.condition.met and span >= cfg.settle_s - 1e-9 and still and state is not None
                and np.all(np.abs(state - clamped) <= reached)):
            self.done = True
        return clamped

    def report(self, now: float, success: bool) -> dict:
        return {"success": bool(success), "duration_s": round(now - self.start, 3), "instruction": self.text,
                "ticks": self.tick, "chunks": self.queries, "ode_steps": self.r.cfg.ode_steps or self.r.config.ode_steps,
                "control_rate_hz": self.r.config.control_rate_hz, "max_clamp": round(self.max_clamp, 4),
                "condition": self.condition.progress()}
