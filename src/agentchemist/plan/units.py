"""Quantities in free text: concentrations, volumes, masses, temperatures and pH values, with spans.

Everything is converted to the plan's units: mol/L, mL, g, degrees Celsius. Normality (``N``) is kept
as a flag so the parser can convert it only for monoprotic reagents. Unit symbols that differ only in
case (M molar vs m, mM vs MM) are matched case-sensitively; spelled-out units are not.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal

__all__ = ["PhMention", "Quantity", "QuantityError", "find_ph_mentions", "find_quantities"]

Kind = Literal["concentration", "volume", "mass", "temperature"]

_NUMBER = r"(?P<num>[-\u2212]?(?:\d+(?:[.,]\d+)?|\.\d+)(?:\s*(?:[eE]|[x\u00d7*]\s*10\^?)\s*(?P<exp>[-\u2212+]?\d+))?)"

# (pattern, kind, factor to the plan unit, is_normality); order matters: longer units first.
# "per litre" in every way chemists write it: mol/L, mol L-1, mol·L⁻¹ (NFKC makes it mol·L−1), mol dm-3,
# moles per litre.
_PER_LITRE = (r"(?:\s*(?:/|\u00b7|\.|\s)\s*|\s+per\s+)(?:l|dm3|dm\^3|dm|litres?|liters?)"
              r"(?:\s*(?:-|\u2212|\u207b)\s*[13\u00b9\u00b3])?")
_UNITS: list[tuple[str, Kind, float, bool]] = [
    (r"mmol(?:es)?" + _PER_LITRE, "concentration", 1e-3, False),
    (r"mol(?:es|s)?" + _PER_LITRE, "concentration", 1.0, False),
    (r"(?-i:mM)", "concentration", 1e-3, False),
    (r"(?-i:[u\u00b5\u03bc]M)", "concentration", 1e-6, False),
    (r"millimolar", "concentration", 1e-3, False),
    (r"molar", "concentration", 1.0, False),
    (r"(?-i:M)", "concentration", 1.0, False),
    # A lower-case "m" after a number is molar here: no instruction for this bench measures a length.
    (r"(?-i:m)", "concentration", 1.0, False),
    (r"normal", "concentration", 1.0, True),
    (r"(?-i:N)", "concentration", 1.0, True),
    (r"(?:[u\u00b5\u03bc]l|micro-?lit(?:re|er)s?)", "volume", 1e-3, False),
    (r"(?:mls|ml|cm3|cm\^3|cc|milli-?lit(?:re|er)s?)", "volume", 1.0, False),
    (r"(?:dm3|dm\^3|lit(?:re|er)s?|l)", "volume", 1000.0, False),
    (r"(?:mg|milligrams?)", "mass", 1e-3, False),
    (r"(?:kg|kilograms?)", "mass", 1000.0, False),
    (r"(?:g|grams?|gr)", "mass", 1.0, False),
    (r"(?:\u00b0\s*c|\u2103|degrees?\s*(?:c|celsius)|deg\s*c)", "temperature", 1.0, False),
    (r"(?-i:C)", "temperature", 1.0, False),  # "at 300 C": a bare capital C after a number is Celsius
]

_QUANTITY = re.compile(
    r"(?<![\w.])" + _NUMBER + r"(?:\s*|-)(?P<unit>" + "|".join(f"(?:{u})" for u, *_ in _UNITS) + r")(?![\w])",
    re.IGNORECASE,
)
_UNIT_RES = [(re.compile(f"(?:{u})$", re.IGNORECASE), kind, factor, normal) for u, kind, factor, normal in _UNITS]

_PH = re.compile(
    r"\bp\s?H\b(?:\s*(?:value|reading|level))?\s*(?:of|=|:|is|at|to|reaches(?: a value of)?|reached|equals|"
    r"becomes|hits|gets to|value of|around|approximately|about|~|near|rises to|falls to|drops to|exceeds|"
    r"passes|reads|goes above|goes below|is above|is below|rises above|falls below|drops below)?\s*(?:of\s+|=\s*|about\s+|approximately\s+)?"
    r"(?P<num>[-\u2212]?\d+(?:[.,]\d+)?)(?![\w])",
    re.IGNORECASE,
)


# Amounts no instruction for this bench can mean (in plan units), refused before any chemistry runs on them
# (an equilibrium solve at 1e300 mol/L cannot converge): the plan schema's own limits.
_LIMITS = {
    "concentration": (20.0, "above any aqueous solution (at most 20 mol/L)"),
    "volume": (10_000.0, "more than 10 L, far beyond any vessel on the bench"),
    "mass": (10_000.0, "more than 10 kg, far beyond the balance"),
}


class QuantityError(ValueError):
    """A quantity that is written but cannot be used (negative, not a number, zero)."""


@dataclass(frozen=True)
class Quantity:
    """A value in plan units (M, mL, g, deg C) found at ``text[start:end]``."""

    kind: Kind
    value: float
    unit: str
    start: int
    end: int
    text: str
    normality: bool = False


@dataclass(frozen=True)
class PhMention:
    value: float
    start: int
    end: int
    text: str


def _to_float(num: str, exp: str | None) -> float:
    base = num.replace("\u2212", "-")
    if "," in base and "." not in base:
        base = base.replace(",", ".")  # decimal comma, e.g. "0,1 M"
    base = re.split(r"\s*(?:[eE]|[x\u00d7*]\s*10\^?)", base)[0]
    value = float(base)
    if exp is not None:
        power = int(exp.replace("\u2212", "-"))
        if abs(power) > 300:  # 10.0 ** 400 raises OverflowError; no amount in a lab is near it
            return math.inf if power > 0 and value != 0 else 0.0
        value *= 10.0**power
    return value


def find_quantities(text: str) -> list[Quantity]:
    """Every number-with-unit in ``text``, left to right. QuantityError for negative or zero amounts."""
    found: list[Quantity] = []
    for m in _QUANTITY.finditer(text):
        unit = m.group("unit")
        for unit_re, kind, factor, normal in _UNIT_RES:
            if unit_re.match(unit):
                break
        else:  # pragma: no cover - the alternation and the table are built from the same list
            continue
        if kind == "volume" and unit == "l" and not re.match(r"\s*(?:of|solution|water|\W|$)", text[m.end() :]):
            continue  # a bare lower-case "l" is only a litre when nothing word-like follows
        value = _to_float(m.group("num"), m.group("exp"))
        if not math.isfinite(value):
            raise QuantityError(f"quantity {m.group(0)!r} is not a finite number")
        if kind != "temperature" and value <= 0:
            raise QuantityError(f"quantity {m.group(0).strip()!r} must be positive")
        limit = _LIMITS.get(kind)
        if limit is not None and value * factor > limit[0]:
            raise QuantityError(f"quantity {m.group(0).strip()!r} is {limit[1]}")
        found.append(Quantity(kind, value * factor, unit, m.start(), m.end(), m.group(0), normal))
    found.extend(q for q in _word_concentrations(text) if not any(f.start < q.end and q.start < f.end for f in found))
    return sorted(found, key=lambda q: q.start)


# Concentrations written without a number: "M/10 HCl", "N/20 NaOH" (the old fraction notation) and
# "decimolar" / "centimolar" / "semimolar" (or "-normal").
_FRACTION = re.compile(r"(?<![\w/])(?P<unit>[MN])\s*/\s*(?P<den>\d+(?:\.\d+)?)(?![\w/])")
_PREFIXED = re.compile(r"\b(?P<prefix>deci|centi|semi|half-?)(?P<unit>molar|normal)\b", re.I)
_PREFIX_VALUE = {"deci": 0.1, "centi": 0.01, "semi": 0.5, "half": 0.5, "half-": 0.5}


def _word_concentrations(text: str) -> list[Quantity]:
    out = []
    for m in _FRACTION.finditer(text):
        den = float(m.group("den"))
        if den <= 0:
            raise QuantityError(f"quantity {m.group(0)!r} divides by zero")
        out.append(Quantity("concentration", 1.0 / den, m.group("unit"), m.start(), m.end(), m.group(0),
                            m.group("unit") == "N"))
    for m in _PREFIXED.finditer(text):
        value = _PREFIX_VALUE[m.group("prefix").lower()]
        out.append(Quantity("concentration", value, m.group("unit"), m.start(), m.end(), m.group(0),
                            m.group("unit").lower() == "normal"))
    return out


# "Raise / lower / adjust the pH of 50 mL of 0.1 M HCl to 9": the target follows the sample it is of.
_PH_OF_SAMPLE = re.compile(
    r"\b(?:raise|lower|adjust|bring|increase|decrease|change|set|take)\w*\s+(?:the\s+)?p\s?H\s+of\s+"
    r"(?:[^.;!?]|\.(?=\d)){1,120}?\s(?P<to>to)\s+(?:(?:a\s+)?p\s?H\s*(?:of\s+)?)?(?P<num>\d+(?:[.,]\d+)?)(?![\w.,]*\s*(?:m?l|ml|M|mM|g|mg)\b)",
    re.IGNORECASE,
)
# "until the (pH) meter reads 7.0": a reading of the pH meter is a pH.
_METER_READS = re.compile(
    r"\b(?:meter|probe|electrode)\s+(?P<to>reads|shows|displays|indicates|reaches|gives)\s+(?:p\s?H\s*)?"
    r"(?P<num>\d+(?:[.,]\d+)?)(?![\w])",
    re.IGNORECASE,
)


def find_ph_mentions(text: str) -> list[PhMention]:
    """Every 'pH <number>' style mention, left to right: 'pH 7', 'to pH 7', 'the pH of <sample> to 7', 'the
    meter reads 7.0'. 'the pH of 50 mL ...' is no pH 50: a number with a unit is an amount."""
    out = []
    for m in _PH.finditer(text):
        if _QUANTITY.match(text, m.start("num")):
            continue
        raw = m.group("num").replace("\u2212", "-").replace(",", ".")
        out.append(PhMention(float(raw), m.start(), m.end(), m.group(0)))
    for pattern in (_PH_OF_SAMPLE, _METER_READS):
        for m in pattern.finditer(text):
            if any(p.start <= m.start("num") < p.end for p in out):
                continue  # "... to pH 9": already read
            raw = m.group("num").replace(",", ".")
            out.append(PhMention(float(raw), m.start("to"), m.end(), text[m.start("to"):m.end()]))
    return sorted(out, key=lambda p: p.start)
