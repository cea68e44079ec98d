"""Rule-based semantic parsing of an instruction: reagents with roles and amounts, targets, requirements.

Keyword and pattern rules (the paper's non-LLM "Group B" planner), made robust where it matters:
quantities are bound to the reagent they belong to by the words between them ("25 mL of 0.1 M HCl",
"NaOH (0.1 M)"), roles come from the sentence shape ("titrate X with Y", "use Y to titrate X",
"add Y to X"), and anything essential that is missing or unknown becomes a question, not a guess.
The result is an :class:`InstructionParse`; ``agentchemist.plan.rules`` turns it into a plan.
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass, field

from agentchemist.chemistry.reagents import Reagent, ReagentLibrary, UnknownReagentError
from agentchemist.plan.parse_text import (
    unsupported_conditions,
    colour_change,
    data_recording,
    find_instruments,
    output_format,
    settle_each_drop,
)
from agentchemist.plan.unplanned import step_notes, unsupported_steps
from agentchemist.plan.wording import determination_intent, fix_key_words, standardised_name_span
from agentchemist.plan.units import PhMention, Quantity, QuantityError, find_ph_mentions, find_quantities

__all__ = ["InstructionParse", "ReagentParse", "parse_instruction"]

# Names people use for calcium that the reagent library keeps as the salt actually weighed out.
_EXTRA_ALIASES: list[tuple[re.Pattern[str], str]] = [
    (
        re.compile(r"\bca\s?(?:\^?2\+|\(ii\)|ions?)(?!\w)|\bcalcium(?:\s+ions?)?\b(?!\s+(?:chloride|carbonate))", re.I),
        "calcium_chloride",
    ),
    (re.compile(r"\bcalcon\b(?![\s-]*carboxylic)", re.I), "calconcarboxylic_acid"),
]
_FILLER = {
    "of",
    "the",
    "a",
    "an",
    "solution",
    "aqueous",
    "stock",
    "standard",
    "standardised",
    "standardized",
    "solid",
    "dry",
    "pure",
    "some",
    "fresh",
    "dilute",
    "diluted",
    "concentrated",
    "conc",
}
_BACKWARD_OK = _FILLER | {
    "(",
    ")",
    ",",
    ":",
    "=",
    "at",
    "is",
    "with",
    "concentration",
    "volume",
    "mass",
    "containing",
    "about",
    "approximately",
    "whose",
    "which",
    "has",
    "-",
    "[",
    "]",
    "~",
}
_SENTENCE_END = re.compile(r"[.;!?](?:\s|$)")
_STOP_WORDS = {
    "with",
    "to",
    "into",
    "in",
    "and",
    "until",
    "till",
    "at",
    "using",
    "by",
    "for",
    "on",
    "then",
    "as",
    "solution",
    "from",
    "so",
    "that",
    "while",
    "placed",
    "which",
    "whose",
    "containing",
}

_CONC_KINDS = ("concentration",)


@dataclass
class ReagentParse:
    """One reagent of the instruction with what was said about it (plan units: M, mL, g)."""

    reagent: Reagent
    first_mention: int
    concentration_m: float | None = None
    normality: bool = False
    volume_ml: float | None = None
    mass_g: float | None = None
    role: str | None = None
    unknown: bool = False  # the concentration the run measures; concentration_m is then an estimate


@dataclass
class InstructionParse:
    """Everything the rule parser extracted; ``questions`` / ``refusals`` stop planning when non-empty."""

    text: str
    family: str | None = None
    reagents: list[ReagentParse] = field(default_factory=list)
    mentions: list[tuple[Reagent, int, int]] = field(default_factory=list)
    unbound: list[Quantity] = field(default_factory=list)
    instruments: list[str] = field(default_factory=list)
    initial_ph: float | None = None
    initial_temperature_c: float | None = None
    target_ph: float | None = None
    to_equivalence: bool = False
    # "to the second equivalence point" (1-based; None: the last, or none named)
    equivalence_ordinal: int | None = None
    titrant_volume_limit_ml: float | None = None
    colour_from: str | None = None
    colour_to: str | None = None
    container_capacity_ml: float | None = None
    settle_each_drop: bool | None = None
    # A determination or standardisation: the one concentration not given is the result, not a question.
    determination: bool = False
    standardisation: bool = False
    data_recording: list[str] = field(default_factory=list)
    output_format: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    questions: list[str] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)

    def by_role(self, role: str) -> ReagentParse | None:
        for r in self.reagents:
            if r.role == role:
                return r
        return None


def _normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    text = text.replace("\u2013", "-").replace("\u2014", "-").replace("\u2019", "'")
    return " ".join(text.split())


def _mentions(text: str, lib: ReagentLibrary) -> list[tuple[Reagent, int, int]]:
    found = list(lib.find_in_text(text))
    taken = [(s, e) for _, s, e in found]
    for pattern, name in _EXTRA_ALIASES:
        if name not in lib:
            continue
        for m in pattern.finditer(text):
            if not any(s < m.end() and m.start() < e for s, e in taken):
                found.append((lib.get(name), m.start(), m.end()))
                taken.append((m.start(), m.end()))
    return sorted(found, key=lambda f: f[1])


def _tokens(gap: str, quantities: list[Quantity], offset: int) -> list[str] | None:
    """Words between two spans, with each quantity as one token 'Q'; None across a sentence end."""
    if _SENTENCE_END.search(gap):
        return None
    chars = list(gap)
    for q in quantities:
        for i in range(max(q.start - offset, 0), min(q.end - offset, len(chars))):
            chars[i] = " " if i != q.start - offset else "\u0001"
    return ["Q" if t == "\u0001" else t.lower() for t in re.findall(r"\u0001|[\w.+-]+|[^\w\s]", "".join(chars))]


def _bind_quantities(
    text: str, mentions: list[tuple[Reagent, int, int]], quantities: list[Quantity]
) -> list[tuple[Quantity, int]]:
    """(quantity, mention index) pairs: each quantity to the mention it is written next to."""
    candidates: list[tuple[float, int, int]] = []
    for qi, q in enumerate(quantities):
        for mi, (_, ms, me) in enumerate(mentions):
            if q.end <= ms:
                between = [x for x in mentions if q.end <= x[1] < ms]
                tokens = _tokens(text[q.end : ms], quantities, q.end)
                if between or tokens is None or any(t not in _FILLER and t != "Q" for t in tokens):
                    continue
                score = 0.1 * len(tokens)
            elif q.start >= me:
                between = [x for x in mentions if me <= x[1] < q.start]
                tokens = _tokens(text[me : q.start], quantities, me)
                if between or tokens is None or any(t not in _BACKWARD_OK and t != "Q" for t in tokens):
                    continue
                score = 1.0 + 0.1 * len(tokens)
            else:
                continue
            candidates.append((score, qi, mi))
    bound: list[tuple[Quantity, int]] = []
    used_q: set[int] = set()
    slots: set[tuple[int, str]] = set()
    for _, qi, mi in sorted(candidates):
        kind = quantities[qi].kind
        if qi in used_q or (mi, kind) in slots:
            continue
        used_q.add(qi)
        slots.add((mi, kind))
        bound.append((quantities[qi], mi))
    return bound


def _unknown_phrase(text: str, q: Quantity) -> str | None:
    """The words naming what an unbound concentration or mass refers to ('0.1 M hydrochloric acd')."""
    words = re.findall(r"[A-Za-z][\w()+-]*", text[q.end : q.end + 80])
    picked: list[str] = []
    for w in words:
        low = w.lower()
        if not picked and low in _FILLER:
            continue
        if low in _STOP_WORDS or low in _FILLER:
            break
        picked.append(w)
        if len(picked) == 3:
            break
    return " ".join(picked) or None


_ACIDIC = ("strong_acid", "weak_acid")
_BASIC = ("strong_base", "weak_base")


def _suggest(lib: ReagentLibrary, phrase: str) -> str:
    """' (did you mean ...?)' from the library's near names. A suggestion never swaps an acid for a base:
    the phrase's own cue ('acid', 'hydrogen ...ate' / 'hydroxide', 'amine') or else the nearest name's
    character rules out names of the other character (issue 37: KHP must not suggest potassium hydroxide)."""
    try:
        lib.get(phrase)
        return ""
    except UnknownReagentError as exc:
        found = [lib.get(s) for s in exc.suggestions]
    low = phrase.lower()
    if re.search(r"acid|hydrogen|\bbi\w+ate\b|phthal", low):
        wrong = _BASIC
    elif re.search(r"hydrox|amine|ammon|alkali", low):
        wrong = _ACIDIC
    elif found:
        wrong = _BASIC if found[0].kind in _ACIDIC else _ACIDIC if found[0].kind in _BASIC else ()
    else:
        wrong = ()
    names = [r.display_name for r in found if r.kind not in wrong]
    return f" (did you mean {' or '.join(names)}?)" if names else ""


_PH_INITIAL = re.compile(r"\b(?:initial(?:ly)?|starting|start|begins?|beginning|currently|original|at first)\b")
_PH_TARGET = re.compile(
    r"\b(?:until|till|reach(?:es|ed)?|target|terminat\w*|stop\w*|halt\w*|end(?:s|ing)?|final|up to|to|endpoint|"
    r"exceed\w*|passes|beyond|past|reads?|once|as\s+soon\s+as|"
    r"end point|rises to|falls to|drops to|goal|aim)\b"
)


_ORDINALS = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4, "4th": 4,
             "fifth": 5, "5th": 5}
_ORDINAL = re.compile(r"\b(" + "|".join(_ORDINALS) + r")\s+(?:equivalence|end\s?point|stoichiometric)")


def _classify_ph(text: str, mentions: list[PhMention], parse: InstructionParse) -> None:
    prev_end = 0
    for m in mentions:
        window = text[prev_end : m.start].lower()
        cut = max((x.end() for x in _SENTENCE_END.finditer(window)), default=0)
        window = window[cut:][-60:]
        inside = m.text.lower()
        initial = [x.end() for x in _PH_INITIAL.finditer(window)]
        target = [x.end() for x in _PH_TARGET.finditer(window)]
        if re.search(r"reach|rises|falls|drops|hits|gets to|becomes", inside):
            kind = "target"
        elif initial and (not target or initial[-1] >= target[-1]):
            kind = "initial"
        elif target:
            kind = "target"
        else:
            kind = "initial" if re.search(r"\b(?:with|of|at|has)\s+(?:a|an)?\s*$", window) else "unknown"
        if not -1.0 <= m.value <= 15.0:
            parse.refusals.append(f"pH {m.value:g} ({m.text!r}) is outside any aqueous pH scale")
            continue
        if kind == "initial" and parse.initial_ph is None:
            parse.initial_ph = m.value
        elif kind == "target" and parse.target_ph is None:
            parse.target_ph = m.value
        elif kind == "unknown" and parse.target_ph is None:
            parse.target_ph = m.value
            parse.warnings.append(f"read {m.text!r} as the target pH")
        else:
            # A second value is never dropped silently: the same value again is harmless, another one
            # contradicts the first and is asked about.
            first = parse.initial_ph if kind == "initial" else parse.target_ph
            which = "starting" if kind == "initial" else "target"
            if first is not None and first == m.value:
                parse.warnings.append(f"pH {m.value:g} is stated twice")
            else:
                parse.questions.append(f"The instruction gives two {which} pH values, pH {first:g} and "
                                       f"{m.text.strip()!r}. Which one should the run use?")
        prev_end = m.end


def _bind_nameless(text: str, quantities: list[Quantity], parse: InstructionParse) -> None:
    """'titrate 20 mL of 0.1 M with NaOH', '... of a 0.1 M solution': a concentration followed by no
    reagent name belongs to the one reagent named before it that has no concentration yet."""
    for q in [q for q in quantities if q.kind == "concentration"]:
        phrase = _unknown_phrase(text, q)
        if phrase is not None and phrase.lower() != "solution":
            continue
        before = [r for r in parse.reagents if r.first_mention < q.start and r.concentration_m is None]
        if len(before) == 1:
            before[0].concentration_m, before[0].normality = q.value, q.normality
            parse.warnings.append(f"read {q.text.strip()!r} as the concentration of the {before[0].reagent.display_name}")
            quantities.remove(q)


def parse_instruction(text: str, lib: ReagentLibrary) -> InstructionParse:
    """Parse one instruction (already checked for size, encoding and injection by the guard)."""
    text, fixes = fix_key_words(_normalise(text))
    parse = InstructionParse(text=text)
    parse.warnings.extend(fixes)
    low = text.lower()
    try:
        quantities = find_quantities(text)
    except QuantityError as exc:
        parse.refusals.append(str(exc))
        return parse
    ph_mentions = find_ph_mentions(text)
    quantities = [q for q in quantities if not any(p.start <= q.start < p.end for p in ph_mentions)]
    mentions = _mentions(text, lib)
    parse.mentions = mentions

    # "a 250 mL beaker": a container size, not an amount of reagent; "from a 50 mL burette": the size of
    # glassware the bench does not use (the plan's warnings name the burette), not an amount either.
    for q in list(quantities):
        if q.kind == "volume" and re.match(r"\s*(?:glass\s+)?(?:beaker|flask)\b", text[q.end :], re.I):
            parse.container_capacity_ml = q.value
            quantities.remove(q)
        elif q.kind == "volume" and re.match(r"\s*(?:glass\s+|graduated\s+|measuring\s+)?(?:burettes?|buret|"
                                             r"cylinders?|volumetric\s+flasks?)\b", text[q.end :], re.I):
            parse.warnings.append(f"{q.text.strip()!r} read as the size of the glassware it names, not an amount")
            quantities.remove(q)
        elif q.kind == "temperature":
            parse.initial_temperature_c = q.value
            quantities.remove(q)

    by_name: dict[str, ReagentParse] = {}
    for reagent, start, _ in mentions:
        by_name.setdefault(reagent.name, ReagentParse(reagent, start))
    for q, mi in _bind_quantities(text, mentions, quantities):
        rp = by_name[mentions[mi][0].name]
        if q.kind == "concentration" and rp.concentration_m is None:
            rp.concentration_m, rp.normality = q.value, q.normality
        elif q.kind == "volume" and rp.volume_ml is None:
            rp.volume_ml = q.value
        elif q.kind == "mass" and rp.mass_g is None:
            rp.mass_g = q.value
        else:
            # The same reagent named twice with two amounts ("0.2 M NaOH ... using 0.1 M NaOH"): one
            # value would be chosen silently, so the planner asks which.
            first = {"concentration": rp.concentration_m, "volume": rp.volume_ml, "mass": rp.mass_g}.get(q.kind)
            if first is not None and not math.isclose(first, q.value, rel_tol=1e-9):
                unit = {"concentration": "mol/L", "volume": "mL", "mass": "g"}[q.kind]
                parse.questions.append(
                    f"The instruction gives the {rp.reagent.display_name} two {q.kind}s, {first:g} {unit} and "
                    f"{q.text.strip()!r}. Which one is right?")
        quantities.remove(q)
    parse.reagents = sorted(by_name.values(), key=lambda r: r.first_mention)

    _bind_nameless(text, quantities, parse)
    parse.unbound = list(quantities)
    for q in quantities:
        if q.kind in ("concentration", "mass"):
            phrase = _unknown_phrase(text, q)
            if phrase and re.fullmatch(r"(?:acid|base|alkali|titrant|analyte|sample)s?", phrase, re.I):
                # named by its role only ("the 0.1 M base in the bottle"): ask what it is, not about a word
                parse.questions.append(
                    f"Which {phrase.lower()} is the {q.text.strip()} solution (e.g. '{q.text.strip()} sodium "
                    f"hydroxide')? The reagent must be named to check the chemistry."
                )
            elif phrase and phrase.lower() not in ("solution",):
                parse.questions.append(
                    f"I do not know the reagent {phrase!r}{_suggest(lib, phrase)}. Which reagent is "
                    f"the {q.text.strip()} for?"
                )
    # The verb only ("titrate X with Y"): "the titration curve ... with four charts" names no reagent.
    for m in re.finditer(
        r"\btitrat(?:e|es|ed|ing)\s+(?:[\d.,]+\s*(?:mls?|cm3|l)\s+(?:of\s+)?)?(?:the\s+|an?\s+)?"
        r"([a-z][\w\s()+-]{1,40}?)\s+(?:with|using|against)\s+"
        r"(?:[\d.,]+\s*[a-z]+(?:/[a-z]+)?\s+(?:of\s+)?)?(?:the\s+)?([a-z][\w\s()+-]{1,40}?)"
        r"(?=\s+(?:until|to|till|and|in|at|so)\b|[,.;]|$)",
        text,
        re.I,
    ):
        for group in (1, 2):
            span = (m.start(group), m.end(group))
            if any(span[0] <= s < span[1] or s <= span[0] < e for _, s, e in mentions):
                continue
            phrase = m.group(group).strip()
            if re.fullmatch(
                r"(?:it|them|this|that|the\s+)?(?:acid|base|sample|solution|analyte|titrant)s?", phrase, re.I
            ) or re.fullmatch(r"it|them|this|that|these|those|each|one|each\s+one", phrase, re.I):
                continue
            parse.questions.append(
                f"I do not know the reagent {phrase!r}{_suggest(lib, phrase)}. Which reagent did you mean?"
            )

    parse.refusals.extend(unsupported_conditions(text, parse.initial_temperature_c))
    parse.refusals.extend(unsupported_steps(text))
    parse.warnings.extend(step_notes(text))
    _classify_ph(text, ph_mentions, parse)
    if parse.target_ph is None:
        if re.search(r"\b(?:until|to)\s+(?:it\s+is\s+)?neutral\b", low):
            parse.target_ph = 7.0
            parse.warnings.append("'neutral' read as target pH 7.0")
        elif re.search(r"equivalence|stoichiometric point|end\s?point|neutrali[sz]", low):
            parse.to_equivalence = True
    ordinal = _ORDINAL.search(low)
    if ordinal and parse.target_ph is None:
        parse.to_equivalence = True
        parse.equivalence_ordinal = _ORDINALS[ordinal.group(1)]
    parse.determination = determination_intent(text)
    parse.standardisation = standardised_name_span(text) is not None
    if parse.target_ph is None and not parse.to_equivalence and (parse.determination or parse.standardisation):
        # a determination ends where it measures: the equivalence point
        parse.to_equivalence = True
        parse.warnings.append("a determination: titrating to the equivalence point")
    parse.instruments = find_instruments(text)
    parse.settle_each_drop = settle_each_drop(text)
    parse.data_recording = data_recording(text)
    parse.output_format = output_format(text)
    parse.colour_from, parse.colour_to = colour_change(text)
    return parse
