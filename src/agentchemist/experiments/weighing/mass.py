"""The balance's side of the weighing procedure (:mod:`.procedure`), free of ROS.

The protocol (config/protocols/weighing_dissolution.yaml) leaves these symbols to the supervisor:

* ``tare_ok``: the balance was told to tare (the node calls the balance's tare service and reports
  :meth:`MassSupervision.tare_sent`), and then reads zero, settled, over the settle window;
* ``dose``: the pour goal goes out (the procedure applies it; nothing to decide here);
* ``mass_stable``: after a pour pulse (``tap``), the balance settled again (waiting_mass -> dosing);
* ``target_mass``: the dispenser reports it reached the target *and* the balance, settled, agrees
  within the plan's tolerance. The dispenser's word alone is not enough: it is the balance that is
  recorded. A settled mass outside the tolerance aborts (solid cannot be taken back out);
* ``dissolved`` / ``verified``: from the front camera (the procedure, with
  :mod:`agentchemist.perception.dissolution`): no solid seen; verified when it stays so for the verify
  hold and the weighed mass (:meth:`MassSupervision.verify`) is within tolerance.

Bad readings (not finite, outside the balance's range, older than the last) raise
:class:`ReadingError` and never advance the machine.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from agentchemist.contracts import Symbol
from agentchemist.perception.ph_stability import PhStabilityDetector, ReadingError, StabilityConfig

__all__ = ["MassConfig", "MassSupervision"]


def _param(params: dict, key: str, default: float) -> float:
    value = params.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return default
    return float(value)


@dataclass(frozen=True)
class MassConfig:
    """Thresholds of the mass decisions (grams, seconds)."""

    target_g: float
    tolerance_g: float
    settle_window_s: float = 2.0
    max_rate_g_s: float = 0.02       #: settled: |dm/dt| below this over the window
    max_spread_g: float = 0.025      #: settled: max - min over the window (0.01 g display + noise)
    zero_band_g: float = 0.015       #: a tared balance reads within this of zero
    range_g: tuple[float, float] = (-500.0, 500.0)   #: what a lab balance can show (g)

    def __post_init__(self):
        if not (math.isfinite(self.target_g) and self.target_g > 0):
            raise ValueError(f"target mass must be > 0 g, got {self.target_g!r}")
        if not (math.isfinite(self.tolerance_g) and self.tolerance_g > 0):
            raise ValueError(f"mass tolerance must be > 0 g, got {self.tolerance_g!r}")

    @classmethod
    def from_plan(cls, plan) -> "MassConfig":
        dose: dict = {}
        for task in plan.task_decomposition:
            if task.receiver == "dispenser_controller":
                dose = dict(task.parameters)
        disp = plan.module_instantiation.dispenser
        target = _param(dose, "target_mass_g", float(getattr(disp, "target_mass_g", None) or math.nan))
        tolerance = _param(dose, "mass_tolerance_g", float(getattr(disp, "mass_tolerance_g", None) or 0.1))
        return cls(target_g=target, tolerance_g=tolerance,
                   settle_window_s=_param(dose, "stable_window_s", 2.0),
                   max_rate_g_s=_param(dose, "wait_on_change_threshold", 0.02))


class MassSupervision:
    """Balance readings -> tare_ok, mass_stable, target_mass (see the module docstring)."""

    def __init__(self, config: MassConfig):
        self.config = config
        self.settle = PhStabilityDetector(StabilityConfig(window_s=config.settle_window_s,
                                                          max_slope=config.max_rate_g_s,
                                                          max_spread=config.max_spread_g, ph_range=config.range_g,
                                                          criterion="spread"))  # the display steps in digits
        self.tare_pending_since: float | None = None
        self.dispenser_done = False       #: the dispenser reported the target reached
        self.weighed_g: float | None = None
        self.last_g: float | None = None
        self.last_stamp: float | None = None

    def tare_sent(self, stamp: float) -> None:
        """The balance accepted the tare command: readings before it do not count."""
        self.tare_pending_since = stamp
        self.settle.reset()

    def dispenser_finished(self) -> None:
        self.dispenser_done = True

    def on_mass(self, stamp: float, grams: float, state: str) -> list[tuple[str, dict]]:
        """One balance reading -> [(symbol, detail)] to apply, or ("abort", detail). Raises ReadingError."""
        if not (math.isfinite(stamp) and math.isfinite(grams)):
            raise ReadingError(f"balance reading {grams!r} g at {stamp!r} s is not a number")
        self.settle.add(stamp, grams)  # range and time order checked here
        self.last_g, self.last_stamp = grams, stamp
        settled = self.settle.is_stable()
        out: list[tuple[str, dict]] = []
        if not settled:
            return out
        mean = self.settle.mean()  # one flickering display digit does not decide
        if self.tare_pending_since is not None:
            if stamp - self.tare_pending_since >= self.config.settle_window_s and abs(mean) <= self.config.zero_band_g:
                self.tare_pending_since = None
                out.append((Symbol.TARE_OK, {"mass_g": mean}))
            return out
        if self.dispenser_done and state in ("dosing", "waiting_mass"):
            error = mean - self.config.target_g
            self.dispenser_done = False  # decided once: target_mass or the abort
            if abs(error) <= self.config.tolerance_g:
                self.weighed_g = mean
                out.append((Symbol.TARGET_MASS, {"mass_g": mean, "error_g": error}))
            else:
                out.append(("abort", {
                    "kind": "mass_out_of_tolerance", "mass_g": mean,
                    "reason": f"the balance settled at {mean:.3f} g for a {self.config.target_g:.3f} g target "
                              f"({error:+.3f} g, tolerance {self.config.tolerance_g:.3f} g)"}))
            return out
        if state == "waiting_mass":
            out.append((Symbol.MASS_STABLE, {"mass_g": mean}))
        return out

    def verify(self) -> str | None:
        """None when the weighed mass is within tolerance, else why not."""
        if self.weighed_g is None:
            return "no settled mass was recorded at the end of the pour"
        error = self.weighed_g - self.config.target_g
        if abs(error) > self.config.tolerance_g:
            return f"weighed {self.weighed_g:.3f} g, {error:+.3f} g from the target"
        return None
