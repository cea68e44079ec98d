"""Scene check from the front camera: labware found by their ArUco tags, and the paper's preconditions
(beaker on the stirrer, probe immersed, pipette in the beaker) from their relative image positions.

The tag table (tag id -> labware id and kind) is the one printed on the bench: the bench description's
(:mod:`agentchemist.workcell.tags`). Kinds are the bench's names; the planner reads any alias of them
(:func:`agentchemist.workcell.labware.canonical_kind`), so the scene goes to it as seen.

During the run, `LabwareWatch` compares every front frame's tags with the scene at the scene check: an
item whose tag disappears (missing) or whose tag moved beyond a tolerance (moved), frame after frame,
is an anomaly; the supervisor holds dispensing from the first such frame until the item is back.

With the camera's intrinsics (and the depth image aligned to colour), every tag also gets its 3-D pose in
the camera's optical frame (:mod:`agentchemist.perception.tag_pose`), and "on the stirrer" is decided in
3-D (:mod:`agentchemist.perception.standing`): the beaker's tag over the stirrer's footprint and above
its top. Without them (the kinematic twin's 2-D drawing) the image rules decide, as they always did.
Which platform each beaker or bottle stands on, where the poses say, goes along (``supports``: a platform
id, or :data:`ON_BENCH` for none) so that the planner resolves "the beaker on the stirrer" the same way.

With the lab inventory (:mod:`agentchemist.workcell.inventory`), every container whose tag is seen also
carries what the lab recorded it holds (reagent, concentration, lot): the planner compares that, not the
instruction's word, with the plan.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from agentchemist.workcell.inventory import Inventory
from agentchemist.workcell.labware import platform_kinds
from agentchemist.workcell.tags import MARKER_TABLE
from agentchemist.params import param
from agentchemist.perception.standing import stands_on
from agentchemist.perception.tag_pose import CameraModel, TagPose, tag_pose
from agentchemist.perception.tags import detect_marker_corners

#: What an item stands on when the 3-D rule finds it on no platform: the bench top (a scene object's
#: ``on``; the planner treats any id that is not a platform's as "on none of them").
ON_BENCH = "bench"
#: Kinds that stand on a platform (a beaker on the stirrer or the balance, a bottle on the balance).
STANDING_KINDS = ("beaker", "reagent_bottle", "solid_bottle")


@dataclass(frozen=True)
class SceneObjectSeen:
    id: str
    kind: str
    u: float
    v: float
    marker_id: int
    confidence: float = 1.0
    pose: TagPose | None = None   #: the tag's pose in the camera's optical frame, when intrinsics are known


@dataclass
class SceneDescription:
    objects: list[SceneObjectSeen] = field(default_factory=list)
    checks: dict[str, bool] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    image_size: tuple[int, int] | None = None  # (width, height) px of the image the positions refer to
    contents: dict[str, dict] = field(default_factory=dict)  # object id -> the inventory's entry (as_scene)
    #: object id -> the platform id it stands on or ON_BENCH, decided from 3-D poses (absent: not known)
    supports: dict[str, str] = field(default_factory=dict)

    def find(self, kind: str) -> SceneObjectSeen | None:
        return next((o for o in self.objects if o.kind == kind), None)

    def as_scene_dict(self) -> dict:
        """The planner's SceneInfo.from_dict shape (kinds as the bench names them)."""
        # Image positions go along: with clutter, which beaker stands on the stirrer is read from them.
        out = {"objects": [{"id": o.id, "kind": o.kind, "u": o.u, "v": o.v, **self._held(o.id),
                            **({"on": self.supports[o.id]} if o.id in self.supports else {})}
                           for o in self.objects],
               "preconditions": dict(self.checks)}
        if self.image_size is not None:
            out["image_size"] = list(self.image_size)
        return out

    def _held(self, object_id: str) -> dict:
        held = self.contents.get(object_id)
        return {} if held is None else {"reagent": held["reagent"], "concentration_m": held["concentration_m"]}


