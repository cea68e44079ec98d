"""A frozen meter: the reading stops following the solution (a hung pH meter, a stuck display, a driver
that republishes its last value).

A flat titration curve and a frozen meter both give readings that barely change, so "barely changes"
is no evidence. Two kinds of evidence are:

1. **Bit-identical readings that the noise model says must differ.** A meter with noise sd ``s`` that
   displays to a resolution ``r`` shows the same value twice in a row with a probability of at most
   ``p = r / (s sqrt(2 pi))`` (the chance that the second reading falls into the display step the first
   one fell into; a drifting solution only makes it smaller). ``n`` identical readings in a row have a
   probability of at most ``p^(n-1)``, so the run is called frozen once that falls below
   ``false_alarm_p`` (and it lasted ``min_run_s``). With the twin's probe (s = 0.005, r = 0.001):
   p = 0.08 and 10 readings (2 s at 5 Hz) give p^9 < 1e-9. This evidence needs the noise: with
   ``s < min_noise_ratio * r`` identical readings are normal and this test is off.
2. **Drops landed and not one display step of change.** Every drop of titrant moves the pH; the flattest
   parts of a titration (strong acid or base far from equivalence, a buffer) move it by about 0.001 pH
   per drop, so ``max_drops`` (20) drops without any change of the displayed value is a meter that
   does not follow, whatever its noise.

A frozen episode ends at the first reading that differs from the frozen value ("the readings move
again"). ``suspicious`` (``suspicious_run`` identical readings, with noise) is weaker: enough to not
call a pH settled on it, not enough to raise an anomaly.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from agentchemist.params import param

__all__ = ["FrozenConfig", "FrozenReadingDetector"]


@dataclass(frozen=True)
class FrozenConfig:
    resolution: float = param(0.001, unit="pH", low=1e-6, high=1.0, description=(
        "Display step of the pH meter (pH): identical readings its noise makes improbable are a frozen meter "
        "(ph_stuck); the twin's meter shows three decimals"))
    false_alarm_p: float = 1e-9    #: an identical run is frozen once noise alone explains it less often
    min_run_s: float = 1.0         #: ... and it lasted at least this long (s)
    min_noise_ratio: float = 0.5   #: identity evidence only when noise sd >= this x resolution
    suspicious_run: int = 3        #: this many identical noisy readings: do not call the pH settled on them
    max_drops: int = 20            #: drops landed without one display step of change -> frozen

    def __post_init__(self):
        for name in ("resolution", "min_noise_ratio"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v > 0):
                raise ValueError(f"FrozenConfig.{name} must be a finite number > 0, got {v!r}")
        if not 0.0 < self.false_alarm_p < 1.0:
            raise ValueError(f"FrozenConfig.false_alarm_p must be in (0, 1), got {self.false_alarm_p!r}")
        if not (math.isfinite(self.min_run_s) and self.min_run_s >= 0):
            raise ValueError(f"FrozenConfig.min_run_s must be >= 0, got {self.min_run_s!r}")
        if self.suspicious_run < 2 or self.max_drops < 1:
            raise ValueError("FrozenConfig: suspicious_run must be >= 2 and max_drops >= 1")


class FrozenReadingDetector:
    """Feed every reading (`add`) and every landed drop (`on_drop`); ask `frozen` / `suspicious`."""

    def __init__(self, config: FrozenConfig = FrozenConfig()):
        self.config = config
        self.reset()

    def reset(self) -> None:
        self.value: float | None = None   #: the value the current identical run shows
        self.run = 0                      #: readings in the current identical run
        self.run_since: float | None = None
        self.drops = 0                    #: drops landed since the value last changed, with a reading after them
        self._unread_drops = 0            #: drops landed since the last reading
        self.noise_sd = 0.0
        self.frozen = False
        self.evidence = ""                #: why it is frozen (for the anomaly description)

    def required_run(self, noise_sd: float) -> int | None:
        """Identical readings in a row that noise of sd `noise_sd` makes improbable enough; None when
        the noise is too small for identical readings to mean anything."""
        c = self.config
        if not (math.isfinite(noise_sd) and noise_sd >= c.min_noise_ratio * c.resolution):
            return None
        p_same = min(1.0, c.resolution / (noise_sd * math.sqrt(2.0 * math.pi)))
        if p_same >= 1.0:
            return None
        return 1 + math.ceil(math.log(c.false_alarm_p) / math.log(p_same))

    def add(self, stamp: float, value: float, noise_sd: float | None = None) -> bool:
        """One reading (callers validate it first); returns `frozen` after it."""
        if noise_sd is not None and math.isfinite(noise_sd) and noise_sd >= 0:
            self.noise_sd = float(noise_sd)
        if self.value is None or value != self.value:
            # The meter follows something: a new run starts and any frozen episode ends here.
            self.value, self.run, self.run_since, self.drops, self._unread_drops = value, 1, stamp, 0, 0
            self.frozen, self.evidence = False, ""
            return False
        self.run += 1
        # Drops count as evidence only once a reading after them showed no change (a silent meter is
        # not a frozen one).
        self.drops += self._unread_drops
        self._unread_drops = 0
        if not self.frozen and self.drops >= self.config.max_drops:
            self.frozen = True
            self.evidence = (f"{self.drops} drops landed and the reading stayed at {self.value:g} "
                             f"(not one {self.config.resolution:g} step of change)")
        if not self.frozen:
            need = self.required_run(self.noise_sd)
            if need is not None and self.run >= need and stamp - self.run_since >= self.config.min_run_s:
                self.frozen = True
                self.evidence = (f"{self.run} identical readings ({self.value:g}) over {stamp - self.run_since:.1f} s, "
                                 f"where a meter with noise sd {self.noise_sd:g} repeats a value "
                                 f"{need} times in a row with p < {self.config.false_alarm_p:g}")
        return self.frozen

    def on_drop(self, stamp: float) -> None:
        """A drop landed (judged with the next reading)."""
        if self.value is not None:
            self._unread_drops += 1

    @property
    def suspicious(self) -> bool:
        """Enough identical readings that a settled value should not be trusted yet (or frozen)."""
        if self.frozen:
            return True
        return self.required_run(self.noise_sd) is not None and self.run >= self.config.suspicious_run

    def describe(self) -> str:
        return f"the pH meter reading is frozen: {self.evidence}" if self.frozen else ""
