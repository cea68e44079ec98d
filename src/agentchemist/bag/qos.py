"""QoS profiles as rosbag2 stores them (`offered_qos_profiles`), and the adaptation rules of record/play.

rosbag2 keeps, per topic, the QoS each publisher offered while recording. Metadata versions <= 8 write the
policies as rmw enum integers inside a YAML string; version 9 writes lower-case names. Both are read here.
Recording subscribes with a profile every publisher can serve (so latched, transient-local messages
published before the recorder started still arrive); playback publishes with the profile the
publishers offered, so a late joiner gets a latched topic's last message exactly as it did live.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Iterable, Sequence

import yaml

from agentchemist.bag.errors import QosError

# rmw enum values, as metadata versions <= 8 store them.
HISTORY = ("system_default", "keep_last", "keep_all", "unknown")
RELIABILITY = ("system_default", "reliable", "best_effort", "unknown", "best_available")
DURABILITY = ("system_default", "transient_local", "volatile", "unknown", "best_available")
LIVELINESS = ("system_default", "automatic", "manual_by_node", "manual_by_topic", "unknown", "best_available")
#: rosbag2 writes an infinite duration as the largest rmw_time_t it can carry; any sec at or above
#: INT32_MAX means "no deadline / lifespan / lease".
INFINITE_SEC = 2_147_483_647
#: depth rosbag2 uses when a bag carries no QoS for a topic.
DEFAULT_DEPTH = 10


@dataclass(frozen=True)
class QosTime:
    """A QoS duration as rosbag2 stores it: sec and nsec (0/0 = the middleware default)."""

    sec: int = 0
    nsec: int = 0

    def __post_init__(self):
        for name in ("sec", "nsec"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise QosError(f"QoS duration {name} must be a non-negative integer, got {value!r}")

    @property
    def infinite(self) -> bool:
        return self.sec >= INFINITE_SEC

    @property
    def nanoseconds(self) -> int:
        """Total nanoseconds (meaningless when `infinite`)."""
        return self.sec * 1_000_000_000 + self.nsec


@dataclass(frozen=True)
class QosProfile:
    """One offered QoS profile. Policy names are rosbag2's (lower case); depth counts messages."""

    history: str = "keep_last"
    depth: int = DEFAULT_DEPTH
    reliability: str = "reliable"
    durability: str = "volatile"
    deadline: QosTime = QosTime()
    lifespan: QosTime = QosTime()
    liveliness: str = "system_default"
    liveliness_lease_duration: QosTime = QosTime()
    avoid_ros_namespace_conventions: bool = False

    def __post_init__(self):
        for name, allowed in (("history", HISTORY), ("reliability", RELIABILITY), ("durability", DURABILITY),
                              ("liveliness", LIVELINESS)):
            if getattr(self, name) not in allowed:
                raise QosError(f"unknown QoS {name} {getattr(self, name)!r}; expected one of {', '.join(allowed)}")
        if not isinstance(self.depth, int) or isinstance(self.depth, bool) or self.depth < 0:
            raise QosError(f"QoS depth must be a non-negative integer, got {self.depth!r}")

    @property
    def latched(self) -> bool:
        """Transient local: the publisher keeps its last `depth` messages for late joiners."""
        return self.durability == "transient_local"


def _policy(value: Any, names: tuple[str, ...], field: str) -> str:
    if isinstance(value, bool):
        raise QosError(f"QoS {field} must be a name or an rmw enum integer, got {value!r}")
    if isinstance(value, int):
        if not 0 <= value < len(names):
            raise QosError(f"QoS {field} enum {value} is out of range 0..{len(names) - 1}")
        return names[value]
    if isinstance(value, str) and value.lower() in names:
        return value.lower()
    raise QosError(f"unknown QoS {field} {value!r}; expected one of {', '.join(names)}")


def _time(value: Any, field: str) -> QosTime:
    if not isinstance(value, dict) or "sec" not in value or "nsec" not in value:
        raise QosError(f"QoS {field} must be a mapping with sec and nsec, got {value!r}")
    return QosTime(int(value["sec"]), int(value["nsec"]))


def parse_offered_qos(source: str | Sequence[dict] | None) -> tuple[QosProfile, ...]:
    """Profiles from rosbag2's offered_qos_profiles (a YAML string or an already-loaded list).

    Accepts metadata versions <= 8 (enum integers) and 9 (names). Empty input: no profiles.
    """
    if source is None or source == "" or source == []:
        return ()
    if isinstance(source, str):
        try:
            items = yaml.safe_load(source)
        except yaml.YAMLError as exc:
            raise QosError(f"offered_qos_profiles is not valid YAML: {exc}") from None
    else:
        items = source
    if items is None:
        return ()
    if not isinstance(items, list):
        raise QosError(f"offered_qos_profiles must be a list of profiles, got {type(items).__name__}")
    profiles = []
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise QosError(f"offered QoS profile {index} is not a mapping: {item!r}")
        try:
            profiles.append(QosProfile(
                history=_policy(item["history"], HISTORY, "history"),
                depth=int(item["depth"]),
                reliability=_policy(item["reliability"], RELIABILITY, "reliability"),
                durability=_policy(item["durability"], DURABILITY, "durability"),
                deadline=_time(item.get("deadline", {"sec": 0, "nsec": 0}), "deadline"),
                lifespan=_time(item.get("lifespan", {"sec": 0, "nsec": 0}), "lifespan"),
                liveliness=_policy(item.get("liveliness", 0), LIVELINESS, "liveliness"),
                liveliness_lease_duration=_time(item.get("liveliness_lease_duration", {"sec": 0, "nsec": 0}),
                                                "liveliness_lease_duration"),
                avoid_ros_namespace_conventions=bool(item.get("avoid_ros_namespace_conventions", False)),
            ))
        except KeyError as exc:
            raise QosError(f"offered QoS profile {index} lacks the field {exc.args[0]!r}") from None
        except (TypeError, ValueError) as exc:
            if isinstance(exc, QosError):
                raise QosError(f"offered QoS profile {index}: {exc}") from None
            raise QosError(f"offered QoS profile {index}: {exc}") from None
    return tuple(profiles)


