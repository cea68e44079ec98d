"""Which topics to record: names, shell-style patterns and presets.

Presets follow DESIGN.md's topic map (the ROS package's common/topics.py holds the same names; a replay
test checks they agree):

- ``sensors``: instruments, cameras, gripper microphones and joint states.
- ``agents``: what the agents say to each other and to the recorder (plan, messages, FSM, estimates,
  anomalies, records, audio events).
- ``all``: every topic except the ones a player must own or that carry no experiment data
  (/clock: playback publishes its own; /rosout and /parameter_events: logging and parameter chatter).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Iterable

from agentchemist.bag.errors import BagOptionError

SENSORS = (
    "/lab/ph_meter/reading",
    "/lab/balance/reading",
    "/camera/*/color/image_raw",
    "/audio/*_gripper/raw",
    "/joint_states",
)
AGENTS = (
    "/agentchemist/plan",
    "/agentchemist/messages",
    "/agentchemist/fsm_state",
    "/agentchemist/quantity",
    "/agentchemist/anomalies",
    "/agentchemist/records",
    "/agentchemist/audio_events",
)
PRESETS: dict[str, tuple[str, ...]] = {"sensors": SENSORS, "agents": AGENTS, "all": ("*",)}
#: never matched by a pattern (only recorded when named exactly).
EXCLUDED_FROM_PATTERNS = ("/clock", "/rosout", "/parameter_events")


@dataclass(frozen=True)
class TopicSelection:
    """Exact topic names plus patterns (fnmatch, `*` also crosses `/`), minus exclusions."""

    names: frozenset[str] = frozenset()
    patterns: tuple[str, ...] = ()
    exclude: tuple[str, ...] = field(default=())

    def __post_init__(self):
        for name in (*self.names, *self.patterns, *self.exclude):
            if not name.startswith("/") and name != "*":
                raise BagOptionError(f"topic {name!r} must be absolute (start with '/')")
        if not self.names and not self.patterns:
            raise BagOptionError("no topic selected: give topic names or a preset (sensors, agents, all)")

    def matches(self, topic: str) -> bool:
        if any(fnmatchcase(topic, pattern) for pattern in self.exclude):
            return False
        if topic in self.names:
            return True
        if topic in EXCLUDED_FROM_PATTERNS:
            return False
        return any(fnmatchcase(topic, pattern) for pattern in self.patterns)

    def describe(self) -> str:
        parts = sorted(self.names) + list(self.patterns)
        text = ", ".join(parts)
        return text + (f" (excluding {', '.join(self.exclude)})" if self.exclude else "")


def select_topics(items: Iterable[str], exclude: Iterable[str] = ()) -> TopicSelection:
    """Turn command-line words into a selection: a preset name, a pattern (contains * ? [) or a topic.

    Raises BagOptionError for an unknown preset-like word (no leading '/') or an empty selection.
    """
    names, patterns = set(), []
    for item in items:
        item = item.strip()
        if not item:
            continue
        if item in PRESETS:
            for entry in PRESETS[item]:
                (patterns.append(entry) if _is_pattern(entry) else names.add(entry))
        elif not item.startswith("/"):
            raise BagOptionError(f"unknown preset {item!r}: use one of {', '.join(PRESETS)} or an absolute topic name")
        elif _is_pattern(item):
            patterns.append(item)
        else:
            names.add(item)
    return TopicSelection(frozenset(names), tuple(dict.fromkeys(patterns)), tuple(exclude))


def _is_pattern(text: str) -> bool:
    return any(ch in text for ch in "*?[")
