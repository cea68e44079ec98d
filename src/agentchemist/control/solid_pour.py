"""Pouring a target mass of a granular solid from a bottle onto the balance, in tilt pulses.

The gripper holds the bottle over the beaker on the balance and tilts it (the wrist joint). Powder
starts to run past a tilt the controller does not know (it depends on the powder, the bottle and how
full it is) and then flows faster the further the bottle is tilted, in bursts. Solid cannot be taken
back, so the target is approached from below, by pulses sized from the balance between them.

The controller takes balance readings (`on_mass`) and the *measured* tilt (`update`), and returns the
tilt to command, the pulses it poured and anomalies. It never reads a clock: `now` is an argument.

1. BASELINE: the bottle upright, the balance must hold still (the tare's zero) before anything tilts.
2. SEEK: the bottle tilts from `seek_start_deg` at the goal's tilt rate until the balance shows
   `detect_g` more than the baseline. The flow started earlier than that (the display settles with a
   lag and the first grams take time to add up), so the onset is first estimated as the tilt at that
   moment less `seek_delay_s` of the ramp; the bottle goes back to a rest tilt `rest_below_deg` under it.
3. SETTLE after every pour: every reading counted was taken after the bottle came back under the flow
   onset, and over the stable window they have a least-squares slope within the goal's
   wait-on-change threshold (g/s) and a spread within `settle_spread_g`; their mean is the settled mass.
   The mass the bottle delivered after the command came back, and what the display had not yet shown
   (the powder "in flight"), are in it, because the window starts only once the bottle is under the
   onset and ends only once the display has stopped moving.
4. The flow model: q = F * (max(0, tilt - onset) / 30 deg) ** 1.5 (the discharge law of the bottle; the
   exponent is `flow_exponent`). Each pour (the search ramp, every pulse) is kept as its measured tilt
   trace and the settled mass it delivered; F and the onset are refitted to all of them (weighted least
   squares over a grid of onsets, the search's estimate a weak prior): a ramp and steps of different
   lengths together pin both down.
5. PULSE: the next dose aims at remaining / (1 + k cv) (k = `aim_sigmas`, cv the relative spread of a
   pulse; larger before the model has seen a pulse), so an unlucky burst stays under the target. Its
   duration is found by predicting the tilt under the arm's first-order lag (`arm_tau_s`: command the
   working tilt for T, then the rest tilt) and integrating the fitted flow along it, for T on the control
   period's grid. When the remaining mass is small enough for this pulse to be the last, the duration
   (or none) that minimises the expected squared error (the pulse's own spread included) is taken
   instead: pulses shrink to a few tenths of a second and stop when another would more likely worsen
   the result than improve it.
6. The bottle goes upright (FINISH) and the goal ends with the settled mass.

Guards. A reading that is not a finite number, lies under `min_reading_g` or over `max_reading_g`, or
is stamped before the previous one is refused (`ReadingError`, reported by the caller as bad_reading)
and never acted on. With no valid reading for `stale_reading_s` the search ramp stops and a running
pulse is cut; after `sensor_timeout_s` the bottle goes upright and the goal aborts (sensor_timeout).
While a pulse runs, a reading that has already risen by its planned dose (the display lags, so the
flow is far above the model) or past the target's tolerance cuts it. No flow with the bottle at
`max_tilt_deg` for `no_flow_wait_s` (an empty or clogged bottle): upright, "no_flow". Two pulses in a row
that deliver almost nothing (the onset rose as the bottle emptied, or the neck clogged) start a new
search from the working tilt. A settled mass over the target by more than the tolerance ends the goal
unsuccessfully ("overshoot": solid cannot be taken back). Cancel and the supervisor's holds put the
bottle upright at once; after a release the balance settles and the pulses go on.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum

from agentchemist.control.dispenser_types import ControllerAnomaly, GoalError
from agentchemist.control.pour_model import FlowModel, Pour, PourModel
from agentchemist.params import param
from agentchemist.perception.ph_stability import ReadingError

__all__ = ["FlowModel", "Phase", "PourOutput", "PourResult", "PulseEvent", "SolidPourConfig", "SolidPourController",
           "SolidPourGoal"]


class Phase(str, Enum):
    APPROACH = "APPROACH"   #: waiting for the arm at the pour pose and for balance readings
    BASELINE = "BASELINE"   #: upright, waiting for a still balance
    SEEK = "SEEK"           #: tilting slowly until the balance shows flow
    SETTLE = "SETTLE"       #: at the rest tilt, waiting for a settled mass
    PULSE = "PULSE"         #: at the working tilt for the planned time
    HELD = "HELD"           #: upright on the supervisor's hold
    FINISH = "FINISH"       #: going upright before the result
    DONE = "DONE"


@dataclass(frozen=True)
class SolidPourConfig:
    """Every threshold of the solid pour, with its unit and why it has its default."""
    control_period_s: float = 0.05      #: update period: pulse durations are planned on this grid
    balance_resolution_g: float = param(0.01, unit="g", low=1e-5, high=1.0, description=(
        "Readability of the balance (the twin's and a 0.01 g top-loader)"))
    balance_tau_s: float = param(0.8, unit="s", low=0.01, high=30.0, description=(
        "Settling time constant of the balance display"))  #: a first-order lag (its datasheet's
                                        #: settling time / 4); a creeping window's value is corrected by it
    min_reading_g: float = -0.05        #: a tared balance shows -0.01 from noise; five counts under zero
                                        #: is a wrong tare or a lifted beaker: refused
    max_reading_g: float = 1000.0       #: above any top-loading balance's capacity: refused
    seek_start_deg: float = 20.0        #: the search jumps here: powders hold still in an upright-ish
                                        #: bottle well past 20 deg (their angle of repose is 30-45 deg)
    max_tilt_deg: float = param(125.0, unit="deg", low=10.0, high=180.0, description=(
        "The flow search gives up at this tilt (the wrist allows 130)"))
    default_tilt_rate_deg_s: float = 5.0  #: search ramp when the goal gives none
    detect_g: float = 0.02              #: two counts over the baseline is flow (noise 0.002 g never
                                        #: moves a tared zero by two counts)
    seek_delay_s: float = 1.0           #: the balance shows detect_g about this long after the flow
                                        #: started (display lag 0.8 s plus the first grams; closed loop)
    no_flow_wait_s: float = 4.0         #: at max_tilt_deg this long with no flow: "no_flow"
    rest_below_deg: float = 8.0         #: rest tilt under the onset: pulses reach flow in ~0.2 s and
                                        #: an onset estimate a few degrees too high still rests dry
    work_excess_deg: float = 8.0        #: working tilt over the onset for the fine pulses (about 0.2 g/s
                                        #: for table salt): the lag's ramps are a small part of them
    coarse_excess_deg: float = 16.0     #: ... and for doses over coarse_above_g (about 0.55 g/s): the
    coarse_above_g: float = 0.4         #: bulk goes in a few seconds instead of a minute
    forget_per_pour: float = 0.6        #: weight of a pour in the fit falls by this with each newer one:
                                        #: the onset rises as the bottle empties (1 deg per 2.5 g here)
    flow_exponent: float = 1.5          #: q ~ excess ** 1.5 (granular discharge through the neck)
    flow_scale_deg: float = 30.0        #: excess in which F is expressed
    onset_prior_sd_deg: float = 3.0     #: trust in the search's onset estimate (fit prior)
    onset_search_deg: float = 8.0       #: the fit looks for the onset this far either side of it
    arm_tau_s: float = param(0.3, unit="s", low=0.01, high=5.0, name="pour_arm_tau_s", description=(
        "Lag with which the wrist follows its command (first order)"))
    min_pulse_s: float = 0.1
    max_pulse_s: float = 6.0            #: a longer pour is split: a settled reading between
    dose_cv: float = 0.12               #: relative spread of a pulse's dose once the model has a pulse
                                        #: (bursts, onset drift; closed loop with the twin: 0.05-0.1)
    first_dose_cv: float = 0.6          #: ... while it knows only the search ramp (F from one ramp)
    aim_sigmas: float = 2.0             #: a dose aims this many spreads under the remaining mass
    small_pulse_sd_g: float = 0.01      #: spread of even the smallest pulse (bursts, the onset's
                                        #: uncertainty, one count of the balance): with less than about
                                        #: this left, another pulse would more likely worsen the mass
    weak_pulse_fraction: float = 0.2    #: a pulse giving less than this of its prediction (and under
    weak_pulses_to_reseek: int = 2      #: two counts) this many times in a row: search again
    settle_spread_g: float = 0.015      #: max - min over the stable window: one count of flicker
    default_stable_window_s: float = 2.0
    default_change_threshold_g_s: float = 0.02
    baseline_window_s: float = 1.0      #: the upright balance must hold still this long first
    settle_timeout_s: float = 30.0      #: a balance that never settles (draught, vibration): anomaly
    stale_reading_s: float = param(0.7, unit="s", low=0.05, high=60.0, name="pour_stale_reading_s", description=(
        "No balance reading this long: no tilting on old news"))
    sensor_timeout_s: float = param(3.0, unit="s", low=0.1, high=600.0, name="pour_sensor_timeout_s", description=(
        "No balance reading this long: bottle upright, goal aborted (sensor_timeout)"))
    approach_timeout_s: float = 30.0    #: the arm must be at the pour pose with readings by then
    follow_tolerance_deg: float = 15.0  #: commanded vs measured tilt beyond this ...
    follow_time_s: float = 2.0          #: ... for this long: the wrist does not follow (arm_stall)
    upright_deg: float = 2.0            #: FINISH waits until the bottle is this close to upright ...
    finish_timeout_s: float = 5.0       #: ... at most this long
    min_target_g: float = 0.3           #: the search alone pours 0.05-0.2 g before the balance shows it
    default_tolerance_g: float = 0.1
    operation_timeout_s: float = 300.0

    def __post_init__(self):
        for name in ("control_period_s", "balance_resolution_g", "balance_tau_s", "max_reading_g", "max_tilt_deg",
                     "default_tilt_rate_deg_s", "detect_g", "no_flow_wait_s", "rest_below_deg", "work_excess_deg",
                     "coarse_excess_deg", "coarse_above_g",
                     "flow_exponent", "flow_scale_deg", "onset_prior_sd_deg", "onset_search_deg", "arm_tau_s",
                     "min_pulse_s", "max_pulse_s", "dose_cv", "first_dose_cv", "small_pulse_sd_g", "settle_spread_g",
                     "default_stable_window_s", "default_change_threshold_g_s", "baseline_window_s",
                     "settle_timeout_s", "stale_reading_s", "sensor_timeout_s", "approach_timeout_s",
                     "follow_tolerance_deg", "follow_time_s", "upright_deg", "finish_timeout_s", "min_target_g",
                     "default_tolerance_g", "operation_timeout_s"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise ValueError(f"SolidPourConfig.{name} must be a finite number > 0, got {value!r}")
        for name in ("seek_start_deg", "seek_delay_s", "aim_sigmas", "weak_pulse_fraction"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"SolidPourConfig.{name} must be a finite number >= 0, got {value!r}")
        if not self.min_reading_g <= 0.0:
            raise ValueError("SolidPourConfig.min_reading_g must be <= 0 (a tared balance reads about zero)")
        if not self.seek_start_deg < self.max_tilt_deg:
            raise ValueError("SolidPourConfig: seek_start_deg must be under max_tilt_deg")
        if not self.min_pulse_s < self.max_pulse_s:
            raise ValueError("SolidPourConfig: min_pulse_s must be under max_pulse_s")
        if not self.stale_reading_s < self.sensor_timeout_s:
            raise ValueError("SolidPourConfig: stale_reading_s must be under sensor_timeout_s")
        if not 0 < self.forget_per_pour <= 1:
            raise ValueError("SolidPourConfig.forget_per_pour must be in (0, 1]")
        if not self.work_excess_deg <= self.coarse_excess_deg:
            raise ValueError("SolidPourConfig: work_excess_deg must not exceed coarse_excess_deg")
        if not (isinstance(self.weak_pulses_to_reseek, int) and self.weak_pulses_to_reseek >= 1):
            raise ValueError("SolidPourConfig.weak_pulses_to_reseek must be an int >= 1")


@dataclass(frozen=True)
class SolidPourGoal:
    target_mass_g: float
    mass_tolerance_g: float = 0.0       #: 0: the configured default
    tilt_rate_deg_s: float = 0.0        #: search ramp; 0: the configured default
    settle_each_drop: bool = True       #: accepted either way: a pulse can only be sized from a settled
                                        #: mass (the display lags by ~1 s, a pulse's worth of powder),
                                        #: so the balance settles after every pour regardless
    stable_window_s: float = 0.0        #: 0: the configured default
    change_rate_threshold: float = 0.0  #: |dm/dt| (g/s) a settled balance stays within; 0: the default
    timeout_s: float = 0.0              #: 0: the configured default

    def validate(self, config: SolidPourConfig) -> None:
        numbers = {"target_mass_g": self.target_mass_g, "mass_tolerance_g": self.mass_tolerance_g,
                   "tilt_rate_deg_s": self.tilt_rate_deg_s, "stable_window_s": self.stable_window_s,
                   "change_rate_threshold": self.change_rate_threshold, "timeout_s": self.timeout_s}
        for name, value in numbers.items():
            if not isinstance(value, (int, float)) or not math.isfinite(value):
                raise GoalError(f"{name} is {value!r}: not a number")
            if value < 0:
                raise GoalError(f"{name} is {value}: must not be negative")
        if self.target_mass_g < config.min_target_g:
            raise GoalError(f"target_mass_g {self.target_mass_g} g is under {config.min_target_g} g: the flow "
                            f"search alone may pour that much before the balance shows it")
        if self.target_mass_g > config.max_reading_g:
            raise GoalError(f"target_mass_g {self.target_mass_g} g is beyond the balance")
        if 0 < self.mass_tolerance_g < config.balance_resolution_g / 2:
            raise GoalError(f"mass_tolerance_g {self.mass_tolerance_g} g is finer than the balance can tell "
                            f"(resolution {config.balance_resolution_g} g)")
        if self.tilt_rate_deg_s > 45.0:
            raise GoalError(f"tilt_rate_deg_s {self.tilt_rate_deg_s} is too fast to find the flow onset "
                            f"(the balance lags by about a second)")


@dataclass(frozen=True)
class PulseEvent:
    """A pour ended: the bottle came back under the flow onset at `stamp`."""
    stamp: float
    index: int             #: 0 is the search ramp
    kind: str              #: "search" | "pulse"
    duration_s: float      #: commanded time at the working tilt (the ramp's time for the search)
    planned_g: float       #: predicted dose (NaN for the search)
    tilt_deg: float        #: working tilt (the tilt at detection for the search)


@dataclass(frozen=True)
class PourResult:
    success: bool
    reason: str            #: target_mass | overshoot | no_flow | canceled | anomaly | timeout
    dispensed_g: float     #: settled mass - the baseline (NaN without a baseline)
    final_mass_g: float    #: the last settled reading (NaN without one)
    pulses: int
    message: str


@dataclass
class PourOutput:
    command_tilt_deg: float
    phase: Phase
    pulses: list[PulseEvent] = field(default_factory=list)
    anomalies: list[ControllerAnomaly] = field(default_factory=list)
    done: PourResult | None = None


class SolidPourController:
    """See the module docstring."""
    # Read-only views of the flow model (agentchemist.control.pour_model).
    model = property(lambda self: self.flow.model)
    pours = property(lambda self: self.flow.pours)
    onset_prior = property(lambda self: self.flow.onset_prior)

    def __init__(self, config: SolidPourConfig, goal: SolidPourGoal, now: float) -> None:
        goal.validate(config)
        self.config = c = config
        self.goal = goal
        self.tolerance = goal.mass_tolerance_g or c.default_tolerance_g
        self.rate = goal.tilt_rate_deg_s or c.default_tilt_rate_deg_s
        self.window_s = goal.stable_window_s or c.default_stable_window_s
        self.change_threshold = goal.change_rate_threshold or c.default_change_threshold_g_s
        self.timeout_s = goal.timeout_s or c.operation_timeout_s
        self.phase = Phase.APPROACH
        self.command = 0.0
        self.started = now
        self.phase_since = now
        self.readings: list[tuple[float, float]] = []  # valid (stamp, g), trimmed to what windows need
        self.last_valid_at: float | None = None
        self.baseline: float | None = None
        self.settled: float | None = None     # the last settled mass (absolute reading)
        self.settle_from = now                # readings counted for a settle are stamped after this
        self.flow = PourModel(config)          # the flow law fitted to the pours so far, and the next pulse
        self.pulse_count = 0                  # pour events emitted (the search is index 0)
        self.weak_pulses = 0
        self.holds: set[str] = set()
        self.result: PourResult | None = None
        self._cancel = False
        self._measured: float | None = None
        self._ever_measured = False
        self._off_since: float | None = None
        self._seek_command = 0.0
        self._seek_top_since: float | None = None
        self._seek_base = 0.0
        self._pulse: dict | None = None       # the running pulse's plan
        self._pending_end: dict | None = None  # a pour whose bottle has not yet come under the onset
        self._after_hold: Phase | None = None
        self._reseek_after_settle = False
        self._seek_prev = now
        self._final: float | None = None
        self._finish_message = ""
        self._last_update = now
        self._step_s = config.control_period_s  # recent interval between updates (s)

    # ----------------------------------------------------------------- inputs
    def on_mass(self, stamp: float, value: float) -> None:
        """A balance reading (g, as displayed). Raises ReadingError for one that must not be used."""
        c = self.config
        if not (isinstance(value, (int, float)) and math.isfinite(value)):
            raise ReadingError(f"balance reading {value!r} is not a number")
        if not math.isfinite(stamp):
            raise ReadingError(f"balance reading stamped {stamp!r}")
        if value < c.min_reading_g:
            raise ReadingError(f"balance reading {value:.3f} g is negative beyond noise (under {c.min_reading_g} g): "
                               f"wrong tare or the beaker is off the pan")
        if value > c.max_reading_g:
            raise ReadingError(f"balance reading {value:.3f} g is beyond the balance's range")
        if self.readings and stamp < self.readings[-1][0]:
            raise ReadingError(f"balance reading stamped {stamp:.3f} s is older than the previous one "
                               f"({self.readings[-1][0]:.3f} s)")
        self.readings.append((stamp, float(value)))
        self.last_valid_at = stamp
        horizon = stamp - max(self.window_s, c.baseline_window_s) - 1.0
        while len(self.readings) > 2 and self.readings[1][0] < horizon:
            self.readings.pop(0)

    def hold(self, reason: str) -> None:
        """The supervisor's hold: the bottle goes upright until every reason is released."""
        self.holds.add(reason)

    def release(self, reason: str) -> None:
        self.holds.discard(reason)

    def cancel(self) -> None:
        self._cancel = True

    @property
    def latest_mass(self) -> float | None:
        return self.readings[-1][1] if self.readings else None

    @property
    def dispensed_g(self) -> float:
        """Best present knowledge of the mass poured (the latest reading less the baseline)."""
        if self.baseline is None or not self.readings:
            return 0.0
        return self.readings[-1][1] - self.baseline

    # ----------------------------------------------------------------- step
    def update(self, now: float, measured_tilt_deg: float | None) -> PourOutput:
        """One control step. `measured_tilt_deg` is None while the arm is not at the pour pose."""
        c = self.config
        out = PourOutput(command_tilt_deg=self.command, phase=self.phase)
        if self.phase == Phase.DONE:
            out.done = self.result
            return out
        step = now - self._last_update
        if step > 0.0:
            self._step_s = 0.8 * self._step_s + 0.2 * step
        self._last_update = now
        if measured_tilt_deg is not None and not math.isfinite(measured_tilt_deg):
            measured_tilt_deg = None
        self._measured = measured_tilt_deg
        if measured_tilt_deg is not None:
            self._ever_measured = True
        self.flow.trace(now, self._measured)
        self._check_pour_end(now, out)

        if self._cancel:
            return self._stop(out, now, False, "canceled", "canceled by the supervisor")
        if now - self.started > self.timeout_s:
            return self._abort(out, now, "operation_timeout", f"no result after {self.timeout_s:.0f} s", "timeout")
        silent_for = now - (self.last_valid_at if self.last_valid_at is not None else self.started)
        if silent_for > c.sensor_timeout_s and self.phase != Phase.FINISH:
            return self._abort(out, now, "sensor_timeout", f"no valid balance reading for {silent_for:.1f} s")
        if self._ever_measured and measured_tilt_deg is None and self.phase != Phase.APPROACH:
            return self._abort(out, now, "arm_off_pose", "the arm left the pour pose while holding the bottle")
        if measured_tilt_deg is not None and abs(self.command - measured_tilt_deg) > c.follow_tolerance_deg:
            self._off_since = now if self._off_since is None else self._off_since
            if now - self._off_since > c.follow_time_s:
                return self._abort(out, now, "arm_stall", f"the wrist is at {measured_tilt_deg:.1f} deg, commanded "
                                                          f"{self.command:.1f} deg, for {now - self._off_since:.1f} s")
        else:
            self._off_since = None
        if self.holds and self.phase not in (Phase.HELD, Phase.FINISH, Phase.APPROACH, Phase.BASELINE):
            self._after_hold = Phase.SEEK if self.flow.model is None and self.phase == Phase.SEEK else Phase.SETTLE
            self._close_pulse(now)
            self._enter(Phase.HELD, now)
            self.command = 0.0
        stale = silent_for > c.stale_reading_s

        handler = getattr(self, f"_on_{self.phase.value.lower()}")
        handler(now, out, stale)
        out.command_tilt_deg = self.command = min(max(self.command, 0.0), c.max_tilt_deg)
        out.phase = self.phase
        return out

    # ----------------------------------------------------------------- phases
    def _on_approach(self, now, out, stale):
        self.command = 0.0
        if self._measured is not None and self.readings:
            self._enter(Phase.BASELINE, now)
            self.settle_from = now
        elif now - self.started > self.config.approach_timeout_s:
            what = "the arm is not at the pour pose" if self._measured is None else "no balance reading"
            self._abort(out, now, "not_ready", f"{what} after {self.config.approach_timeout_s:.0f} s")

    def _on_baseline(self, now, out, stale):
        self.command = 0.0
        if self.holds:
            return
        value = settled_value(self.readings, self.config.baseline_window_s, since=self.settle_from,
                              change_threshold=self.change_threshold, config=self.config)
        if value is not None:
            self.baseline = self.settled = value
            self._start_seek(now, self.config.seek_start_deg, value)
        elif now - self.phase_since > self.config.settle_timeout_s:
            self._abort(out, now, "settle_timeout", "the balance did not hold still with the bottle upright")

    def _on_held(self, now, out, stale):
        self.command = 0.0
        if not self.holds:
            # An interrupted pour stays open: what it delivered is measured by the settle that follows
            # (its trace, upright part included, goes into the fit like any other).
            self.settle_from = math.inf if self._pending_end is not None else now
            self._reseek_after_settle = self._after_hold == Phase.SEEK
            self._enter(Phase.SETTLE, now)
            self.command = self.flow.rest_tilt(held=bool(self.holds))

    def _on_seek(self, now, out, stale):
        c = self.config
        gain = self.latest_mass - self._seek_base if self.readings else 0.0
        if gain >= c.detect_g and self._measured is not None:
            onset = self._measured - self.rate * c.seek_delay_s
            self.flow.onset_prior = onset
            self.flow.model = None
            self.flow.pours[-1].kind = "search"
            self._pending_end = {"index": self.pulse_count, "kind": "search", "duration_s": now - self.phase_since,
                                 "planned_g": float("nan"), "tilt_deg": self._measured}
            self.pulse_count += 1
            self.command = onset - c.rest_below_deg
            self._enter(Phase.SETTLE, now)
            self.settle_from = math.inf  # from the pour's end (below the onset), see _check_pour_end
            return
        if not stale:  # the ramp moves only on fresh news from the balance
            dt = min(now - self._seek_prev, 2 * c.control_period_s)  # a late update does not jump the ramp
            self._seek_command = min(self._seek_command + self.rate * dt, c.max_tilt_deg)
        self._seek_prev = now
        self.command = self._seek_command
        if self._seek_command >= c.max_tilt_deg:
            self._seek_top_since = now if self._seek_top_since is None else self._seek_top_since
            if now - self._seek_top_since > c.no_flow_wait_s:
                self._abort(out, now, "no_flow", f"no flow at {c.max_tilt_deg:.0f} deg of tilt after "
                                                 f"{c.no_flow_wait_s:.0f} s: the bottle is empty or clogged",
                            reason="no_flow")

    def _on_settle(self, now, out, stale):
        c = self.config
        self.command = self.flow.rest_tilt(held=bool(self.holds))
        if self.settle_from == math.inf:
            return  # the bottle has not yet come back under the onset
        value = settled_value(self.readings, self.window_s, since=self.settle_from,
                              change_threshold=self.change_threshold, config=c)
        if value is None:
            if now - max(self.phase_since, self.settle_from) > c.settle_timeout_s:
                self._abort(out, now, "settle_timeout", f"the balance did not settle within {c.settle_timeout_s:.0f} s")
            return
        previous, self.settled = self.settled, value
        pour = self.flow.pours[-1] if self.flow.pours and self.flow.pours[-1].dose_g is None else None
        if pour is not None:
            pour.dose_g = value - previous
        dispensed = value - self.baseline
        remaining = self.goal.target_mass_g - dispensed
        if remaining < -self.tolerance:
            self._stop(out, now, False, "overshoot",
                       f"poured {dispensed:.3f} g, {-remaining:.3f} g over the target {self.goal.target_mass_g:.3f} g "
                       f"(tolerance {self.tolerance:.3f} g); solid cannot be taken back: discard or re-weigh")
            return
        if self._reseek_after_settle:
            self._reseek_after_settle = False
            self._start_seek(now, c.seek_start_deg, value)
            return
        if pour is not None and pour.kind == "pulse" and self.flow.pulse_was_weak(pour):
            self.weak_pulses += 1
            if self.weak_pulses >= c.weak_pulses_to_reseek:
                self.weak_pulses = 0
                start = self.flow.model.onset_deg + c.work_excess_deg if self.flow.model else c.seek_start_deg
                self.flow.pours = []  # the old onset no longer holds: learn it afresh
                self.flow.model = None
                self._start_seek(now, start, value)
                return
        elif pour is not None and pour.kind == "pulse":
            self.weak_pulses = 0
        self.flow.fit()
        rest = self.flow.rest_tilt(held=bool(self.holds))
        tilt_now = self._measured if self._measured is not None else rest  # where the next pulse starts from
        plan = self.flow.plan(remaining, tilt_now, rest)
        if plan is None:
            if remaining <= self.tolerance:
                self._finish(out, now, value, dispensed)
                return
            plan = self.flow.smallest_pulse(tilt_now, rest)
        duration, predicted, work = plan
        self._pulse = {"start": now, "duration": duration, "planned": predicted, "base": value, "tilt": work}
        self.flow.pours.append(Pour("pulse"))
        self._enter(Phase.PULSE, now)
        self.command = self._pulse["tilt"]

    def _on_pulse(self, now, out, stale):
        p = self._pulse
        gain = self.latest_mass - p["base"] if self.readings else 0.0
        over = self.latest_mass - self.baseline > self.goal.target_mass_g + self.tolerance if self.readings else False
        # The display lags the pan by about a second: a reading that has already risen by the planned dose
        # (and a count) means the flow is far above the model. Cut then, on stale news, and at the planned
        # time, or at the update nearest to it when updates come late (a loaded executor), not the one after.
        due = p["start"] + p["duration"]
        surge = p["planned"] > 0.0 and gain >= p["planned"] + self.config.balance_resolution_g
        if now >= due - 0.5 * max(self._step_s, self.config.control_period_s) + 1e-9 or stale or surge or over:
            self._close_pulse(now)
            self._enter(Phase.SETTLE, now)
            self.command = self.flow.rest_tilt(held=bool(self.holds))
        else:
            self.command = p["tilt"]

    def _on_finish(self, now, out, stale):
        self.command = 0.0
        if (self._measured is not None and self._measured <= self.config.upright_deg) or \
                now - self.phase_since > self.config.finish_timeout_s:
            self._stop(out, now, True, "target_mass", self._finish_message)

    # ----------------------------------------------------------------- helpers
    def _enter(self, phase: Phase, now: float) -> None:
        self.phase = phase
        self.phase_since = now

    def _start_seek(self, now: float, start_deg: float, base_g: float) -> None:
        self._seek_command = max(start_deg, 0.0)
        self._seek_prev = now
        self._seek_top_since = None
        self._seek_base = base_g
        self.flow.pours.append(Pour("search"))
        self._enter(Phase.SEEK, now)
        self.command = self._seek_command

    def _close_pulse(self, now: float) -> None:
        """The command leaves the working tilt: the pour ends once the bottle is under the onset."""
        if self.phase == Phase.PULSE and self._pulse is not None:
            p = self._pulse
            self._pending_end = {"index": self.pulse_count, "kind": "pulse", "duration_s": now - p["start"],
                                 "planned_g": p["planned"], "tilt_deg": p["tilt"]}
            self.pulse_count += 1
            self._pulse = None
            self.settle_from = math.inf
        elif self.phase == Phase.SEEK:
            # A hold during the search, before the balance showed flow: it may have poured a little, which
            # the settle after the hold measures once the bottle is back under the search's start. No
            # pulse event: nothing is known to have flowed.
            self.settle_from = math.inf
            self._pending_end = {"emit": False}

    def _check_pour_end(self, now: float, out: PourOutput) -> None:
        """A pour has ended when the measured tilt is back under the (estimated) flow onset."""
        if self._pending_end is None or self._measured is None:
            return
        onset = self.flow.onset()
        limit = onset if onset is not None else self.config.seek_start_deg
        if self._measured <= limit:
            e = self._pending_end
            if e.get("emit", True):
                out.pulses.append(PulseEvent(now, e["index"], e["kind"], e["duration_s"], e["planned_g"],
                                             e["tilt_deg"]))
            self._pending_end = None
            self.settle_from = now

    # ----------------------------------------------------------------- endings
    def _finish(self, out: PourOutput, now: float, value: float, dispensed: float) -> None:
        self._final = value
        error = dispensed - self.goal.target_mass_g
        self._finish_message = (f"poured {dispensed:.3f} g for {self.goal.target_mass_g:.3f} g "
                                f"(error {error:+.3f} g, tolerance {self.tolerance:.3f} g) in "
                                f"{self.pulse_count} pours, {now - self.started:.1f} s")
        self._enter(Phase.FINISH, now)
        self.command = 0.0

    def _abort(self, out: PourOutput, now: float, kind: str, description: str, reason: str = "anomaly") -> PourOutput:
        out.anomalies.append(ControllerAnomaly(now, kind, description, "warn", "abort"))
        return self._stop(out, now, False, reason if kind != "operation_timeout" else "timeout", description)

    def _stop(self, out: PourOutput, now: float, success: bool, reason: str, message: str) -> PourOutput:
        self.command = 0.0
        final = self._final if self._final is not None else (self.settled if self.settled is not None else float("nan"))
        dispensed = final - self.baseline if self.baseline is not None and math.isfinite(final) else float("nan")
        if not success and self.baseline is not None and self.readings and reason != "overshoot":
            # Aborted mid-pour: the latest reading is the best there is (the display may still be rising).
            final = self.readings[-1][1]
            dispensed = final - self.baseline
        self.result = PourResult(success, reason, dispensed, final, self.pulse_count, message)
        self._enter(Phase.DONE, now)
        out.command_tilt_deg = 0.0
        out.phase = Phase.DONE
        out.done = self.result
        return out


