"""Drop context: is a detected event expected, anomalous, or is an expected drop overdue? How much fell?

The FSM and the plan say which subtask is running and whether it should produce droplets (dispensing)
at what rate. A droplet heard while dispensing is **expected**: it emits the ``drop`` symbol and counts
one calibrated drop volume. A droplet heard while nothing is dispensing is **anomalous** and counts
nothing; so is any other contact/pour/noise event the current subtask does not expect. When dispensing
and no expected droplet arrives for max(min_timeout_s, timeout_factor x expected interval), a
**timeout** is raised (once per window).

Events arrive after a detection latency (tens of ms), so each one is judged against the expectation
in force at its onset, not at the moment it is classified; a drop landing shortly after dispensing
stopped (drop formation delay) is still expected within ``late_grace_s``.

The running count and volume here (``drops``, ``total_ml``: expected droplets, plus the unbidden ones
`count_unbidden` adds while the pipette hangs over the vessel) are the experiment's heard drops, counted
once: the audio supervisor publishes them (the audio channel's QuantityEstimate, each ``drop`` note's
``total_ml``, each AudioEvent's quantity). The dispenser's count of the expected drops of its own goal
(control.drop_ledger) and the executor's of the drop notes (the course check's volume) tally the same
events for a scope and a use of their own (docs/architecture.md, "Who decides what", says why they stay).

Example::

    ctx = DropContext()
    ctx.set_expectation(active=True, subtask_id="titrate", fsm_state="titrating", expected_interval_s=1.0, now=0.0)
    rec = ctx.classify(event)            # rec.classification == "expected", rec.symbol == "drop"
    ctx.check_timeout(now=10.0)          # ClassifiedEvent(classification="timeout", ...) or None
"""
from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, replace

from agentchemist.contracts.symbols import Symbol

from .errors import ContextError
from .events import DETECTED_KINDS, DetectedEvent

CLASSIFICATIONS = ("expected", "anomalous", "timeout")
#: what a gripper's own motor sounds like to its microphone (a whine: tonal "noise", or a knock)
OWN_MOTION_KINDS = ("noise", "contact")


@dataclass(frozen=True)
class ContextConfig:
    """Drop bookkeeping settings.

    drop_volume_ml: calibrated mean volume of one drop, mL. drop_volume_sd_ml: its standard deviation,
    mL (the running total's uncertainty grows as sqrt(drops) x sd). timeout_factor: timeout after this
    many expected intervals without an expected droplet ... min_timeout_s: ... but never sooner than
    this, s. late_grace_s: a droplet up to this long after dispensing stopped is still expected, s.
    fast_ratio: a droplet sooner than fast_ratio x the expected interval after the previous one is
    suspicious (confidence x suspicious_factor). history_s: how long past expectations are kept to judge
    late-arriving events, s. priming_timeout_s: before the first droplet of a dispensing run the pipette
    is still priming (bulb slack, the tip filling), so the window is at least this long, s.
    """

    drop_volume_ml: float = 0.046875
    drop_volume_sd_ml: float = 0.0015
    timeout_factor: float = 4.0
    min_timeout_s: float = 3.0
    late_grace_s: float = 0.5
    # When dispensing *ends* (the goal is over, not a WAIT between drops), the drop the last squeeze left
    # hanging at the tip still falls: at the fine rate near an endpoint it detaches up to about 1 s later
    # in the twin (an acetic acid run heard it 0.9 s after the stop).
    end_grace_s: float = 1.5
    # A full 60 mL bulb (the Ca/EDTA run) gives its first drop 22-23 s after dispensing starts in the
    # twin, a partly filled one 5-8 s; a dead start is caught sooner by the dispenser's own no-drop check.
    priming_timeout_s: float = 40.0
    fast_ratio: float = 0.25
    suspicious_factor: float = 0.6
    history_s: float = 60.0

    def __post_init__(self) -> None:
        checks = {
            "drop_volume_ml": (1e-6, 10.0), "drop_volume_sd_ml": (0.0, 10.0), "timeout_factor": (1.0, 1000.0),
            "min_timeout_s": (0.0, 3600.0), "late_grace_s": (0.0, 60.0), "end_grace_s": (0.0, 60.0), "priming_timeout_s": (0.0, 3600.0), "fast_ratio": (0.0, 1.0),
            "suspicious_factor": (0.0, 1.0), "history_s": (1.0, 86400.0),
        }
        for name, (lo, hi) in checks.items():
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not lo <= v <= hi:
                raise ContextError(f"ContextConfig.{name} must be a number in [{lo}, {hi}], got {v!r}")


