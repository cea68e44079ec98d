"""Rubber-bulb dropping pipette squeezed by a gripper, and the drops it makes.

Bulb model. Below the opening at which the jaws touch the bulb (``contact_opening_mm``) every further
millimetre of closing squeezes ``k`` mL out of the bulb:

    V(d) = k * d * (1 + a * d / d_c),    d = contact_opening - opening (mm, >= 0),

with ``a`` = ``nonlinearity`` (0 = linear; a > 0 models a bulb that stiffens as it flattens). Liquid
leaves only when the squeeze goes deeper than it has been since the last draw ("high-water mark"):
opening the gripper again lets the bulb re-inflate with air through the tip, and that air has to be
pushed out before liquid moves. An empty pipette blows air and makes no drops.

Drop model. Expelled liquid collects at the tip as a pendant drop. Each drop has its own detachment
volume (surface tension against weight, Tate's law), drawn from N(drop_volume_ml, drop_volume_sd)
(absolute sd, mL, truncated at +-30 % of the mean). When the pendant reaches it, the neck takes
``formation_delay_s`` to pinch off, and the drop carries everything hanging at the tip by then:

    V_drop = V_tate + q * formation_delay_s      (q = flow into the tip, mL/s)

so a slow squeeze gives drops of the nominal size and a fast one gives fewer, larger drops (the reason
drop-weight methods dispense slowly). The drop falls ``fall_height_m`` (t = sqrt(2 h / g)) and lands.
A "drop_fails" fault makes the next detachment cling to the tip: it keeps growing and falls later as
one larger drop.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from agentchemist.sim.scenario import PipetteSpec

__all__ = ["Drop", "RubberBulbPipette", "G"]

G = 9.81  # m/s^2


@dataclass
class Drop:
    """One drop: when it left the tip and landed (s), its volume (mL) and what it carries (mol/L)."""

    index: int
    detach_time: float
    land_time: float
    volume_ml: float
    reagent: str
    composition: dict[str, float]
    cause: str = "squeeze"  # "squeeze" | "extra_drop" (fault)
    fate: str = "falling"   # "falling" -> "beaker" | "spilled" | "overflow"
    log_row: int = field(default=-1, compare=False, repr=False)  # its row in the twin's DropLog

    def as_dict(self) -> dict:
        return {
            "index": self.index,
            "time": self.land_time,
            "detach_time": self.detach_time,
            "volume_ml": self.volume_ml,
            "reagent": self.reagent,
            "cause": self.cause,
            "fate": self.fate,
        }


@dataclass
class _Pendant:
    volume_ml: float = 0.0
    target_ml: float = 0.0
    ready_time: float | None = None  # when the pendant reached target_ml
    stuck: int = 0                   # detachments still to fail (drop_fails fault)


class RubberBulbPipette:
    """State of the pipette: liquid in the bulb, the pendant drop at the tip, the squeeze history."""

    def __init__(self, spec: PipetteSpec, rng: np.random.Generator) -> None:
        self.spec = spec
        self._rng = rng
        self.content_ml = spec.drawn_ml
        self.reagent: str | None = spec.drawn_reagent
        self.composition: dict[str, float] = {}
        self.high_water_mm = 0.0
        self.expelled_ml = 0.0
        self.fall_time_s = math.sqrt(2.0 * spec.fall_height_m / G)
        self._pendant = _Pendant(target_ml=self._sample_volume())
        self._last_detach = -math.inf
        self._segment = (0.0, 0.0, 0.0, 0.0)  # (t0, pendant at t0, t1, pendant at t1) of the last growth
        self._count = 0
        self.failed_events: list[float] = []

    # ---------------------------------------------------------------------------------------------
    def squeezed_volume(self, depth_mm: float) -> float:
        """V(d) in mL for a squeeze depth d in mm (0 for d <= 0)."""
        if depth_mm <= 0.0:
            return 0.0
        s = self.spec
        return s.k_ml_per_mm * depth_mm * (1.0 + s.nonlinearity * depth_mm / s.contact_opening_mm)

    def depth_mm(self, opening_m: float) -> float:
        """Squeeze depth (mm) at a gripper opening (m)."""
        return self.spec.contact_opening_mm - opening_m * 1000.0

    @property
    def pendant_ml(self) -> float:
        return self._pendant.volume_ml

    def _sample_volume(self) -> float:
        s = self.spec
        v = s.drop_volume_ml + s.drop_volume_sd * float(self._rng.standard_normal())
        return min(max(v, 0.7 * s.drop_volume_ml), 1.3 * s.drop_volume_ml)

    # ---------------------------------------------------------------------------------------------
    def fill(self, reagent: str, composition: dict[str, float], volume_ml: float, depth_mm: float) -> float:
        """Draw ``volume_ml`` (clamped to the free capacity); returns the volume actually drawn (mL).

        Drawing resets the high-water mark to the present squeeze and returns any pendant liquid to
        the reservoir (the tip was dipped in it).
        """
        free = self.spec.capacity_ml - self.content_ml
        got = min(max(volume_ml, 0.0), free)
        self.content_ml += got
        self.reagent = reagent
        self.composition = dict(composition)
        self.high_water_mm = max(depth_mm, 0.0)
        self._pendant.volume_ml = 0.0
        self._pendant.ready_time = None
        self._segment = (0.0, 0.0, 0.0, 0.0)
        return got

    def squeeze(self, t0: float, depth0_mm: float, t1: float, depth1_mm: float) -> float:
        """Advance the bulb from (t0, depth0) to (t1, depth1) (depth linear in between).

        Returns the liquid expelled into the pendant drop (mL). The pendant is taken to grow linearly
        over the part of the interval where liquid moved; that is used to stamp when it reached its
        detachment volume and how much it held at the moment it pinched off.
        """
        if depth1_mm <= self.high_water_mm:
            return 0.0
        new_vol = self.squeezed_volume(depth1_mm) - self.squeezed_volume(self.high_water_mm)
        # When did the squeeze pass the high-water mark inside [t0, t1]? (depth is linear in t)
        start = t0
        if depth0_mm < self.high_water_mm and depth1_mm > depth0_mm:
            start = t0 + (t1 - t0) * (self.high_water_mm - depth0_mm) / (depth1_mm - depth0_mm)
        self.high_water_mm = depth1_mm
        out = min(new_vol, self.content_ml)
        if out <= 0.0:
            return 0.0
        self.content_ml -= out
        self.expelled_ml += out
        p = self._pendant
        before = p.volume_ml
        p.volume_ml += out
        self._segment = (start, before, t1, p.volume_ml)
        if p.ready_time is None and p.volume_ml >= p.target_ml:
            p.ready_time = self._time_pendant_reaches(p.target_ml)
        return out

    def _time_pendant_reaches(self, volume: float) -> float:
        s0, p0, s1, p1 = self._segment
        if p1 <= p0 or s1 <= s0:
            return s1
        return s0 + (s1 - s0) * min(max((volume - p0) / (p1 - p0), 0.0), 1.0)

    def _pendant_at(self, t: float) -> float:
        """Pendant volume at time t inside or after the last growth segment (mL)."""
        s0, p0, s1, p1 = self._segment
        if t >= s1 or s1 <= s0:
            return self._pendant.volume_ml
        return p0 + (p1 - p0) * max(t - s0, 0.0) / (s1 - s0)

    def next_detach_time(self) -> float | None:
        """Sim time at which the pendant drop will next pinch off, or None if it is not full yet."""
        p = self._pendant
        if p.ready_time is None:
            return None
        return p.ready_time + self.spec.formation_delay_s

    def fail_next_drops(self, n: int = 1) -> None:
        """Fault: the next ``n`` detachments stick to the tip instead of falling."""
        self._pendant.stuck += n

    def detach_until(self, t: float) -> list[Drop]:
        """Drops that pinch off at or before ``t``, in order (each with its landing time).

        A drop takes everything hanging at the tip when it pinches off: its detachment volume plus
        what flowed in while the neck formed (``formation_delay_s``), so faster squeezing makes
        slightly larger drops, as in drop-weight measurements.
        """
        drops: list[Drop] = []
        while True:
            when = self.next_detach_time()
            if when is None or when > t:
                return drops
            p = self._pendant
            if p.stuck > 0:
                # The drop clings (wets the tip's outside): it keeps growing and falls later, merged.
                p.stuck -= 1
                self.failed_events.append(when)
                p.target_ml += self._sample_volume()
                p.ready_time = self._time_pendant_reaches(p.target_ml) if p.volume_ml >= p.target_ml else None
                if p.ready_time is not None:
                    p.ready_time = max(p.ready_time, when)
                continue
            vol = self._pendant_at(when)
            p.volume_ml -= vol
            if p.volume_ml < 1e-12:
                p.volume_ml = 0.0
            s0, p0, s1, p1 = self._segment
            if when < s1:  # liquid arriving after the pinch-off starts the next drop
                self._segment = (when, 0.0, s1, p.volume_ml)
            else:
                self._segment = (when, p.volume_ml, when, p.volume_ml)
            self._last_detach = when
            p.target_ml = self._sample_volume()
            p.ready_time = self._time_pendant_reaches(p.target_ml) if p.volume_ml >= p.target_ml else None
            drops.append(self._make_drop(when, vol, "squeeze"))

    def leak_drop(self, t: float, volume_ml: float | None = None) -> Drop | None:
        """Fault "extra_drop": a drop falls unbidden (from the pendant, then the bulb); None if empty."""
        want = self._sample_volume() if volume_ml is None else volume_ml
        p = self._pendant
        from_pendant = min(p.volume_ml, want)
        from_bulb = min(self.content_ml, want - from_pendant)
        vol = from_pendant + from_bulb
        if vol <= 1e-9 or self.reagent is None:
            return None
        p.volume_ml -= from_pendant
        self._segment = (t, p.volume_ml, t, p.volume_ml)
        if p.volume_ml < p.target_ml:
            p.ready_time = None
        self.content_ml -= from_bulb
        self.expelled_ml += from_bulb
        return self._make_drop(t, vol, "extra_drop")

    def _make_drop(self, t: float, vol: float, cause: str) -> Drop:
        self._count += 1
        return Drop(
            index=self._count,
            detach_time=t,
            land_time=t + self.fall_time_s,
            volume_ml=vol,
            reagent=self.reagent or "",
            composition=dict(self.composition),
            cause=cause,
        )

    def state(self) -> dict:
        return {
            "content_ml": self.content_ml,
            "pendant_ml": self._pendant.volume_ml,
            "reagent": self.reagent,
            "high_water_mm": self.high_water_mm,
            "expelled_ml": self.expelled_ml,
            "drops_made": self._count,
        }

