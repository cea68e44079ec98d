"""Per-drop fusion of the dispensed volume: each drop heard by the audio channel is fused with the
statistical channel's cumulative estimate (displacement x k), through `fuse` and its gates.

What each channel says about the volume after the drop just heard:

- Audio: the volume recorded so far plus the drop it heard (its calibrated volume). It counts drops
  exactly, but what a drop holds depends on how fast the bulb is squeezed (a drop takes what flows in
  while its neck pinches off) and the calibration knows one rate, to a few tenths of a percent: its own
  running total (count x calibrated drop) drifts with the count (about -0.1 mL after 500 drops of the
  HCl/NaOH example, +0.3 mL after 1200). Summed onto the record instead, that error is one drop's and the
  statistical channel's weight pulls the record back every drop, so it never accumulates.
- Statistical: its latest cumulative estimate, brought to this drop. The dispenser reports each time its
  Q_stat crosses another drop volume, at a moment unrelated to when drops fall, so the estimate holds
  the drops that had left the tip by its stamp plus the drop forming on the tip then (0 to 1 drop). A
  drop heard landing after the estimate's stamp (less the fall from the tip, ``drop_fall_s``) was still
  forming or not begun: the first such drop adds half a drop (the part still to be squeezed, on
  average), each further one a whole drop. Taken as it stands, the estimate would lag the drop by about
  half a drop on average and put the pH jump of a strong acid that much early.

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

from agentchemist.record.errors import RecordConfigError
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
                 drop_volume_ml: float = 0.046875, history_s: float = 30.0, drop_fall_s: float = 0.1):
        if not (math.isfinite(drop_fall_s) and drop_fall_s >= 0.0):
            raise RecordConfigError(f"VolumeFuser drop_fall_s must be a finite number >= 0 s, got {drop_fall_s!r}")
        self.config = config
        self.statistical: ChannelEstimate | None = None
        self.audio: ChannelEstimate | None = None
        self.failures: list[Failure] = []
        self.gates: list[_Gate] = []
        self.drop_volume_ml = drop_volume_ml   #: updated from the audio channel's per-drop increments
        self.drop_fall_s = drop_fall_s         #: tip to liquid: a drop is heard this long after it left the tip
        self.recorded_ml = 0.0                 #: the last fused volume recorded (mL)
        self._memory = failure_memory
        self._history_s = history_s
        self._recent_stat: deque[ChannelEstimate] = deque()
        self._recent_audio: deque[float] = deque()   #: stamps of the audio drops that made records
        #: (onset, drop volume) of the drops heard since the statistical estimate's stamp (bounded: an estimate
        #: thousands of drops old says nothing about this drop)
        self._heard: deque[tuple[float, float]] = deque(maxlen=4096)

    def add_statistical(self, value_ml: float, confidence: float, stamp: float, delta: float = 0.0,
                        fsm_state: str = "titrating") -> list[tuple[float, FusionResult]]:
        """The statistical channel's cumulative estimate; inside an audio gate, the records it carries
        (stamp, fused result)."""
        previous = self.statistical
        self.statistical = ChannelEstimate("statistical", value_ml, confidence, stamp, delta)
        self._remember(self._recent_stat, self.statistical, stamp)
        if math.isfinite(stamp):
            while self._heard and self._heard[0][0] - self.drop_fall_s <= stamp:
                self._heard.popleft()  # in this estimate already
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
        previous_total = self.audio.value if self.audio is not None else 0.0
        self.audio = ChannelEstimate("audio", audio_total_ml, confidence, stamp, delta)
        if math.isfinite(delta) and delta > 0:
            self.drop_volume_ml = delta
        elif math.isfinite(audio_total_ml) and math.isfinite(previous_total) and audio_total_ml > previous_total:
            delta = audio_total_ml - previous_total
        else:
            delta = self.drop_volume_ml
        self._remember(self._recent_audio, stamp, stamp)
        if math.isfinite(stamp):
            self._heard.append((stamp, delta))
        gate = self._open_gate_at("audio", stamp)
        if gate is not None:
            gate.records += 1
        # The audio channel's word on the volume: one more drop on what is recorded (an invalid total
        # stays invalid, so that fuse flags it).
        audio_here = self.recorded_ml + delta if math.isfinite(audio_total_ml) else audio_total_ml
        estimates = [ChannelEstimate("audio", audio_here, self.audio.confidence, stamp, self.audio.delta)]
        if self.statistical is not None:
            estimates.append(self._statistical_at_drop())
        return self._fuse(estimates, fsm_state, stamp)

    def _statistical_at_drop(self) -> ChannelEstimate:
        """The latest statistical estimate brought to the drop just heard (see the module docstring)."""
        est = self.statistical
        assert est is not None
        # drops that left the tip after the estimate's stamp (heard in any order relative to it), in order
        volumes = [v for onset, v in sorted(self._heard) if onset - self.drop_fall_s > est.stamp]
        if not volumes or not math.isfinite(est.value):
            return est
        return ChannelEstimate("statistical", est.value + math.fsum(volumes) - 0.5 * volumes[0], est.confidence,
                               est.stamp, est.delta)

    # ------------------------------------------------------------------ internals
    def _fuse(self, estimates: list[ChannelEstimate], fsm_state: str, now: float) -> FusionResult:
        windows = [Failure(g.start, g.kind, "halt", g.channel, g.end) for g in self.gates]
        result = fuse(estimates, operation_active=fsm_state in ACTIVE_STATES, failures=[*self.failures, *windows],
                      now=now, config=self.config)
        if math.isfinite(result.value):
            self.recorded_ml = result.value
        return result

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