def aligned(a_uv: tuple[float, float], b_uv: tuple[float, float], tolerance_px: float,
            below: bool | None = None) -> bool:
    """The front camera's rule for one item standing on or in another: their tags within ``tolerance_px``
    of each other horizontally and, with ``below`` True, tag a lower in the image than tag b (a stirrer or
    balance under a beaker), False higher, None either (a probe or pipette in a beaker). The scene check,
    the bench watch and the action policy's station lookup all use it."""
    return abs(a_uv[0] - b_uv[0]) <= tolerance_px and (below is None or (a_uv[1] > b_uv[1]) == below)


def describe_scene(image_rgb: np.ndarray, *, horizontal_tolerance: float = 0.12,
                   inventory: Inventory | None = None, camera: CameraModel | None = None,
                   depth_m: np.ndarray | None = None) -> SceneDescription:
    """Objects and precondition checks. `horizontal_tolerance` is a fraction of the image width within
    which two items count as vertically aligned (one standing on or in the other). With `inventory`,
    each seen container's recorded contents go along (`contents`). With `camera` (the intrinsics the
    image was taken with) each tag gets a pose, its position from `depth_m` (the aligned depth image in
    metres, :func:`agentchemist.perception.tag_pose.depth_metres`) where given, and "on the stirrer" is
    decided from the poses."""
    if image_rgb.ndim != 3 or image_rgb.shape[2] != 3 or image_rgb.dtype != np.uint8:
        raise ValueError(f"scene check needs an RGB uint8 image, got shape {image_rgb.shape} {image_rgb.dtype}")
    if camera is not None and camera.size_mismatch(image_rgb):
        raise ValueError(camera.size_mismatch(image_rgb))
    if depth_m is not None and (camera is None or depth_m.shape != image_rgb.shape[:2]):
        raise ValueError(f"a depth image {depth_m.shape} needs the camera's intrinsics and the colour image's "
                         f"size {image_rgb.shape[:2]}")
    seen = []
    for marker_id, corners in sorted(detect_marker_corners(image_rgb).items()):
        info = MARKER_TABLE.get(marker_id)
        if info is None:
            continue
        centre = corners.mean(axis=0)
        pose = tag_pose(corners, camera, depth_m) if camera is not None else None
        seen.append(SceneObjectSeen(info.labware_id, info.kind, float(centre[0]), float(centre[1]), marker_id,
                                    pose=pose))
    desc = SceneDescription(objects=seen, image_size=(int(image_rgb.shape[1]), int(image_rgb.shape[0])))
    if inventory is not None:
        for o in seen:
            entry = inventory.for_tag(o.marker_id, o.id)
            if entry is not None:
                desc.contents[o.id] = entry.as_scene()
    desc.supports = _supports(seen)
    tol = horizontal_tolerance * image_rgb.shape[1]
    beaker = desc.find("beaker")

    def check(name, kind, below: bool | None):
        item = desc.find(kind)
        if beaker is None or item is None:
            missing = "beaker" if beaker is None else kind.replace("_", " ")
            desc.checks[name], desc.reasons[name] = False, f"no {missing} seen by the front camera"
            return
        if below and beaker.pose is not None and item.pose is not None:  # in 3-D (perception/standing.py)
            ok, where = stands_on(beaker.pose, item.pose, item.kind)
            desc.checks[name] = bool(ok)
            if not ok:
                desc.reasons[name] = f"{beaker.id} is not on {item.id}: its tag is {where}"
            return
        ok = aligned((item.u, item.v), (beaker.u, beaker.v), tol, below)
        desc.checks[name] = bool(ok)
        if not ok:
            desc.reasons[name] = (f"{item.id} at ({item.u:.0f}, {item.v:.0f}) px is not aligned with "
                                  f"{beaker.id} at ({beaker.u:.0f}, {beaker.v:.0f}) px")

    check("beaker_on_stirrer", "stirrer", below=True)
    check("probe_immersed", "ph_probe", below=None)
    check("pipette_in_beaker", "pipette", below=None)
    return desc


