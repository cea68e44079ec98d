"""Per-drop fusion of the dispensed volume: each drop heard by the audio channel is fused with the
statistical channel's latest cumulative estimate (displacement x k), through `fuse` and its gates.

Gated windows. A supervisor can mark a window in which one channel cannot be trusted at all (the audio
supervisor's ``audio_noise``: the microphone was deafened from the noise's onset to its end). Inside
the window that channel's estimates get confidence 0 (a halt failure spanning the window), and since
the audio channel is the one that paces the per-drop records, the statistical channel carries the
volume there: each drop volume its cumulative value crosses inside the window makes a record, unless
a drop heard in the window already made one. A window opened late (the anomaly arrives after the
noise began) takes in the statistical estimates and audio records stamped since its start.

Kept apart from the recorder node so that replay tests and benchmarks run the same pairing rule.
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

from agentchemist.record.fusion import ChannelEstimate, Failure, FusionConfig, FusionResult, fuse

#: FSM states in which dispensing is happening (gate 1: a quantity reported outside them is impossible).
ACTIVE_STATES = frozenset({"ready", "titrating", "waiting_ph"})


@dataclass
class _Gate:
    channel: str
    kind: str
    start: float
    end: float = math.inf
    crossings: int = 0   #: drop volumes the statistical channel crossed inside the window
    records: int = 0     #: records made inside the window (heard drops and carried ones)

    def covers(self, stamp: float) -> bool:
        return self.start <= stamp <= self.end


class VolumeFuser:
    def __init__(self, config: FusionConfig = FusionConfig(), failure_memory: int = 64,
                 drop_volume_ml: float = 0.046875, history_s: float = 30.0):
        self.config = config
        self.statistical: ChannelEstimate | None = None
        self.audio: ChannelEstimate | None = None
        self.failures: list[Failure] = []
        self.gates: list[_Gate] = []
        self.drop_volume_ml = drop_volume_ml   #: updated from the audio channel's per-drop increments
        self._memory = failure_memory
        self._history_s = history_s
        self._recent_stat: deque[ChannelEstimate] = deque()
        self._recent_audio: deque[float] = deque()   #: stamps of the audio drops that made records

    def add_statistical(self, value_ml: float, confidence: float, stamp: float, delta: float = 0.0,
                        fsm_state: str = "titrating") -> list[tuple[float, FusionResult]]:
        """The statistical channel's cumulative estimate; inside an audio gate, the records it carries
        (stamp, fused result)."""
        previous = self.statistical
        self.statistical = ChannelEstimate("statistical", value_ml, confidence, stamp, delta)
        self._remember(self._recent_stat, self.statistical, stamp)
        gate = self._open_gate_at("audio", stamp)
        return [] if gate is None else self._carry(gate, previous, self.statistical, fsm_state)

    def add_failure(self, stamp: float, kind: str, severity: str, channel: str | None = None) -> None:
        self.failures.append(Failure(stamp, kind, severity, channel))
        del self.failures[:-self._memory]

    def open_gate(self, channel: str, start: float, kind: str,
                  fsm_state: str = "titrating") -> list[tuple[float, FusionResult]]:
        """`channel` cannot be trusted from `start` on (until close_gate); returns the records the
        statistical channel carries for what already arrived inside the window (stamp, fused result)."""
        if any(g.channel == channel and g.end == math.inf for g in self.gates):
            return []
        gate = _Gate(channel, kind, start)
        self.gates.append(gate)
        del self.gates[:-self._memory]
        if channel != "audio":
            return []
        gate.records = sum(1 for t in self._recent_audio if t >= start)
        out: list[tuple[float, FusionResult]] = []
        previous = None
        for est in self._recent_stat:
            if est.stamp >= start:
                out += self._carry(gate, previous, est, fsm_state)
            previous = est
        return out

    def close_gate(self, channel: str, end: float) -> None:
        for gate in self.gates:
            if gate.channel == channel and gate.end == math.inf:
                gate.end = max(end, gate.start)

    def fuse_drop(self, audio_total_ml: float, confidence: float, stamp: float, delta: float,
                  fsm_state: str) -> FusionResult:
        self.audio = ChannelEstimate("audio", audio_total_ml, confidence, stamp, delta)
        if math.isfinite(delta) and delta > 0:
            self.drop_volume_ml = delta
        self._remember(self._recent_audio, stamp, stamp)
        gate = self._open_gate_at("audio", stamp)
        if gate is not None:
            gate.records += 1
        estimates = [self.audio]
        if self.statistical is not None:
            estimates.append(self.statistical)
        return self._fuse(estimates, fsm_state, stamp)

    # ------------------------------------------------------------------ internals
    def _fuse(self, estimates: list[ChannelEstimate], fsm_state: str, now: float) -> FusionResult:
        windows = [Failure(g.start, g.kind, "halt", g.channel, g.end) for g in self.gates]
        return fuse(estimates, operation_active=fsm_state in ACTIVE_STATES, failures=[*self.failures, *windows],
                    now=now, config=self.config)

    def _carry(self, gate: _Gate, previous: ChannelEstimate | None, est: ChannelEstimate,
               fsm_state: str) -> list[tuple[float, FusionResult]]:
        drop = self.drop_volume_ml
        before = previous.value if previous is not None and previous.value <= est.value else 0.0  # a new goal restarts at 0
        gate.crossings += max(0, math.floor(est.value / drop + 1e-9) - math.floor(before / drop + 1e-9))
        out = []
        while gate.records < gate.crossings:
            gate.records += 1
            # The audio channel is listed with its total as it stands now (gated to 0 inside the window),
            # so that the record shows it and why it does not count.
            estimates = [est] if self.audio is None else [
                ChannelEstimate("audio", self.audio.value, self.audio.confidence, est.stamp, 0.0), est]
            out.append((est.stamp, self._fuse(estimates, fsm_state, est.stamp)))
        return out

    def _open_gate_at(self, channel: str, stamp: float) -> _Gate | None:
        return next((g for g in reversed(self.gates) if g.channel == channel and g.covers(stamp)), None)

    def _remember(self, queue: deque, item, stamp: float) -> None:
        queue.append(item)
        while queue and (stamp - (queue[0].stamp if isinstance(queue[0], ChannelEstimate) else queue[0])
                         > self._history_s):
            queue.popleft()
