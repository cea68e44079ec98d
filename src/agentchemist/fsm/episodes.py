"""Problems reported once per episode, free of ROS.

A bad reading refused at the sensor's rate (10 Hz of NaN from a broken meter) is one problem, not one
anomaly per reading: 798 warnings in 20 s flooded the report and knocked neighbouring volume records'
confidence down. An episode opens with the first refusal (a warn) and closes with the next valid value (an
info, resolved, saying how many were refused over how long).
"""
from __future__ import annotations

from dataclasses import dataclass

from agentchemist.fsm.commands import Report


@dataclass
class _Open:
    since: float
    count: int


class Episodes:
    """Open episodes by key (e.g. 'pH', 'temperature'); `failed` and `passed` return the Reports to publish."""

    def __init__(self, kind: str = "bad_reading"):
        self.kind = kind
        self.open: dict[str, _Open] = {}

    def failed(self, key: str, stamp: float, description: str) -> list[Report]:
        episode = self.open.get(key)
        if episode is not None:
            episode.count += 1
            return []
        self.open[key] = _Open(stamp, 1)
        return [Report(self.kind, "warn", f"{description} (further {key} readings refused until a valid one "
                                          "are counted, not reported)")]

    def passed(self, key: str, stamp: float) -> list[Report]:
        episode = self.open.pop(key, None)
        if episode is None:
            return []
        return [Report(self.kind, "info", f"{key} readings are valid again: {episode.count} refused over "
                                          f"{max(0.0, stamp - episode.since):.1f} s", resolved=True)]
