"""A scripted titration session that drives a LabTwin the way the ``lab_sim`` node does.

For benchmarks and smoke tests: grasp the pipette, draw titrant, then close the gripper at a constant
rate (the dispenser's MOTION state) while the twin is stepped at the node's tick and the pH meter is
read periodically. No clock is read here; time the call from outside::

    twin = LabTwin(load_scenario("config/scenarios/hcl_naoh.yaml"))
    t0 = time.process_time()
    stats = run_titration_session(twin, until_s=300.0)
    factor = stats.sim_seconds / (time.process_time() - t0)
"""

from __future__ import annotations

from dataclasses import dataclass

from agentchemist.sim.errors import SimCommandError
from agentchemist.sim.lab import LabTwin

__all__ = ["SessionStats", "run_titration_session"]


@dataclass(frozen=True)
class SessionStats:
    sim_seconds: float
    steps: int
    commands: int
    readings: int
    drops_landed: int
    final_true_ph: float


def run_titration_session(
    twin: LabTwin,
    until_s: float,
    *,
    step_s: float = 0.01,
    command_period_s: float = 0.05,
    read_period_s: float = 0.1,
    squeeze_rate_mm_s: float = 0.1,
    draw_ml: float = 55.0,
    reagent: str | None = None,
) -> SessionStats:
    """Run from the twin's present time to ``until_s`` (s); see the module docstring."""
    for name, value in (("step_s", step_s), ("command_period_s", command_period_s),
                        ("read_period_s", read_period_s), ("squeeze_rate_mm_s", squeeze_rate_mm_s)):
        if not value > 0:
            raise SimCommandError(f"{name} must be > 0, got {value}")
    sc = twin.scenario
    side = sc.pipette.held_by
    contact_mm = sc.pipette.contact_opening_mm
    reagent = reagent or next(iter(sc.titrant), None)
    if reagent is None:
        raise SimCommandError(f"scenario {sc.name!r} has no titrant to draw")
    t = twin.t
    twin.command_gripper(side, (contact_mm + 0.5) / 1000.0, t)
    t += 1.0
    twin.step(t)
    res = twin.draw(reagent, draw_ml, t)
    if not res.accepted:
        raise SimCommandError(f"cannot start the session: {res.reason}")
    opening_mm = contact_mm
    steps = commands = readings = 0
    next_cmd = next_read = t
    k = 0
    start = t
    while t < until_s:
        k += 1
        t = start + k * step_s
        if t >= next_cmd:
            opening_mm = max(0.0, opening_mm - squeeze_rate_mm_s * command_period_s)
            twin.command_gripper(side, opening_mm / 1000.0, t)
            commands += 1
            next_cmd += command_period_s
        twin.step(t)
        steps += 1
        if t >= next_read:
            twin.read_ph(t)
            readings += 1
            next_read += read_period_s
    truth = twin.truth()
    return SessionStats(t - start, steps, commands, readings, truth["drops_landed"], truth["true_ph"])