def _supports(seen: list[SceneObjectSeen]) -> dict[str, str]:
    """Item id -> the platform it stands on (the nearest whose footprint holds it) or ON_BENCH, for every
    standing item with a pose, when every platform in view has one too (else the image rules decide)."""
    platforms = [o for o in seen if o.kind in platform_kinds()]
    if any(p.pose is None for p in platforms):
        return {}
    out = {}
    for item in seen:
        if item.kind not in STANDING_KINDS or item.pose is None:
            continue
        under = [(float(np.linalg.norm(np.subtract(item.pose.position, p.pose.position))), p.id)
                 for p in platforms if stands_on(item.pose, p.pose, p.kind)[0]]
        out[item.id] = min(under)[1] if under else ON_BENCH
    return out


# ---------------------------------------------------------------------------------------------------
# Watching the bench during the run

@dataclass(frozen=True)
class LabwareWatchConfig:
    """When a change of the bench counts, in front-image pixels and frames.

    move_tolerance_px: an item whose tag centre is this far from where it was at the scene check has
        moved (the twin's tags sit still to a fraction of a pixel; a real camera jitters by about one).
    confirm_frames: consecutive frames showing the same item missing or moved before it is an anomaly
        (one frame can lose a tag to an occluding arm; the first such frame already holds dispensing).
    return_timeout_s: an item not back in place this long after it was first missed ends the run.
    movable_kinds: items the robot itself moves (the held pipette): watched for disappearing only.
    host_tolerance: items within this fraction of the image width of a beaker (probe, pipette) or above
        a platform (a beaker on the stirrer) stand in or on it: they move and hide with it, so their
        changes are consequences of their host's, not another fault (as describe_scene's alignment).
    """

    move_tolerance_px: float = param(8.0, unit="px", low=0.5, high=500.0, description=(
        "A tag this far (front image px) from where the scene check saw it: the item moved"))
    confirm_frames: int = param(2, low=1, high=100, description=(
        "Consecutive front frames an item must be missing or moved before it is an anomaly (the first one "
        "already holds dispensing)"))
    return_timeout_s: float = param(30.0, unit="s", low=1.0, high=3600.0, description=(
        "An item not back in place this long after it was first missed: abort"))
    movable_kinds: tuple[str, ...] = ("pipette",)
    host_tolerance: float = 0.12

    def __post_init__(self):
        if not (self.move_tolerance_px > 0 and self.return_timeout_s > 0):
            raise ValueError("LabwareWatchConfig: move_tolerance_px and return_timeout_s must be > 0")
        if self.confirm_frames < 1:
            raise ValueError("LabwareWatchConfig: confirm_frames must be >= 1")


@dataclass(frozen=True)
class LabwareChange:
    id: str
    kind: str
    change: str                                   #: "missing" | "moved"
    offset: tuple[float, float] | None = None     #: (du, dv) px for a moved item
    host: str = ""                                #: the changed item this one stands in or on (a consequence)

    def describe(self) -> str:
        if self.change == "missing":
            text = f"{self.id} is missing" if not self.host else f"{self.id} is not seen"
        else:
            du, dv = self.offset or (0.0, 0.0)
            text = f"{self.id} moved by ({du:+.0f}, {dv:+.0f}) px"
        return text + (f" (with {self.host})" if self.host else "")


@dataclass(frozen=True)
class WatchEvent:
    """What `LabwareWatch.update` noticed.

    kind: "suspect" (a first frame shows a change: hold, say nothing yet), "cleared" (the next frame is
    fine again: release), "confirmed" (confirm_frames in a row: an anomaly), "restored" (a confirmed
    change is gone: release, resolved), "timeout" (confirmed and not back within return_timeout_s).
    """

    kind: str
    stamp: float
    changes: tuple[LabwareChange, ...] = ()
    since: float | None = None

    @property
    def primary(self) -> tuple[LabwareChange, ...]:
        """The changes that are not consequences of a change of their host."""
        return tuple(c for c in self.changes if not c.host)

    @property
    def anomaly_kind(self) -> str:
        """labware_moved when an item moved (by itself), else labware_missing. A moved item can hide
        another one's tag (a stand moved in front of the stirrer); a missing one cannot move another
        item, except one that stood in it, and those are not primary."""
        return "labware_moved" if any(c.change == "moved" for c in self.primary) else "labware_missing"

    def describe(self) -> str:
        return "; ".join(c.describe() for c in (*self.primary, *(c for c in self.changes if c.host)))


