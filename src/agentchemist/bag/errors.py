"""Typed errors of the bag tools. Every one names the file (or topic) and says what is wrong.

All are ValueErrors: a bad bag or a bad option is bad input, never a reason to produce a number silently.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


class BagError(ValueError):
    """A bag (folder or storage file) cannot be used as asked. `path` is the file at fault."""

    def __init__(self, path: str | Path, problem: str):
        self.path = Path(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


class BagNotFoundError(BagError):
    """The path does not exist, or the folder holds no metadata.yaml and no storage file."""


class BagExistsError(BagError):
    """Recording would overwrite an existing bag (rosbag2 refuses too)."""


class BagMetadataError(BagError):
    """metadata.yaml is missing, unreadable or inconsistent with the storage files."""


class BagCorruptError(BagError):
    """A storage file is truncated or corrupt (bad magic, CRC mismatch, short record, malformed database)."""


class UnknownMessageTypeError(BagError):
    """A message type has no definition: not embedded in the bag and not installed."""

    def __init__(self, path: str | Path, msgtype: str, topic: str = "", detail: str = ""):
        self.msgtype = msgtype
        self.topic = topic
        where = f" on topic {topic}" if topic else ""
        super().__init__(path, f"unknown message type {msgtype!r}{where}" + (f": {detail}" if detail else ""))


class BagOptionError(ValueError):
    """A recording or playback option is out of range or unknown (rate <= 0, unknown preset, bad remap)."""


class QosError(ValueError):
    """An offered_qos_profiles entry cannot be parsed (unknown policy name, missing field, bad number)."""


@dataclass(frozen=True)
class BagProblem:
    """Something wrong with part of a bag that did not stop the rest from being read.

    path: the file at fault. problem: what is wrong and what was done about it.
    """

    path: Path
    problem: str

    def __str__(self) -> str:
        return f"{self.path}: {self.problem}"
