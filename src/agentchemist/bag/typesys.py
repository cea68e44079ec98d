"""Message definitions: what a writer embeds in a bag, and what a reader decodes with.

Writing: rosbag2 embeds, per type, the `.msg` text of the type and of every type it nests (the
"ros2msg" encoding), and the REP-2011 type hash. Both come here from the installed interface packages
(`<prefix>/share/<package>/msg/<Name>.msg`, and `<Name>.json` for the hash), the way rosbag2's
local definition source finds them; a type not installed falls back to the rosbags library's built-in
ROS 2 Jazzy definitions.
Reading: decoding uses the definitions embedded in the bag first (a bag written elsewhere carries the
truth about its own bytes), then the installed ones.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from rosbags.typesys import Stores, get_typestore, get_types_from_msg
from rosbags.typesys.base import Nodetype, TypesysError

from agentchemist.bag.errors import UnknownMessageTypeError

TYPE_NAME_PARTS = 3  # package/msg/Name


def share_dirs_from_env(env: Mapping[str, str] | None = None) -> list[Path]:
    """`<prefix>/share` of every prefix on AMENT_PREFIX_PATH (the ROS 2 package index), in order."""
    env = os.environ if env is None else env
    dirs = []
    for prefix in env.get("AMENT_PREFIX_PATH", "").split(os.pathsep):
        if prefix and (Path(prefix) / "share").is_dir():
            dirs.append(Path(prefix) / "share")
    return dirs


def check_type_name(msgtype: str) -> None:
    parts = msgtype.split("/")
    if len(parts) != TYPE_NAME_PARTS or not all(parts) or parts[1] not in ("msg", "srv", "action"):
        raise ValueError(f"message type {msgtype!r} is not of the form package/msg/Name")


class MessageTypes:
    """A registry of message definitions (a rosbags typestore) fed from installed packages and bags.

    share_dirs: the `share/` folders to look for `<package>/msg/<Name>.msg` in (default: from
    AMENT_PREFIX_PATH). `origin` names what the definitions are for, used in error messages.
    """

    def __init__(self, share_dirs: Sequence[Path] | None = None, origin: str | Path = "message types"):
        self.share_dirs = [Path(d) for d in (share_dirs if share_dirs is not None else share_dirs_from_env())]
        self.origin = origin
        self.store = get_typestore(Stores.EMPTY)
        self._builtin = None
        self._hashes: dict[str, str] = {}

    # ------------------------------------------------------------------ writing
    def definition(self, msgtype: str) -> tuple[str, str]:
        """(ros2msg definition text with nested types, RIHS01 type hash) to embed for `msgtype`."""
        self.ensure(msgtype)
        msgdef, _ = self.store.generate_msgdef(msgtype, ros_version=2)
        return msgdef, self._hashes.get(msgtype) or self.store.hash_rihs01(msgtype)

    def ensure(self, msgtype: str, topic: str = "") -> None:
        """Register `msgtype` and everything it nests, or raise UnknownMessageTypeError."""
        try:
            check_type_name(msgtype)
        except ValueError as exc:
            raise UnknownMessageTypeError(self.origin, msgtype, topic, str(exc)) from None
        self._ensure(msgtype, topic, set())

    def _ensure(self, msgtype: str, topic: str, seen: set[str]) -> None:
        if msgtype in self.store.fielddefs or msgtype in seen:
            return
        seen.add(msgtype)
        types = self._installed(msgtype)
        if types is None:
            types = self._from_builtin(msgtype)
        if types is None:
            where = ", ".join(str(d) for d in self.share_dirs) or "no share/ folder (AMENT_PREFIX_PATH is empty)"
            raise UnknownMessageTypeError(self.origin, msgtype, topic,
                                          f"no {msgtype}.msg under {where}, and not a built-in ROS 2 type")
        for nested in _nested_types(types):
            if nested != msgtype:
                self._ensure(nested, topic, seen)
        self.store.register(types)

    def _installed(self, msgtype: str):
        package, kind, name = msgtype.split("/")
        for share in self.share_dirs:
            path = share / package / kind / f"{name}.msg"
            if path.is_file():
                types = get_types_from_msg(path.read_text(), msgtype)
                description = path.with_suffix(".json")
                if description.is_file():
                    for entry in json.loads(description.read_text()).get("type_hashes", []):
                        self._hashes.setdefault(entry["type_name"], entry["hash_string"])
                return types
        return None

    def _from_builtin(self, msgtype: str):
        if self._builtin is None:
            self._builtin = get_typestore(Stores.ROS2_JAZZY)
        if msgtype not in self._builtin.fielddefs:
            return None
        msgdef, _ = self._builtin.generate_msgdef(msgtype, ros_version=2)
        return get_types_from_msg(msgdef, msgtype)

    # ------------------------------------------------------------------ reading
    def add_embedded(self, msgtype: str, msgdef: str, encoding: str = "ros2msg") -> None:
        """Register a definition embedded in a bag (MCAP schema / sqlite3 message_definitions)."""
        if not msgdef or msgtype in self.store.fielddefs:
            return
        if encoding != "ros2msg":
            return  # IDL definitions: decoding falls back to installed definitions
        try:
            self.store.register(get_types_from_msg(msgdef, msgtype))
        except (TypesysError, ValueError) as exc:
            raise UnknownMessageTypeError(self.origin, msgtype, "",
                                          f"embedded definition does not parse: {exc}") from None

    def decode(self, data: bytes | memoryview, msgtype: str, topic: str = "") -> object:
        """Deserialize CDR bytes into a rosbags message object (fields as attributes)."""
        self.ensure(msgtype, topic)
        return self.store.deserialize_cdr(data, msgtype)

    def known(self) -> Iterable[str]:
        return self.store.fielddefs.keys()


def _nested_types(types) -> set[str]:
    """Every message type named by a field of the parsed definitions (arrays and sequences included)."""
    found = set()

    def walk(node):
        kind, detail = node
        if kind == Nodetype.NAME:
            found.add(detail)
        elif kind in (Nodetype.ARRAY, Nodetype.SEQUENCE):
            walk(detail[0])

    for _consts, fields in types.values():
        for _name, node in fields:
            walk(node)
    return found
