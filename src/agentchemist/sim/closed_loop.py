"""The dispenser controller in closed loop with the lab twin, without ROS, at the rates of the node graph.

What each side sees is what the ROS nodes see (ros2_ws/src/agentchemist_ros):

- lab_sim ticks every `tick_s` (0.05 s): steps the twin, publishes pH at 5 Hz, joint states at 10 Hz,
  contact audio in 0.1 s chunks; gripper commands apply at its current tick.
- audio_supervisor: StreamingDetector on the chunks, DropContext judges every event; the dispenser node
  takes only droplets classified "expected", stamped with the event's start.
- the dispenser's state (DispenserState) tells the audio supervisor to expect drops while it is in MOTION
  and to stop expecting them in WAIT / RESET / DONE.
- vision_supervisor: with a pH target, the one endpoint judge (agentchemist.fsm.endpoint) on every pH
  reading: it holds the controller while it confirms the hold, releases it if the level falls back,
  and cancels the goal at the endpoint (the controller never ends a goal at its pH target).
- dispenser_controller: `update(now, measured)` every control period (0.05 s) on the latest joint state.

Everything is deterministic for a given scenario seed. The twin's `truth()` grades the result.

    loop = ClosedLoop(load_scenario("config/scenarios/hcl_naoh.yaml"))
    loop.prepare(draw_ml=55.0)
    run = loop.run(DispenseGoal(target_volume_ml=5.0), config=DispenserConfig())
    run.result.dispensed_ml, loop.twin.truth()["dispensed_ml"]
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Callable

from agentchemist.control.calibration_procedure import CalibrationProcedure, CalibrationStep, Phase
from agentchemist.control.dispenser import (ControllerAnomaly, DispenseGoal, DispenserConfig, DispenserController,
                                            Estimate, State, StopResult)
from agentchemist.fsm.endpoint import EndpointJudge, steer
from agentchemist.perception.audio import ContextConfig, DetectorConfig, DropContext, StreamingDetector
from agentchemist.sim.lab import LabTwin
from agentchemist.sim.scenario import Scenario

SAMPLE_RATE = 48000


@dataclass(frozen=True)
class LoopRates:
    """The node graph's rates (s): lab_sim clock tick, pH publish period, joint state period, audio chunk,
    dispenser control period, balance publish period."""
    tick_s: float = 0.05
    ph_period_s: float = 0.2
    joint_period_s: float = 0.1
    audio_chunk_s: float = 0.1
    control_period_s: float = 0.05
    balance_period_s: float = 0.5

    def __post_init__(self):
        for name in ("tick_s", "ph_period_s", "joint_period_s", "audio_chunk_s", "control_period_s",
                     "balance_period_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"LoopRates.{name} must be > 0 s, got {value!r}")


@dataclass
class LoopRun:
    """Everything one dispensing goal produced, in order, plus when it happened (sim s)."""
    result: StopResult | None = None
    estimates: list[Estimate] = field(default_factory=list)
    anomalies: list[ControllerAnomaly] = field(default_factory=list)
    transitions: list[tuple[float, State, str, State]] = field(default_factory=list)
    drops_passed: list[float] = field(default_factory=list)   #: stamps of drops given to the controller
    commands: list[tuple[float, float]] = field(default_factory=list)  #: (t, commanded opening mm)
    ph_readings: list[tuple[float, float]] = field(default_factory=list)
    started: float = 0.0
    ended: float = 0.0
    controller: DispenserController | None = None
    judge: EndpointJudge | None = None   #: the supervisor's endpoint judge (pH goals)

    def first_transition(self, condition: str, after: float = -math.inf) -> float | None:
        for t, _src, cond, _dst in self.transitions:
            if cond == condition and t >= after:
                return t
        return None


class ClosedLoop:
    """One twin bench; `prepare` grasps and fills the pipette, `run` executes one goal."""

    def __init__(self, scenario: Scenario, rates: LoopRates = LoopRates()):
        self.scenario = scenario
        self.rates = rates
        self.twin = LabTwin(scenario)
        self.side = scenario.pipette.held_by
        self.detector = StreamingDetector(DetectorConfig(sample_rate=SAMPLE_RATE))
        self.context = DropContext(ContextConfig(drop_volume_ml=scenario.pipette.drop_volume_ml))
        self.now = 0.0
        self._audio_t = 0.0
        self._next_ph = 0.0
        self._next_joint = 0.0
        self._measured_mm = self.twin.gripper_opening_m(self.side) * 1000.0
        self.expecting = False
        self.droplets_heard = 0   #: every droplet the detector reported, whatever its classification
        #: hooks called each tick before the controller steps: f(loop, now) (fault injection in tests)
        self.hooks: list[Callable[[ClosedLoop, float], None]] = []

    # ------------------------------------------------------------------ setup
    def prepare(self, draw_ml: float | None = None, settle_s: float = 3.0) -> None:
        """Close the gripper on the bulb, fill the pipette with the scenario's titrant, let the pH settle."""
        sp = self.scenario.pipette
        self.twin.command_gripper(self.side, sp.contact_opening_mm / 1000.0, self.now)
        self.advance(2.0)
        if not self.twin.pipette_held:
            raise RuntimeError("the gripper did not grasp the pipette")
        if draw_ml is None or draw_ml > 0:
            drawn = self.twin.draw(next(iter(self.scenario.titrant)), draw_ml or sp.capacity_ml, self.now)
            if not drawn.accepted:
                raise RuntimeError(f"cannot fill the pipette: {drawn.reason}")
        self.advance(settle_s)

    # ------------------------------------------------------------------ time
    def advance(self, seconds: float, controller: DispenserController | None = None,
                run: LoopRun | None = None) -> None:
        """Run the graph for `seconds` of sim time (with a controller: stepping it every control period)."""
        end = self.now + seconds
        while self.now < end - 1e-9:
            self.tick(controller, run)
            if run is not None and run.result is not None:
                return

    def tick(self, controller: DispenserController | None = None, run: LoopRun | None = None,
             procedure: CalibrationProcedure | None = None) -> None:
        """One lab_sim tick and what the nodes do with it; `procedure` (the Calibrate service's state
        machine) takes every droplet heard and the balance at 2 Hz, as the dispenser node gives them."""
        r = self.rates
        self.now = round(self.now + r.tick_s, 9)
        now = self.now
        self.twin.step(now)
        for hook in self.hooks:
            hook(self, now)
        if now >= self._next_joint - 1e-9:
            self._next_joint += r.joint_period_s
            self._measured_mm = self.twin.gripper_opening_m(self.side) * 1000.0
        if now >= self._next_ph - 1e-9:
            self._next_ph += r.ph_period_s
            reading = self.twin.read_ph(now)
            if reading is not None:
                if run is not None:
                    run.ph_readings.append((now, reading.value))
                if controller is not None:
                    controller.on_ph(now, reading.value)
                    if run is not None and run.judge is not None and controller.state != State.DONE:
                        steer(controller, run.judge.update(now, reading.value))
        if procedure is not None and now >= self._next_balance - 1e-9:
            self._next_balance += r.balance_period_s
            reading = self.twin.read_balance(now)
            if reading is not None:
                procedure.on_mass(now, float(reading.value))
        n = int(round(r.audio_chunk_s * SAMPLE_RATE))
        while self._audio_t + r.audio_chunk_s <= now + 1e-9:
            chunk = self.twin.audio(self.side, self._audio_t, n)
            for event in self.detector.process(chunk, self._audio_t):
                judged = self.context.classify(event)
                self.droplets_heard += event.kind == "droplet"
                if procedure is not None and event.kind == "droplet":
                    procedure.on_drop(event.start)
                if (event.kind == "droplet" and judged.classification == "expected"
                        and controller is not None and controller.state != State.DONE):
                    controller.on_drop(event.start)
                    if run is not None:
                        run.drops_passed.append(event.start)
            self._audio_t = round(self._audio_t + r.audio_chunk_s, 9)
        if procedure is not None and now >= self._next_control - 1e-9:
            self._next_control += r.control_period_s
            step = procedure.update(now, self._measured_mm)
            self.twin.command_gripper(self.side, step.command_opening_mm / 1000.0, now)
        if controller is not None and controller.state != State.DONE:
            # The control timer fires on its own period; with tick == period it fires every tick.
            if now >= self._next_control - 1e-9:
                self._next_control += r.control_period_s
                self._control(controller, run, now)

    _next_control = 0.0
    _next_balance = 0.0

    def _control(self, controller: DispenserController, run: LoopRun | None, now: float) -> None:
        out = controller.update(now, self._measured_mm)
        self.twin.command_gripper(self.side, out.command_opening_mm / 1000.0, now)
        if run is not None:
            run.estimates += out.estimates
            run.anomalies += out.anomalies
            run.transitions += [(now, a, c, b) for a, c, b in out.transitions]
            run.commands.append((now, out.command_opening_mm))
        if out.transitions:
            self._set_expectation(out.state == State.MOTION, now)
        if out.done is not None and run is not None:
            run.result = out.done
            run.ended = now

    def _set_expectation(self, active: bool, now: float) -> None:
        if active != self.expecting:
            self.expecting = active
            self.detector.drops_expected = active  # as audio_supervisor: droplets told as they ring
            self.context.set_expectation(active=active, subtask_id="dispense", fsm_state="titrating",
                                         expected_interval_s=None, now=now)

    # ------------------------------------------------------------------ goals
    def start(self, goal: DispenseGoal, config: DispenserConfig,
              endpoint_hold_s: float = 5.0) -> tuple[DispenserController, LoopRun]:
        controller = DispenserController(config, goal, start_opening_mm=self._measured_mm, now=self.now)
        judge = None if goal.target_ph is None else EndpointJudge(goal.target_ph, goal.ph_direction, endpoint_hold_s)
        run = LoopRun(started=self.now, controller=controller, judge=judge)
        self._next_control = self.now
        self._set_expectation(True, self.now)
        return controller, run

    def run(self, goal: DispenseGoal, config: DispenserConfig, *, max_s: float = 600.0,
            endpoint_hold_s: float = 5.0) -> LoopRun:
        """Execute one goal until the controller stops (or `max_s` of sim time passes: result None); a pH
        goal stops when the endpoint judge cancels it (`run.judge.reached_at`)."""
        controller, run = self.start(goal, config, endpoint_hold_s)
        end = self.now + max_s
        while run.result is None and self.now < end - 1e-9:
            self.tick(controller, run)
        self._set_expectation(False, self.now)
        if run.result is None:
            run.ended = self.now
        return run

    def calibrate(self, procedure: CalibrationProcedure, *, max_s: float = 600.0) -> CalibrationStep:
        """Run the Calibrate service's procedure until it finishes (or `max_s` of sim time passes)."""
        self._next_control = self._next_balance = self.now
        end = self.now + max_s
        while self.now < end - 1e-9:
            self.tick(procedure=procedure)
            if procedure.phase in (Phase.DONE, Phase.FAILED):
                break
        return procedure.update(self.now, self._measured_mm)

    @property
    def measured_mm(self) -> float:
        """The gripper opening as the last joint state reported it (mm)."""
        return self._measured_mm

    def dispensed_ml(self) -> float:
        """Twin truth: volume landed in the beaker (mL)."""
        return float(self.twin.truth()["dispensed_ml"])


