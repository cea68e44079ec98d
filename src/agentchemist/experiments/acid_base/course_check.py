"""The titration's measured pH course against the plan's predicted curve: a course no plausible error
explains means the bottle or the beaker does not hold what the plan says (``reagent_mismatch``).

The plan predicts pH against titrant volume from its analyte and titrant (the equilibrium solver,
:func:`agentchemist.chemistry.equilibrium.titration_curve`, as the glass electrode reads it). What may honestly differ:

* the concentrations: each within about +-20 %, so the titrant/analyte ratio within ``ratio_range``
  (0.67-1.5; the analyte volume's error moves the curve the same way);
* the volume the supervisor counts (heard drops x the calibrated drop): a drop missed or added, the
  calibration's few per cent: ``volume_slack_ml`` + ``volume_slack_rel`` x volume;
* the probe: an uncalibrated offset (up to about 0.5 pH), a slope error and the activity model, ``offset_ph``
  (0.8 pH; the clean library's readings sit within 0.01 pH of the plausible curves, so a probe up to about
  0.8 pH off raises nothing).

The sample is checked from the first reading, whatever the settle mode (:meth:`CourseCheck.on_initial`): the
settled pH before the first drop against the plan's analyte at 0 mL. Acetic acid reads about 2.9 where
hydrochloric acid of the same concentration reads 1.1: a bench that holds another sample is a
``reagent_mismatch`` before any titrant is spent, the numbers in the message.

Every settled reading (the supervisor's ``ph_stable``) at the counted volume must lie inside the envelope
of the curves those errors allow, widened by ``offset_ph``. ``confirm_points`` readings in a row outside
it halt the run. A titrant five times stronger than planned makes the jump at a fifth of the expected
volume, far outside (the mislabelled bottle); a weak acid in place of a strong one starts two pH units
high (the swapped analyte). pH is monotone in the volume and the ratio, so the envelope at a volume is
spanned by the four corner curves; they are computed on a ``grid_ml`` grid, rounded outward, once each.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from agentchemist.chemistry.equilibrium import titration_curve
from agentchemist.chemistry.reagents import ReagentLibrary, default_library
from agentchemist.experiments.acid_base import FAMILY

__all__ = ["CourseCheck", "CourseCheckConfig", "CourseVerdict"]


@dataclass(frozen=True)
class CourseCheckConfig:
    ratio_range: tuple[float, float] = (0.8 / 1.2, 1.2 / 0.8)  #: titrant/analyte concentration ratio errors
    offset_ph: float = 0.8          #: probe offset (+-0.5 uncalibrated), slope error, activity model (pH)
    volume_slack_ml: float = 0.3    #: counted volume: missed / extra drops (mL)
    volume_slack_rel: float = 0.05  #: counted volume: the drop calibration (fraction of the volume)
    confirm_points: int = 3         #: settled readings in a row outside the envelope before the halt
    grid_ml: float = 0.25           #: the predicted curves' volume grid (mL)

    def __post_init__(self):
        lo, hi = self.ratio_range
        if not (0 < lo <= 1 <= hi and math.isfinite(hi)):
            raise ValueError(f"ratio_range must be (low <= 1, high >= 1), got {self.ratio_range}")
        if not (self.offset_ph > 0 and self.volume_slack_ml >= 0 and self.volume_slack_rel >= 0
                and self.grid_ml > 0 and self.confirm_points >= 1):
            raise ValueError("CourseCheckConfig: offset_ph, grid_ml > 0; slacks >= 0; confirm_points >= 1")


@dataclass(frozen=True)
class CourseVerdict:
    """A settled reading judged: inside the envelope (``low``..``high``, pH) or not; ``alarm`` once, on the
    ``confirm_points``-th reading outside in a row, with the sentence for the anomaly."""

    volume_ml: float
    ph: float
    low: float
    high: float
    outside: bool
    alarm: str = ""


class CourseCheck:
    """One titration's course check; feed it settled readings with the volume counted so far."""

    def __init__(self, analyte: dict[str, float], analyte_ml: float, titrant: dict[str, float],
                 library: ReagentLibrary | None = None, activity: bool = True,
                 config: CourseCheckConfig = CourseCheckConfig()):
        if not (analyte and titrant and analyte_ml > 0):
            raise ValueError("the course check needs an analyte, its volume and a titrant")
        self.analyte, self.analyte_ml, self.titrant = dict(analyte), float(analyte_ml), dict(titrant)
        self.library = library if library is not None else default_library()
        self.activity = bool(activity)
        self.config = config
        self._curve: dict[tuple[float, int], float] = {}
        self.outside_run = 0
        self.alarmed = False
        self.points: list[CourseVerdict] = []

    @classmethod
    def from_plan(cls, plan, activity: bool = True, library: ReagentLibrary | None = None,
                  config: CourseCheckConfig = CourseCheckConfig()) -> "CourseCheck | None":
        """The check for an acid-base titration plan with both concentrations and the analyte volume; None
        otherwise (a colour endpoint, a weighing, a determination of an unknown concentration)."""
        pi = plan.parsed_instruction
        analyte, titrant = plan.reagent("analyte"), plan.reagent("titrant")
        if pi.family != FAMILY.name or analyte is None or titrant is None:
            return None
        volume = analyte.volume_ml or pi.initial_conditions.analyte_volume_ml
        if analyte.concentration_m is None or titrant.concentration_m is None or not volume:
            return None
        return cls({analyte.name: analyte.concentration_m}, volume, {titrant.name: titrant.concentration_m},
                   library, activity, config)

    def _ph(self, ratio: float, step: int) -> float:
        key = (ratio, step)
        if key not in self._curve:
            titrant = {k: c * ratio for k, c in self.titrant.items()}
            volume = np.array([step * self.config.grid_ml])
            self._curve[key] = float(titration_curve(self.analyte, self.analyte_ml, titrant, volume,
                                                     activity=self.activity, library=self.library)[0])
        return self._curve[key]

    def envelope(self, volume_ml: float) -> tuple[float, float]:
        """(lowest, highest) pH the plausible errors allow at this counted volume, before ``offset_ph``."""
        c = self.config
        slack = c.volume_slack_ml + c.volume_slack_rel * volume_ml
        first = max(0, math.floor((volume_ml - slack) / c.grid_ml))
        last = max(0, math.ceil((volume_ml + slack) / c.grid_ml))
        corners = [self._ph(r, s) for r in c.ratio_range for s in (first, last)]
        return min(corners), max(corners)

    def on_settled(self, volume_ml: float, ph: float, final: bool = False) -> CourseVerdict:
        """A settled reading at the counted titrant volume -> its verdict (``alarm`` set once). ``final``:
        the endpoint's reading; no later reading can confirm it, so one outside the envelope is enough (a
        short titration with a 5x titrant reaches its target at the jump, within a drop or two)."""
        if not (math.isfinite(volume_ml) and volume_ml >= 0 and math.isfinite(ph)):
            raise ValueError(f"course check: volume {volume_ml!r} mL and pH {ph!r} must be finite, volume >= 0")
        low, high = self.envelope(volume_ml)
        off = self.config.offset_ph
        outside = not (low - off <= ph <= high + off)
        self.outside_run = self.outside_run + 1 if outside else 0
        alarm = ""
        if outside and not self.alarmed and (final or self.outside_run >= self.config.confirm_points):
            self.alarmed = True
            alarm = self._sentence(volume_ml, ph, low, high, 1 if final else self.config.confirm_points)
        verdict = CourseVerdict(volume_ml, ph, low, high, outside, alarm)
        self.points.append(verdict)
        return verdict

    def on_initial(self, ph: float) -> str:
        """The settled pH before the first drop -> the alarm sentence ('' when the plan's analyte explains it).
        Judged once: an alarm is not raised twice."""
        if not math.isfinite(ph):
            raise ValueError(f"course check: initial pH {ph!r} must be finite")
        low, high = self.envelope(0.0)
        off = self.config.offset_ph
        if low - off <= ph <= high + off or self.alarmed:
            return ""
        self.alarmed = True
        lib = self.library
        what = " and ".join(f"{c:g} M {lib.get(n).display_name}" for n, c in self.analyte.items())
        where = "below" if ph < low else "above"
        return (f"the sample does not match the plan: its pH before the first drop is {ph:.2f}, {where} the "
                f"{low - off:.2f}-{high + off:.2f} that {self.analyte_ml:g} mL of {what} reads ({low:.2f}-{high:.2f} "
                f"+-{off:g} for the probe): the beaker does not hold what the plan says; no titrant was added")

    def _sentence(self, volume_ml: float, ph: float, low: float, high: float, points: int) -> str:
        lib = self.library
        what = lambda d: " and ".join(f"{c:g} M {lib.get(n).display_name}" for n, c in d.items())  # noqa: E731
        where = "above" if ph > high else "below"
        lo_r, hi_r = self.config.ratio_range
        return (f"the pH course does not match the plan: pH {ph:.2f} after {volume_ml:.2f} mL of titrant is "
                f"{where} the {low:.2f}-{high:.2f} (+-{self.config.offset_ph:g}) the plan predicts for "
                f"{self.analyte_ml:g} mL of {what(self.analyte)} titrated with {what(self.titrant)} "
                f"(concentration ratio {lo_r:.2f}-{hi_r:.2f}x)"
                + (f", {points} settled readings in a row" if points > 1 else " at the endpoint")
                + ": the titrant or the sample is not what the plan says")
