"""The status_overlay node's settings (declared as its ROS parameters)."""
from __future__ import annotations

from dataclasses import dataclass

from agentchemist.params import param


@dataclass(frozen=True)
class StatusOverlayConfig:
    rate_hz: float = param(2.0, unit="Hz (wall)", low=0.1, high=30.0, description="Overlay text publish rate")
    frame: str = param("base_link", description="Frame of the text marker")
    x: float = param(0.55, unit="m", low=-10.0, high=10.0, description="Text position x in frame (above the bench)")
    y: float = param(0.0, unit="m", low=-10.0, high=10.0, description="Text position y in frame")
    z: float = param(1.0, unit="m", low=-10.0, high=10.0, description="Text position z in frame")
    height: float = param(0.03, unit="m", low=0.005, high=0.5, description="Text height")
