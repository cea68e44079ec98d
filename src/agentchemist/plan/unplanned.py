"""What an instruction names that no plan step would carry out: refused or asked about, never dropped.

Issue 37: a plan that quietly leaves out a centrifuge, a filtration, a tablet, a back titration, an
indicator or a second titrant plans another experiment than the one asked. This module names each such
phrase with the reason the bench cannot do it (the words the chemist wrote are quoted):

- :func:`unsupported_steps`: operations this bench has no means for, whatever the family (it has a
  pipette, a beaker on a magnetic stirrer, a pH meter, a balance, a spatula and bottles; no centrifuge, no
  filtration, no heating or cooling, no ultrasonic bath, no mortar), a back titration (two reactions and
  an excess: no family plans it yet), and titrations of another kind (redox, precipitation);
- :func:`indicator_mentions`: indicator dyes the reagent library does not hold, which the bench cannot add
  (refused in a colour-read titration, asked about where the pH meter reads the endpoint);
- :func:`titration_extra_steps`: in a titration plan, a weighing or a dilution (the titration protocols
  neither weigh nor pour water).

The lexicons below are facts about laboratory wording, not tuned on any corpus case.
"""

from __future__ import annotations

import re

__all__ = ["Indicator", "indicator_mentions", "step_notes", "titration_extra_steps", "unsupported_steps"]

_BACK_TITRATION = re.compile(
    r"\bback[- ]?titrat\w*"
    r"|\btitrat\w*\s+(?:the\s+)?(?:excess|remaining|unreacted|left-?over)\b"
    r"|\b(?:excess|remaining|unreacted)\s+(?:of\s+)?(?:the\s+)?(?:acid|base|hcl|naoh|edta)\b[^.;]{0,40}\btitrat\w*",
    re.I,
)

# (pattern, reason): the quoted words are the instruction's own (the match).
_STEPS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\bcentrifug\w*|\bsupernatant\b", re.I), "the bench has no centrifuge"),
    (re.compile(r"\bfilt(?:er|ers|ered|ering|rate|ration)\b|\bfilter\s+paper\b", re.I),
     "the bench has no filtration (no funnel, filter or suction)"),
    (re.compile(r"\bheat\s+(?:of\s+\w+|capacity|released|evolved|change)\b|\bcalorimet\w*|\benthalp\w*|"
                r"\btemperature\s+(?:rise|change|increase|jump)\b", re.I),
     "the bench measures no heat (no calorimetry): it reports pH, volumes, masses and the results computed "
     "from them"),
    (re.compile(r"\b(?:boil\w*|reflux\w*|evaporat\w*|heat(?:ing|ed)?(?!\s+(?:of|capacity|released|evolved|change)\b)|"
                r"warm(?:ing|ed)?\s+(?:it|the|up)|"
                r"oven|bunsen)\b", re.I),  # not "hot plate": a hot plate stirrer is a stirrer unless told to heat
     "the bench has no heating: runs happen at room temperature"),
    (re.compile(r"\b(?:ice[- ]?bath|cool(?:ing|ed)?\s+(?:it|the|down|in)|refrigerat\w*|freez\w*)\b", re.I),
     "the bench has no cooling: runs happen at room temperature"),
    (re.compile(r"\b(?:sonicat\w*|ultrasonic\w*|degas\w*)\b", re.I), "the bench has no ultrasonic bath or degassing"),
    (re.compile(r"\b(?:tablets?|pills?|capsules?|crush\w*|grind\w*|ground\s+(?:it|the)|pulveri[sz]\w*|mortar)\b", re.I),
     "the bench cannot crush or dissolve a tablet: it weighs powders from a reagent bottle and titrates "
     "solutions"),
    (re.compile(r"\b(?:rinse|rinsing|wash)\s+(?:the|it|out|down|with)\b", re.I),
     "the bench has no rinsing or washing step"),
    (re.compile(r"\bredox\b|\bpermanganat\w*|\bkmno4\b|\bdichromat\w*|\biodometr\w*|\bthiosulfate\b|\bcerimetr\w*",
                re.I),
     "a redox titration is not one of the bench's experiments (acid-base and Ca/EDTA titrations, weighing)"),
    (re.compile(r"\b(?:mohr|volhard|fajans)\b|\bagno3\b|\bsilver\s+nitrate\b|\bprecipitation\s+titrat\w*", re.I),
     "a precipitation (argentometric) titration is not one of the bench's experiments"),
]


def unsupported_steps(text: str) -> list[str]:
    """Refusal reasons for the operations of ``text`` that this bench has no means for (each once, with
    the instruction's words)."""
    out: list[str] = []
    m = _BACK_TITRATION.search(text)
    if m:
        out.append(f"back titration is not supported yet ({m.group(0).strip()!r}): the bench titrates the "
                   "sample in the beaker directly; an excess of reagent added first and titrated back is "
                   "two reactions no family plans")
    for pattern, reason in _STEPS:
        m = next((m for m in pattern.finditer(text) if not _negated(text, m.start()) and not _attribute(text, m)),
                 None)
        if m:
            out.append(f"{reason} ({m.group(0).strip()!r})")
    return out