def crossing_volume(scenario: Scenario, landed_ml: list[float], target_ph: float, direction: int = 1
                    ) -> tuple[float, int] | None:
    """True titrant volume (mL) at which the beaker's true pH crosses `target_ph`, and the index of the
    landed drop during which it crossed; None if it never did.

    `landed_ml`: volumes of the drops that landed in the beaker, in order (twin truth). The pH inside the
    crossing drop is found by bisection on the twin's own chemistry (pH as a function of added volume).
    """
    from agentchemist.sim.beaker import Beaker

    def ph_after(volume_ml: float) -> float:
        beaker = Beaker(scenario.beaker, scenario.probe.temperature_c, activity=scenario.probe.activity)
        if volume_ml > 0:
            beaker.add_liquid(volume_ml, dict(scenario.titrant))
        return beaker.ph()

    def past(volume_ml: float) -> bool:
        return direction * (ph_after(volume_ml) - target_ph) >= 0

    cumulative = list(itertools.accumulate(landed_ml))
    if not cumulative or not past(cumulative[-1]):
        return None
    # pH is monotonic in the added volume: bisect over drops, then inside the crossing drop.
    lo_i, hi_i = 0, len(cumulative) - 1
    while lo_i < hi_i:
        mid_i = (lo_i + hi_i) // 2
        lo_i, hi_i = (lo_i, mid_i) if past(cumulative[mid_i]) else (mid_i + 1, hi_i)
    lo = cumulative[lo_i - 1] if lo_i > 0 else 0.0
    hi = cumulative[lo_i]
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if past(mid) else (mid, hi)
    return 0.5 * (lo + hi), lo_i


