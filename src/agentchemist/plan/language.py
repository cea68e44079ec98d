"""Instructions in another language than English: answered in terms of what was understood.

The rule parser reads English. A French, German, Spanish, Chinese or Japanese instruction parsed word by
word yields half-words quoted back as reagent names ("I do not know the reagent 'avec de la'"), or a
generic refusal. Instead the planner says it reads English only and lists what it did recognise in the
text (amounts with their units, pH values, reagent names of the library), so the chemist can rephrase
(issue 37).

Detection: any CJK, kana, hangul, Cyrillic, Greek or Arabic letter, or a Latin-script text with at least
two distinct function words of French, German, Spanish or Italian and more of them than English function
words (a reagent alias such as 'Kaliumhydrogenphthalat' in an English sentence does not count).
"""

from __future__ import annotations

import re

from agentchemist.chemistry.reagents import ReagentLibrary
from agentchemist.plan.units import QuantityError, find_ph_mentions, find_quantities

__all__ = ["english_only_question", "is_not_english"]

_SCRIPTS = re.compile(r"[\u0370-\u03ff\u0400-\u04ff\u0600-\u06ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_FOREIGN = {
    # French
    "le", "la", "les", "du", "des", "avec", "jusqu", "dans", "et", "une", "un", "sur", "puis",
    "titrer", "peser", "dissoudre", "acide", "soude", "eau",
    # German
    "der", "die", "das", "mit", "bis", "und", "sie", "ein", "eine", "von", "zu", "auf", "wiegen", "lösen",
    "titrieren", "säure", "wasser", "es", "ab", "dann",
    # Spanish / Italian
    "el", "los", "las", "con", "hasta", "y", "en", "una", "por", "para", "del", "al", "valorar", "di", "il",
    "fino", "agua", "acqua", "pesar", "disolver",
}
_ENGLISH = {
    "the", "with", "of", "to", "and", "until", "in", "a", "an", "into", "titrate", "add", "weigh", "dissolve",
    "using", "from", "then", "at", "it", "water", "acid", "stop", "when", "reaches", "record", "use", "is",
}


def is_not_english(text: str) -> bool:
    """True when ``text`` is written in another language than English (see the module docstring)."""
    if _SCRIPTS.search(text):
        return True
    words = re.findall(r"[^\W\d_]+", text.lower())  # "d'acide", "jusqu'à": the parts are words
    foreign = {w for w in words if w in _FOREIGN}
    english = {w for w in words if w in _ENGLISH}
    return len(foreign) >= 2 and len(foreign) > len(english)


def english_only_question(text: str, library: ReagentLibrary) -> str:
    """The answer to a non-English instruction: what was recognised, and a request for English."""
    understood: list[str] = []
    try:
        quantities = find_quantities(text)
    except QuantityError:
        quantities = []
    understood += [q.text.strip() for q in quantities]
    understood += [m.text.strip() for m in find_ph_mentions(text)]
    names = list(dict.fromkeys(r.display_name for r, _, _ in library.find_in_text(text)))
    what = ", ".join(dict.fromkeys(understood)) if understood else "no amount I could read"
    reagents = ", ".join(names) if names else "no reagent name I know"
    return (f"I read English instructions only. In this one I recognised {what}, and {reagents}. Could you "
            "write it in English (e.g. 'Titrate 25 mL of 0.1 M hydrochloric acid with 0.1 M sodium hydroxide to "
            "pH 7')?")
