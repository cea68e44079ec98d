"""Render the report document as one self-contained HTML page (charts and snapshots inlined as base64).

Long tables (per-drop, transitions, events) sit in scrollable boxes; all text is HTML-escaped. The page
needs no network and no other file, so it can be mailed or archived with the run.
"""

from __future__ import annotations

import base64
import html
import mimetypes
import os
import re
from pathlib import Path

from .document import Bullets, Image, KeyValues, Para, Section, Table

__all__ = ["render_html"]

_CSS = """
body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;
color:#222;line-height:1.45}
h1{border-bottom:2px solid #2c3e50;padding-bottom:.3em}h2{margin-top:2em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:.6em 0 1.2em;font-size:.88em}th,td{border:1px solid #ccc;padding:.25em .5em;
text-align:left;vertical-align:top}th{background:#f0f3f6;position:sticky;top:0}
.scroll{max-height:420px;overflow:auto;border:1px solid #ccc;margin-bottom:1.2em}.scroll table{margin:0}
.warn{background:#fff6e5;border-left:4px solid #f39c12;padding:.4em .8em}p.warn+ul.warn{margin-top:-1em;padding-left:2.4em}.note{color:#555;font-style:italic}
figure{margin:1em 0}figure img{max-width:100%;border:1px solid #ddd}figcaption{font-size:.9em;color:#555}
.caption{font-weight:600;margin-top:1em}details{margin:.6em 0 1.2em}summary{cursor:pointer}nav ol{columns:2}
"""


def _esc(text: str) -> str:
    # Markdown bold used in cells ("**no**") becomes <strong> after escaping.
    return re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", html.escape(str(text)))


def _data_uri(path: Path) -> str | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        mime = "image/png"
    elif data[:3] == b"\xff\xd8\xff":
        mime = "image/jpeg"
    else:
        mime = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def _table(headers: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{_esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{_esc(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _rel(path: Path, out_dir: Path | None) -> str:
    try:
        return Path(os.path.relpath(path, out_dir)).as_posix() if out_dir is not None else path.name
    except ValueError:
        return path.as_posix()


def render_html(title: str, document: list[Section], out_dir: Path | None = None) -> str:
    """The whole report as a standalone HTML page (long tables folded, linked to their CSV files)."""
    parts = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{_esc(title)}</title>"
             f"<style>{_CSS}</style></head><body><h1>{_esc(title)}</h1>"]
    toc = "".join(f"<li><a href='#{s.key}'>{_esc(s.title)}</a></li>" for s in document if s.number is not None)
    parts.append(f"<nav><ol>{toc}</ol></nav>")
    for section in document:
        heading = f"{section.number}. {section.title}" if section.number is not None else section.title
        parts.append(f"<section id='{section.key}'><h2>{_esc(heading)}</h2>")
        for block in section.blocks:
            if isinstance(block, Para):
                cls = f" class='{block.kind}'" if block.kind != "p" else ""
                parts.append(f"<p{cls}>{_esc(block.text)}</p>")
            elif isinstance(block, Bullets):
                cls = " class='warn'" if block.kind == "warn" else ""
                parts.append(f"<ul{cls}>" + "".join(f"<li>{_esc(i)}</li>" for i in block.items) + "</ul>")
            elif isinstance(block, KeyValues):
                parts.append(_table(["Item", "Value"], [[k, v] for k, v in block.rows]))
            elif isinstance(block, Table):
                table = _table(block.headers, block.rows)
                if block.long:
                    # Folded: a reader opens it on purpose; the CSV beside the report holds the same rows.
                    link = (f" &middot; <a href='{_esc(_rel(block.data_file, out_dir))}'>CSV</a>"
                            if block.data_file is not None else "")
                    parts.append(f"<details><summary class='caption'>{_esc(block.caption)} "
                                 f"({len(block.rows)} rows, click to open){link}</summary>"
                                 f"<div class='scroll'>{table}</div></details>")
                    continue
                if block.caption:
                    parts.append(f"<p class='caption'>{_esc(block.caption)}</p>")
                parts.append(f"<div class='scroll'>{table}</div>" if block.scroll else table)
            elif isinstance(block, Image):
                uri = _data_uri(block.path)
                if uri is None:
                    parts.append(f"<p class='warn'>{_esc(block.caption)}: image {_esc(block.path.name)} "
                                 "could not be read</p>")
                else:
                    parts.append(f"<figure><img src='{uri}' alt='{_esc(block.caption)}'>"
                                 f"<figcaption>{_esc(block.caption)}</figcaption></figure>")
        parts.append("</section>")
    parts.append("</body></html>")
    return "\n".join(parts)