@dataclass(frozen=True)
class TitrationOutcome:
    """A pH-target run graded against twin truth. Volumes in mL; drops in nominal drop volumes."""
    dispensed_ml: float          #: landed in the beaker
    cross_ml: float              #: true volume at which the true pH crossed the target
    overshoot_ml: float          #: dispensed - cross
    overshoot_drops: float
    drops_after_crossing: int    #: whole drops that landed after the one that crossed the target
    true_ph: float
    reading_ph: float            #: the controller's last pH reading
    sim_s: float                 #: goal start to stop


def grade_titration(loop: ClosedLoop, run: LoopRun, target_ph: float, direction: int = 1) -> TitrationOutcome:
    truth = loop.twin.truth()
    landed = [d["volume_ml"] for d in truth["drops"] if d["fate"] in ("beaker", "overflow")]
    crossed = crossing_volume(loop.scenario, landed, target_ph, direction)
    dispensed = float(sum(landed))
    drop = loop.scenario.pipette.drop_volume_ml
    if crossed is None:
        cross, after = math.nan, 0
    else:
        cross, index = crossed
        after = len(landed) - 1 - index
    reading = run.ph_readings[-1][1] if run.ph_readings else math.nan
    return TitrationOutcome(dispensed, cross, dispensed - cross, (dispensed - cross) / drop, after,
                            float(truth["true_ph"]), reading, run.ended - run.started)
