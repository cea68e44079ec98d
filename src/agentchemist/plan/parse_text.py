"""Keyword rules for the parts of an instruction that are not reagents or numbers.

Instruments, "act only when the pH is stable", what to record, what the report must contain, and the
expected colour change. Each function takes the normalised instruction and returns canonical names.
"""

from __future__ import annotations

import re

__all__ = [
    "COLOURS",
    "INSTRUMENT_PATTERNS",
    "colour_change",
    "data_recording",
    "find_instruments",
    "output_format",
    "settle_each_drop",
    "vessel_location",
]

# Canonical instrument (registry) name -> pattern in text. Order is the order they are reported in.
INSTRUMENT_PATTERNS: dict[str, re.Pattern[str]] = {
    "pipette": re.compile(r"\b(?:rubber[- ]?(?:headed|bulb)\s+)?(?:pipettes?|pipets?|droppers?)\b", re.I),
    "beaker": re.compile(r"\bbeakers?\b", re.I),
    "magnetic_stirrer": re.compile(r"\b(?:magnetic\s+)?stirrers?\b|\bstir(?:ring)?\s*plates?\b|\bstir\s*bars?\b", re.I),
    "ph_meter": re.compile(r"\bp\s?H[- ]?(?:meters?|probes?|electrodes?|sensors?)\b", re.I),
    "balance": re.compile(r"\b(?:analytical\s+)?balances?\b|\bscales?\b", re.I),
    "spatula": re.compile(r"\bspatulas?\b|\bspoons?\b|\bscoops?\b", re.I),
    "graduated_cylinder": re.compile(r"\b(?:graduated|measuring)\s+cylinders?\b", re.I),
    "thermometer": re.compile(r"\bthermometers?\b|\btemperature\s+probes?\b", re.I),
    "burette": re.compile(r"\bburet(?:te)?s?\b", re.I),
}

COLOURS = (
    "magenta",
    "fuchsia",
    "fuchsin",
    "wine red",
    "wine-red",
    "red",
    "pink",
    "purple",
    "violet",
    "blue",
    "sapphire blue",
    "sky blue",
    "green",
    "yellow",
    "orange",
    "colourless",
    "colorless",
)
_COLOUR_CANON = {
    "fuchsia": "magenta",
    "fuchsin": "magenta",
    "wine-red": "wine red",
    "sapphire blue": "blue",
    "sky blue": "blue",
    "colorless": "colourless",
}


def find_instruments(text: str) -> list[str]:
    """Canonical names of the instruments the text mentions, in the table's order."""
    return [name for name, pattern in INSTRUMENT_PATTERNS.items() if pattern.search(text)]


# "... the beaker on the magnetic stirrer": where the working vessel stands now (not where it goes).
_PLATFORMS: dict[str, str] = {
    "magnetic_stirrer": r"(?:magnetic\s+)?stirrer|stir(?:ring)?\s*plate|hot\s*plate(?:\s+stirrer)?",
    "balance": r"(?:analytical\s+)?balance|scales?",
}
_ON_PLATFORM = re.compile(
    r"\b(?:on|upon|atop)\s+(?:top\s+of\s+)?(?:the\s+|a\s+|its\s+)?(?:"
    + "|".join(f"(?P<{name}>{pattern})" for name, pattern in _PLATFORMS.items())
    + r")\b",
    re.I,
)
# A clause ends at a sentence end or a comma: "..., place the beaker on the stirrer, ..." is its own clause.
_CLAUSE_END = re.compile(r"[.;!?,](?:\s|$)")
# "place the beaker on the stirrer" names where it goes; "placed on", "standing on" where it is.
_PLACING = re.compile(
    r"\b(?:place|put|move|transfer|set|bring|carry|return|position|lower|placing|putting|moving|"
    r"transferring|setting|bringing|carrying|returning|positioning)\b",
    re.I,
)
_STANDING = re.compile(
    r"\b(?:placed|standing|stands|sitting|sits|resting|rests|located|kept|positioned|already|is|are)\b", re.I
)
_VESSEL = re.compile(r"\b(?:beakers?|vessels?|flasks?|cups?|containers?)\b", re.I)


