"""Per-drop fusion of the dispensed volume: each drop heard by the audio channel is fused with the
statistical channel's latest cumulative estimate (displacement x k), through `fuse` and its gates.

Kept apart from the recorder node so that replay tests and benchmarks run the same pairing rule.
"""
from __future__ import annotations

from agentchemist.record.fusion import ChannelEstimate, Failure, FusionConfig, FusionResult, fuse

#: FSM states in which dispensing is happening (gate 1: a quantity reported outside them is impossible).
ACTIVE_STATES = frozenset({"ready", "titrating", "waiting_ph"})


class VolumeFuser:
    def __init__(self, config: FusionConfig = FusionConfig(), failure_memory: int = 64):
        self.config = config
        self.statistical: ChannelEstimate | None = None
        self.failures: list[Failure] = []
        self._memory = failure_memory

    def add_statistical(self, value_ml: float, confidence: float, stamp: float, delta: float = 0.0) -> None:
        self.statistical = ChannelEstimate("statistical", value_ml, confidence, stamp, delta)

    def add_failure(self, stamp: float, kind: str, severity: str, channel: str | None = None) -> None:
        self.failures.append(Failure(stamp, kind, severity, channel))
        del self.failures[:-self._memory]

    def fuse_drop(self, audio_total_ml: float, confidence: float, stamp: float, delta: float,
                  fsm_state: str) -> FusionResult:
        estimates = [ChannelEstimate("audio", audio_total_ml, confidence, stamp, delta)]
        if self.statistical is not None:
            estimates.append(self.statistical)
        return fuse(estimates, operation_active=fsm_state in ACTIVE_STATES, failures=self.failures,
                    now=stamp, config=self.config)
