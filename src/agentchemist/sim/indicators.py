"""Solution colour for the camera: acid-base indicators by Beer-Lambert absorbance in three channels.

Each indicator has an acid form and a base form, switching with one pKa (fraction of base form
1 / (1 + 10**(pKa - pH))). Each form has a molar absorptivity per camera channel (R, G, B) in
L/(mol cm), rough values read off the forms' visible spectra at about 610, 540 and 460 nm. The colour
seen through the beaker is white bench light times the transmittance 10**(-sum eps * c * path) per
channel, so mixtures of forms and concentrations blend the way real solutions do.

Calconcarboxylic acid is listed for completeness (its free-indicator blue at pH > 13.7); in a calcium
titration the twin uses the complexometric model instead, because the indicator's colour there is set
by the Ca-indicator complex, not by pH.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from agentchemist.names import did_you_mean, name_key

__all__ = ["INDICATORS", "Indicator", "PATH_CM", "WATER_RGB", "indicator_for", "solution_rgb"]

#: Tint of clear water in a glass beaker under bench light (RGB); a very light blue-grey.
WATER_RGB = (214, 226, 236)
#: Optical path through the beaker used for the absorbance (cm); about a 100 mL beaker's diameter.
PATH_CM = 4.0


@dataclass(frozen=True)
class Indicator:
    name: str
    aliases: tuple[str, ...]
    pka: float
    eps_acid: tuple[float, float, float]
    eps_base: tuple[float, float, float]


INDICATORS: dict[str, Indicator] = {
    i.name: i
    for i in (
        # colourless acid form; magenta base form (lambda max 553 nm)
        Indicator("phenolphthalein", ("php",), 9.4, (0.0, 0.0, 0.0), (1500.0, 30000.0, 5000.0)),
        # yellow acid form (427 nm), blue base form (617 nm)
        Indicator("bromothymol_blue", ("btb",), 7.1, (300.0, 2000.0, 18000.0), (32000.0, 9000.0, 1500.0)),
        # red acid form (507 nm), yellow base form (464 nm)
        Indicator("methyl_orange", ("mo",), 3.46, (1500.0, 32000.0, 18000.0), (200.0, 5000.0, 26000.0)),
        # red acid form (520 nm), yellow base form (430 nm)
        Indicator("methyl_red", ("mr",), 5.1, (800.0, 36000.0, 14000.0), (100.0, 3500.0, 21000.0)),
        # wine-red H2In- below pKa2 13.67, blue HIn3- above (used only outside the Ca/EDTA model)
        Indicator(
            "calconcarboxylic_acid",
            ("patton_reeder", "hhsnn", "calcon_carboxylic_acid"),
            13.67,
            (4000.0, 16000.0, 6000.0),
            (15000.0, 6000.0, 2500.0),
        ),
    )
}
_ALIASES = {alias: ind for ind in INDICATORS.values() for alias in (ind.name, *ind.aliases)}


def indicator_for(name: str) -> Indicator:
    """The indicator called ``name`` (or an alias); ValueError listing close matches otherwise."""
    key = name_key(name)
    if key in _ALIASES:
        return _ALIASES[key]
    hint = did_you_mean(key, _ALIASES, show=lambda c: repr(_ALIASES[c].name))
    raise ValueError(f"unknown indicator {name!r}{hint} (known: {', '.join(sorted(INDICATORS))})")


def solution_rgb(indicator: Indicator | None, conc_m: float, ph: float) -> tuple[int, int, int]:
    """RGB (0-255) of the solution seen through the beaker at this pH and indicator concentration."""
    if indicator is None or conc_m <= 0:
        return WATER_RGB
    if not math.isfinite(ph):
        raise ValueError(f"pH must be finite, got {ph}")
    f_base = 1.0 / (1.0 + 10.0 ** (indicator.pka - ph))
    out = []
    for light, ea, eb in zip(WATER_RGB, indicator.eps_acid, indicator.eps_base):
        absorbance = (ea * (1.0 - f_base) + eb * f_base) * conc_m * PATH_CM
        out.append(int(round(light * 10.0 ** (-absorbance))))
    return (out[0], out[1], out[2])
