"""Replaying a bag recorded with an older message definition.

Interfaces evolve: a field is added to a message, and every bag recorded before no longer deserializes
as the installed type (the CDR layout changed). rosbag2 would publish the old bytes anyway and every
subscriber would fail to read them. Because a bag embeds the definitions it was written with, the old
bytes can be decoded with those and re-encoded with the installed ones, field by field by name: fields
that are new get their zero value, fields that were removed are dropped. Changing a field's type
(e.g. string -> float64) cannot be converted and is an error naming the field.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from rosbags.typesys.base import Nodetype

from agentchemist.bag.errors import UnknownMessageTypeError
from agentchemist.bag.info import TopicInfo
from agentchemist.bag.typesys import MessageTypes

_NUMPY = {"bool": np.bool_, "byte": np.uint8, "char": np.uint8, "int8": np.int8, "uint8": np.uint8,
          "int16": np.int16, "uint16": np.uint16, "int32": np.int32, "uint32": np.uint32, "int64": np.int64,
          "uint64": np.uint64, "float32": np.float32, "float64": np.float64}
_STRINGS = ("string", "wstring")


@dataclass(frozen=True)
class TypeCheck:
    """How a topic's recorded definition compares with the installed one.

    same: identical layout (bytes can be published as they are). added/removed: field paths
    (`header.frame_id`) present only in the installed / only in the recorded definition."""

    topic: str
    msgtype: str
    recorded_hash: str
    installed_hash: str
    same: bool
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()

    def describe(self) -> str:
        parts = []
        if self.added:
            parts.append("new fields " + ", ".join(self.added) + " get their zero value")
        if self.removed:
            parts.append("dropped fields " + ", ".join(self.removed))
        return (f"topic {self.topic}: recorded with another definition of {self.msgtype} "
                f"({self.recorded_hash[:20]}... vs installed {self.installed_hash[:20]}...); converting by "
                f"field name: " + ("; ".join(parts) or "same fields, reordered or retyped"))


class Converter:
    """Re-encode messages of one type from a recorded definition to the installed definition."""

    def __init__(self, check: TypeCheck, recorded: MessageTypes, installed: MessageTypes):
        self.check = check
        self.recorded = recorded
        self.installed = installed

    def convert(self, data: bytes) -> bytes:
        old = self.recorded.store.deserialize_cdr(data, self.check.msgtype)
        new = _build(old, self.check.msgtype, self.installed, self.check.topic)
        return bytes(self.installed.store.serialize_cdr(new, self.check.msgtype))


def check_topic(topic: TopicInfo, installed: MessageTypes, origin="bag") -> tuple[TypeCheck, Converter | None]:
    """Compare a topic's embedded definition with the installed one; a Converter when they differ.

    A topic without an embedded definition is assumed to match (nothing to compare with) unless its
    recorded type hash differs from the installed one, which is then an UnknownMessageTypeError.
    """
    installed.ensure(topic.msgtype, topic.name)
    installed_hash = installed.definition(topic.msgtype)[1]
    # Layouts are compared with hashes computed the same way on both sides (by rosbags): its hash of a
    # definition with byte/char fields differs from rosidl's, so a recorded rosidl hash is compared only
    # when there is no definition to parse.
    if not topic.msgdef or topic.msgdef_encoding not in ("", "ros2msg"):
        if topic.type_hash and topic.type_hash != installed_hash:
            raise UnknownMessageTypeError(origin, topic.msgtype, topic.name,
                                          f"recorded type hash {topic.type_hash} differs from the installed "
                                          f"{installed_hash} and the bag embeds no definition to convert from")
        return TypeCheck(topic.name, topic.msgtype, topic.type_hash, installed_hash, True), None
    recorded = MessageTypes(share_dirs=[], origin=origin)
    recorded.add_embedded(topic.msgtype, topic.msgdef)
    recorded_hash = recorded.store.hash_rihs01(topic.msgtype)
    if recorded_hash == installed.store.hash_rihs01(topic.msgtype):
        return TypeCheck(topic.name, topic.msgtype, topic.type_hash or recorded_hash, installed_hash, True), None
    added, removed = _diff(topic.msgtype, recorded, installed)
    check = TypeCheck(topic.name, topic.msgtype, recorded_hash, installed_hash, False, tuple(added), tuple(removed))
    return check, Converter(check, recorded, installed)


def _fields(types: MessageTypes, msgtype: str):
    return types.store.fielddefs[msgtype][1]


def _diff(msgtype: str, old: MessageTypes, new: MessageTypes, prefix: str = "") -> tuple[list[str], list[str]]:
    old_fields = dict(_fields(old, msgtype))
    new_fields = dict(_fields(new, msgtype))
    added = [prefix + n for n in new_fields if n not in old_fields]
    removed = [prefix + n for n in old_fields if n not in new_fields]
    for name, node in new_fields.items():
        if name in old_fields and node[0] == Nodetype.NAME and old_fields[name][0] == Nodetype.NAME \
                and node[1] == old_fields[name][1]:
            a, r = _diff(node[1], old, new, f"{prefix}{name}.")
            added += a
            removed += r
    return added, removed


def _build(old, msgtype: str, new_types: MessageTypes, topic: str):
    """An installed-definition object of `msgtype` from a recorded one (matching fields by name)."""
    cls = new_types.store.types[msgtype]
    kwargs = {}
    for name, node in _fields(new_types, msgtype):
        if hasattr(old, name):
            kwargs[name] = _value(getattr(old, name), node, new_types, f"{msgtype}.{name}", topic)
        else:
            kwargs[name] = _zero(node, new_types)
    return cls(**kwargs)


def _value(value, node, new_types: MessageTypes, where: str, topic: str):
    kind, detail = node
    if kind == Nodetype.NAME:
        return _build(value, detail, new_types, topic)
    if kind == Nodetype.BASE:
        return _scalar(value, detail[0], where, topic)
    inner, _length = detail
    if inner[0] == Nodetype.NAME:
        return [_build(v, inner[1], new_types, topic) for v in value]
    base = inner[1][0]
    if base in _STRINGS:
        return [_scalar(v, base, where, topic) for v in value]
    if base in ("byte", "char"):  # octets: rosbags may hold them as int8 or uint8; the bytes are the same
        return np.asarray(value).view(np.uint8) if np.asarray(value).dtype.itemsize == 1 else np.asarray(value)
    try:
        return np.asarray(value).astype(_NUMPY[base], casting="same_kind")
    except (TypeError, ValueError) as exc:
        raise UnknownMessageTypeError("bag", where.split(".")[0], topic,
                                      f"field {where} cannot be converted to {base}[]: {exc}") from None


def _scalar(value, base: str, where: str, topic: str):
    if base in _STRINGS:
        if not isinstance(value, str):
            raise UnknownMessageTypeError("bag", where.split(".")[0], topic,
                                          f"field {where} was {type(value).__name__}, is now a string")
        return value
    if isinstance(value, str):
        raise UnknownMessageTypeError("bag", where.split(".")[0], topic, f"field {where} was a string, is now {base}")
    if base == "bool":
        return bool(value)
    if base.startswith("float"):
        return float(value)
    return int(value)


def _zero(node, types: MessageTypes):
    kind, detail = node
    if kind == Nodetype.NAME:
        cls = types.store.types[detail]
        return cls(**{n: _zero(sub, types) for n, sub in _fields(types, detail)})
    if kind == Nodetype.BASE:
        base = detail[0]
        return "" if base in _STRINGS else False if base == "bool" else 0.0 if base.startswith("float") else 0
    inner, length = detail
    if kind == Nodetype.ARRAY:
        if inner[0] == Nodetype.BASE and inner[1][0] not in _STRINGS:
            return np.zeros(length, dtype=_NUMPY[inner[1][0]])
        return [_zero(inner, types) for _ in range(length)]
    if inner[0] == Nodetype.BASE and inner[1][0] not in _STRINGS:
        return np.zeros(0, dtype=_NUMPY[inner[1][0]])
    return []
