"""The solid pour's flow model: the discharge law fitted to every pour so far, and the next pulse sized from it
(see agentchemist.control.solid_pour's module docstring, steps 4 and 5, for the reasons).

    q = F * (max(0, tilt - onset) / flow_scale_deg) ** flow_exponent

`PourModel` keeps the pours (their measured tilt traces and the settled mass each delivered), refits F and
the onset to them (`fit`), and plans the next pulse under the arm's lag (`plan`, `smallest_pulse`). The
controller owns the phases, the balance and the arm; this module only computes.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass
class Pour:
    """One pour (search ramp or pulse) and what the balance says it delivered."""
    kind: str
    trace: list[tuple[float, float]] = field(default_factory=list)  #: (time, measured tilt)
    dose_g: float | None = None


@dataclass(frozen=True)
class FlowModel:
    gain_g_s: float        #: F: flow at flow_scale_deg past the onset (g/s)
    onset_deg: float


class PourModel:
    """The pours of one goal and the flow law fitted to them (config: a SolidPourConfig)."""

    def __init__(self, config):
        self.config = config
        self.pours: list[Pour] = []
        self.model: FlowModel | None = None
        self.onset_prior: float | None = None   #: the search's estimate of the flow onset (deg)
        self.last_planned = 0.0                 #: the dose planned for the latest pulse (g)

    def onset(self) -> float | None:
        """The flow onset (deg): the fitted one, else the search's estimate, else unknown."""
        if self.model is not None:
            return self.model.onset_deg
        return self.onset_prior

    def rest_tilt(self, *, held: bool) -> float:
        """The tilt between pours: `rest_below_deg` under the onset (upright while unknown, or held)."""
        onset = self.onset()
        if onset is None or held:
            return 0.0
        return max(onset - self.config.rest_below_deg, 0.0)

    def trace(self, now: float, measured: float | None) -> None:
        """The measured tilt at `now`, into the trace of the pour whose dose is still to be measured."""
        if measured is None or not self.pours or self.pours[-1].dose_g is not None:
            return
        self.pours[-1].trace.append((now, measured))

    def pulse_was_weak(self, pour: Pour) -> bool:
        c = self.config
        planned = self.last_planned
        return pour.dose_g < 2 * c.balance_resolution_g and pour.dose_g < c.weak_pulse_fraction * planned

    def shape(self, tilt: float, onset: float) -> float:
        excess = tilt - onset
        if excess <= 0.0:
            return 0.0
        return (excess / self.config.flow_scale_deg) ** self.config.flow_exponent

    def exposure(self, trace: list[tuple[float, float]], onset: float) -> float:
        """Integral of the flow law's shape along a measured tilt trace (s)."""
        total = 0.0
        for (t0, a0), (t1, a1) in zip(trace, trace[1:]):
            total += 0.5 * (self.shape(a0, onset) + self.shape(a1, onset)) * (t1 - t0)
        return total

    def fit(self) -> None:
        """Refit F and the onset to every measured pour (see the module docstring)."""
        c = self.config
        data = [p for p in self.pours if p.dose_g is not None and len(p.trace) >= 2]
        if not data or self.onset_prior is None:
            return
        best = None
        steps = int(round(2 * c.onset_search_deg / 0.25))
        sd_m = c.balance_resolution_g
        for i in range(steps + 1):
            onset = self.onset_prior - c.onset_search_deg + 0.25 * i
            exposures = [self.exposure(p.trace, onset) for p in data]
            weights = [c.forget_per_pour ** (len(data) - 1 - k) / ((c.dose_cv * max(p.dose_g, 0.0)) ** 2 + sd_m ** 2)
                       for k, p in enumerate(data)]
            sxx = sum(w * e * e for w, e in zip(weights, exposures))
            if sxx <= 0.0:
                continue
            gain = sum(w * p.dose_g * e for w, p, e in zip(weights, data, exposures)) / sxx
            if gain <= 0.0:
                continue
            cost = sum(w * (p.dose_g - gain * e) ** 2 for w, p, e in zip(weights, data, exposures))
            cost += ((onset - self.onset_prior) / c.onset_prior_sd_deg) ** 2
            if best is None or cost < best[0]:
                best = (cost, gain, onset)
        if best is not None:
            self.model = FlowModel(best[1], best[2])

    def _predictions(self, work: float, tilt_now: float, rest: float) -> list[tuple[float, float]]:
        """(duration, predicted dose in g) of a pulse at the working tilt `work` for every duration on the
        control grid: the tilt follows the command (work, then rest) with the arm's first-order lag from
        where it is now, and the fitted flow is integrated along it until the bottle is under the onset."""
        m, c = self.model, self.config
        dt = 0.01
        decay = math.exp(-dt / c.arm_tau_s)
        durations = self._durations()
        tilt = tilt_now
        t, rising = 0.0, 0.0  # exposure accumulated at the working tilt so far
        out = []
        for d in durations:
            while t < d - 1e-9:  # the part at the working tilt is common to every longer pulse
                nxt = work + (tilt - work) * decay
                rising += 0.5 * (self.shape(tilt, m.onset_deg) + self.shape(nxt, m.onset_deg)) * dt
                tilt, t = nxt, t + dt
            tail, a, k = 0.0, tilt, 0
            while a > m.onset_deg and k < 2000:  # back to rest: what still flows
                nxt = rest + (a - rest) * decay
                tail += 0.5 * (self.shape(a, m.onset_deg) + self.shape(nxt, m.onset_deg)) * dt
                a, k = nxt, k + 1
            out.append((d, m.gain_g_s * (rising + tail)))
        return out

    def _durations(self) -> list[float]:
        c = self.config
        n0 = max(1, int(math.ceil(c.min_pulse_s / c.control_period_s - 1e-9)))
        n1 = int(math.floor(c.max_pulse_s / c.control_period_s + 1e-9))
        return [n * c.control_period_s for n in range(n0, n1 + 1)]

    def plan(self, remaining: float, tilt_now: float, rest: float) -> tuple[float, float, float] | None:
        """(duration, predicted dose, working tilt) of the next pulse, or None when no pulse would
        improve the mass."""
        c = self.config
        if self.model is None or remaining <= 0.0:
            return None
        # Before the model has seen a pulse (only the search ramp), its F is rough: dose more cautiously.
        seen_pulse = any(p.kind == "pulse" and p.dose_g is not None for p in self.pours)
        cv = c.dose_cv if seen_pulse else c.first_dose_cv
        aim = remaining / (1.0 + c.aim_sigmas * cv)
        fine = min(self.model.onset_deg + c.work_excess_deg, c.max_tilt_deg)
        coarse = min(self.model.onset_deg + c.coarse_excess_deg, c.max_tilt_deg)
        work = coarse if aim > c.coarse_above_g else fine
        options = [(d, q) for d, q in self._predictions(work, tilt_now, rest) if q > 0.0]
        if not options:
            return None
        if remaining - aim <= 2 * c.balance_resolution_g or options[0][1] >= aim:
            # This pulse may be the last: pick the duration (or none) with the least expected squared
            # error, counting the pulse's own spread (relative, and the floor of the smallest pulse).
            best, best_cost = None, remaining ** 2
            for d, q in options:
                cost = (remaining - q) ** 2 + (cv * q) ** 2 + c.small_pulse_sd_g ** 2
                if cost < best_cost:
                    best, best_cost = (d, q, work), cost
            if best is not None:
                self.last_planned = best[1]
            return best
        chosen = options[0]
        for d, q in options:
            if q <= aim:
                chosen = (d, q)
        self.last_planned = chosen[1]
        return chosen[0], chosen[1], work

    def smallest_pulse(self, tilt_now: float, rest: float) -> tuple[float, float, float]:
        """The shortest pulse that pours at all (the mass is short by more than the tolerance and the
        model sees no pulse that would help: it is wrong, and a pulse teaches it)."""
        c = self.config
        if self.model is None:
            return c.min_pulse_s, 0.0, c.seek_start_deg
        work = min(self.model.onset_deg + c.work_excess_deg, c.max_tilt_deg)
        for d, q in self._predictions(work, tilt_now, rest):
            if q > 0.0:
                self.last_planned = q
                return d, q, work
        self.last_planned = 0.0
        return c.min_pulse_s, 0.0, work
