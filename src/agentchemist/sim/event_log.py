"""The twin's event log: everything that happened on the bench, in the order the twin saw it.

Every part of the twin (drops, faults, the solid bottle, the microphones) notes its events here, so the
truth's ``events`` list keeps one order for the whole run."""
from __future__ import annotations

from typing import Any

__all__ = ["EventLog"]


class EventLog:
    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []

    def add(self, t: float, kind: str, **detail: Any) -> None:
        """Note an event of ``kind`` at sim time ``t`` (s) with its details (JSON-serialisable)."""
        self.entries.append({"time": t, "kind": kind, **detail})
