#!/usr/bin/env python3
"""Expand urdf/agentchemist_aloha.urdf.xacro without the xacro package; write agentchemist_aloha.urdf.

Machines without ROS (CI, a laptop running the twin, a tool that only reads URDF) get the robot model from the
pre-expanded ``agentchemist_aloha.urdf``; the robot and Gazebo launch files run the real ``xacro``. This
script keeps the two in sync: it implements the part of xacro the model uses, with xacro's semantics
(xacro 2.x: lazily evaluated properties whose values become int, float or bool when they read as one, macros
with ``name:=default`` parameters evaluated in the caller's scope, ``xacro:if`` / ``xacro:unless``,
``${python expression}`` with the math functions and ``xacro.fatal``, ``$(arg name)`` and ``$(find pkg)``).
Anything else (block parameters, ``xacro:include``, ``xacro:element`` ...) is refused with an error that
names it, so the xacro cannot silently grow a feature this expander gets wrong. The output was checked
element by element against real xacro 2.1.1 for hardware topic_based, mock and gazebo.

Usage:
    python3 urdf/generate_urdf.py                  # rewrite urdf/agentchemist_aloha.urdf (hardware:=topic_based)
    python3 urdf/generate_urdf.py --check          # exit 1 if the checked-in URDF is stale
    python3 urdf/generate_urdf.py --stdout hardware:=mock
"""
from __future__ import annotations

import argparse
import copy
import math
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
XACRO_FILE = HERE / "agentchemist_aloha.urdf.xacro"
URDF_FILE = HERE / "agentchemist_aloha.urdf"
DEFAULT_ARGS = {"hardware": "topic_based"}
XACRO_NAMESPACES = ("http://www.ros.org/wiki/xacro", "http://ros.org/wiki/xacro")
_TOKEN = re.compile(r"\$\{([^}]*)\}|\$\(([^)]*)\)|\$\$\{")


class XacroSubsetError(ValueError):
    """The xacro file uses something this expander does not support, or is wrong (undefined name ...)."""


class _XacroNamespace:
    """The ``xacro.`` functions expressions may call."""

    @staticmethod
    def fatal(*args):
        raise XacroSubsetError(" ".join(str(a) for a in args))


_GLOBALS = {k: v for k, v in math.__dict__.items() if not k.startswith("_")}
_GLOBALS.update({"True": True, "False": False, "list": list, "dict": dict, "len": len, "str": str, "float": float,
                 "int": int, "bool": bool, "min": min, "max": max, "round": round, "abs": abs,
                 "xacro": _XacroNamespace(), "__builtins__": {}})


def _boolean(value, text: str) -> bool:
    """xacro's get_boolean_value: true/false/True/False, integers, or anything Python converts."""
    if isinstance(value, str):
        if value in ("true", "True"):
            return True
        if value in ("false", "False"):
            return False
        try:
            return bool(int(value))
        except ValueError:
            raise XacroSubsetError(f"condition {text!r} is {value!r}, not a boolean") from None
    return bool(value)


def _literal(value):
    """xacro's Table._eval_literal: numbers and booleans written as text become numbers and booleans."""
    if not isinstance(value, str):
        return value
    if len(value) >= 2 and value[0] == "'" and value[-1] == "'":
        return value[1:-1]
    if "_" in value:  # xacro keeps these as text (Python would read 1_0 as 10)
        return value
    for convert in (int, float):
        try:
            return convert(value)
        except ValueError:
            pass
    if value in ("true", "True"):
        return True
    if value in ("false", "False"):
        return False
    return value


class Scope:
    """Properties of one scope (the file, or one macro call), with lazy evaluation as xacro does."""

    def __init__(self, expander: "Expander", parent: "Scope | None" = None):
        self.expander, self.parent = expander, parent
        self.values: dict[str, object] = {}
        self.pending: dict[str, str] = {}
        self._resolving: list[str] = []

    def define(self, name: str, value, lazy: bool) -> None:
        value = _literal(value)
        self.values.pop(name, None)
        self.pending.pop(name, None)
        if lazy and isinstance(value, str):
            self.pending[name] = value
        else:
            self.values[name] = value

    def __contains__(self, name) -> bool:
        return name in self.values or name in self.pending or (self.parent is not None and name in self.parent)

    def __getitem__(self, name):
        if name in self.pending:
            if name in self._resolving:
                raise XacroSubsetError(f"circular property definition: {' -> '.join(self._resolving + [name])}")
            self._resolving.append(name)
            try:
                self.values[name] = _literal(self.expander.eval_text(self.pending.pop(name), self))
            finally:
                self._resolving.remove(name)
        if name in self.values:
            return self.values[name]
        if self.parent is not None:
            return self.parent[name]
        raise KeyError(name)


