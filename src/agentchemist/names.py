"""Looking names up the way a person types them: one normal form, and a hint at close names when unknown."""
from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable


def name_key(name: object) -> str:
    """The lookup key of a name: lower case, words joined by '_' ('Sapphire-Blue' -> 'sapphire_blue')."""
    return "_".join(str(name).replace("-", " ").replace("/", " ").replace("_", " ").lower().split())


def did_you_mean(key: str, known: Iterable[str], *, show: Callable[[str], str] = str, n: int = 3) -> str:
    """'; did you mean a, b?' for the known keys close to ``key`` (shown by ``show``), or ''."""
    close = difflib.get_close_matches(key, sorted(known), n=n)
    return f"; did you mean {', '.join(show(c) for c in close)}?" if close else ""
