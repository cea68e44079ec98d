"""Demonstrations from a real robot: leader-arm teleoperation streams -> v3 dataset frames.

On the robot, the operator moves two leader arms; their joint positions are the action, the follower arms'
measured joints the state, the cameras and the contact microphone the observations (topics: the leader arms'
JointState, /joint_states, the three image topics, the right gripper's audio). A ROS-side recorder feeds
each message here with its stamp (`add`); `frames` samples every stream at the control rate (the latest
value at or before each tick, audio as the samples within the tick) from the first tick where every
stream has a value. Nothing here talks to ROS: the node that subscribes is thin (not written yet).
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field

import numpy as np

from agentchemist.policy.vla.dataset import ACTION, AUDIO, IMAGE_KEYS, STATE, DatasetError

STREAMS = (*IMAGE_KEYS, STATE, ACTION)


@dataclass
class TeleopEpisode:
    fps: int
    sample_rate: int
    _t: dict[str, list[float]] = field(default_factory=lambda: {k: [] for k in STREAMS})
    _v: dict[str, list] = field(default_factory=lambda: {k: [] for k in STREAMS})
    _audio: list[tuple[float, np.ndarray]] = field(default_factory=list)

    def add(self, key: str, stamp_s: float, value) -> None:
        """A message of stream ``key`` (an image, the 14 follower joints, the 14 leader joints) at its stamp."""
        if key not in self._t:
            raise DatasetError(f"unknown stream {key!r} (known: {', '.join(STREAMS)})")
        if self._t[key] and stamp_s < self._t[key][-1]:
            raise DatasetError(f"{key}: stamps go back in time ({stamp_s} after {self._t[key][-1]})")
        if key in (STATE, ACTION):
            value = np.asarray(value, np.float32)
            if value.shape != (14,) or not np.isfinite(value).all():
                raise DatasetError(f"{key} must be 14 finite joint values")
        self._t[key].append(float(stamp_s))
        self._v[key].append(value)

    def add_audio(self, stamp_s: float, samples) -> None:
        """A block of microphone samples whose first sample is at ``stamp_s``."""
        self._audio.append((float(stamp_s), np.asarray(samples, np.float32).reshape(-1)))

    def _latest(self, key: str, t: float):
        i = bisect.bisect_right(self._t[key], t) - 1
        return None if i < 0 else self._v[key][i]

    def _audio_between(self, t0: float, n: int) -> np.ndarray:
        out = np.zeros(n, np.float32)
        for start, block in self._audio:
            lo = int(round((start - t0) * self.sample_rate))
            a, b = max(lo, 0), min(lo + block.size, n)
            if a < b:
                out[a:b] = block[a - lo:b - lo]
        return out

    def frames(self) -> list[dict]:
        if any(not self._t[k] for k in STREAMS):
            missing = [k for k in STREAMS if not self._t[k]]
            raise DatasetError(f"no messages on {', '.join(missing)}")
        t = max(ts[0] for ts in self._t.values())
        end = min(ts[-1] for ts in self._t.values())
        dt, n = 1.0 / self.fps, self.sample_rate // self.fps
        out = []
        while t <= end + 1e-9:
            frame = {k: self._latest(k, t) for k in STREAMS}
            frame[AUDIO] = self._audio_between(t - dt, n)
            out.append(frame)
            t += dt
        return out
