"""When the twin's periodic streams are due, on sim time: readings, joint states, camera frames, ground
truth at their periods, and audio as back-to-back chunks (every sample sent once, none skipped)."""
from __future__ import annotations

from typing import Iterator, Mapping


class StreamSchedule:
    def __init__(self, start: float, periods: Mapping[str, float], audio_chunk_s: float):
        self.periods = dict(periods)
        self.next = {name: start for name in self.periods}
        self.audio_chunk_s = audio_chunk_s
        self.next_audio = start

    def due(self, name: str, t: float) -> bool:
        """True (and the next one scheduled) when stream `name` is due at sim time `t`."""
        if t < self.next[name]:
            return False
        self.next[name] += self.periods[name]
        return True

    def audio_chunks(self, t: float) -> Iterator[float]:
        """Start times of the audio chunks complete by `t`, each once."""
        while t >= self.next_audio + self.audio_chunk_s:
            t0 = self.next_audio
            self.next_audio = round(t0 + self.audio_chunk_s, 9)
            yield t0
