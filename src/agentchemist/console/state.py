"""What a chemist watching a run sees, folded from the graph's messages (free of ROS: the console's node
calls these with plain values). The curve is the recorder's: each pH record at the titrant volume the
recorder had fused last, so the page draws what the report will analyse, as it grows."""
from __future__ import annotations

import json
import math
import threading
from collections import deque

__all__ = ["RunView"]

MAX_ANOMALIES = 200
#: a joint change over MOTION_WINDOW_S above this (rad, or m for a gripper) is motion; below it, noise. A
#: squeeze of the pipette bulb (0.1 mm/s and up) moves the gripper 1e-4 m in a second.
MOTION_RAD = 5e-5
MOTION_WINDOW_S = 1.0


class RunView:
    def __init__(self):
        self._lock = threading.Lock()
        self.reset("")

    def reset(self, instruction: str) -> None:
        with getattr(self, "_lock", threading.Lock()):
            self.instruction = instruction
            self.experiment_id = ""
            self.steps: list[str] = []
            self.visited: list[str] = []
            self.state, self.terminal = "", False
            self.curve: list[tuple[float, float]] = []
            self.volume_ml = 0.0
            self.ph = math.nan
            self.mass_g = math.nan
            self.drops = 0
            self.anomalies: list[dict] = []
            self.paused = False
            self.result: dict | None = None
            self.plan: dict | None = None
            self.stopped_at: float | None = None   # the run's clock when it ended (terminal state)
            self._recent: deque = deque()             # (stamp, joint positions) over the last MOTION_WINDOW_S
            self._at_stop: tuple | None = None        # the joint positions when the run ended
            self.moved_since_stop = 0.0               # the largest joint change since then (rad or m)
            self.last_arm_motion = math.nan        # the run's clock at the last joint change over MOTION_RAD
            self.clock = math.nan                  # the run's clock as the joint states stamp it

    def on_plan(self, experiment_id: str, plan_json: str) -> None:
        try:
            plan = json.loads(plan_json)
        except ValueError:
            return
        with self._lock:
            if self.experiment_id and experiment_id != self.experiment_id:
                return  # another run's latched plan
            self.experiment_id = experiment_id
            self.steps = list((plan.get("state_machine") or {}).get("states") or [])

    def on_fsm(self, experiment_id: str, state: str, terminal: bool) -> None:
        with self._lock:
            if self.experiment_id and experiment_id and experiment_id != self.experiment_id:
                return
            self.state, self.terminal = state, terminal
            if terminal and self.stopped_at is None:
                self.stopped_at = self.clock
            if not self.visited or self.visited[-1] != state:
                self.visited.append(state)

    def on_record(self, experiment_id: str, quantity: str, value: float) -> None:
        if not math.isfinite(value):
            return
        with self._lock:
            if experiment_id != self.experiment_id:
                return
            if quantity == "titrant_volume":
                self.volume_ml = value
            elif quantity == "ph":  # the recorder's filtered pH (record/recording.py FILTERED)
                self.ph = value
                self.curve.append((self.volume_ml, value))
            elif quantity == "mass":
                self.mass_g = value

    def on_joints(self, positions, stamp: float) -> None:
        """The arms' joint states (grippers included): whether they moved over the last second of the run's
        clock, and how far they moved since the run ended (the emergency stop's check that they hold)."""
        positions = tuple(float(p) for p in positions)
        with self._lock:
            self.clock = stamp
            self._recent.append((stamp, positions))
            while len(self._recent) > 2 and self._recent[1][0] <= stamp - MOTION_WINDOW_S:
                self._recent.popleft()  # keep one sample at least a window old
            old = self._recent[0][1]
            if len(old) == len(positions) and _moved(old, positions) > MOTION_RAD:
                self.last_arm_motion = stamp
            if self.terminal and self._at_stop is None:
                self._at_stop = positions
            if self._at_stop is not None and len(self._at_stop) == len(positions):
                self.moved_since_stop = _moved(self._at_stop, positions)

    def on_drop(self) -> None:
        with self._lock:
            self.drops += 1

    def on_anomaly(self, *, kind: str, severity: str, source: str, description: str, resolved: bool,
                   stamp: float) -> None:
        with self._lock:
            if kind == "operator_pause":
                self.paused = not resolved
            self.anomalies.insert(0, {"kind": kind, "severity": severity, "source": source,
                                      "description": description, "resolved": resolved, "t": stamp})
            del self.anomalies[MAX_ANOMALIES:]

    def on_result(self, *, outcome: str, message: str, experiment_id: str, report_path: str) -> None:
        with self._lock:
            self.result = {"outcome": outcome, "message": message, "experiment_id": experiment_id,
                           "report_path": report_path}
            self.experiment_id = self.experiment_id or experiment_id
            self.paused = False

    def set_plan_preview(self, preview: dict | None) -> None:
        with self._lock:
            self.plan = preview

    def snapshot(self, since: int = 0) -> dict:
        """JSON-ready; `since` sends only the curve points after the first `since` (the page keeps the rest)."""
        with self._lock:
            return {"instruction": self.instruction, "experiment_id": self.experiment_id, "steps": self.steps,
                    "visited": self.visited, "state": self.state, "terminal": self.terminal,
                    "curve_from": since, "curve": self.curve[since:], "points": len(self.curve),
                    "volume_ml": self.volume_ml, "ph": None if math.isnan(self.ph) else self.ph,
                    "mass_g": None if math.isnan(self.mass_g) else self.mass_g, "drops": self.drops,
                    "anomalies": self.anomalies[:50], "paused": self.paused, "result": self.result,
                    "plan": self.plan, "clock": _num(self.clock), "stopped_at": _num(self.stopped_at),
                    "last_arm_motion": _num(self.last_arm_motion), "moved_since_stop": self.moved_since_stop}


def _moved(a, b) -> float:
    return max((abs(x - y) for x, y in zip(a, b)), default=0.0)


def _num(x: float | None) -> float | None:
    return None if x is None or math.isnan(x) else x