def profile_dicts(profiles: Iterable[QosProfile], version: int = 9) -> list[dict]:
    """Plain dicts in the layout of metadata `version` (<= 8: enum integers, 9: names)."""
    def policy(value: str, names: tuple[str, ...]):
        return value if version >= 9 else names.index(value)

    return [{
        "history": policy(p.history, HISTORY), "depth": p.depth,
        "reliability": policy(p.reliability, RELIABILITY), "durability": policy(p.durability, DURABILITY),
        "deadline": {"sec": p.deadline.sec, "nsec": p.deadline.nsec},
        "lifespan": {"sec": p.lifespan.sec, "nsec": p.lifespan.nsec},
        "liveliness": policy(p.liveliness, LIVELINESS),
        "liveliness_lease_duration": {"sec": p.liveliness_lease_duration.sec,
                                      "nsec": p.liveliness_lease_duration.nsec},
        "avoid_ros_namespace_conventions": p.avoid_ros_namespace_conventions,
    } for p in profiles]


def dump_offered_qos(profiles: Iterable[QosProfile], version: int = 9) -> str:
    """The YAML string rosbag2 stores in a storage file's topic table / MCAP channel metadata."""
    dicts = profile_dicts(profiles, version)
    return yaml.safe_dump(dicts, sort_keys=False, default_flow_style=False).strip() if dicts else ""


def subscription_profile(offered: Sequence[QosProfile], depth: int = 1000) -> QosProfile:
    """What a recorder subscribes with so that every offering publisher matches and nothing is lost.

    Reliable only if every publisher offers reliable (a reliable reader does not match a best-effort
    writer); transient local only if every publisher is (then messages latched before the recorder
    started arrive too). Keep-last `depth` deep so a slow write never overwrites unread messages.
    """
    if depth < 1:
        raise QosError(f"subscription depth must be >= 1, got {depth}")
    if not offered:
        return QosProfile(depth=depth)
    reliable = all(p.reliability == "reliable" for p in offered)
    latched = all(p.durability == "transient_local" for p in offered)
    return QosProfile(history="keep_last", depth=depth,
                      reliability="reliable" if reliable else "best_effort",
                      durability="transient_local" if latched else "volatile")


#: history depth of a volatile topic on playback: a player in fast mode outruns the network, and a
#: shallow reliable writer would overwrite samples its readers have not acknowledged yet.
PLAYBACK_DEPTH = 1000


def playback_profile(offered: Sequence[QosProfile]) -> QosProfile:
    """What a player publishes a topic with: what the recorded publishers offered.

    With several offers the weakest common one (reliable only if all were, transient local only if all
    were). A latched topic keeps the deepest recorded depth (at least 1: DDS discovery reports history as
    unknown with depth 0), so its late joiners get what they got live; a volatile one is PLAYBACK_DEPTH deep.
    """
    if not offered:
        return QosProfile(depth=PLAYBACK_DEPTH)
    reliable = all(p.reliability in ("reliable", "system_default") for p in offered)
    latched = all(p.durability == "transient_local" for p in offered)
    depth = max((p.depth for p in offered if p.history != "keep_all"), default=DEFAULT_DEPTH)
    keep_all = any(p.history == "keep_all" for p in offered)
    base = offered[0]
    return replace(base, history="keep_all" if keep_all else "keep_last",
                   depth=max(depth, 1) if latched else max(depth, PLAYBACK_DEPTH),
                   reliability="reliable" if reliable else "best_effort",
                   durability="transient_local" if latched else "volatile")


def from_rosbags(qos) -> QosProfile:
    """A rosbags `Qos` named tuple (what rosbags parsed from a storage file) as a QosProfile."""
    def name(enum_value, allowed):
        text = enum_value.name.lower()
        return text if text in allowed else "unknown" if "unknown" in allowed else allowed[0]

    return QosProfile(
        history=name(qos.history, HISTORY), depth=int(qos.depth),
        reliability=name(qos.reliability, RELIABILITY), durability=name(qos.durability, DURABILITY),
        deadline=QosTime(int(qos.deadline.sec), int(qos.deadline.nsec)),
        lifespan=QosTime(int(qos.lifespan.sec), int(qos.lifespan.nsec)),
        liveliness=name(qos.liveliness, LIVELINESS),
        liveliness_lease_duration=QosTime(int(qos.liveliness_lease_duration.sec),
                                          int(qos.liveliness_lease_duration.nsec)),
        avoid_ros_namespace_conventions=bool(qos.avoid_ros_namespace_conventions))


def to_rosbags(profile: QosProfile):
    """The rosbags `Qos` named tuple the rosbags writer stores."""
    from rosbags.interfaces import Qos, QosDurability, QosHistory, QosLiveliness, QosReliability
    from rosbags.interfaces import QosTime as RbTime

    def t(value: QosTime):
        return RbTime(value.sec, value.nsec)

    return Qos(QosHistory[profile.history.upper()], profile.depth, QosReliability[profile.reliability.upper()],
               QosDurability[profile.durability.upper()], t(profile.deadline), t(profile.lifespan),
               QosLiveliness[profile.liveliness.upper()], t(profile.liveliness_lease_duration),
               profile.avoid_ros_namespace_conventions)
