"""Optional narrative from a language model, kept honest: numbers never come from it.

The backend is any callable ``summary_dict -> str`` (an LLM client behind it). It sees a trimmed copy of
the summary (no per-drop rows or full transition list). Every number in its text is checked against
the numbers of that summary, allowing for rounding (and for percentages of a fraction); a sentence
carrying a number the analysis did not produce is dropped and the report says so. A failing backend
costs the narrative, never the report.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Callable

__all__ = ["NarrativeBackend", "narrative_input", "run_narrative"]

NarrativeBackend = Callable[[dict], str]
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
# Small whole numbers (ordinals, counts such as "two equivalence points", section numbers) and 100
# (per cent) may appear in prose without a matching value in the summary.
_TRIVIAL = {0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 100.0}


def narrative_input(summary: dict) -> dict:
    """The summary without its bulky lists (what the backend sees)."""
    trimmed = copy.deepcopy(summary)
    sections = trimmed.get("sections", {})
    if "quantity_records" in sections:
        sections["quantity_records"].pop("per_drop", None)
    if "fsm_evolution" in sections:
        sections["fsm_evolution"].pop("transitions", None)
    if "event_log" in sections:
        sections["event_log"]["events"] = sections["event_log"].get("events", [])[:50]
    return trimmed


def _numbers(obj, out: list[float]) -> None:
    if isinstance(obj, bool) or obj is None:
        return
    if isinstance(obj, (int, float)):
        if math.isfinite(obj):
            out.append(float(obj))
    elif isinstance(obj, str):
        out.extend(float(m) for m in _NUMBER.findall(obj))
    elif isinstance(obj, dict):
        for v in obj.values():
            _numbers(v, out)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            _numbers(v, out)


def _grounded(token: str, known: list[float]) -> bool:
    x = float(token)
    if abs(x) in _TRIVIAL:
        return True
    mantissa = token.lower().split("e")[0]
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    tol = 0.5 * 10.0**-decimals + 1e-12
    for y in known:
        for candidate in (y, 100.0 * y, abs(y)):
            if abs(candidate - x) <= tol * (1.0001):
                return True
    return False


def run_narrative(backend: NarrativeBackend | None, summary: dict) -> dict | None:
    """{"text": checked narrative or None, "notes": [...], "dropped": [...]}, or None without a backend."""
    if backend is None:
        return None
    if not callable(backend):
        raise TypeError(f"narrative_backend must be callable(summary_dict) -> str, got {type(backend).__name__}")
    payload = narrative_input(summary)
    try:
        text = backend(payload)
    except Exception as exc:  # any backend failure (network, model, parsing) must not cost the report
        return {"text": None, "notes": [f"narrative backend failed ({type(exc).__name__}: {exc}); no narrative"],
                "dropped": []}
    if not isinstance(text, str) or not text.strip():
        return {"text": None, "notes": ["narrative backend returned no text; no narrative"], "dropped": []}
    known: list[float] = []
    _numbers(payload, known)
    kept, dropped = [], []
    for sentence in re.split(r"(?<=[.!?])\s+", text.strip()):
        bad = [tok for tok in _NUMBER.findall(sentence) if not _grounded(tok, known)]
        (dropped if bad else kept).append((sentence, bad))
    notes = []
    if dropped:
        numbers = sorted({tok for _, bad in dropped for tok in bad})
        notes.append(f"{len(dropped)} narrative sentence(s) removed: they state numbers the analysis did not produce "
                     f"({', '.join(numbers)})")
    return {"text": " ".join(s for s, _ in kept) or None, "notes": notes,
            "dropped": [s for s, _ in dropped]}
