"""How chemists write instructions, beyond the library's phrasing: typos in the key verbs, notebook
abbreviations, determinations (the unknown is the result), standardisations, and requests that are
clearly meant as an experiment but name nothing to run (asked about, not refused).

Each function takes the NFKC-normalised instruction; none changes a reagent name or a number: a
misspelt reagent is still asked about ("did you mean ...?"), never guessed.
"""

from __future__ import annotations

import re

__all__ = [
    "TITRATION_WORDS",
    "WEIGH_WORDS",
    "determination_intent",
    "experiment_request",
    "fix_key_words",
    "not_an_experiment_request",
    "standardised_name_span",
]

# Words that ask for a titration, and for a weighing (the families' planning recognises instructions by them).
TITRATION_WORDS = re.compile(r"titrat|neutrali[sz]|equivalence|end\s?point|\bburet", re.I)
WEIGH_WORDS = re.compile(r"\bweigh|\bbalance\b|\bdissolv|\bmake\s+up\b|\bprepare\b|\bmake\s+\d", re.I)

# The words the parser keys on. A word within one edit (two for words of 7+ letters; a swap of two
# letters is one edit) of one of these, with the same first letter, is read as it.
_KEY_WORDS = (
    "titrate", "titrates", "titrated", "titrating", "titration", "titrations", "titrant", "titrants",
    "neutralise", "neutralize", "neutralised", "neutralized", "neutralising", "neutralizing",
    "neutralisation", "neutralization", "equivalence", "until", "dropwise", "standardise", "standardize",
    "standardised", "standardized", "standardises", "standardizes", "standardising", "standardizing",
    "determine", "determines", "determined", "determining", "pipettes", "burettes", "indicators", "endpoint", "burette", "pipette", "indicator",
)
# Real words one edit away from a key word, which must stay as they are.
_KEEP = {"titre", "titer", "titres", "titers", "neutral", "unit", "units", "pipet", "pipets", "buret"}
_WORD = re.compile(r"[A-Za-z]{5,}")


def _osa(a: str, b: str, limit: int) -> int:
    """Optimal-string-alignment edit distance (insert, delete, substitute, swap neighbours), capped."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return prev[-1]


def fix_key_words(text: str) -> tuple[str, list[str]]:
    """The text with misspelt key words corrected ('Titrtae' -> 'titrate', 'untill' -> 'until'), and a
    note per correction (the plan's warnings say what was read)."""
    notes: list[str] = []

    def fix(m: re.Match[str]) -> str:
        word = m.group(0)
        low = word.lower()
        if low in _KEY_WORDS or low in _KEEP:
            return word
        limit = 2 if len(low) >= 7 else 1
        best = sorted(
            (d, k) for k in _KEY_WORDS if k[0] == low[0] and (d := _osa(low, k, limit)) <= limit
        )
        if not best or (len(best) > 1 and best[0][0] == best[1][0]):
            return word  # two key words equally close: leave it for the reader of the warnings
        notes.append(f"read {word!r} as {best[0][1]!r}")
        return best[0][1]

    fixed = _WORD.sub(fix, text)
    # Notebook shorthand: "w/ NaOH", "conc. 0.1 M", "vol. 20 mL", "vs." (a dot there is no sentence end).
    fixed = re.sub(r"(?<!\w)w/(?=\s)", "with", fixed, flags=re.I)
    fixed = re.sub(r"\b(conc|vol|approx|ca|vs|aq|soln|sol)\.(?=\s)", r"\1", fixed, flags=re.I)
    return fixed, notes


_DETERMINE = re.compile(
    r"\b(?:determin\w*|find(?:ing)?|measur\w*|assay\w*|quantif\w*|analy[sz]\w*|calculat\w*|establish\w*|"
    r"what\s+is|what's|how\s+(?:concentrated|strong|much))\b[^.?!;]{0,60}?"
    r"\b(?:concentration|molarity|normality|strength|titre|titer|content|amount|how\s+much|"
    r"calcium|hardness|acid\s+is|base\s+is)\b"
    r"|\b(?:of\s+)?(?:an?\s+)?unknown(?:\s+concentration)?\b"
    r"|\bhow\s+concentrated\b",
    re.I,
)


def determination_intent(text: str) -> bool:
    """True when the instruction asks to measure a concentration (the unknown is the result):
    'determine the concentration of the HCl', 'HCl of unknown concentration', 'find the molarity'."""
    return bool(_DETERMINE.search(text))


_STANDARDISE = re.compile(r"\bstandardi[sz](?:e|es|ed|ing)\b\s+(?:the\s+|your\s+|this\s+|our\s+)?", re.I)


def standardised_name_span(text: str) -> int | None:
    """Where the solution being standardised is named ('standardise the NaOH ...'): it is the titrant
    and its exact concentration is the result. None when the instruction standardises nothing."""
    m = _STANDARDISE.search(text)
    return m.end() if m else None


# Requests about chemistry that are not experiments to run: refused, never asked about.
_NOT_EXPERIMENT = re.compile(
    r"^\s*(?:please\s+|can\s+you\s+|could\s+you\s+)?(?:write|compose|sing|tell|explain|describe|define|"
    r"summari[sz]e|translate|draw\s+me|what\s+(?:is|are)\s+(?:an?\s+)?(?:titration|ph|pka|equivalence)|"
    r"who|why|when\s+was)\b",
    re.I,
)
_EXPERIMENT = re.compile(
    r"\b(?:titrat\w*|neutrali[sz]\w*|standardi[sz]\w*|weigh\w*|dissolv\w*|"
    r"(?:make\s+up|prepare)\s+(?:an?\s+|some\s+)?(?:[\w-]+\s+){0,3}solution|"
    r"determin\w*\s+(?:the\s+)?(?:concentration|molarity|calcium|hardness)|"
    r"(?:adjust|rais|lower|bring)\w*\s+the\s+p\s?h)\b",
    re.I,
)


def not_an_experiment_request(text: str) -> bool:
    """'Write a poem about titration', 'Explain what a titration is': about chemistry, not a run."""
    return bool(_NOT_EXPERIMENT.search(text))


def experiment_request(text: str) -> str | None:
    """'titration' or 'weighing' when the text clearly asks for an experiment of that kind (even with
    nothing named to run), else None."""
    if not_an_experiment_request(text):
        return None
    m = _EXPERIMENT.search(text)
    if not m:
        return None
    return "weighing" if re.match(r"weigh|dissolv|make|prepare", m.group(0), re.I) else "titration"