def vessel_location(text: str) -> list[str]:
    """Platforms (registry instrument names: magnetic_stirrer, balance) that the text says the working
    vessel stands on now: "the beaker on the magnetic stirrer", "the acid ... placed on the stirrer",
    "the beaker containing 50 mL of water on the balance". A placing verb in the clause makes it a
    destination ("place the beaker on the stirrer"), and a clause without a vessel or a standing verb
    says where something else happens ("weigh 2 g of NaCl on the balance")."""
    found: list[str] = []
    for m in _ON_PLATFORM.finditer(text):
        ends = [e.end() for e in _CLAUSE_END.finditer(text, 0, m.start())]
        clause = text[ends[-1] if ends else 0 : m.start()]
        placing = [p.end() for p in _PLACING.finditer(clause)]
        standing = [p.end() for p in _STANDING.finditer(clause)]
        if placing and (not standing or standing[-1] < placing[-1]):
            continue
        if not (_VESSEL.search(clause) or re.search(r"\b(?:placed|standing|sitting|resting|located)\s*$", clause)):
            continue
        name = next(k for k, v in m.groupdict().items() if v)
        if name not in found:
            found.append(name)
    return found


_SETTLE_YES = [
    r"\bonly\s+(?:execute|perform|take|do|add|dispense|act|continue|proceed)\w*\b[^.]{0,60}\b(?:stable|stabili[sz]\w*|settle\w*|steady)",
    r"\b(?:do\s+not|don't|never|not)\s+(?:execute|perform|take|add|dispense|act|drop|proceed)\w*\b[^.]{0,60}"
    r"\b(?:changing|unstable|drifting|moving|not\s+(?:yet\s+)?stable|still\s+changing)",
    r"\bwait\w*\b[^.]{0,50}\b(?:stable|stabili[sz]\w*|settle\w*|steady|equilibrat\w*)",
    r"\b(?:until|once|when)\s+(?:the\s+)?p\s?H\s+(?:is\s+|has\s+)?(?:stable|stabili[sz]\w*|settled|steady)\b[^.]{0,40}"
    r"\b(?:before|then)\b",
    r"\b(?:stable|settled|steady)\s+(?:p\s?H|reading)\s+(?:before|after)\s+(?:each|every)\s+(?:drop|addition)",
    r"\blet(?:ting)?\s+(?:the\s+)?p\s?H\s+(?:settle|stabili[sz]e|equilibrate)",
    r"\b(?:stable|stabili[sz]\w*|settle\w*|steady)\b[^.]{0,30}\bbefore\s+(?:adding|the\s+next|each|every|dispensing)",
]
_SETTLE_NO = [
    r"\b(?:no\s+need\s+to|do\s+not|don't|without)\s+wait\w*",
    r"\bcontinuous(?:ly)?\s+(?:add|dispens|drip)\w*\s+without\s+(?:waiting|pausing)",
]


def settle_each_drop(text: str) -> bool | None:
    """True when the instruction asks to act only on a settled pH (or balance), False when it says
    not to wait, None when it says nothing."""
    if any(re.search(p, text, re.I) for p in _SETTLE_NO):
        return False
    if any(re.search(p, text, re.I) for p in _SETTLE_YES):
        return True
    return None


_PER_DROP = r"\b(?:after|for|at)\s+(?:each|every)\s+drop\b|\bper\s+drop\b|\bdrop[- ]by[- ]drop\b"
_START_END = r"\b(?:beginning|start)\b[^.]{0,30}\bend\b"

# Requirement -> the patterns that must all occur in the (lower-case) text for it, in output order.
_RECORDING = (
    ("ph_per_drop", (_PER_DROP, r"\bp\s?h\b")),
    ("titrant_volume_per_drop", (_PER_DROP, r"\bvolume\b")),
    ("ph_continuous", (r"\bcontinuous(?:ly)?\s+(?:record|log|monitor)\w*\s+(?:the\s+)?p\s?h|"
                       r"\brecord\w*\s+(?:the\s+)?p\s?h\s+(?:value\s+)?continuous",)),
    ("temperature_start_end", (_START_END, "temperature")),
    ("time_start_end", (_START_END, r"\btime\b")),
    ("mass_per_tap", (r"\brecord\w*\b[^.]{0,40}\bmass\b|\bmass\b[^.]{0,40}\brecord",)),
    ("colour_per_drop", (r"\bcolou?r\b[^.]{0,40}\b(?:record|log|track)|"
                         r"\b(?:record|log|track)\w*\b[^.]{0,40}\bcolou?r\b",)),
)
# Report items after the charts (which output_format decides in code: one kind or the other).
_REPORT_ITEMS = (
    ("pka", (r"\bpk\s?a\s?\d?\b|\bdissociation\s+constant\b",)),
    ("equivalence_point", (r"\bequivalence\s+(?:point|volume)s?\b[^.]{0,40}\b(?:report|calculat|determin|find|locat)|"
                           r"\b(?:calculat|determin|find|locat)\w*\b[^.]{0,40}\bequivalence",)),
    ("json", (r"\bjson\b",)),
    ("csv", (r"\bcsv\b",)),
)