@dataclass(frozen=True)
class ClassifiedEvent:
    """An event judged in context (or a timeout).

    classification: "expected" | "anomalous" | "timeout". kind: the detected kind ("droplet" ...; for a
    timeout "droplet", the kind that failed to arrive). symbol: "drop" for an expected droplet, else "".
    time: event onset or, for a timeout, the time it was noticed, s. quantity_ml: volume counted by this
    event (0 unless an expected droplet). total_ml, drops: running totals after it. total_sd_ml:
    uncertainty of total_ml. confidence: 0..1 (event confidence x state consistency; for a timeout, how
    far past the window we are). subtask_id, fsm_state: the expectation the event was judged against.
    reason: one line for the anomaly log. event: the detected event (None for a timeout).
    """

    classification: str
    kind: str
    symbol: str
    time: float
    quantity_ml: float
    total_ml: float
    drops: int
    total_sd_ml: float
    confidence: float
    subtask_id: str
    fsm_state: str
    reason: str
    event: DetectedEvent | None = None


@dataclass(frozen=True)
class _Expectation:
    since: float
    active: bool
    subtask_id: str
    fsm_state: str
    interval_s: float | None
    kinds: tuple[str, ...]
    grace_s: float | None = None  #: how long after this (inactive) expectation began a late drop is still expected


