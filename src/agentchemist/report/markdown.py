"""Render the report document as Markdown (GitHub-flavoured tables; images linked relative to the report)."""

from __future__ import annotations

import os
from pathlib import Path

from .document import PREVIEW_ROWS, Bullets, Image, KeyValues, Para, Section, Table

__all__ = ["render_markdown"]


def _cell(text: str) -> str:
    # A table cell is one line; pipes would end it early.
    return str(text).replace("\n", " ").replace("|", "\\|")


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(_cell(h) for h in headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines


def _link(path: Path, out_dir: Path) -> str:
    try:
        return Path(os.path.relpath(path, out_dir)).as_posix()
    except ValueError:  # another drive on Windows
        return path.as_posix()


def render_markdown(title: str, document: list[Section], out_dir: Path) -> str:
    """The whole report as Markdown text; image links are relative to ``out_dir``."""
    lines = [f"# {title}", ""]
    for section in document:
        heading = f"{section.number}. {section.title}" if section.number is not None else section.title
        lines += [f"## {heading}", ""]
        for block in section.blocks:
            if isinstance(block, Para):
                prefix = {"warn": "> **Note:** ", "note": "_"}.get(block.kind, "")
                suffix = "_" if block.kind == "note" else ""
                lines += [f"{prefix}{block.text}{suffix}", ""]
            elif isinstance(block, Bullets):
                lines += [f"- {item}" for item in block.items] + [""]
            elif isinstance(block, KeyValues):
                lines += _table(["Item", "Value"], [[k, v] for k, v in block.rows]) + [""]
            elif isinstance(block, Table):
                if block.caption:
                    lines += [f"**{block.caption}**", ""]
                if block.long and block.data_file is not None:
                    link = _link(block.data_file, out_dir)
                    lines += [f"All {len(block.rows)} rows: [{link}]({link}); the first {PREVIEW_ROWS} here.", ""]
                    lines += _table(block.headers, block.rows[:PREVIEW_ROWS]) + [""]
                else:
                    lines += _table(block.headers, block.rows) + [""]
            elif isinstance(block, Image):
                lines += [f"![{block.caption}]({_link(block.path, out_dir)})", "", f"*{block.caption}*", ""]
    return "\n".join(lines).rstrip() + "\n"
