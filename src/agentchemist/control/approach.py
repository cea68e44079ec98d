"""Where the titration curve is heading, from the controller's own squeeze and the pH readings alone.

Lag. The reading trails the beaker: a drop mixes in (stirred, tau about 1 s) and the glass electrode
follows (tau about 2 s), two first-order lags in series. The controller knows what it squeezed (Q_stat),
so it passes Q_stat through the same two lags: `seen` is the volume the reading shows now. The pairs
(seen, reading) trace the titration curve while the gripper moves, without holding for the reading to
settle, and Q_stat - seen is the titrant in flight: dispensed, not yet in the reading.

The lags are priors (config `reading_lags_s`); every settled hold that ended a squeeze measures their
sum (`observe_settle`: on a ramp the reading trails by the sum of the lags, so the rise still to come
when the squeeze stops is the reading's slope times that sum), and a longer one than the prior scales both
lags to it.

Log law. Near an equivalence point the pH follows the log of the acid (or base) left: a strong acid
pH = -log10(c (Veq - V) / (V0 + V)), a weak one pH = pKa + log10(V / (Veq - V)). Over a span dV in which
the pH rose by dpH, the volume left past the span's end is R = dV / (10^dpH - 1) for the log term alone;
the dilution term and the weak acid's log10(V) only add to dpH, so R is a lower bound: the next jump is
at least R away. A curve whose slope is falling (past an inflection, or the start of a weak acid's
titration) has no equivalence close ahead, and the bound is not applied there.
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

MIN_POINTS = 8   #: readings in a fit at the least (1.6 s at 5 Hz: the slope's noise about 0.1 of a 0.5 pH/mL one)


@dataclass(frozen=True)
class CurveFit:
    """The titration curve near the newest reading, as the readings and the lag model show it."""
    slope: float        #: dpH/dV (pH per mL, in the titrant's direction) over the fitted span
    slope_se: float     #: its standard error
    span_ml: float      #: volume the fit covers (as seen by the reading)
    end_ml: float       #: the seen volume at its newest reading
    convex: bool        #: the slope is not falling across the span (a jump may lie ahead)
    level: float        #: the fitted pH at end_ml

    def remaining_to_jump_ml(self, z: float = 2.0) -> float:
        """The log law's lower bound on the volume from end_ml to the next equivalence (inf when the curve
        is not convex or too flat to show one); `z` standard errors on the slope make it cautious."""
        if not self.convex:
            return math.inf
        rise = (self.slope + z * self.slope_se) * self.span_ml
        if rise <= 1e-3:
            return math.inf
        return self.span_ml / math.expm1(rise * math.log(10.0))


class CurveTracker:
    """Q_stat through the reading's two lags, and the (seen volume, reading) pairs of the recent past."""

    def __init__(self, lags_s: tuple[float, float], direction: int, q0: float = 0.0, t0: float = 0.0,
                 keep: int = 300):
        self.prior = tuple(float(x) for x in lags_s)
        self.lags = self.prior
        self.direction = direction
        self._mixed = self._seen = q0
        self._t = t0
        self._points: deque[tuple[float, float, float]] = deque(maxlen=keep)   #: (stamp, seen, pH)
        self._sums: list[float] = []
        self._added = 0
        self._fitted: tuple[tuple[int, float], CurveFit | None] | None = None

    @property
    def seen(self) -> float:
        return self._seen

    @property
    def total_lag_s(self) -> float:
        return sum(self.lags)

    def advance(self, now: float, q: float) -> None:
        """Follow Q_stat (held at `q` since the last call) to `now`, in closed form."""
        dt = now - self._t
        if dt <= 0:
            return
        self._t = now
        a, b = self.lags
        w0, u0 = self._mixed - q, self._seen - q
        ea, eb = math.exp(-dt / a), math.exp(-dt / b)
        cross = w0 * (dt / a) * ea if abs(a - b) < 1e-9 else w0 * a / (a - b) * (ea - eb)
        self._mixed = q + w0 * ea
        self._seen = q + u0 * eb + cross

    def add(self, stamp: float, ph: float, q: float) -> None:
        self.advance(stamp, q)
        self._points.append((stamp, self._seen, ph))
        self._added += 1

    def in_flight(self, q: float) -> float:
        return max(0.0, q - self._seen)

    def fit(self, min_span_ml: float) -> CurveFit | None:
        """A line (and whether its slope is falling) through the newest readings, back as far as it takes to
        span `min_span_ml` of seen volume (at least MIN_POINTS readings); None while the kept ones do not. A hold
        adds readings at one seen volume: the fit then reaches back to the squeeze before it."""
        if self._fitted is not None and self._fitted[0] == (self._added, min_span_ml):
            return self._fitted[1]
        pts = self._points
        n = len(pts)
        v_end = pts[-1][1] if n else 0.0
        k = next((i for i in range(n - 1, -1, -1) if v_end - pts[i][1] >= min_span_ml), None)
        result = None
        if k is not None and n >= MIN_POINTS:
            k = min(k, n - MIN_POINTS)   # a fast squeeze spans the volume in fewer readings than a fit needs
            result = self._line([p[1] for p in list(pts)[k:]], [p[2] for p in list(pts)[k:]])
        self._fitted = ((self._added, min_span_ml), result)
        return result

    def _line(self, vs: list[float], phs: list[float]) -> CurveFit:
        v = np.array(vs)
        y = self.direction * np.array(phs)
        span = float(v[-1] - v.min())
        vc = v - v.mean()
        svv = float(np.dot(vc, vc))
        slope = float(np.dot(vc, y - y.mean()) / svv)
        resid = y - y.mean() - slope * vc
        se = math.sqrt(max(float(np.dot(resid, resid)) / max(len(v) - 2, 1), 1e-6) / svv)
        # Flattening (concave): the slope over the newer half of the span is clearly below half the older
        # half's. Only a curve that flattens that much is let off the log law: readings piled up at one seen
        # volume during a hold must not make a jump ahead look like a plateau.
        mid = v.min() + 0.5 * span
        old, new = v <= mid, v > mid
        convex = True
        if (old.sum() >= 3 and new.sum() >= 3 and np.ptp(v[old]) >= 0.3 * span
                and np.ptp(v[new]) >= 0.3 * span):
            before = np.polyfit(v[old], y[old], 1)[0]
            after = np.polyfit(v[new], y[new], 1)[0]
            convex = bool(after + 2.0 * se >= 0.5 * before)
        level = self.direction * float(y.mean() + slope * (v[-1] - v.mean()))
        return CurveFit(slope, se, span, float(v[-1]), convex, level)

    def observe_settle(self, rise_ph: float, slope_ph_s: float) -> None:
        """A squeeze stopped while the reading rose at `slope_ph_s` and it went on to rise by `rise_ph`
        once settled: their ratio is the reading's total lag; the lags are scaled to the median of these
        (within 0.5-2x of the prior, so that one odd hold cannot make the model absurd)."""
        if not (math.isfinite(rise_ph) and math.isfinite(slope_ph_s)) or slope_ph_s < 0.03 or rise_ph <= 0:
            return
        self._sums.append(rise_ph / slope_ph_s)
        prior = sum(self.prior)
        # Only ever longer than the prior: a slower electrode (an ageing one) makes more titrant in flight
        # than the prior says, which would be unsafe; a faster one is left at the prior (the cautious side).
        # A rise measured after a convex stretch overstates the lag, so one odd hold is capped at 2x.
        total = min(max(float(np.median(self._sums)), prior), 2.0 * prior)
        self.lags = tuple(x * total / prior for x in self.prior)