def _named(low: str, table: tuple[tuple[str, tuple[str, ...]], ...]) -> list[str]:
    """The labels of ``table`` whose patterns all occur in ``low``, in the table's order."""
    return [label for label, patterns in table if all(re.search(p, low) for p in patterns)]


def data_recording(text: str) -> list[str]:
    """Canonical data-recording requirements named in the text."""
    return _named(text.lower(), _RECORDING)


def output_format(text: str) -> list[str]:
    """Canonical report requirements: report, four_charts, pka, titration_curve, equivalence_point ..."""
    low = text.lower()
    out: list[str] = []
    if re.search(r"\breport\b", low):
        out.append("report")
    four = (
        re.search(r"\b(?:four|4)\s+(?:\w+\s+)?(?:charts?|figures?|plots?|graphs?)\b", low)
        or (re.search(r"\bfigure\s*4\b", low))
        or (re.search(r"first\s+derivative", low) and re.search(r"second\s+derivative", low))
        or (re.search(r"first\s+and\s+second\s+derivatives?", low))
    )
    if four:
        out.append("four_charts")
    elif re.search(r"\btitration\s+curve\b", low):
        out.append("titration_curve")
    return out + _named(low, _REPORT_ITEMS)


def _canon_colour(word: str) -> str:
    return _COLOUR_CANON.get(word, word)


def colour_change(text: str) -> tuple[str | None, str | None]:
    """(from, to) colours of 'from X to Y' / 'turns X' phrases, canonicalised; (None, None) if absent."""
    low = text.lower()
    names = "|".join(re.escape(c) for c in sorted(COLOURS, key=len, reverse=True))
    m = re.search(rf"\bfrom\s+(?:a\s+)?({names})\b[^.]{{0,30}}?\bto\s+(?:a\s+)?({names})\b", low)
    if m:
        return _canon_colour(m.group(1)), _canon_colour(m.group(2))
    m = re.search(rf"\b({names})\s*(?:->|→|to)\s*({names})\b", low)
    if m:
        return _canon_colour(m.group(1)), _canon_colour(m.group(2))
    m = re.search(rf"\b(?:turns?|becomes?|changes?\s+to)\s+(?:a\s+)?({names})\b", low)
    if m:
        return None, _canon_colour(m.group(1))
    return None, None


# Conditions the bench cannot honour: it has no heater or cooler (a stirrer only), no gas supply, and
# no clock the plan could hold a titration to. Refused with the reason, never dropped.
BENCH_TEMPERATURE_C = (15.0, 35.0)
_ATMOSPHERE = re.compile(
    r"\b(?:under|in|with)\s+(?:an?\s+|dry\s+)?(?:nitrogen|argon|helium|n2|ar|inert(?:\s+gas)?|co2|carbon dioxide|"
    r"oxygen|vacuum)(?:\s+(?:atmosphere|blanket|flow|purge|gas))?\b|\binert\s+atmosphere\b|\bglove\s*box\b",
    re.I,
)
_TIME_LIMIT = re.compile(
    r"\b(?:within|in\s+(?:under|less\s+than|at\s+most)|no\s+(?:longer|more)\s+than|before|under)\s+"
    r"\d+(?:[.,]\d+)?\s*(?:s|secs?|seconds?|mins?|minutes?|h|hrs?|hours?)\b",
    re.I,
)


def unsupported_conditions(text: str, temperature_c: float | None) -> list[str]:
    """Reasons to refuse conditions the bench cannot honour (temperature, atmosphere, a time limit)."""
    out = []
    if temperature_c is not None and not BENCH_TEMPERATURE_C[0] <= temperature_c <= BENCH_TEMPERATURE_C[1]:
        lo, hi = BENCH_TEMPERATURE_C
        extra = " (water boils at 100 degC)" if temperature_c >= 100 else ""
        out.append(f"the instruction asks for {temperature_c:g} degC{extra}, but the bench has no heating or "
                   f"cooling: runs happen at room temperature ({lo:g}-{hi:g} degC)")
    m = _ATMOSPHERE.search(text)
    if m:
        out.append(f"the instruction asks for {m.group(0).strip()!r}, but the bench has no gas supply or enclosure: "
                   "runs happen in room air")
    m = _TIME_LIMIT.search(text)
    if m:
        out.append(f"the instruction sets a time limit ({m.group(0).strip()!r}), which the plan cannot guarantee: "
                   "each drop waits for the pH to settle; drop the limit to run at the bench's pace")
    return out