class DropContext:
    """Judges detected events against what the running subtask should produce; counts drops."""

    def __init__(self, config: ContextConfig = ContextConfig()) -> None:
        if not isinstance(config, ContextConfig):
            raise ContextError(f"config must be a ContextConfig, got {type(config).__name__}")
        self.config = config
        self.drop_volume_ml = config.drop_volume_ml
        self.drop_volume_sd_ml = config.drop_volume_sd_ml
        self._history: list[_Expectation] = [_Expectation(-math.inf, False, "", "", None, ())]
        self._last_expected = -math.inf  # onset of the last expected droplet, or when dispensing began
        self._timeout_from = -math.inf  # start of the current timeout window
        self._primed = False            # an expected droplet has fallen in the current dispensing run
        self.total_ml = 0.0
        self.drops = 0

    # ------------------------------------------------------------------ inputs
    def set_expectation(self, *, active: bool, subtask_id: str, fsm_state: str, expected_interval_s: float | None,
                        now: float, expected_kinds: tuple[str, ...] = ("droplet",), priming: bool = False,
                        ended: bool = False) -> None:
        """From ``now`` on, the current subtask is (``active``) or is not supposed to produce events of
        ``expected_kinds`` (droplets when dispensing), about one per ``expected_interval_s`` s.
        ``priming``: the pipette must prime again before its next drop (the gripper let go of the bulb in
        a RESET and closes back on it): the first drop gets the priming window, as a new run's does.
        ``ended``: dispensing is over (not a pause between drops): the late grace is ``end_grace_s``."""
        now = _time(now, "now")
        if not isinstance(active, bool):
            raise ContextError(f"set_expectation: active must be a bool, got {active!r}")
        if not isinstance(subtask_id, str) or not isinstance(fsm_state, str):
            raise ContextError("set_expectation: subtask_id and fsm_state must be str")
        interval = expected_interval_s
        if interval is not None and (isinstance(interval, bool) or not isinstance(interval, (int, float))
                                     or not math.isfinite(interval) or interval <= 0):
            raise ContextError(f"set_expectation: expected_interval_s must be > 0 s or None, got {interval!r}")
        if not expected_kinds or any(k not in DETECTED_KINDS for k in expected_kinds):
            raise ContextError(f"set_expectation: expected_kinds must be a non-empty subset of {DETECTED_KINDS}, "
                               f"got {expected_kinds!r}")
        last = self._history[-1]
        if now < last.since:
            raise ContextError(f"set_expectation: now={now} s is before the previous expectation ({last.since} s)")
        if active and not last.active:
            self._timeout_from = now  # the clock starts when dispensing starts
        if active and (subtask_id != last.subtask_id or priming):
            self._primed = False      # a new dispensing run (or a re-grip): its first drop needs priming
        grace = self.config.end_grace_s if ended and not active else None
        self._history.append(_Expectation(now, active, subtask_id, fsm_state,
                                          None if interval is None else float(interval), tuple(expected_kinds),
                                          grace))
        horizon = now - self.config.history_s
        while len(self._history) > 2 and self._history[1].since < horizon:
            self._history.pop(0)

    def calibrate(self, measured_ml: float, drops: int, *, sd_ml: float | None = None) -> float:
        """Set the drop volume from a measurement (e.g. the balance) over ``drops`` drops; returns it."""
        if not isinstance(drops, int) or isinstance(drops, bool) or drops <= 0:
            raise ContextError(f"calibrate: drops must be an int > 0, got {drops!r}")
        if not isinstance(measured_ml, (int, float)) or not math.isfinite(measured_ml) or measured_ml <= 0:
            raise ContextError(f"calibrate: measured_ml must be > 0 mL, got {measured_ml!r}")
        self.drop_volume_ml = float(measured_ml) / drops
        if sd_ml is not None:
            if not isinstance(sd_ml, (int, float)) or not math.isfinite(sd_ml) or sd_ml < 0:
                raise ContextError(f"calibrate: sd_ml must be >= 0 mL, got {sd_ml!r}")
            self.drop_volume_sd_ml = float(sd_ml)
        return self.drop_volume_ml

    def reset_totals(self) -> None:
        """Zero the running volume and drop count (new experiment)."""
        self.total_ml = 0.0
        self.drops = 0

    # ------------------------------------------------------------------ judgements
    def classify(self, event: DetectedEvent, *, own_motion: bool = False) -> ClassifiedEvent:
        """Judge one detected event against the expectation in force at its onset. ``own_motion``: the
        gripper this microphone sits in was moving then (see own_motion.GripperMotion): a sound other
        than a droplet is its own motor, expected."""
        if not isinstance(event, DetectedEvent):
            raise ContextError(f"classify takes a DetectedEvent, got {type(event).__name__}")
        onset = _time(event.onset, "event.onset")
        if event.kind not in DETECTED_KINDS:
            raise ContextError(f"classify: unknown event kind {event.kind!r}")
        exp, grace = self._expectation_at(onset)
        quantity = 0.0
        symbol = ""
        consistency = 1.0
        if exp.active and event.kind in exp.kinds:
            classification = "expected"
            reason = f"{event.kind} during {exp.subtask_id or 'subtask'} ({exp.fsm_state})"
            if grace:
                reason += " just after dispensing stopped"
            if event.kind == "droplet":
                symbol = Symbol.DROP
                quantity = self.drop_volume_ml
                self.drops += 1
                self.total_ml += quantity
                since = onset - self._last_expected
                if exp.interval_s is not None and since < self.config.fast_ratio * exp.interval_s:
                    consistency = self.config.suspicious_factor
                    reason += f"; only {since:.2f} s after the previous drop"
                self._last_expected = max(self._last_expected, onset)
                self._primed = True
                self._timeout_from = max(self._timeout_from, onset)
        elif own_motion and event.kind in OWN_MOTION_KINDS:
            classification = "expected"
            reason = f"{event.kind} while the gripper moved: its own motor ({exp.subtask_id or 'idle'})"
        else:
            classification = "anomalous"
            where = f"{exp.subtask_id or 'idle'}, {exp.fsm_state or 'no state'}"
            if event.kind == "droplet":
                reason = f"droplet while no dispensing is expected ({where})"
            else:
                reason = f"unexpected {event.kind} sound ({where})"
        return ClassifiedEvent(
            classification=classification, kind=event.kind, symbol=symbol, time=onset, quantity_ml=quantity,
            total_ml=self.total_ml, drops=self.drops, total_sd_ml=self._total_sd(),
            confidence=float(min(1.0, max(0.0, event.confidence * consistency))), subtask_id=exp.subtask_id,
            fsm_state=exp.fsm_state, reason=reason, event=event)

    def count_unbidden(self, judged: ClassifiedEvent) -> ClassifiedEvent:
        """An anomalous droplet that fell into the vessel all the same (heard on the pipette's microphone
        while its dispensing subtask runs, between two squeezes): it stays anomalous and carries no
        symbol, but it is titrant in the beaker, so it adds one drop volume to the running total."""
        if judged.classification != "anomalous" or judged.kind != "droplet":
            raise ContextError(f"count_unbidden takes an anomalous droplet, got a {judged.classification} {judged.kind}")
        self.drops += 1
        self.total_ml += self.drop_volume_ml
        return replace(judged, quantity_ml=self.drop_volume_ml, total_ml=self.total_ml, drops=self.drops,
                       total_sd_ml=self._total_sd(), reason=judged.reason + "; counted: it fell into the vessel")

    def check_timeout(self, now: float) -> ClassifiedEvent | None:
        """A timeout record when dispensing and no expected droplet arrived for the timeout window;
        the window then restarts, so a silent dispenser yields one timeout per window."""
        now = _time(now, "now")
        exp = self._history[-1]
        if not exp.active or "droplet" not in exp.kinds or now < exp.since:
            return None
        window = self.timeout_window()
        waited = now - self._timeout_from
        if waited <= window:
            return None
        self._timeout_from = now
        return ClassifiedEvent(
            classification="timeout", kind="droplet", symbol="", time=now, quantity_ml=0.0, total_ml=self.total_ml,
            drops=self.drops, total_sd_ml=self._total_sd(), confidence=float(min(1.0, waited / (2.0 * window))),
            subtask_id=exp.subtask_id, fsm_state=exp.fsm_state,
            reason=f"no drop heard for {waited:.1f} s while dispensing (window {window:.1f} s)")

    def restart_timeout(self, now: float) -> None:
        """Start the timeout window again at ``now`` (the microphone could not hear until then)."""
        self._timeout_from = max(self._timeout_from, _time(now, "now"))

    def timeout_window(self) -> float:
        """Current timeout window, s: max(min_timeout_s, timeout_factor x expected interval)."""
        interval = self._history[-1].interval_s
        window = self.config.min_timeout_s if interval is None else \
            max(self.config.min_timeout_s, self.config.timeout_factor * interval)
        return window if self._primed else max(window, self.config.priming_timeout_s)

    # ------------------------------------------------------------------ internals
    def _expectation_at(self, t: float) -> tuple[_Expectation, bool]:
        """The expectation in force at time t, and whether it applies only through the late grace."""
        i = bisect.bisect_right([e.since for e in self._history], t) - 1
        exp = self._history[max(i, 0)]
        if exp.active or i <= 0:
            return exp, False
        # Back to the last active expectation: a stop can come in steps (the dispenser's WAIT or RESET,
        # then the end of its goal) and the drop left hanging is timed from the first step, with the
        # longest grace any step allows (the end's).
        j = i
        while j > 0 and not self._history[j - 1].active:
            j -= 1
        if j == 0:
            return exp, False
        grace = max(e.grace_s if e.grace_s is not None else self.config.late_grace_s for e in self._history[j:i + 1])
        if t - self._history[j].since <= grace:
            return self._history[j - 1], True
        return exp, False

    def _total_sd(self) -> float:
        return math.sqrt(self.drops) * self.drop_volume_sd_ml


def _time(v: object, name: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ContextError(f"{name} must be a finite time in s, got {v!r}")
    return float(v)
