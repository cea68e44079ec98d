"""Who holds the memory of a long run: checkpoints between experiments, attributed to the node (or the
core package) whose code allocated each block.

RSS alone says that a one-process graph grows, not what grows. A checkpoint holds:
- the RSS and glibc's own account of the C heap (mallinfo2: bytes in use vs. bytes free but kept), which
  tells a C-level leak (DDS, SQLite, OpenCV ...: in use grows) from fragmentation (free grows);
- live Python objects by type (cheap, no tracing needed);
- with tracemalloc running, the Python memory by owner: the node module nearest to the allocation on
  its stack, which separates the twin (lab_sim keeps its ground truth for grading: that grows with the
  record by design) from the agents (which should hold nothing from one experiment to the next).
Used by `scenario_runner --worker --trace-memory N` and the long-run graph test. No ROS import.
"""
from __future__ import annotations

import ctypes
import gc
import linecache
import sys
import tracemalloc
from dataclasses import dataclass, field
from pathlib import PurePath

TWIN = "twin"
HARNESS = "harness"
OTHER = "other"
AGENTS = ("planner", "vision_supervisor", "audio_supervisor", "action_policy", "dispenser_controller",
          "recorder", "summarizer")
NODE_MODULES = {f"{name}_node.py": name for name in AGENTS} | {"lab_sim_node.py": TWIN}

# Per file: (kind, label, short path); kind "node" ends the walk up the stack, "core" is remembered.
_files: dict[str, tuple[str, str, str]] = {}


def _classify(filename: str) -> tuple[str, str, str]:
    hit = _files.get(filename)
    if hit is None:
        parts = PurePath(filename).parts
        name = parts[-1] if parts else filename
        if "agentchemist_ros" in parts:
            short = _short(parts, "agentchemist_ros")
            if name in NODE_MODULES:
                hit = ("node", NODE_MODULES[name], short)
            elif name in ("graph.py", "scenario_runner.py"):
                hit = ("node", HARNESS, short)
            else:
                hit = ("ours", "", short)
        elif "agentchemist" in parts:
            i = len(parts) - 1 - parts[::-1].index("agentchemist")
            package = parts[i + 1] if i + 2 < len(parts) else name.removesuffix(".py")
            hit = ("core", TWIN if package == "sim" else f"core:{package}", _short(parts, "agentchemist"))
        else:
            hit = ("lib", "", "/".join(parts[-2:]))
        _files[filename] = hit
    return hit


def owner_of(filenames: list[str]) -> tuple[str, str]:
    """(owner, where) for one allocation's stack, most recent frame first.

    owner: the agent whose node module is nearest to the allocation, "twin" for lab_sim, "harness" for
    the graph and the runner, else the core package ("core:record"; the twin's own package sim counts
    as the twin) or "other" (rclpy, libraries, imports).
    where: the innermost file of ours on the stack (what to open), or the innermost file at all.
    """
    where = ""
    core = ""
    for name in filenames:
        kind, label, short = _classify(name)
        if kind != "lib":
            where = where or short
        if kind == "node":
            return label, where
        if kind == "core" and not core:
            core = label
    if core:
        return core, where
    return OTHER, where or (_classify(filenames[0])[2] if filenames else "?")


def _short(parts: tuple[str, ...], anchor: str) -> str:
    i = len(parts) - 1 - parts[::-1].index(anchor)
    return "/".join(parts[i:])


@dataclass
class Checkpoint:
    """Memory at one moment: RSS, the C heap, Python objects by type and, when tracing, by owner."""

    label: str
    rss_mb: float
    heap: dict[str, int] = field(default_factory=dict)
    objects: dict[str, int] = field(default_factory=dict)
    traced_bytes: int = 0
    by_owner: dict[str, int] = field(default_factory=dict)
    blocks_by_owner: dict[str, int] = field(default_factory=dict)
    by_site: dict[tuple[str, str], int] = field(default_factory=dict)


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]


def heap_stats() -> dict[str, int]:
    """glibc's C heap: in_use (malloc'd and not freed, Python's own arenas included), free_kept (freed but
    still mapped: fragmentation), mmapped (large blocks). Empty where there is no glibc."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallinfo2.restype = _Mallinfo2
    except (OSError, AttributeError):
        return {}
    m = libc.mallinfo2()
    return {"in_use": m.uordblks + m.hblkhd, "free_kept": m.fordblks, "mmapped": m.hblkhd,
            "python_blocks": sys.getallocatedblocks()}


def object_counts() -> dict[str, int]:
    counts: dict[str, int] = {}
    for obj in gc.get_objects():
        name = type(obj).__qualname__
        counts[name] = counts.get(name, 0) + 1
    return counts


def take(label: str, rss_mb: float = float("nan")) -> Checkpoint:
    """Collect garbage, then a checkpoint (by owner only while tracemalloc is tracing)."""
    gc.collect()
    cp = Checkpoint(label, rss_mb, heap_stats(), object_counts())
    if not tracemalloc.is_tracing():
        return cp
    snap = tracemalloc.take_snapshot().filter_traces([
        tracemalloc.Filter(False, tracemalloc.__file__),
        tracemalloc.Filter(False, linecache.__file__),
        # the checkpoints themselves are kept until the end of the run: not the graph's memory
        tracemalloc.Filter(False, __file__, all_frames=True)])
    for stat in snap.statistics("traceback"):
        frames = list(stat.traceback)[::-1]  # most recent first
        owner, where = owner_of([f.filename for f in frames])
        line = next((f.lineno for f in frames if where and f.filename.endswith(where)), frames[0].lineno)
        cp.traced_bytes += stat.size
        cp.by_owner[owner] = cp.by_owner.get(owner, 0) + stat.size
        cp.blocks_by_owner[owner] = cp.blocks_by_owner.get(owner, 0) + stat.count
        site = (owner, f"{where}:{line}")
        cp.by_site[site] = cp.by_site.get(site, 0) + stat.size
    return cp


def _diff(a: dict, b: dict) -> dict:
    return {k: b.get(k, 0) - a.get(k, 0) for k in set(a) | set(b)}


def growth(before: Checkpoint, after: Checkpoint, top: int = 15) -> dict:
    """What `after` holds beyond `before`: RSS, heap, per owner, and the sites and types that grew most."""
    sites = _diff(before.by_site, after.by_site)
    types = _diff(before.objects, after.objects)
    return {"from": before.label, "to": after.label, "rss_mb": after.rss_mb - before.rss_mb,
            "heap": _diff(before.heap, after.heap), "traced_bytes": after.traced_bytes - before.traced_bytes,
            "by_owner": {k: v for k, v in sorted(_diff(before.by_owner, after.by_owner).items()) if v},
            "top_sites": [{"owner": o, "site": s, "bytes": b}
                          for (o, s), b in sorted(sites.items(), key=lambda kv: -abs(kv[1]))[:top]],
            "top_types": dict(sorted(types.items(), key=lambda kv: -abs(kv[1]))[:top])}


def agents_bytes(cp: Checkpoint) -> int:
    """Python memory the agents' own code holds (the twin, the harness and libraries excluded)."""
    return sum(v for k, v in cp.by_owner.items() if k in AGENTS)


def as_dict(cp: Checkpoint) -> dict:
    return {"label": cp.label, "rss_mb": cp.rss_mb, "heap": cp.heap, "traced_bytes": cp.traced_bytes,
            "by_owner": cp.by_owner, "blocks_by_owner": cp.blocks_by_owner}
