"""The pH meter's electrode calibration state, as the supervisor judges it before a pH titration.

The meter (the ph_meter node on the robot, lab_sim's meter in the twin: agentchemist.sim.twin_ph_meter)
publishes, latched, one JSON object: ``probe``, ``required`` (whether it applies calibrations at all),
``corrected`` (its readings are corrected now) and ``problem`` (why not: no calibration, stale, outside
the acceptance window, an unreadable store), with the calibration's ``slope_pct``, ``offset_mv`` and
``date`` when it has one. A titration to a pH endpoint on uncorrected readings would carry the electrode's
offset into every number (0.15 pH of offset is a pKa 0.15 off), so the executor refuses to start one
(or to start its dispensing) with a `calibration_required` anomaly that says what to do. A state that
cannot be read is not a calibrated meter either.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

CALIBRATION_REQUIRED = "calibration_required"
ADVICE = ("calibrate the electrode in the pH 4.01 / 7.00 / 10.01 buffers (`agentchemist ph-calibrate`, then "
          "the ph_meter's ~/reload_calibration) and start the experiment again")


@dataclass(frozen=True)
class ElectrodeState:
    probe: str
    required: bool
    corrected: bool
    problem: str

    @classmethod
    def parse(cls, data: str | None) -> "ElectrodeState | None":
        """None without a state; an unreadable one is a state with a problem, not an error."""
        if data is None:
            return None
        try:
            d = json.loads(data)
            if not isinstance(d, dict):
                raise ValueError("not a JSON object")
            probe, problem = d.get("probe", ""), d.get("problem", "")
            required, corrected = d.get("required", True), d.get("corrected", False)
            if not (isinstance(probe, str) and isinstance(problem, str) and isinstance(required, bool)
                    and isinstance(corrected, bool)):
                raise ValueError("probe/problem must be strings, required/corrected booleans")
        except (ValueError, TypeError) as exc:
            return cls("", True, False, f"the pH meter's calibration state is unreadable ({exc})")
        if required and not corrected and not problem:
            problem = "the pH meter does not correct its readings"
        return cls(probe, required, corrected, problem)

    def refusal(self) -> str:
        """'' when readings may be titrated on, else the refusal with what to do."""
        if not self.required or self.corrected:
            return ""
        probe = f" {self.probe}" if self.probe else ""
        return f"pH titration needs a calibrated electrode{probe}: {self.problem}; {ADVICE}"
