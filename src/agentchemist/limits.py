"""Limits on every YAML and JSON document the system reads (scenario, protocol, plan, registry, calibration),
checked before any of it is processed.

A hostile or broken file must give a clear error naming the file, quickly, not a 3 GB expansion of a 3 kB
YAML alias bomb, a RecursionError traceback from 100k-deep nesting or a codec error without a name. The
checks walk the parser's event stream (YAML) or the characters (JSON) once, without recursion, and only
then is the document built:

* size: ``max_bytes`` of the encoded text;
* depth: nested mappings/sequences (objects/arrays);
* aliases (YAML): each ``*alias`` may expand a whole subtree, so their number is bounded (the bomb is
  many aliases to aliases);
* nodes (YAML): scalars plus collections, a bound on the work of constructing the document.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml


class InputLimitError(ValueError):
    """A document is too large, too deep, has too many aliases, or cannot be decoded; names its source."""


@dataclass(frozen=True)
class Limits:
    max_bytes: int = 1_000_000
    max_depth: int = 64
    max_aliases: int = 100
    max_nodes: int = 200_000


DEFAULT = Limits()


def read_text(path: str | Path, limits: Limits = DEFAULT) -> str:
    """The UTF-8 text of `path`, refused (InputLimitError naming the file) when larger than the limit or not
    UTF-8. OSError is left to the caller (it knows whether a missing file is an error)."""
    file = Path(path)
    with file.open("rb") as handle:
        data = handle.read(limits.max_bytes + 1)
    if len(data) > limits.max_bytes:
        raise InputLimitError(f"{file}: larger than {limits.max_bytes} bytes; refused before reading it")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputLimitError(f"{file}: not UTF-8 text (byte {exc.start}: {data[exc.start:exc.start + 1]!r})") \
            from None


def check_yaml(text: str, source: str, limits: Limits = DEFAULT, loader=yaml.SafeLoader) -> None:
    """InputLimitError when the YAML in `text` breaks a limit; YAML syntax errors are left to the loader."""
    if len(text.encode("utf-8", "surrogatepass")) > limits.max_bytes:
        raise InputLimitError(f"{source}: larger than {limits.max_bytes} bytes")
    # The nodes a reader of the document walks, aliases expanded: each *alias counts its anchor's whole
    # subtree again (the loader shares it, but whoever walks or prints the result pays for every copy).
    sizes: dict[str, int] = {}
    stack: list[list] = [[None, 0]]  # open collections: [anchor, nodes so far]
    aliases = 0
    try:
        for event in yaml.parse(text, Loader=loader):
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                stack.append([event.anchor, 1])
                if len(stack) - 1 > limits.max_depth:
                    raise InputLimitError(f"{source}: nested deeper than {limits.max_depth} levels "
                                          f"(line {event.start_mark.line + 1})")
                continue
            if isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                anchor, count = stack.pop()
                if anchor:
                    sizes[anchor] = count
            elif isinstance(event, yaml.AliasEvent):
                aliases += 1
                if aliases > limits.max_aliases:
                    raise InputLimitError(f"{source}: more than {limits.max_aliases} YAML aliases (*name); "
                                          "refused before expanding them")
                count = sizes.get(event.anchor, 1)
            elif isinstance(event, yaml.ScalarEvent):
                count = 1
                if event.anchor:
                    sizes[event.anchor] = 1
            else:
                continue
            stack[-1][1] += count
            if sum(c for _a, c in stack) > limits.max_nodes:
                raise InputLimitError(f"{source}: more than {limits.max_nodes} YAML nodes with its aliases "
                                      "expanded; refused before building it")
    except yaml.YAMLError:
        return  # the loader reports the syntax error with its position


def load_yaml(text: str, source: str, limits: Limits = DEFAULT, loader=yaml.SafeLoader) -> Any:
    """`text` checked against the limits, then loaded with `loader` (a SafeLoader or subclass).
    Raises InputLimitError or yaml.YAMLError."""
    check_yaml(text, source, limits, loader)
    return yaml.load(text, Loader=loader)  # noqa: S506 - callers pass SafeLoader or a subclass


def check_json(text: str | bytes, source: str, limits: Limits = DEFAULT) -> None:
    """InputLimitError when the JSON in `text` is too large or nested too deep (a linear scan; strings
    are skipped, so brackets inside them do not count)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if len(text) > limits.max_bytes:
        raise InputLimitError(f"{source}: larger than {limits.max_bytes} bytes")
    depth, in_string, escaped = 0, False, False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > limits.max_depth:
                raise InputLimitError(f"{source}: nested deeper than {limits.max_depth} levels")
        elif ch in "]}":
            depth -= 1


def load_json(text: str | bytes, source: str, limits: Limits = DEFAULT) -> Any:
    """`text` checked against the limits, then parsed. Raises InputLimitError or json.JSONDecodeError."""
    check_json(text, source, limits)
    return json.loads(text)


def load_yaml_file(path: str | Path, limits: Limits = DEFAULT, loader=yaml.SafeLoader) -> Any:
    """A YAML file read and loaded within the limits. Raises OSError, InputLimitError or yaml.YAMLError."""
    return load_yaml(read_text(path, limits), str(path), limits, loader)