class Expander:
    """Expands one xacro document with the given arguments (``{"hardware": "mock"}``)."""

    def __init__(self, args: dict[str, str] | None = None, packages: dict[str, str] | None = None):
        self.args = dict(args or {})
        self.packages = dict(packages or {})
        self.macros: dict[str, tuple[list[tuple[str, str | None]], ET.Element]] = {}

    # ------------------------------------------------------------------ text and expressions
    def eval_text(self, text: str, scope: Scope):
        """Substitute ``${...}`` and ``$(...)``; a lone expression keeps its type (as in xacro)."""
        results: list = []
        pos = 0
        for m in _TOKEN.finditer(text):
            if m.start() > pos:
                results.append(text[pos:m.start()])
            if m.group(1) is not None:
                results.append(self._eval_expression(m.group(1), scope))
            elif m.group(2) is not None:
                results.append(self._extension(str(self.eval_text(m.group(2), scope))))
            else:
                results.append("${")
            pos = m.end()
        if pos < len(text):
            results.append(text[pos:])
        if len(results) == 1:
            return results[0]
        return "".join(str(r) for r in results)

    def _eval_expression(self, expr: str, scope: Scope):
        source = str(self.eval_text(expr, scope)).strip()
        try:
            code = compile(source, "<expression>", "eval")
        except SyntaxError as exc:
            raise XacroSubsetError(f"bad expression ${{{expr}}}: {exc}") from None
        if any(n.startswith("__") for n in code.co_names):
            raise XacroSubsetError(f"expression ${{{expr}}} uses a dunder name")
        try:
            return eval(code, dict(_GLOBALS), _ScopeMapping(scope))  # noqa: S307 - xacro's own semantics
        except XacroSubsetError:
            raise
        except Exception as exc:  # NameError, TypeError ... from the expression itself
            raise XacroSubsetError(f"cannot evaluate ${{{expr}}}: {type(exc).__name__}: {exc}") from None

    def _extension(self, body: str) -> str:
        parts = body.split()
        if len(parts) == 2 and parts[0] == "arg":
            if parts[1] not in self.args:
                raise XacroSubsetError(f"$(arg {parts[1]}) is not declared with xacro:arg nor given")
            return self.args[parts[1]]
        if len(parts) == 2 and parts[0] == "find":
            if parts[1] not in self.packages:
                raise XacroSubsetError(f"$(find {parts[1]}): package location not given to the expander")
            return self.packages[parts[1]]
        raise XacroSubsetError(f"unsupported substitution $({body})")

    # ------------------------------------------------------------------ elements
    def expand(self, root: ET.Element) -> ET.Element:
        if _xacro_tag(root) is not None:
            raise XacroSubsetError("the root element must be <robot>")
        scope = Scope(self)
        out = ET.Element(root.tag, {k: str(self.eval_text(v, scope)) for k, v in root.attrib.items()})
        self._children(root, out, scope)
        return out

    def _children(self, source: ET.Element, out: ET.Element, scope: Scope) -> None:
        for child in list(source):
            if child.tag is ET.Comment:
                out.append(ET.Comment(child.text))
                continue
            kind = _xacro_tag(child)
            if kind is None:
                out.append(self._element(child, scope))
            elif kind == "property":
                self._property(child, scope)
            elif kind == "arg":
                name = _required(child, "name")
                if name not in self.args:
                    self.args[name] = str(self.eval_text(child.get("default", ""), scope))
            elif kind == "macro":
                self._define_macro(child)
            elif kind in ("if", "unless"):
                value = self.eval_text(_required(child, "value"), scope)
                if _boolean(value, child.get("value")) == (kind == "if"):
                    self._children(child, out, scope)
            elif kind in self.macros:
                self._call(kind, child, out, scope)
            else:
                raise XacroSubsetError(f"xacro:{kind} is not supported by generate_urdf.py (nor a known macro)")

    def _element(self, source: ET.Element, scope: Scope) -> ET.Element:
        elem = ET.Element(source.tag, {k: str(self.eval_text(v, scope)) for k, v in source.attrib.items()})
        if source.text and source.text.strip():
            elem.text = str(self.eval_text(source.text.strip(), scope))
        self._children(source, elem, scope)
        return elem

    def _property(self, elem: ET.Element, scope: Scope) -> None:
        name = _required(elem, "name")
        if "value" not in elem.attrib:
            raise XacroSubsetError(f"xacro:property {name!r}: block properties are not supported")
        if set(elem.attrib) - {"name", "value"}:
            raise XacroSubsetError(f"xacro:property {name!r}: only name and value are supported")
        scope.define(name, elem.get("value"), lazy=True)

    def _define_macro(self, elem: ET.Element) -> None:
        name = _required(elem, "name")
        params: list[tuple[str, str | None]] = []
        for spec in elem.get("params", "").split():
            if spec.startswith("*") or "^" in spec:
                raise XacroSubsetError(f"macro {name!r}: parameter {spec!r} (blocks, forwarding) is not supported")
            pname, sep, default = spec.partition(":=")
            params.append((pname, default if sep else None))
        self.macros[name] = (params, elem)

    def _call(self, name: str, call: ET.Element, out: ET.Element, scope: Scope) -> None:
        params, body = self.macros[name]
        known = {p for p, _ in params}
        unknown = set(call.attrib) - known
        if unknown:
            raise XacroSubsetError(f"macro {name!r} has no parameter(s) {sorted(unknown)}")
        local = Scope(self, parent=scope)  # xacro evaluates a macro body in a scope below the caller's
        for pname, default in params:
            if pname in call.attrib:
                local.define(pname, self.eval_text(call.get(pname), scope), lazy=False)
            elif default is not None:
                local.define(pname, self.eval_text(default, scope), lazy=False)
            else:
                raise XacroSubsetError(f"macro {name!r} called without parameter {pname!r}")
        self._children(copy.deepcopy(body), out, local)