class JumpWatch:
    """The log law's bound, set aside past an inflection.

    Approaching a real equivalence the slope only rises (under the log law it doubles each time the volume
    left halves). The first equivalence of a diprotic acid whose pKa's lie a few units apart is a gentle
    inflection instead: the slope rises to a peak and falls again, while the bound, read off that slope,
    stays a few drops ahead of the squeeze all the way through it. So among the fits that have caught up
    with the squeeze (in flight at most `caught_ml`), once the slope is clearly below `fall` of its peak
    since the bound came within three leads (its upper 2-sigma bound under it), the curve is past an
    inflection and the bound is set aside (the peak taken at its lower 2-sigma bound): the target itself is still watched on the local slope, and a
    slope that rises again brings the bound back. Far from any jump the peak is forgotten."""

    def __init__(self, lead_ml: float, caught_ml: float, fall: float = 0.7):
        self.lead_ml = lead_ml
        self.caught_ml = caught_ml
        self.fall = fall
        self.peak: float | None = None    #: peak slope since the bound came near
        self.past = False                 #: past an inflection: the bound is set aside
        self.set_aside_at: list[float] = []   #: seen volumes where it was set aside (reported)
        self._fit: CurveFit | None = None

    def to_jump(self, fit: CurveFit, flight: float) -> float:
        """The volume to the next jump from the squeeze (mL): the bound less the titrant in flight, or inf
        while it is set aside."""
        bound = fit.remaining_to_jump_ml()
        if fit is not self._fit:
            self._fit = fit
            self._follow(fit, bound, flight)
        return math.inf if self.past else bound - flight

    def _follow(self, fit: CurveFit, bound: float, flight: float) -> None:
        if not bound - flight <= 3.0 * self.lead_ml:
            self.peak, self.past = None, False   # no jump near
            return
        if flight > self.caught_ml:
            return
        low = fit.slope - 2.0 * fit.slope_se   # the peak is taken at its lower 2-sigma bound: a noisy fit
        self.peak = low if self.peak is None else max(self.peak, low)   # must not fake a fall
        past = fit.slope + 2.0 * fit.slope_se < self.fall * self.peak
        if past and not self.past:
            self.set_aside_at.append(fit.end_ml)
        self.past = past