def settled_value(readings: list[tuple[float, float]], window_s: float, *, since: float, change_threshold: float,
                  config: SolidPourConfig) -> float | None:
    """Mean of the balance `readings` (stamp, g) over the last `window_s`, counting those stamped from
    `since` on, if they hold still (see the module docstring, step 3)."""
    c = config
    if not readings:
        return None
    end = readings[-1][0]
    pts = [(t, m) for t, m in readings if t >= end - window_s - 1e-9 and t >= since]
    if len(pts) < 4 or pts[-1][0] - pts[0][0] < 0.75 * window_s:
        return None
    masses = [m for _, m in pts]
    if max(masses) - min(masses) > c.settle_spread_g + 1e-9:
        return None
    tm = sum(t for t, _ in pts) / len(pts)
    mm = sum(masses) / len(masses)
    den = sum((t - tm) ** 2 for t, _ in pts)
    slope = sum((t - tm) * (m - mm) for t, m in pts) / den if den > 0 else 0.0
    if abs(slope) > change_threshold:
        return None
    # Still creeping within the threshold: what the display has yet to show is its lag times its slope
    # (a first-order approach; the window's slope and mean both belong to its middle). At the
    # threshold's 0.02 g/s that is 0.016 g, more than the error aimed at.
    return mm + slope * c.balance_tau_s
