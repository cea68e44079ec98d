"""The experiment's state as one text block for rviz: FSM state, pH and titrant volume.

The status_overlay node feeds it the latest FSM state (vision_supervisor), pH reading (the meter) and
titrant volume estimate (dispenser / audio channels) and publishes the text as a view-facing text marker
above the bench, so rviz shows what the robot is doing next to the camera images and the bench.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

__all__ = ["StatusText"]


@dataclass
class StatusText:
    """Latest values; ``text()`` renders them (a value never received shows as "-")."""

    state: str = ""
    ph: float | None = None
    temperature_c: float | None = None
    volumes_ml: dict[str, float] = field(default_factory=dict)

    def on_state(self, state: str) -> None:
        self.state = str(state)

    def on_reading(self, quantity: str, value: float) -> None:
        if not math.isfinite(value):
            return  # a garbled reading is the supervisor's anomaly, not a number to display
        if quantity == "pH":
            self.ph = float(value)
        elif quantity == "temperature":
            self.temperature_c = float(value)

    def on_quantity(self, quantity: str, channel: str, value: float) -> None:
        if quantity == "titrant_volume" and math.isfinite(value):
            self.volumes_ml[channel or "estimate"] = float(value)

    def text(self) -> str:
        ph = f"{self.ph:.2f}" if self.ph is not None else "-"
        temp = f" ({self.temperature_c:.1f} degC)" if self.temperature_c is not None else ""
        vols = ", ".join(f"{v:.2f} mL {k}" for k, v in sorted(self.volumes_ml.items())) or "-"
        return f"FSM: {self.state or '-'}\npH: {ph}{temp}\ntitrant: {vols}"
