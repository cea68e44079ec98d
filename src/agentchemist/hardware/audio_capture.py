"""Health of a contact-microphone capture stream: overflow (xrun) and dropped-block counters.

PortAudio reports an input overflow in the callback's status flags when the driver had to discard
samples because the callback ran late (an ALSA xrun); a block can also be lost on our side when the
publisher's queue is full. Either is a hole in the audio, where a drop could go unheard, so both are
counted and reported on /diagnostics (WARN while new ones appear, with the totals), never silently.
"""
from __future__ import annotations

from dataclasses import dataclass

OK, WARN, ERROR = 0, 1, 2      # diagnostic_msgs/DiagnosticStatus levels


@dataclass
class CaptureHealth:
    device: str
    sample_rate: int
    overflows: int = 0             # PortAudio input overflows (xruns)
    dropped_blocks: int = 0        # blocks lost because the publish queue was full
    blocks: int = 0
    _reported: tuple = (0, 0)

    def on_block(self, input_overflow: bool, queued: bool) -> None:
        self.blocks += 1
        self.overflows += bool(input_overflow)
        self.dropped_blocks += not queued

    def status(self) -> tuple[int, str, dict[str, str]]:
        """(level, message, key values) since the previous call: WARN when new holes appeared."""
        new_overflows = self.overflows - self._reported[0]
        new_drops = self.dropped_blocks - self._reported[1]
        self._reported = (self.overflows, self.dropped_blocks)
        if self.blocks == 0:
            level, message = ERROR, "no audio blocks yet"
        elif new_overflows or new_drops:
            level, message = WARN, f"{new_overflows} overflow(s), {new_drops} dropped block(s) since the last report"
        else:
            level, message = OK, "capturing"
        values = {"device": self.device, "sample_rate": str(self.sample_rate), "blocks": str(self.blocks),
                  "overflows": str(self.overflows), "dropped_blocks": str(self.dropped_blocks)}
        return level, message, values
