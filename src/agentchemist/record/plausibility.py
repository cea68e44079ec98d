"""Is a pH reading one that the drops can explain? The chemistry's own bound, free of ROS.

Adding `db` mol/L of strong base changes the pH fastest when nothing buffers the solution: then the
charge balance gives [OH-] - [H+] = F, and F moves by exactly `db`. Any buffer (a weak acid, the titrant's
own conjugate) only slows the change. So from a reading pH0, after at most `n` drops of titrant of at most
`c` mol/L and `v` mL each into at least `V` mL, the pH lies between the solutions of

    F(pH) = F(pH0) -/+ n c v / V,    F(pH) = 10**(pH - 14) - 10**(-pH)

(widened by a margin for the probe's noise, offset drift and temperature). A reading outside that band is a
jump no drop explains: a forged or broken stream (pH 10.5 while the beaker is at 1.25), a probe moved to
another liquid. It is flagged and kept out of the records; the band is taken from the last plausible
reading and the drops seen since (heard by the audio supervisor or counted by the dispenser), plus one in
flight. Used by agentchemist.record.recording for acid-base titrations whose plan names the titrant.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

KW = 1e-14  # 25 degC; the margin covers the change of pKw with temperature near room temperature


def charge_excess(ph: float) -> float:
    """[OH-] - [H+] (mol/L) of an unbuffered solution at `ph`."""
    return 10.0 ** (ph - 14.0) - 10.0 ** (-ph)


def ph_of_excess(x: float) -> float:
    """The pH at which [OH-] - [H+] = x (the inverse of charge_excess)."""
    root = math.sqrt(x * x + 4.0 * KW)
    h = (root - x) / 2.0 if x <= 0 else 2.0 * KW / (root + x)  # no cancellation on either side
    return -math.log10(h)


@dataclass
class PhPlausibility:
    """The band of pH values the drops since the last plausible reading can reach."""

    titrant_m: float           #: titrant concentration (mol/L), the largest the plan allows
    drop_ml: float             #: the largest drop volume
    beaker_ml: float           #: the smallest liquid volume in the beaker (the analyte's)
    margin_ph: float = 0.3     #: probe noise, offset drift, temperature
    in_flight: int = 1         #: a drop on its way that nothing has reported yet
    lag_s: float = 10.0        #: a reading shows drops up to this long before it (mixing, the probe's lag)
    baseline: tuple[float, float] | None = None   #: (stamp, pH) of the last plausible reading
    drops: list[float] = field(default_factory=list)  #: stamps of recent drops

    def drop(self, stamp: float, count: int = 1) -> None:
        self.drops.extend([stamp] * max(0, count))

    def recent(self) -> int:
        """Drops whose effect may not have reached the baseline reading yet (it lags them by up to lag_s)."""
        since = self.baseline[0] - self.lag_s
        self.drops = [t for t in self.drops if t > since]
        return len(self.drops)

    def band(self) -> tuple[float, float]:
        """(low, high) pH the next reading may show."""
        _stamp, ph0 = self.baseline
        added = (self.recent() + self.in_flight) * self.titrant_m * self.drop_ml / self.beaker_ml
        f0 = charge_excess(ph0)
        return ph_of_excess(f0 - added) - self.margin_ph, ph_of_excess(f0 + added) + self.margin_ph

    def check(self, stamp: float, ph: float) -> str:
        """'' for a plausible reading (it becomes the baseline), else why it is not."""
        if self.baseline is None:
            self.baseline = (stamp, ph)
            return ""
        low, high = self.band()
        if low <= ph <= high:
            self.baseline = (stamp, ph)
            return ""
        since, ph0 = self.baseline
        return (f"pH {ph:.2f} at {stamp:.1f} s: the {len(self.drops)} drop(s) around and since the reading of "
                f"pH {ph0:.2f} at {since:.1f} s can move it to {low:.2f}..{high:.2f} at most")


def from_plan(plan: dict) -> PhPlausibility | None:
    """The check for an acid-base titration plan (plan JSON as a dict); None when the plan does not say
    enough (no titrant concentration, a weighing, a complexometric titration)."""
    try:
        parsed = plan["parsed_instruction"]
        if parsed.get("family") not in ("acid_base_titration", "acid_base"):
            return None
        reagents = parsed["entities"]["reagents"]
        titrant = next(r for r in reagents if r.get("role") == "titrant")
        if titrant.get("unknown"):
            return None  # a standardisation: the titrant's concentration is what the run measures
        c = float(titrant["concentration_m"])
        volume = parsed["initial_conditions"].get("analyte_volume_ml") or next(
            (r.get("volume_ml") for r in reagents if r.get("role") == "analyte" and r.get("volume_ml")), None)
        drop = float(plan["module_instantiation"]["dispenser"].get("drop_volume_ml") or 0.046875)
    except (KeyError, TypeError, ValueError, StopIteration):
        return None
    if not (c > 0 and volume and float(volume) > 0):
        return None
    # Generous: a titrant up to 1.5x its label, drops up to 1.5x the calibrated volume.
    return PhPlausibility(titrant_m=1.5 * c, drop_ml=1.5 * drop, beaker_ml=float(volume))
