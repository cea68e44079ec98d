"""Every command sent through the console, accepted or not, with who sent it: one JSON line each, appended
and flushed before the answer goes back (a command the graph carried out is never missing from the log)."""
from __future__ import annotations

import json
import threading
from datetime import datetime, timezone
from pathlib import Path

__all__ = ["CommandLog", "COMMANDS"]

#: what the console can ask of the graph
COMMANDS = ("plan", "start", "pause", "resume", "cancel", "emergency_stop", "refused")


class CommandLog:
    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()

    def record(self, *, now: float, command: str, operator: str, address: str, accepted: bool, message: str,
               detail: str = "") -> dict:
        """Append one entry; `now` is wall time (epoch s): the log is read beside the lab's clock."""
        if command not in COMMANDS:
            raise ValueError(f"unknown console command {command!r}; one of {', '.join(COMMANDS)}")
        entry = {"time": datetime.fromtimestamp(now, timezone.utc).isoformat(timespec="milliseconds"),
                 "command": command, "operator": operator or "(unnamed)", "address": address,
                 "accepted": bool(accepted), "message": message, "detail": detail}
        with self._lock, self.path.open("a") as f:
            f.write(json.dumps(entry) + "\n")
            f.flush()
        return entry

    def entries(self, last: int = 50) -> list[dict]:
        if not self.path.is_file():
            return []
        out = []
        for line in self.path.read_text().splitlines()[-last:]:
            try:
                out.append(json.loads(line))
            except ValueError:
                continue  # a line cut by a crash mid-write: the others stand
        return out