class _ScopeMapping(dict):
    """Lets eval() read names from a Scope (KeyError falls back to the globals, as Python does)."""

    def __init__(self, scope: Scope):
        super().__init__()
        self.scope = scope

    def __getitem__(self, key):
        return self.scope[key]

    def __contains__(self, key):
        return key in self.scope


def _xacro_tag(elem: ET.Element) -> str | None:
    if not isinstance(elem.tag, str) or not elem.tag.startswith("{"):
        return None
    uri, _, local = elem.tag[1:].partition("}")
    if uri in XACRO_NAMESPACES:
        return local
    raise XacroSubsetError(f"element in unknown namespace {uri!r}")


def _required(elem: ET.Element, attribute: str) -> str:
    value = elem.get(attribute)
    if value is None:
        raise XacroSubsetError(f"<{elem.tag}> needs the {attribute!r} attribute")
    return value


def expand_file(path: Path = XACRO_FILE, args: dict[str, str] | None = None,
                packages: dict[str, str] | None = None) -> str:
    """The URDF text for ``path`` expanded with ``args`` (xacro's ``name:=value``)."""
    parser = ET.XMLParser(target=ET.TreeBuilder(insert_comments=True))
    root = ET.parse(path, parser=parser).getroot()
    given = {**DEFAULT_ARGS, **(args or {})}
    robot = Expander(given, packages).expand(root)
    ET.indent(robot, space="  ")
    arg_text = " ".join(f"{k}:={v}" for k, v in sorted(given.items()))
    header = (f'<?xml version="1.0"?>\n'
              f"<!-- GENERATED by urdf/generate_urdf.py from {path.name} ({arg_text}).\n"
              f"     Do not edit: edit the xacro, then run `python3 urdf/generate_urdf.py`. -->\n")
    return header + ET.tostring(robot, encoding="unicode") + "\n"


def _parse_args(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        name, sep, value = item.partition(":=")
        if not sep or not name:
            raise XacroSubsetError(f"arguments are name:=value, got {item!r}")
        out[name] = value
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("xacro_args", nargs="*", help="name:=value (default hardware:=topic_based)")
    parser.add_argument("--check", action="store_true", help="fail if the checked-in URDF differs")
    parser.add_argument("--stdout", action="store_true", help="print instead of writing the file")
    opts = parser.parse_args(argv)
    try:
        text = expand_file(XACRO_FILE, _parse_args(opts.xacro_args))
    except XacroSubsetError as exc:
        print(f"generate_urdf: {exc}", file=sys.stderr)
        return 2
    if opts.stdout:
        sys.stdout.write(text)
        return 0
    if opts.check:
        current = URDF_FILE.read_text() if URDF_FILE.exists() else ""
        if current != text:
            print(f"{URDF_FILE} is stale: run python3 urdf/generate_urdf.py", file=sys.stderr)
            return 1
        return 0
    URDF_FILE.write_text(text)
    print(f"wrote {URDF_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
