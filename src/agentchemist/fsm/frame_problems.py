"""Front frames that say nothing, reported once per episode, free of ROS.

A bad frame (undecodable, colour unreadable, the beaker's contents not visible) is an anomaly once until a
frame passes the same stage again (image: decoded; colour: hue measured; dissolution: contents seen), not
at the camera's frame rate; a different problem replaces the open one (which is then resolved).
"""
from __future__ import annotations

from agentchemist.fsm.commands import Report


class FrameProblems:
    def __init__(self):
        self.open = ("", "")  #: (kind, stage) of the open problem

    def issue(self, kind: str, stage: str, description: str) -> list[Report]:
        if self.open == (kind, stage):
            return []
        out = []
        if self.open[0]:  # a different problem now: the earlier one is over
            out.append(Report(self.open[0], "info", f"{self.open[0]} is over; now {description}", resolved=True))
        self.open = (kind, stage)
        out.append(Report(kind, "warn", description))
        return out

    def passed(self, stage: str, description: str) -> list[Report]:
        """A frame passed `stage`: the open problem of that stage, or of decoding, is over."""
        if self.open[0] and self.open[1] in (stage, "image"):
            kind, self.open = self.open[0], ("", "")
            return [Report(kind, "info", description, resolved=True)]
        return []
