"""Scene check from the front camera: labware found by their ArUco tags, and the paper's preconditions
(beaker on the stirrer, probe immersed, pipette in the beaker) from their relative image positions.

The marker table (tag id -> labware id and kind) is the one printed on the bench; see sim/markers.py.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from agentchemist.sim.markers import MARKER_TABLE, detect_markers


#: marker kinds -> the planner's instrument names (plan/scene.py INSTRUMENT_DISPLAY)
PLANNER_KINDS = {"stirrer": "magnetic_stirrer"}


@dataclass(frozen=True)
class SceneObjectSeen:
    id: str
    kind: str
    u: float
    v: float
    marker_id: int
    confidence: float = 1.0


@dataclass
class SceneDescription:
    objects: list[SceneObjectSeen] = field(default_factory=list)
    checks: dict[str, bool] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)

    def find(self, kind: str) -> SceneObjectSeen | None:
        return next((o for o in self.objects if o.kind == kind), None)

    def as_scene_dict(self) -> dict:
        """The planner's SceneInfo.from_dict shape."""
        return {"objects": [{"id": o.id, "kind": PLANNER_KINDS.get(o.kind, o.kind)} for o in self.objects],
                "preconditions": dict(self.checks)}


def describe_scene(image_rgb: np.ndarray, *, horizontal_tolerance: float = 0.12) -> SceneDescription:
    """Objects and precondition checks. `horizontal_tolerance` is a fraction of the image width within
    which two items count as vertically aligned (one standing on or in the other)."""
    if image_rgb.ndim != 3 or image_rgb.shape[2] != 3 or image_rgb.dtype != np.uint8:
        raise ValueError(f"scene check needs an RGB uint8 image, got shape {image_rgb.shape} {image_rgb.dtype}")
    seen = []
    for marker_id, (u, v) in sorted(detect_markers(image_rgb).items()):
        info = MARKER_TABLE.get(marker_id)
        if info is None:
            continue
        seen.append(SceneObjectSeen(info.labware_id, info.kind, u, v, marker_id))
    desc = SceneDescription(objects=seen)
    tol = horizontal_tolerance * image_rgb.shape[1]
    beaker = desc.find("beaker")

    def aligned(name, kind, below: bool | None):
        item = desc.find(kind)
        if beaker is None or item is None:
            missing = "beaker" if beaker is None else kind.replace("_", " ")
            desc.checks[name], desc.reasons[name] = False, f"no {missing} seen by the front camera"
            return
        ok = abs(item.u - beaker.u) <= tol and (below is None or (item.v > beaker.v) == below)
        desc.checks[name] = bool(ok)
        if not ok:
            desc.reasons[name] = (f"{item.id} at ({item.u:.0f}, {item.v:.0f}) px is not aligned with "
                                  f"{beaker.id} at ({beaker.u:.0f}, {beaker.v:.0f}) px")

    aligned("beaker_on_stirrer", "stirrer", below=True)
    aligned("probe_immersed", "ph_probe", below=None)
    aligned("pipette_in_beaker", "pipette", below=None)
    return desc