def step_notes(text: str) -> list[str]:
    """Warnings for step words that ask for no step: a negated one ('do not heat') and a participle that
    describes a liquid ('freshly boiled water', 'filtered water'): the plan says what it does about them."""
    out: list[str] = []
    for pattern, _ in _STEPS:
        for m in pattern.finditer(text):
            words = m.group(0).strip()
            if _negated(text, m.start()):
                out.append(f"{words!r} is ruled out by the instruction: no step of this plan does it")
            elif _attribute(text, m):
                out.append(f"{words!r} describes a liquid: the plan uses it as the bench holds it (the bench cannot "
                           f"make it so)")
            else:
                continue
            break
    return out


_LIQUID_AFTER = re.compile(r"(?:\s+and\s+\w+)?\s+(?:\w+\s+)?(?:water|solution|sample|liquid|filtrate|acid|base)\b", re.I)


def _attribute(text: str, m: re.Match[str]) -> bool:
    """'boiled water', 'freshly boiled and cooled water', 'filtered sample': a past participle before the
    liquid it describes, not an operation to carry out."""
    return m.group(0).lower().endswith("ed") and bool(_LIQUID_AFTER.match(text, m.end()))


def _negated(text: str, start: int) -> bool:
    """'do not heat', 'without filtering', 'no centrifuge needed': the step is ruled out, not asked for."""
    return bool(re.search(r"\b(?:not|no|without|never|don't|avoid)\s+(?:\w+\s+)?$", text[max(0, start - 24):start], re.I))


class Indicator:
    """An indicator dye the instruction names: ``words`` as written, ``name`` canonical."""

    def __init__(self, name: str, words: str, metallochromic: bool) -> None:
        self.name, self.words, self.metallochromic = name, words, metallochromic


# Indicator dyes chemists name (canonical name, pattern, metallochromic). Those the reagent library holds
# (calconcarboxylic acid) are reagents and not listed here.
_INDICATORS: list[tuple[str, str, bool]] = [
    ("Eriochrome Black T", r"eriochrome\s+black(?:\s+t)?|erio(?:chrome)?[- ]?t\b|\bebt\b|solochrome\s+black", True),
    ("murexide", r"murexide", True),
    ("calmagite", r"calmagite", True),
    ("xylenol orange", r"xylenol\s+orange", True),
    ("hydroxynaphthol blue", r"hydroxy\s?naphthol\s+blue", True),
    ("phenolphthalein", r"phenolphthalein|\bphph\b", False),
    ("thymolphthalein", r"thymolphthalein", False),
    ("methyl orange", r"methyl\s+orange", False),
    ("methyl red", r"methyl\s+red", False),
    ("bromothymol blue", r"bromo?thymol\s+blue|\bbtb\b", False),
    ("bromocresol green", r"bromo?cresol\s+green", False),
    ("bromophenol blue", r"bromo?phenol\s+blue", False),
    ("thymol blue", r"(?<!bromo)(?<!brom)thymol\s+blue", False),
    ("phenol red", r"phenol\s+red", False),
    ("litmus", r"litmus", False),
    ("universal indicator", r"universal\s+indicator", False),
    ("potassium chromate", r"potassium\s+chromate|\bk2cro4\b", False),
    ("starch", r"\bstarch\b", False),
    ("ferroin", r"ferroin", False),
]
_INDICATOR_RES = [(name, re.compile(rf"\b(?:{pattern})", re.I), metal) for name, pattern, metal in _INDICATORS]


def indicator_mentions(text: str) -> list[Indicator]:
    """The indicator dyes ``text`` names that are not in the reagent library, in the order written."""
    found = []
    for name, pattern, metal in _INDICATOR_RES:
        m = pattern.search(text)
        if m:
            found.append((m.start(), Indicator(name, m.group(0).strip(), metal)))
    return [i for _, i in sorted(found, key=lambda f: f[0])]


_WEIGH = re.compile(r"\bweigh(?:s|ed|ing)?\b", re.I)
_DILUTE = re.compile(r"\bdilut(?:e|es|ed|ing|ion)\s+(?:it|the|this|to|with|\d|[\d.]+\s*(?:m?l|ml))\b"
                     r"|\bdilut(?:e|ed)\b(?=[^.;]{0,40}\bto\s+\d)|\bmake\s+(?:it\s+)?up\s+to\b", re.I)


def titration_extra_steps(text: str, water_volume_ml: float | None) -> list[str]:
    """Refusal reasons for a weighing or a dilution in a titration instruction: the titration protocols
    dispense titrant drop by drop into the sample as it is, and weigh nothing. ``water_volume_ml``: a
    volume of water the instruction adds (a dilution too)."""
    out = []
    m = _WEIGH.search(text)
    if m:
        out.append(f"a titration plan has no weighing step ({m.group(0)!r}): the titration protocols do not use "
                   "the balance; send the weighing as its own instruction")
    m = _DILUTE.search(text)
    if m:
        out.append(f"the titration protocols do not dilute the sample ({m.group(0).strip()!r}): put the "
                   "diluted solution in the beaker and name its volume and concentration")
    elif water_volume_ml is not None:
        out.append(f"the titration protocols do not add water to the sample ({water_volume_ml:g} mL of water "
                   "named): put the diluted solution in the beaker and name its volume and concentration")
    return out