class LabwareWatch:
    """Compares every front frame's tags with the scene at the scene check (`reference`: tag id -> (u, v)
    px). Only tags of the marker table count; an item first seen later is not watched."""

    def __init__(self, reference: dict[int, tuple[float, float]], config: LabwareWatchConfig = LabwareWatchConfig(),
                 image_width: int = 320):
        self.config = config
        self.reference = {m: (float(u), float(v)) for m, (u, v) in reference.items() if m in MARKER_TABLE}
        self.hosts = self._hosts(config.host_tolerance * image_width)
        self.state = "ok"
        self.bad_frames = 0
        self.since: float | None = None
        self.changes: tuple[LabwareChange, ...] = ()
        self.timed_out = False

    def _hosts(self, tol: float) -> dict[int, int]:
        """Tag id -> the tag of what it stands in (probe, pipette: the nearest aligned beaker) or on (a
        beaker or bottle: an aligned platform below it)."""
        hosts: dict[int, int] = {}
        for m, (u, v) in self.reference.items():
            kind = MARKER_TABLE[m].kind
            if kind in ("ph_probe", "pipette"):
                wanted, below = ("beaker",), None
            elif kind in ("beaker", "reagent_bottle", "solid_bottle"):
                wanted, below = platform_kinds(), True
            else:
                continue
            near = [(abs(hu - u), h) for h, (hu, hv) in self.reference.items()
                    if h != m and MARKER_TABLE[h].kind in wanted and aligned((hu, hv), (u, v), tol, below)]
            if near:
                hosts[m] = min(near)[1]
        return hosts

    def compare(self, seen: dict[int, tuple[float, float]]) -> tuple[LabwareChange, ...]:
        tol = self.config.move_tolerance_px
        found: dict[int, LabwareChange] = {}
        for marker_id, (u0, v0) in sorted(self.reference.items()):
            info = MARKER_TABLE[marker_id]
            now = seen.get(marker_id)
            if now is None:
                found[marker_id] = LabwareChange(info.labware_id, info.kind, "missing")
            elif info.kind not in self.config.movable_kinds:
                du, dv = now[0] - u0, now[1] - v0
                if (du * du + dv * dv) ** 0.5 > tol:
                    found[marker_id] = LabwareChange(info.labware_id, info.kind, "moved", (du, dv))
        out = []
        for marker_id, change in found.items():
            host = self.hosts.get(marker_id)
            if host in found:  # it stands in or on a changed item: a consequence of that change
                change = LabwareChange(change.id, change.kind, change.change, change.offset,
                                       MARKER_TABLE[host].labware_id)
            out.append(change)
        return tuple(out)

    def update(self, stamp: float, seen: dict[int, tuple[float, float]]) -> list[WatchEvent]:
        """One frame's tags (tag id -> centre px) -> what changed in the watch (see WatchEvent)."""
        changes = self.compare(seen)
        if not changes:
            state, self.state, self.bad_frames = self.state, "ok", 0
            if state == "suspect":
                return [WatchEvent("cleared", stamp, self.changes, self.since)]
            if state == "confirmed":
                self.timed_out = False
                return [WatchEvent("restored", stamp, self.changes, self.since)]
            return []
        self.bad_frames += 1
        self.changes = changes
        events = []
        if self.state == "ok":
            self.state, self.since = "suspect", stamp
            events.append(WatchEvent("suspect", stamp, changes, stamp))
        if self.state == "suspect" and self.bad_frames >= self.config.confirm_frames:
            self.state = "confirmed"
            events.append(WatchEvent("confirmed", stamp, changes, self.since))
        if self.state == "confirmed" and not self.timed_out and stamp - self.since >= self.config.return_timeout_s:
            self.timed_out = True
            events.append(WatchEvent("timeout", stamp, changes, self.since))
        return events
