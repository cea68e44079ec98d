"""The twin's contact microphones: one per gripper, hearing drops land, the gripper's motor, powder
pouring and clinks (see :mod:`agentchemist.sim.audio` for the sound itself).

Each side's synthesiser has its own seed, derived from the scenario seed and the side's index, so a
side's audio does not depend on what the other side hears."""
from __future__ import annotations

import math
from dataclasses import asdict
from typing import Any

import numpy as np

from agentchemist.sim.audio import AudioEventTruth, AudioSynthError, ContactAudioConfig, ContactAudioSynth
from agentchemist.sim.errors import finite_number
from agentchemist.sim.event_log import EventLog
from agentchemist.sim.robot import SIDES, Gripper, check_side
from agentchemist.sim.scenario import Scenario

__all__ = ["ContactMics", "POUR_AUDIO_SEGMENT_S", "WHINE_MIN_SPEED_M_S"]

#: Gripper moves slower than this (m/s) are too quiet to hear (the dispenser's creep while squeezing).
WHINE_MIN_SPEED_M_S = 0.005
POUR_AUDIO_SEGMENT_S = 0.25


class ContactMics:
    def __init__(self, scenario: Scenario, events: EventLog) -> None:
        sc = scenario
        self._events = events
        self._synth: dict[str, ContactAudioSynth] = {}
        for i, side in enumerate(SIDES):
            seed = int(np.random.SeedSequence([sc.seed, 0xA0D10, i]).generate_state(1)[0])
            cfg = ContactAudioConfig(sample_rate=sc.audio.sample_rate, snr_db=sc.audio.snr_db,
                                     stirrer_on=sc.stirrer.on, seed=seed, **sc.audio.synth)
            self._synth[side] = ContactAudioSynth(cfg)
        self._whine_end = {s: -math.inf for s in SIDES}
        self._pour_audio_end = -math.inf

    def schedule(self, side: str, event: AudioEventTruth) -> None:
        try:
            self._synth[side].schedule(event)
        except AudioSynthError as exc:
            # The node rendered audio past this onset already: keep the twin running, note it in truth.
            self._events.add(event.time, "audio_event_late", side=side, sound=event.kind, error=str(exc))

    def whine(self, side: str, gripper: Gripper, t: float) -> None:
        """The gripper's motor, from ``t`` until it settles on its new command (not when it creeps, nor
        when it is stalled); a whine already sounding is extended, not doubled."""
        if gripper.peak_speed() >= WHINE_MIN_SPEED_M_S and not gripper.stalled:
            end = t + min(max(gripper.time_to_settle(), 0.05), 5.0)
            start = max(t, self._whine_end[side])
            if end > start + 0.05:
                self.schedule(side, AudioEventTruth(start, "motor_whine", end - start, f"{side} gripper"))
                self._whine_end[side] = end

    def pouring(self, side: str, t: float) -> None:
        """Powder is running at ``t``: one pour sound per segment of POUR_AUDIO_SEGMENT_S, back to back."""
        if t >= self._pour_audio_end - 1e-9:
            self.schedule(side, AudioEventTruth(t, "pour", POUR_AUDIO_SEGMENT_S, "pour"))
            self._pour_audio_end = t + POUR_AUDIO_SEGMENT_S

    def render(self, side: str, t0: float, n_samples: int) -> np.ndarray:
        """Contact-microphone samples (int16 mono, scenario sample rate) of ``side`` from ``t0``."""
        check_side(side)
        return self._synth[side].render(finite_number(t0, "t0"), n_samples)

    def truth(self, side: str) -> list[AudioEventTruth]:
        return self._synth[check_side(side)].truth()

    def truth_dicts(self) -> dict[str, list[dict[str, Any]]]:
        return {s: [asdict(e) for e in self._synth[s].truth()] for s in SIDES}
